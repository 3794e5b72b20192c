// Where a buffer's bytes live. CPU is the only device with an allocator in this build;
// CUDA buffers arrive with the CUDA backend, which registers its allocator with
// register_allocator() (runtime/core/buffer.hpp). Code that receives a tensor checks its device, so a CUDA
// tensor reaching a CPU-only stage is a clear error, not a crash.
#pragma once

#include <string>
#include <string_view>

#include "runtime/core/status.hpp"

namespace edgevla {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::kCpu, 0}; }
  static constexpr Device cuda(int i) { return {DeviceType::kCuda, i}; }

  bool is_cpu() const { return type == DeviceType::kCpu; }
  bool operator==(const Device&) const = default;
  // "cpu" or "cuda:N".
  std::string to_string() const;
};

// Accepts "cpu", "cuda" (index 0) and "cuda:N".
Expected<Device> parse_device(std::string_view text);

}  // namespace edgevla
