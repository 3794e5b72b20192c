#include "runtime/backends/cuda/engine_common.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace edgevla::backends::cuda {

std::int64_t row_bucket() {
  static const std::int64_t bucket = env_int("EDGEVLA_CUDA_ROW_BUCKET", 16, 1, 64);
  return bucket;
}

bool backbone_chain_enabled() { return env_int("EDGEVLA_CUDA_BACKBONE_CHAIN", 0, 0, 1) == 1; }

DType compute_dtype(const EngineOptions& o) { return o.precision == Precision::kF32 ? DType::kF32 : DType::kBF16; }

void WeightPlan::linear(DevLinear& dst, std::vector<const cpu::Linear*> parts) {
  dst.in = parts.front()->in;
  dst.ld = dst.in;
  dst.out = 0;
  Item w{&dst.w, {}, parts.front()->dtype, act_};
  bool bias = false;
  for (const cpu::Linear* p : parts) {
    w.sources.emplace_back(p->w, p->out * p->in);
    dst.out += p->out;
    bias = bias || !p->bias.empty();
  }
  items_.push_back(std::move(w));
  if (bias) {
    auto b = std::make_unique<std::vector<float>>();
    for (const cpu::Linear* p : parts) {
      if (p->bias.empty()) {
        b->insert(b->end(), static_cast<std::size_t>(p->out), 0.0f);
      } else {
        b->insert(b->end(), p->bias.begin(), p->bias.end());
      }
    }
    items_.push_back(Item{reinterpret_cast<void**>(&dst.bias), {{b->data(), static_cast<std::int64_t>(b->size())}},
                          DType::kF32, DType::kF32});
    if (act_ != DType::kF32) {
      items_.push_back(Item{&dst.bias_act, {{b->data(), static_cast<std::int64_t>(b->size())}}, DType::kF32, act_});
    }
    kept_.push_back(std::move(b));
  }
}

void WeightPlan::linear_padded(DevLinear& dst, const cpu::Linear& src, std::int64_t out_to, std::int64_t in_to) {
  out_to = std::max(out_to, src.out);
  in_to = std::max(in_to, src.in);
  if (out_to == src.out && in_to == src.in) {
    linear(dst, {&src});
    return;
  }
  dst.out = out_to;
  dst.in = in_to;
  dst.ld = in_to;
  Item w{&dst.w, {{src.w, src.out * src.in}}, src.dtype, act_};
  w.rows = src.out;
  w.cols = src.in;
  w.ld = in_to;
  w.count = out_to * in_to;
  items_.push_back(std::move(w));
  if (!src.bias.empty()) {
    auto b = std::make_unique<std::vector<float>>(src.bias);
    b->resize(static_cast<std::size_t>(out_to), 0.0f);
    items_.push_back(Item{reinterpret_cast<void**>(&dst.bias), {{b->data(), out_to}}, DType::kF32, DType::kF32});
    if (act_ != DType::kF32) items_.push_back(Item{&dst.bias_act, {{b->data(), out_to}}, DType::kF32, act_});
    kept_.push_back(std::move(b));
  }
}

void WeightPlan::vector(float*& dst, const std::vector<float>& src) {
  items_.push_back(Item{reinterpret_cast<void**>(&dst), {{src.data(), static_cast<std::int64_t>(src.size())}},
                        DType::kF32, DType::kF32});
}

void WeightPlan::matrix(void*& dst, const void* src, DType src_type, std::int64_t rows, std::int64_t cols) {
  items_.push_back(Item{&dst, {{src, rows * cols}}, src_type, act_});
}

void WeightPlan::place(Arena& arena) {
  arena_bytes_ = 0;
  source_bytes_ = 0;
  for (Item& it : items_) {
    std::int64_t read = 0;
    for (const auto& [p, n] : it.sources) read += n;
    if (it.ld == 0) it.count = read;  // a padded item's count is its padded size
    const std::size_t b = bytes_of(it.dst_type, it.count);
    it.offset = arena.plan(b);
    arena_bytes_ += b;
    source_bytes_ += bytes_of(it.src_type, read);
  }
}

