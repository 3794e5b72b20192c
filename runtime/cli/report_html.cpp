#include "runtime/cli/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace edgevla::cli {
namespace {

// Plot geometry (px): every SVG has a fixed size, its data area inside these margins.
constexpr double kLeft = 64, kRight = 16, kTop = 44, kBottom = 46;
constexpr const char* kBarColor = "#3b6fd8";
// Series colours: saturated, so a checker tells data from the grey axes and text.
constexpr const char* kPalette[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#17becf", "#e377c2", "#8c564b"};
constexpr std::size_t kMaxSeries = 8;

std::string fmt(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string num(double v) { return fmt("%.2f", v); }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A tick label with as many decimals as the tick step needs.
std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step))));
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// Round steps (1, 2, 5 x 10^k) covering [lo, hi] with about `n` ticks.
std::vector<double> ticks(double lo, double hi, int n, double& step) {
  const double raw = (hi - lo) / std::max(1, n);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

// A value range with some room, never empty.
void widen(double& lo, double& hi) {
  if (!(hi > lo)) {
    const double pad = std::max(std::abs(lo) * 0.05, 1e-3);
    lo -= pad;
    hi += pad;
  }
}

struct Frame {
  double width, height;
  double x0, x1, y0, y1;  // data range
  double right = kRight;  // margin right of the data area (a legend's room)
  double px(double x) const { return kLeft + (x - x0) / (x1 - x0) * (width - kLeft - right); }
  double py(double y) const {
    return height - kBottom - (y - y0) / (y1 - y0) * (height - kTop - kBottom);
  }
};

// The opening tag, title, axes with ticks and their labels.
std::string open_plot(const std::string& id, const std::string& kind, const Frame& f,
                      const std::string& title, const std::string& subtitle,
                      const std::string& x_label, const std::string& y_label) {
  std::string s = "<svg class=\"plot " + kind + "\" id=\"" + id + "\" width=\"" + num(f.width) +
                  "\" height=\"" + num(f.height) + "\" viewBox=\"0 0 " + num(f.width) + " " +
                  num(f.height) + "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  s += "<text class=\"title\" x=\"" + num(kLeft) + "\" y=\"16\">" + escape(title) + "</text>\n";
  if (!subtitle.empty()) {
    s += "<text class=\"subtitle\" x=\"" + num(kLeft) + "\" y=\"31\">" + escape(subtitle) +
         "</text>\n";
  }
  const double bx = kLeft, by = f.height - kBottom, ex = f.width - f.right, ey = kTop;
  s += "<path class=\"axis\" d=\"M" + num(bx) + " " + num(ey) + " V" + num(by) + " H" + num(ex) +
       "\"/>\n";
  double step = 1;
  for (double t : ticks(f.x0, f.x1, 6, step)) {
    const double x = f.px(t);
    s += "<path class=\"tick\" d=\"M" + num(x) + " " + num(by) + " v4\"/><text class=\"tl\" x=\"" +
         num(x) + "\" y=\"" + num(by + 16) + "\" text-anchor=\"middle\">" + tick_label(t, step) +
         "</text>\n";
  }
  for (double t : ticks(f.y0, f.y1, 4, step)) {
    const double y = f.py(t);
    s += "<path class=\"grid\" d=\"M" + num(bx) + " " + num(y) + " H" + num(ex) +
         "\"/><text class=\"tl\" x=\"" + num(bx - 6) + "\" y=\"" + num(y + 4) +
         "\" text-anchor=\"end\">" + tick_label(t, step) + "</text>\n";
  }
  s += "<text class=\"label\" x=\"" + num((bx + ex) / 2) + "\" y=\"" + num(f.height - 8) +
       "\" text-anchor=\"middle\">" + escape(x_label) + "</text>\n";
  s += "<text class=\"label\" transform=\"translate(14 " + num((by + ey) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_label) + "</text>\n";
  return s;
}

std::string missing_panel(const std::string& id, const std::string& title, const std::string& why,
                          double width) {
  return "<div class=\"missing\" id=\"" + id + "\" style=\"width:" + num(width - 24) + "px\"><b>" +
         escape(title) + "</b><br>" + escape(why) + "</div>\n";
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::string histogram(const HtmlHistogram& h, int index) {
  const std::string id = "hist-" + std::to_string(index);
  constexpr double kW = 520, kH = 250;
  if (h.values_ms.empty())
    return missing_panel(id, h.title, h.missing.empty() ? "no values in the bag" : h.missing, kW);
  double lo = *std::min_element(h.values_ms.begin(), h.values_ms.end());
  double hi = *std::max_element(h.values_ms.begin(), h.values_ms.end());
  const double max_value = hi;
  widen(lo, hi);
  const int bins =
      std::clamp(static_cast<int>(2 * std::sqrt(static_cast<double>(h.values_ms.size()))), 5, 40);
  std::vector<int> counts(static_cast<std::size_t>(bins), 0);
  for (double v : h.values_ms) {
    const int b = std::clamp(static_cast<int>((v - lo) / (hi - lo) * bins), 0, bins - 1);
    ++counts[static_cast<std::size_t>(b)];
  }
  const int top = *std::max_element(counts.begin(), counts.end());
  const Frame f{kW, kH, lo, hi, 0, static_cast<double>(top) * 1.1};
  const double p50 = quantile(h.values_ms, 0.5), p99 = quantile(h.values_ms, 0.99);
  const std::string stats = "n " + std::to_string(h.values_ms.size()) + ", p50 " +
                            fmt("%.3g", p50) + " ms, p99 " + fmt("%.3g", p99) + " ms, max " +
                            fmt("%.3g", max_value) + " ms";
  std::string s = open_plot(id, "histogram", f, h.title, stats, "latency (ms)", "chunks");
  const double bw = (hi - lo) / bins;
  for (int b = 0; b < bins; ++b) {
    const int c = counts[static_cast<std::size_t>(b)];
    if (c == 0) continue;
    const double x = f.px(lo + b * bw), x2 = f.px(lo + (b + 1) * bw), y = f.py(c);
    s += "<rect class=\"mark bar\" x=\"" + num(x + 0.5) + "\" y=\"" + num(y) + "\" width=\"" +
         num(std::max(1.0, x2 - x - 1)) + "\" height=\"" + num(f.py(0) - y) + "\" fill=\"" +
         kBarColor + "\"><title>" + fmt("%.3f", lo + b * bw) + "-" +
         fmt("%.3f", lo + (b + 1) * bw) + " ms: " + std::to_string(c) + "</title></rect>\n";
  }
  for (const auto& [q, v] : {std::pair{"p50", p50}, std::pair{"p99", p99}}) {
    const double x = f.px(v);
    const bool near_right = x > f.width - f.right - 30;  // label left of the line, inside the plot
    s += "<path class=\"quantile\" d=\"M" + num(x) + " " + num(kTop) + " V" + num(f.py(0)) +
         "\"/><text class=\"ql\" x=\"" + num(near_right ? x - 3 : x + 3) + "\" y=\"" +
         num(q == std::string("p50") ? kTop + 10 : kTop + 22) + "\" text-anchor=\"" +
         (near_right ? "end" : "start") + "\">" + q + "</text>\n";
  }
  return s + "</svg>\n";
}

std::string timeline(const HtmlReport& r) {
  constexpr double kW = 1060;
  if (r.timeline.empty()) {
    return missing_panel(
        "timeline", "one chunk through the graph",
        r.timeline_missing.empty() ? "no chunk with its whole path in the bag" : r.timeline_missing,
        kW);
  }
  std::vector<std::string> lanes;
  double end = 0;
  for (const HtmlSpan& s : r.timeline) {
    if (std::find(lanes.begin(), lanes.end(), s.lane) == lanes.end()) lanes.push_back(s.lane);
    end = std::max(end, s.end_ms);
  }
  constexpr double kLane = 30, kLaneLeft = 120;
  const double height = kTop + kBottom + kLane * static_cast<double>(lanes.size()) + 24;
  double lo = 0, hi = end * 1.02;
  widen(lo, hi);
  const Frame f{kW, height, lo, hi, 0, 1};
  // The lane names sit left of the data area: a wider left margin than the other plots.
  auto px = [&](double x) { return kLaneLeft + (x - lo) / (hi - lo) * (kW - kLaneLeft - kRight); };
  std::string s = "<svg class=\"plot timeline\" id=\"timeline\" width=\"" + num(kW) +
                  "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(kW) + " " + num(height) +
                  "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  s += "<text class=\"title\" x=\"" + num(kLaneLeft) + "\" y=\"18\">" + escape(r.timeline_title) +
       "</text>\n";
  const double axis_y = kTop + kLane * static_cast<double>(lanes.size()) + 4;
  s += "<path class=\"axis\" d=\"M" + num(kLaneLeft) + " " + num(kTop) + " V" + num(axis_y) + " H" +
       num(kW - kRight) + "\"/>\n";
  double tick_step = 1;
  for (double t : ticks(f.x0, f.x1, 10, tick_step)) {
    const double x = px(t);
    s += "<path class=\"grid\" d=\"M" + num(x) + " " + num(kTop) + " V" + num(axis_y) +
         "\"/><text class=\"tl\" x=\"" + num(x) + "\" y=\"" + num(axis_y + 16) +
         "\" text-anchor=\"middle\">" + tick_label(t, tick_step) + "</text>\n";
  }
  s += "<text class=\"label\" x=\"" + num((kLaneLeft + kW - kRight) / 2) + "\" y=\"" +
       num(axis_y + 34) +
       "\" text-anchor=\"middle\">time since the frame was captured (ms)</text>\n";
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    s += "<text class=\"lane\" x=\"" + num(kLaneLeft - 8) + "\" y=\"" +
         num(kTop + kLane * static_cast<double>(i) + 19) + "\" text-anchor=\"end\">" +
         escape(lanes[i]) + "</text>\n";
  }
  static const std::map<HtmlSpan::Kind, std::pair<const char*, const char*>> kKinds = {
      {HtmlSpan::Kind::kCompute, {"compute", "#3b6fd8"}},
      {HtmlSpan::Kind::kInNode, {"in the node, outside compute", "#9ab8f0"}},
      {HtmlSpan::Kind::kDelivery, {"delivery (bus)", "#f28e2b"}},
      {HtmlSpan::Kind::kWait, {"waiting for the control tick", "#59a14f"}}};
  for (const HtmlSpan& sp : r.timeline) {
    const auto lane =
        static_cast<double>(std::find(lanes.begin(), lanes.end(), sp.lane) - lanes.begin());
    const double x = px(sp.start_ms), w = std::max(1.0, px(sp.end_ms) - x);
    const auto& [name, color] = kKinds.at(sp.kind);
    s += "<rect class=\"mark span\" x=\"" + num(x) + "\" y=\"" + num(kTop + kLane * lane + 5) +
         "\" width=\"" + num(w) + "\" height=\"" + num(kLane - 10) + "\" fill=\"" + color +
         "\"><title>" + escape(sp.lane) + ": " + name + ", " + fmt("%.3f", sp.start_ms) + "-" +
         fmt("%.3f", sp.end_ms) + " ms (" + fmt("%.3f", sp.end_ms - sp.start_ms) +
         " ms)</title></rect>\n";
  }
  double lx = kLaneLeft;
  for (const auto& [kind, nc] : kKinds) {
    s += "<rect x=\"" + num(lx) + "\" y=\"" + num(height - 14) +
         "\" width=\"12\" height=\"10\" fill=\"" + nc.second + "\"/><text class=\"tl\" x=\"" +
         num(lx + 16) + "\" y=\"" + num(height - 5) + "\">" + nc.first + "</text>\n";
    lx += 210;
  }
  return s + "</svg>\n";
}

std::string line_plot(const HtmlLinePlot& p, int index) {
  const std::string id = "lines-" + std::to_string(index);
  constexpr double kW = 1060, kH = 300;
  bool any = false;
  for (const HtmlSeries& s : p.series) any = any || !s.values.empty();
  if (!any)
    return missing_panel(id, p.title, p.missing.empty() ? "nothing in the bag" : p.missing, kW);
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const HtmlSeries& s : p.series) {
    for (double t : s.t_s) x0 = std::min(x0, t), x1 = std::max(x1, t);
    for (double v : s.values) y0 = std::min(y0, v), y1 = std::max(y1, v);
  }
  widen(x0, x1);
  widen(y0, y1);
  const double pad = (y1 - y0) * 0.05;
  const Frame f{kW, kH, x0, x1, y0 - pad, y1 + pad, 90};
  std::string s =
      open_plot(id, "lines", f, p.title, p.note, "time since the recording began (s)", p.y_label);
  for (std::size_t i = 0; i < p.series.size() && i < kMaxSeries; ++i) {
    const HtmlSeries& ser = p.series[i];
    std::string points;
    for (std::size_t k = 0; k < ser.values.size() && k < ser.t_s.size(); ++k) {
      points += num(f.px(ser.t_s[k])) + "," + num(f.py(ser.values[k])) + " ";
    }
    s += "<polyline class=\"mark series\" fill=\"none\" stroke-width=\"1.5\" stroke=\"" +
         std::string(kPalette[i]) + "\" points=\"" + points + "\"><title>" + escape(ser.name) +
         "</title></polyline>\n";
    s += "<rect x=\"" + num(kW - 76) + "\" y=\"" + num(kTop + 14.0 * static_cast<double>(i)) +
         "\" width=\"10\" height=\"3\" fill=\"" + kPalette[i] + "\"/><text class=\"tl\" x=\"" +
         num(kW - 62) + "\" y=\"" + num(kTop + 14.0 * static_cast<double>(i) + 5) + "\">" +
         escape(ser.name) + "</text>\n";
  }
  return s + "</svg>\n";
}

}  // namespace

