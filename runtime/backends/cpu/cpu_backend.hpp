// The CPU backend: OpenBLAS GEMMs plus fused loops, on a pool of `threads` threads. Registered
// as "cpu" when its library loads.
#pragma once

#include <memory>

#include "runtime/backends/backend.hpp"

namespace edgevla::backends::cpu {

Expected<std::unique_ptr<Engine>> make_backbone(const model::Checkpoint& checkpoint,
                                                const EngineOptions& options);
Expected<std::unique_ptr<Engine>> make_action_head(const model::Checkpoint& checkpoint,
                                                   const EngineOptions& options);

}  // namespace edgevla::backends::cpu