Status WeightPlan::upload(Arena& arena, Uploader& up) {
  for (Item& it : items_) {
    auto* base = static_cast<std::byte*>(arena.at(it.offset));
    *it.dst = base;
    if (it.ld > 0) {
      EDGEVLA_RETURN_IF_ERROR(up.upload_rows(it.sources.front().first, it.src_type, it.rows, it.cols, it.ld, base,
                                             it.dst_type, it.count));
      continue;
    }
    std::size_t at = 0;
    for (const auto& [p, n] : it.sources) {
      EDGEVLA_RETURN_IF_ERROR(up.upload(p, it.src_type, n, base + at, it.dst_type));
      at += bytes_of(it.dst_type, n);
    }
  }
  return Status::ok();
}

namespace {

// D[m, w.out] = A[m, w.in]·Wᵀ on act operands, no bias or epilogue yet.
GemmArgs linear_args(DType act, const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* d,
                     DType d_type, std::int64_t ldd) {
  GemmArgs g;
  g.m = m;
  g.n = w.out;
  g.k = w.in;
  g.a = a;
  g.a_type = act;
  g.lda = lda;
  g.b = w.w;
  g.b_type = act;
  g.ldb = w.ld;
  g.d = d;
  g.d_type = d_type;
  g.ldd = ldd;
  return g;
}

}  // namespace

Status Gemm::operator()(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* d, DType d_type,
                        std::int64_t ldd, float beta, Epilogue ep, const float* bias_override, bool use_bias) const {
  GemmArgs g = linear_args(act, a, m, lda, w, d, d_type, ldd);
  g.beta = beta;
  g.bias = bias_override != nullptr ? bias_override : (use_bias ? w.bias : nullptr);
  g.bias_d = bias_override == nullptr && use_bias && d_type == act ? w.bias_act : nullptr;
  g.epilogue = ep;
  return blas->gemm(stream, g);
}

Expected<int> Gemm::parts(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, float* d,
                          int max_parts) const {
  const GemmArgs g = linear_args(act, a, m, lda, w, d, DType::kF32, w.out);
  EDGEVLA_ASSIGN_OR_RETURN(const int count, blas->k_parts(stream, g, max_parts));
  EDGEVLA_RETURN_IF_ERROR(blas->gemm(stream, k_split_args(g, count)));
  return count;
}

Status Gemm::residual(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* x, DType x_type,
                      float* d, int max_parts, ResidualParts& pending) const {
  if (d != nullptr && max_parts > 1) {
    EDGEVLA_ASSIGN_OR_RETURN(const int count, parts(a, m, lda, w, d, max_parts));
    pending = ResidualParts{count, m * w.out, w.bias};
    return Status::ok();
  }
  pending.count = 0;
  return (*this)(a, m, lda, w, x, x_type, w.out, 1.0f);
}

Status Gemm::residual(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, float* x, float* d,
                      int max_parts, ResidualParts& pending) const {
  return residual(a, m, lda, w, x, DType::kF32, d, max_parts, pending);
}

namespace {
ChainGemmArgs chain_args(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* d,
                         std::int64_t ldd, ChainGemmShape shape) {
  ChainGemmArgs c;
  c.m = m;
  c.n = w.out;
  c.k = w.in;
  c.a = a;
  c.lda = lda;
  c.w = w.w;
  c.ldw = w.ld;
  c.d = d;
  c.ldd = ldd;
  c.bias = shape.parts == 1 ? w.bias : nullptr;
  c.parts = shape.parts;
  c.block_n = shape.block_n;
  return c;
}
}  // namespace

bool Gemm::chain_fits(std::int64_t m, std::int64_t lda, const DevLinear& w, int max_parts) const {
  if (act != DType::kBF16) return false;
  const ChainGemmShape shape = chain_gemm_plan(m, w.out, w.in, sms, max_parts);
  if (shape.parts == 0) return false;
  // Stand-in pointers, aligned as the arena's: only the shape and strides are checked.
  auto* p = reinterpret_cast<void*>(std::uintptr_t{256});
  DevLinear probe = w;
  probe.w = p;
  return chain_gemm_unsupported(chain_args(p, m, lda, probe, p, w.out, shape)) == nullptr;
}

