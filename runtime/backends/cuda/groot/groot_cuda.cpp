#include "runtime/backends/cuda/groot/groot_cuda.hpp"

#include <spdlog/spdlog.h>

#include <cmath>

namespace edgevla::backends::cuda::groot {

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

std::string GrootCudaEngine::describe() const {
  return "cuda:" + std::to_string(info_.index) + " " + std::string(dtype_name(act_)) + " (" +
         info_.name + ")";
}

void GrootCudaEngine::log_plans() const { blas_->log_plans("groot " + stage_ + " (cuda)"); }

Status GrootCudaEngine::init_device() {
  EDGEVLA_ASSIGN_OR_RETURN(stream_, Stream::create());
  EDGEVLA_ASSIGN_OR_RETURN(blas_, Blas::create());
  return Status::ok();
}

Status GrootCudaEngine::allocate_and_upload(WeightPlan& weights, const model::groot::Checkpoint& ck,
                                            const EngineOptions& o) {
  const std::string what = "groot " + stage_ + " (cuda)";
  const auto need = static_cast<std::int64_t>(arena_.planned());
  if (o.memory_budget_bytes > 0 && process_device_bytes() + need > o.memory_budget_bytes) {
    return resource_exhausted(
        what + " needs " + std::to_string(need >> 20) + " MiB of device memory (weights " +
        std::to_string(weights.bytes() >> 20) + " MiB) but gpu_memory_budget_mb allows " +
        std::to_string(o.memory_budget_bytes >> 20) + " MiB and this process holds " +
        std::to_string(process_device_bytes() >> 20) +
        " MiB already; raise the budget, use a smaller checkpoint, or add cpu to the backend list");
  }
  EDGEVLA_RETURN_IF_ERROR(arena_.allocate(what));
  EDGEVLA_ASSIGN_OR_RETURN(Uploader up,
                           Uploader::create(stream_.get(), what, weights.source_bytes()));
  EDGEVLA_RETURN_IF_ERROR(weights.upload(arena_, up));
  EDGEVLA_RETURN_IF_ERROR(up.finish());
  for (const model::SafetensorsFile& shard : ck.shards())
    release_mapped_pages(shard.mapped_bytes());
  spdlog::info("{}: {} MiB on {} (weights {} MiB, buffers {} MiB)", what, arena_.size() >> 20,
               info_.name, weights.bytes() >> 20,
               (static_cast<std::int64_t>(arena_.size()) - weights.bytes()) >> 20);
  return Status::ok();
}

}  // namespace edgevla::backends::cuda::groot
