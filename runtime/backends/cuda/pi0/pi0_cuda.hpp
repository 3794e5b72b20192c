// What the two pi0 / pi0.5 engines of the cuda backend share beyond every cuda engine's base
// (engine_common.hpp): the family's name, the upload of its one checkpoint file, and the log
// prefix of their GEMM plans.
#pragma once

#include <string>

#include "runtime/backends/cpu/pi0/pi0_weights.hpp"
#include "runtime/backends/cuda/engine_common.hpp"
#include "runtime/model/pi0/pi0_family.hpp"

namespace edgevla::backends::cuda::pi0 {

class CudaEngine : public CudaEngineBase {
 protected:
  CudaEngine(const model::StageSpec& spec, DeviceInfo info, DType act)
      : CudaEngineBase(std::string(model::pi0::kFamily), spec, std::move(info), act) {}
  // Checks the plan against the budget and the free memory, allocates, uploads the weights
  // and releases the mapped pages of the checkpoint.
  Status allocate_and_upload(WeightPlan& weights, const model::pi0::Pi0Model& model, const EngineOptions& o) {
    return CudaEngineBase::allocate_and_upload(weights, stage_ + " (cuda, " + std::string(model.variant()) + ")",
                                               {&model.file()}, o);
  }
  void log_plans() const { CudaEngineBase::log_plans(stage_ + " (cuda)"); }
};

}  // namespace edgevla::backends::cuda::pi0