std::string render_report_html(const HtmlReport& r) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>edgevla report: " +
      escape(r.bag) +
      "</title>\n<style>\n"
      "body{font-family:sans-serif;margin:16px;background:#fff;color:#222}\n"
      "h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:18px 0 6px}\n"
      ".grid2{display:grid;grid-template-columns:repeat(2,540px);gap:8px}\n"
      "svg.plot{background:#fff;display:block} svg text{font-size:11px;fill:#333}\n"
      "svg .title{font-size:12px;font-weight:bold} svg .subtitle{font-size:11px;fill:#555}\n"
      "svg .label{font-size:11px;fill:#555}\n"
      "svg .axis{stroke:#555;fill:none} svg .tick{stroke:#555} svg .grid{stroke:#ddd}\n"
      "svg .quantile{stroke:#222;stroke-dasharray:3 3} svg .ql{font-size:10px}\n"
      ".missing{border:1px dashed #999;padding:10px;color:#555;font-size:13px;margin:4px 0}\n"
      ".notes{color:#a33;font-size:13px} .summary{color:#555;font-size:13px}\n"
      "</style></head><body>\n";
  s += "<h1>edgevla bag report</h1>\n<div class=\"summary\">" + escape(r.bag) + ": " +
       escape(r.summary) + "</div>\n";
  if (!r.notes.empty()) {
    s += "<ul class=\"notes\">\n";
    for (const std::string& n : r.notes) s += "<li>" + escape(n) + "</li>\n";
    s += "</ul>\n";
  }
  s += "<h2>Latency per stage and end to end</h2>\n<div class=\"grid2\">\n";
  for (std::size_t i = 0; i < r.histograms.size(); ++i)
    s += histogram(r.histograms[i], static_cast<int>(i));
  s += "</div>\n<h2>One chunk through the graph</h2>\n" + timeline(r);
  s += "<h2>Actions and state over time</h2>\n";
  for (std::size_t i = 0; i < r.lines.size(); ++i) s += line_plot(r.lines[i], static_cast<int>(i));
  // Where each plot landed and how many of its marks have a size, as the browser laid them out:
  // what a checker (tests/report) reads from the DOM to find the plots in a screenshot.
  s += "<pre id=\"layout\" hidden></pre>\n<script>\n"
       "(function(){const out=[];for(const svg of document.querySelectorAll('svg.plot')){"
       "const b=svg.getBoundingClientRect();let sized=0;const marks=svg.querySelectorAll('.mark');"
       "for(const m of marks){const r=m.getBoundingClientRect();if(r.width>0&&r.height>0)++sized;}"
       "out.push({id:svg.id,kind:svg.classList[1],x:b.left+window.scrollX,y:b.top+window.scrollY,"
       "width:b.width,height:b.height,marks:marks.length,sized:sized});}"
       "document.getElementById('layout').textContent=JSON.stringify({plots:out,"
       "page_height:Math.ceil(document.body.getBoundingClientRect().bottom+window.scrollY)});})();"
       "\n</script>\n";
  return s + "</body></html>\n";
}

}  // namespace edgevla::cli
