// What the two model stages (backbone, action_head) share: opening the checkpoint with the
// expected variant, making the engine of the configured backend, and reporting its memory.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/backends/backend.hpp"
#include "runtime/model/checkpoint.hpp"
#include "runtime/node/node.hpp"

namespace edgevla::nodes {

struct ModelStageParams {
  // clang-format off
  Param<std::string> checkpoint{"checkpoint", "",
      {"checkpoint folder (config.json + model.safetensors; `edgevla model init` makes one)", {}, {}, {}, true}};
  Param<std::string> backend{"backend", "cpu",
      {"inference backend (cpu; cuda/tensorrt when built)", {}, {}, {}, true}};
  Param<int> threads{"threads", 0, {"worker threads of the backend (0: all cores)", 0, 1024, {}, true}};
  Param<std::string> model_type{"model_type", "auto",
      {"refuse a checkpoint of the other variant", {}, {}, {"auto", "pi0", "pi05"}, true}};
  // clang-format on

  Status declare(NodeSpec& spec);
  // After every param of the node is declared: checks the checkpoint param, refuses a weights
  // file of the other variant, and declares (from the header; nothing is read) the bytes the
  // stage will load, so heavy stages are activated first.
  Status check(NodeSpec& spec, backends::Stage stage);
};

// Bytes of the weights `stage` reads from `file` (by name: the prefix model's tensors for the
// backbone, the rest for the action head; heads saved but never used are left out).
std::int64_t stage_weight_bytes(const model::SafetensorsFile& file, backends::Stage stage);

struct ModelStage {
  std::optional<model::Checkpoint> checkpoint;
  std::unique_ptr<backends::Engine> engine;
  int threads = 1;  // worker threads the engine runs with (param threads, 0 resolved to the cores)

  // Opens the checkpoint and builds the engine of `stage` (heavy: call from activate()).
  Status open(const ModelStageParams& params, backends::Stage stage, int max_steps = backends::kDefaultMaxSteps);
  void close();
  // True at most once a second: counting resident weight pages (mincore over the mapping)
  // costs ~0.1 ms per 150 MB, so it is not done on every inference; NodeStatus goes out once
  // a second anyway.
  bool memory_report_due();
  // Stamps the thread count on an output (field "replay.param.threads"): the CPU backend is bit
  // for bit the same for a given thread count, not across counts, so replay on another machine
  // runs with the recorded count.
  void stamp_replay_params(Message& m) const;

 private:
  std::int64_t last_memory_report_ns_ = 0;
};

}  // namespace edgevla::nodes
