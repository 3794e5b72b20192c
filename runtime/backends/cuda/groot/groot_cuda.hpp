// What the two GR00T N1.6 engines of the cuda backend share beyond every cuda engine's base
// (engine_common.hpp): the family's name, the upload of its sharded checkpoint, and the
// timestep tables.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/backends/cuda/engine_common.hpp"
#include "runtime/model/groot/groot_family.hpp"

namespace edgevla::backends::cuda::groot {

class GrootCudaEngine : public CudaEngineBase {
 protected:
  GrootCudaEngine(const model::StageSpec& spec, DeviceInfo info, DType act)
      : CudaEngineBase(std::string(model::groot::kFamily), spec, std::move(info), act) {}
  // Checks the plan against the budget, allocates, uploads the weights and releases the mapped
  // pages of every shard.
  Status allocate_and_upload(WeightPlan& weights, const model::groot::Checkpoint& ck, const EngineOptions& o);
  void log_plans() const { CudaEngineBase::log_plans("groot " + stage_ + " (cuda)"); }
};

// EDGEVLA_CUDA_GROOT_OVERLAP (read at each activate): 1 lets a chunk's host-side and once-a-chunk
// work run beside device work that does not feed it: the backbone checks its pixel count after
// queueing its pass, the action head copies its host inputs before waiting for the features'
// producer and makes the text blocks' keys|values on a side stream beside the image blocks'. 2
// (default) also puts the state token and W2's τ product on the side stream, ahead of the text
// blocks', instead of after the image blocks' on the main one. 0: each in turn, as before run 59
// (to compare).
int overlap_level();
bool overlap_enabled();  // overlap_level() > 0

// The timestep bucket of Euler step k of n (upstream: int(k / n · buckets), in double).
int timestep_bucket(int k, int n, int buckets);

// For each step k < steps, from its integer bucket, in float32 as upstream (notes §8): the DiT
// timestep embedder's sinusoid [cos | sin] into sinus [steps, channels], and the action
// encoder's τ = [sin | cos] into tau [steps, width].
void timestep_tables(int steps, int buckets, std::int64_t channels, std::int64_t width,
                     std::vector<float>& sinus, std::vector<float>& tau);

}  // namespace edgevla::backends::cuda::groot
