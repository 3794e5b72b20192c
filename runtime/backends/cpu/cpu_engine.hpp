// What every CPU engine shares beyond the binding bookkeeping (EngineBase): its kernel context
// (the thread pool of EngineOptions::threads), no device memory, and how it describes itself in
// logs, `node info` and NodeStatus.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "runtime/backends/cpu/kernels.hpp"
#include "runtime/backends/engine_base.hpp"

namespace edgevla::backends::cpu {

class CpuEngine : public EngineBase {
 public:
  std::string describe() const override { return "cpu f32 (" + std::to_string(ctx_.pool().size()) + " threads)"; }
  std::int64_t device_bytes() const override { return 0; }

 protected:
  CpuEngine(std::string family, const model::StageSpec& spec, const EngineOptions& options)
      : EngineBase("cpu", std::move(family), spec, DeviceType::kCpu), ctx_(options.threads) {}

  KernelContext ctx_;
};

}  // namespace edgevla::backends::cpu
