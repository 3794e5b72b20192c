// The `edgevla` command line: subcommand implementations.
#pragma once

#include <string>
#include <vector>

#include "runtime/bag/replay.hpp"

namespace edgevla::cli {

struct EchoOptions {
  std::string topic;
  int count = 0;          // stop after this many messages (0: never)
  double timeout_s = 0;   // fail when nothing arrives this long (0: wait forever)
  bool full = false;      // print every element of small tensors
};
struct RateOptions {
  std::string topic;
  double duration_s = 0;  // stop after this long (0: until Ctrl-C)
  int window = 100;       // messages in the sliding window
};

struct BagRecordOptions {
  std::string output;
  std::vector<std::string> topics;
  bool all = false;
  std::string compression = "zstd";
  int max_queue_mb = 512;
  bool lossless = false;
  double duration_s = 0;
  bool foxglove = false;
  std::string foxglove_images = "jpeg";
  double split_mb = 0;  // a new file every N MB / S seconds (0: one file)
  int split_s = 0;
};
struct BagPlayOptions {
  std::string path;
  double rate = 1.0;
  bool loop = false;
  std::vector<std::string> topics;
  double start_offset_s = 0;
  double duration_s = 0;
  int warmup_ms = 300;
  bool skip_damaged = false;  // damaged or undecodable records: a warning, exit 0
};

int bag_record(const BagRecordOptions& options);
int bag_info(const std::string& path);
int bag_play(const BagPlayOptions& options);
int bag_recover(const std::string& in, const std::string& out);
struct BagExportOptions {
  std::string in, out;
  bool foxglove = false;  // required: the one export format
  std::string images = "jpeg";
  int jpeg_quality = 90;
};
int bag_export(const BagExportOptions& options);
struct BridgeFoxgloveOptions {
  std::string host = "127.0.0.1";
  int port = 8765;
  std::vector<std::string> topics;
  std::string images = "jpeg";
  int jpeg_quality = 80;
  double duration_s = 0;  // 0: until Ctrl-C
  std::vector<std::string> publish_topics;  // clients may publish Prompt / RobotState here
};
int bridge_foxglove(const BridgeFoxgloveOptions& options);
struct BagReportOptions {
  std::string path;
  std::string json_path;   // also write the numbers as JSON
  std::string checkpoint;  // to compare peak memory with the weights' size
  std::string html_path;   // also write the plots as one self-contained HTML page
};
int bag_report(const BagReportOptions& options);

// Prints the comparison table; exit 0 when every output is within tolerance, 1 when not,
// 2 when the replay could not run.
int replay(const bag::ReplayOptions& options, const std::string& report_path);

int topic_list(bool verbose);
int topic_info(const std::string& topic);
int topic_echo(const EchoOptions& options);
int topic_hz(const RateOptions& options);
int topic_bw(const RateOptions& options);
int node_list(bool verbose);
int node_info(const std::string& node);
// One row per callback of every running node: count, latency, drops, errors, process RSS.
int node_stats();
// Every process's bus statistics (control command "bus"), one YAML document each.
int bus_stats();
int node_types();
int param_dump(const std::string& node);
int param_set(const std::string& node, const std::string& key, const std::string& value);
// Writes `out`.secret (0600) and `out`.public; refuses to replace them unless `force`.
int keys_generate(const std::string& out, bool force);

}  // namespace edgevla::cli
