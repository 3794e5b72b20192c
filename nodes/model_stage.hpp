// What the two model stages (backbone, action_head) share, whatever the model family: opening
// the checkpoint through its family, making the engine of the first backend of the chain that
// activates, and reporting which one runs and its memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/backends/backend.hpp"
#include "runtime/model/family.hpp"
#include <spdlog/logger.h>

#include "runtime/node/node.hpp"

namespace edgevla::nodes {

struct ModelStageParams {
  // clang-format off
  Param<std::string> checkpoint{"checkpoint", "",
      {"checkpoint folder (config.json + model.safetensors; `edgevla model init` makes one)", {}, {}, {}, true}};
  Param<std::string> family{"family", "auto",
      {"model family of the checkpoint (auto: recognized from its files)", {}, {}, {}, true}};
  Param<std::vector<std::string>> backend{"backend", {"cpu"},
      {"inference backend, or a list tried in order until one activates (e.g. [cuda, cpu])", {}, {}, {}, true}};
  Param<int> threads{"threads", 0, {"worker threads of the cpu backend (0: all cores)", 0, 1024, {}, true}};
  Param<int> cuda_device{"cuda_device", 0, {"GPU index for the cuda backend", 0, 64, {}, true}};
  Param<std::string> precision{"precision", "auto",
      {"compute precision: auto (cpu f32, cuda bf16), f32 (same kernels in f32, to tell kernel bugs from "
       "rounding) or bf16", {}, {}, {"auto", "f32", "bf16"}, true}};
  Param<double> gpu_memory_budget_mb{"gpu_memory_budget_mb", 0.0,
      {"device memory this process's engines may hold (0: no limit); a stage that would not fit is refused at "
       "activate", 0.0, 1e9, {}, true}};
  Param<std::string> model_type{"model_type", "auto",
      {"refuse a checkpoint of another variant (pi0, pi05; auto: any)", {}, {}, {}, true}};
  // clang-format on

  Status declare(NodeSpec& spec);
  // After every param of the node is declared: checks the checkpoint param, refuses a weights
  // file of the other variant, and declares (from the header; nothing is read) the bytes the
  // stage will load, so heavy stages are activated first. With set_device_preflight, also
  // checks that a backend of the chain has a device that can take the stage.
  Status check(NodeSpec& spec, std::string_view stage);
};

// `edgevla launch --check`: from now on, ModelStageParams::check also asks each backend of the
// node's chain whether its device can take the stage (present, new enough, the weights fit),
// and fails when none can. Off in running graphs: a check would start a GPU context in every
// process that configures a node.
void set_device_preflight(bool on);

// `t` as an engine reads its input `spec`: itself when on the host or on the device the engine
// reads without a copy (spec.device), else a host copy (a device tensor from a stage on another
// device, or from a backend this engine does not share). `copies` counts the copies made.
Expected<Tensor> for_engine(const backends::TensorSpec& spec, const Tensor& t, std::uint64_t& copies);

struct ModelStage {
  std::shared_ptr<const model::Model> model;
  std::unique_ptr<backends::Engine> engine;
  int threads = 1;  // worker threads the engine runs with (param threads, 0 resolved to the cores)
  std::uint64_t host_copies = 0;  // inputs copied off another device for this engine (for_engine)

  // Opens the checkpoint and builds the engine of `stage` on the first backend of the chain
  // that can (heavy: call from activate()). Logs the choice, and why earlier ones failed.
  Status open(spdlog::logger& log, const ModelStageParams& params, std::string_view stage,
              int max_steps = backends::kDefaultMaxSteps);
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
