// What the two GR00T N1.6 engines of the cuda backend share: the engine base (device, owned
// stream, cuBLASLt, one device arena for weights and buffers, the budget check and the upload
// through the bounded pinned staging path, then the shards' mapped pages released). The weight
// plan, device linears and GEMM helper are the pi0 engines' (pi0/pi0_cuda.hpp): nothing in them
// is pi0-specific.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/backends/cuda/pi0/pi0_cuda.hpp"
#include "runtime/model/groot/groot_family.hpp"

namespace edgevla::backends::cuda::groot {

using pi0::bytes_of;
using pi0::compute_dtype;
using pi0::DevLinear;
using pi0::Gemm;
using pi0::padded_rows;
using pi0::WeightPlan;

class GrootCudaEngine : public EngineBase {
 public:
  std::string describe() const override;
  std::int64_t device_bytes() const override { return static_cast<std::int64_t>(arena_.size()); }
  std::int64_t resident_bytes() const override { return 0; }

 protected:
  GrootCudaEngine(const model::StageSpec& spec, DeviceInfo info, DType act)
      : EngineBase("cuda", std::string(model::groot::kFamily), spec, DeviceType::kCuda),
        info_(std::move(info)),
        act_(act) {}
  // Stream and cuBLASLt; then the caller plans the arena.
  Status init_device();
  // Checks the plan against the budget, allocates, uploads the weights and releases the mapped
  // pages of every shard.
  Status allocate_and_upload(WeightPlan& weights, const model::groot::Checkpoint& ck,
                             const EngineOptions& o);
  Gemm gemm() { return Gemm{blas_.get(), stream_.get(), act_}; }
  // After a capture: how many GEMM shapes run on which kernel (every plan at debug).
  void log_plans() const;

  DeviceInfo info_;
  DType act_;
  Stream stream_;
  std::unique_ptr<Blas> blas_;
  Arena arena_;
};

// The timestep bucket of Euler step k of n (upstream: int(k / n · buckets), in double).
int timestep_bucket(int k, int n, int buckets);

// For each step k < steps, from its integer bucket, in float32 as upstream (notes §8): the DiT
// timestep embedder's sinusoid [cos | sin] into sinus [steps, channels], and the action
// encoder's τ = [sin | cos] into tau [steps, width].
void timestep_tables(int steps, int buckets, std::int64_t channels, std::int64_t width,
                     std::vector<float>& sinus, std::vector<float>& tau);

// Buffers planned before the arena exists and resolved after: buf(p, bytes) then resolve().
class BufferPlan {
 public:
  explicit BufferPlan(Arena& arena) : arena_(arena) {}
  template <class T>
  void operator()(T*& p, std::size_t bytes) {
    items_.emplace_back(reinterpret_cast<void**>(&p), arena_.plan(bytes));
  }
  void resolve() const {
    for (const auto& [p, off] : items_) *p = arena_.at(off);
  }

 private:
  Arena& arena_;
  std::vector<std::pair<void**, std::size_t>> items_;
};

}  // namespace edgevla::backends::cuda::groot
