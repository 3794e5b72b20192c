#include "runtime/backends/cuda/groot/groot_cuda.hpp"

#include <cmath>

namespace edgevla::backends::cuda::groot {

int overlap_level() { return env_int("EDGEVLA_CUDA_GROOT_OVERLAP", 2, 0, 2); }
bool overlap_enabled() { return overlap_level() > 0; }

int timestep_bucket(int k, int n, int buckets) {
  return static_cast<int>((static_cast<double>(k) / static_cast<double>(n)) * buckets);
}

void timestep_tables(int steps, int buckets, std::int64_t channels, std::int64_t width,
                     std::vector<float>& sinus, std::vector<float>& tau) {
  const std::int64_t half = channels / 2, th = width / 2;
  sinus.assign(static_cast<std::size_t>(steps * channels), 0.0f);
  tau.assign(static_cast<std::size_t>(steps * width), 0.0f);
  const float base = -std::log(10000.0f);
  const float step_ln = std::log(10000.0f) / static_cast<float>(th);
  for (int k = 0; k < steps; ++k) {
    const int t = timestep_bucket(k, steps, buckets);
    float* sr = sinus.data() + static_cast<std::int64_t>(k) * channels;
    for (std::int64_t i = 0; i < half; ++i) {
      const float a = static_cast<float>(t) *
                      std::exp(base * static_cast<float>(i) / static_cast<float>(half - 1));
      sr[i] = std::cos(a);
      sr[half + i] = std::sin(a);
    }
    float* tr = tau.data() + static_cast<std::int64_t>(k) * width;
    for (std::int64_t i = 0; i < th; ++i) {
      const float a = static_cast<float>(t) * std::exp(-static_cast<float>(i) * step_ln);
      tr[i] = std::sin(a);
      tr[th + i] = std::cos(a);
    }
  }
}

Status GrootCudaEngine::allocate_and_upload(WeightPlan& weights, const model::groot::Checkpoint& ck,
                                            const EngineOptions& o) {
  std::vector<const model::SafetensorsFile*> files;
  for (const model::SafetensorsFile& shard : ck.shards()) files.push_back(&shard);
  return CudaEngineBase::allocate_and_upload(weights, "groot " + stage_ + " (cuda)", files, o);
}

}  // namespace edgevla::backends::cuda::groot
