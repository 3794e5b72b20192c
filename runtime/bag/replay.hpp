// Per-node replay: runs one node alone on its recorded inputs and compares what it publishes
// with what it published when recorded, tensor by tensor. A regression test for a new backend
// (TensorRT vs PyTorch, INT8 vs FP16) is a replay with tolerances.
//
// The node is rebuilt from the bag (its type, params and topics are stored there by the
// recorder), optionally overridden by a launch file, a params file and --set. Inputs are fed in
// recorded order, one at a time, as fast as the node takes them. Deterministic: the node's
// clock reads each input's recorded stamp, and before each input the node's random generator
// is set to the state recorded in the header of the output that input produced.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::bag {

// Output fields "replay.param.<name>" = value: a param value the node ran with that its
// outputs depend on bit for bit (the CPU backend's thread count, resolved from "0 = all
// cores"). Replay sets the param to the recorded value unless --set or a params file gives
// it, so a recording replays exactly on a machine with another core count.
inline constexpr std::string_view kReplayParamPrefix = "replay.param.";

struct Tolerance {
  double max_abs = -1;     // largest |produced - recorded| allowed (< 0: not checked)
  double rel_l2 = 1e-5;    // ||produced - recorded|| / ||recorded||
  double min_cosine = -1;  // smallest cosine similarity allowed (< 0: not checked)
};

// "rel_l2=1e-4,max_abs=0.01" applies to every tensor; "actions:rel_l2=1e-3" to tensors named
// "actions" only.
Status parse_tolerance(const std::string& spec, Tolerance& all, std::map<std::string, Tolerance>& per_tensor);

struct ReplayOptions {
  std::string bag;
  std::string node;
  std::string launch_file;          // take the node's configuration from here instead of the bag
  std::string params_file;          // params keyed by node name, over the recorded ones
  std::vector<std::string> sets;    // "key=value" for the node, over everything else
  Tolerance tolerance;
  std::map<std::string, Tolerance> per_tensor;
  std::chrono::milliseconds input_timeout{10000};
  bool skip_damaged = false;  // a damaged bag is a note, not a failure
};

struct TensorResult {
  std::string topic;
  std::size_t index = 0;  // which output on the topic
  std::string tensor;
  std::string shape;
  double max_abs = 0, rel_l2 = 0, cosine = 1;
  bool pass = true;
  std::string problem;  // shape/dtype mismatch, missing tensor
};

struct ReplayReport {
  std::string bag, node, type;
  std::size_t inputs = 0;
  std::size_t ticks = 0;            // timer runs replayed at recorded publish times
  std::size_t trailing_inputs = 0;  // inputs after the node's last recorded output (not fed)
  std::vector<double> latency_ms;  // per input: publish to callback done
  std::map<std::string, std::pair<std::size_t, std::size_t>> outputs;  // topic -> recorded, produced
  std::vector<TensorResult> tensors;
  std::vector<std::string> problems;  // anything beyond tensor tolerances (counts, timeouts)
  std::vector<std::string> notes;     // how the node was set up (recorded params it reuses)

  bool passed() const;
  std::string table() const;
  std::string json() const;
};

// Errors (not failures): unreadable bag, node not in the bag, no inputs recorded, an input
// topic whose recorded type the node does not accept, a node that does not configure.
Expected<ReplayReport> replay_node(const ReplayOptions& options);

}  // namespace edgevla::bag
