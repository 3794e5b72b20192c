// The cpu backend's answer to `edgevla launch --check`: it runs wherever the process does; the
// options it cannot honour (a GPU device, bf16, a device memory budget) are refused by name.
#include "runtime/backends/backend.hpp"

#include <cstdio>

namespace edgevla::backends::cpu {
namespace {

const bool kDeviceCheckRegistered =
    register_device_check("cpu", [](const model::StageSpec& stage, const EngineOptions& options, std::string& note) {
      EDGEVLA_RETURN_IF_ERROR(check_cpu_options(options, "cpu " + stage.name, 0));
      char mib[32];
      std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(stage.weight_bytes) / (1 << 20));
      note = std::string("cpu, ") + mib + " MiB of weights read from the memory-mapped checkpoint";
      return Status::ok();
    });

}  // namespace
}  // namespace edgevla::backends::cpu