Expected<int> Gemm::chained(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* d,
                            std::int64_t ldd, int max_parts) const {
  const ChainGemmShape shape = chain_gemm_plan(m, w.out, w.in, sms, max_parts);
  if (shape.parts == 0) {
    return invalid_argument("chained GEMM: no launch shape for m " + std::to_string(m) + ", n " +
                            std::to_string(w.out) + ", k " + std::to_string(w.in));
  }
  EDGEVLA_RETURN_IF_ERROR(chain_gemm(stream, chain_args(a, m, lda, w, d, shape.parts == 1 ? ldd : w.out, shape)));
  return shape.parts;
}

int backbone_parts() {
  const char* env = std::getenv("EDGEVLA_CUDA_BACKBONE_PARTS");
  return env != nullptr && std::string_view(env) == "0" ? 1 : kMaxBackboneParts;
}

Ablation Ablation::from_env() {
  Ablation a;
#if defined(EDGEVLA_CUDA_ABLATION)
  if (const char* env = std::getenv("EDGEVLA_CUDA_ABLATE"); env != nullptr) a.list_ = env;
#endif
  return a;
}

bool comma_list_has(std::string_view list, std::string_view name) {
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    if (list.substr(at, end - at) == name) return true;
    at = end + 1;
  }
  return false;
}

bool Ablation::skip(std::string_view kernel) const { return !list_.empty() && comma_list_has(list_, kernel); }

std::string CudaEngineBase::describe() const {
  return "cuda:" + std::to_string(info_.index) + " " + std::string(dtype_name(act_)) + " (" + info_.name + ")" +
         (describe_extra_.empty() ? std::string() : ", " + describe_extra_) +
         (knobs_set_in_env().empty() ? std::string() : ", knobs " + knobs_set_in_env()) +
         (ablation_.list().empty() ? std::string() : ", PROFILING: kernels left out (" + ablation_.list() + ")");
}

Status CudaEngineBase::init_device() {
  ablation_ = Ablation::from_env();
  if (!ablation_.list().empty()) {
    spdlog::warn("{} ({}): EDGEVLA_CUDA_ABLATE={}: those kernels are left out, for profiling; outputs are wrong",
                 stage(), family(), ablation_.list());
  }
  // Stages named in EDGEVLA_CUDA_PRIORITY run on a high-priority stream (for stages that share
  // the device at once, e.g. bench/cuda_pi0.cpp --overlap-probe).
  const char* prio = std::getenv("EDGEVLA_CUDA_PRIORITY");
  EDGEVLA_ASSIGN_OR_RETURN(stream_, Stream::create(prio != nullptr && comma_list_has(prio, stage())));
  EDGEVLA_ASSIGN_OR_RETURN(blas_, Blas::create());
  return Status::ok();
}

Status CudaEngineBase::allocate_and_upload(WeightPlan& weights, const std::string& what,
                                           const std::vector<const model::SafetensorsFile*>& files,
                                           const EngineOptions& o) {
  const auto need = static_cast<std::int64_t>(arena_.planned());
  if (o.memory_budget_bytes > 0 && process_device_bytes() + need > o.memory_budget_bytes) {
    return resource_exhausted(what + " needs " + std::to_string(need >> 20) + " MiB of device memory (weights " +
                              std::to_string(weights.bytes() >> 20) + " MiB) but gpu_memory_budget_mb allows " +
                              std::to_string(o.memory_budget_bytes >> 20) + " MiB and this process holds " +
                              std::to_string(process_device_bytes() >> 20) +
                              " MiB already; raise the budget, use a smaller checkpoint, or add cpu to the backend list");
  }
  EDGEVLA_RETURN_IF_ERROR(arena_.allocate(what));
  EDGEVLA_ASSIGN_OR_RETURN(Uploader up, Uploader::create(stream_.get(), what, weights.source_bytes()));
  EDGEVLA_RETURN_IF_ERROR(weights.upload(arena_, up));
  EDGEVLA_RETURN_IF_ERROR(up.finish());
  for (const model::SafetensorsFile* f : files) release_mapped_pages(f->mapped_bytes());
  spdlog::info("{}: {} MiB on {} (weights {} MiB, buffers {} MiB)", what, arena_.size() >> 20, info_.name,
               weights.bytes() >> 20, (static_cast<std::int64_t>(arena_.size()) - weights.bytes()) >> 20);
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
