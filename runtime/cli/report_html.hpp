// `edgevla bag report --html`: the report's plots as one self-contained HTML page (inline SVG,
// no script or font from anywhere else): latency histograms per stage and end to end, the
// timeline of one chunk through the graph, and actions and state over time.
#pragma once

#include <string>
#include <vector>

namespace edgevla::cli {

struct HtmlHistogram {
  std::string title;  // "backbone (compute)"
  std::vector<double> values_ms;
  std::string missing;  // why there are no values (shown instead of the plot)
};

// One bar of the chunk timeline, in ms after the frame's capture.
struct HtmlSpan {
  std::string lane;  // the node, as named in the bag
  enum class Kind { kCompute, kInNode, kDelivery, kWait } kind = Kind::kCompute;
  double start_ms = 0, end_ms = 0;
};

struct HtmlSeries {
  std::string name;
  std::vector<double> t_s, values;
};

struct HtmlLinePlot {
  std::string title;
  std::string y_label;
  std::vector<HtmlSeries> series;
  std::string note;     // e.g. "first 8 of 32 dimensions"
  std::string missing;  // why there is nothing to plot
};

struct HtmlReport {
  std::string bag;
  std::string summary;             // duration and message counts
  std::vector<std::string> notes;  // damage, what the bag lacks
  std::vector<HtmlHistogram> histograms;
  std::string timeline_title;
  std::vector<HtmlSpan> timeline;
  std::string timeline_missing;
  std::vector<HtmlLinePlot> lines;
};

std::string render_report_html(const HtmlReport& report);

}  // namespace edgevla::cli
