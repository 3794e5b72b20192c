// The action heads' use of the warpgroup GEMM (contract in wgmma_plan.hpp).
#include "runtime/backends/cuda/wgmma_plan.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

namespace edgevla::backends::cuda {

bool WgmmaChoice::asked(std::string_view name) const {
  if (!on) return false;
  return list == "all" || list == "1" || comma_list_has(list, name);
}

WgmmaChoice wgmma_choice(DType act, std::string_view other_mode, std::string_view what, int default_parts) {
  WgmmaChoice c;
  c.caps.max_parts = std::clamp(default_parts, 1, kMaxKParts);
  const char* env = std::getenv("EDGEVLA_CUDA_WGMMA");
  c.list = env != nullptr && env[0] != '\0' ? std::string(env) : std::string("all");
  if (c.list == "0") return c;
  if (act != DType::kBF16 || !other_mode.empty() || !wgmma_gemm_available()) {
    if (env != nullptr) {
      spdlog::info("{}: EDGEVLA_CUDA_WGMMA ignored ({})", what,
                   !other_mode.empty() ? std::string(other_mode) + " is on"
                                       : std::string("it needs bf16 and compute capability 9.0"));
    }
    return c;
  }
  c.on = true;
  const char* chain = std::getenv("EDGEVLA_CUDA_WGMMA_CHAIN");
  c.chain = !(chain != nullptr && std::string_view(chain) == "0");
  const char* rope = std::getenv("EDGEVLA_CUDA_WGMMA_ROPE");
  c.rope = rope != nullptr && std::string_view(rope) == "1";
  const char* mlp = std::getenv("EDGEVLA_CUDA_WGMMA_MLP");
  c.mlp = mlp != nullptr && std::string_view(mlp) == "1";
  const char* w8 = std::getenv("EDGEVLA_CUDA_WGMMA_W8");
  c.w8 = w8 != nullptr && std::string_view(w8) == "1";
  c.heads = 3;
  if (const char* heads = std::getenv("EDGEVLA_CUDA_WGMMA_HEADS"); heads != nullptr) {
    const std::string_view v(heads);
    c.heads = v == "1" || v == "all" || v.empty() ? 3 : v == "self" ? 1 : v == "cross" ? 2 : 0;
    if (c.heads == 0 && v != "0") {
      spdlog::warn("{}: EDGEVLA_CUDA_WGMMA_HEADS is '{}'; use 1 (every attention block, the default), self, cross or "
                   "0 (off); it is off",
                   what, v);
    }
  }
  if (const char* norm = std::getenv("EDGEVLA_CUDA_GEMM_NORM"); norm != nullptr) {
    const std::string_view v(norm);
    c.norm = v == "1" ? 1 : v == "cluster" ? 2 : 0;
    if (c.norm == 0 && !v.empty() && v != "0") {
      spdlog::warn("{}: EDGEVLA_CUDA_GEMM_NORM is '{}'; use 1 (k parts), cluster (k slices) or 0 (off, the "
                   "default); it stays off",
                   what, v);
    }
  }
  if (const char* parts = std::getenv("EDGEVLA_CUDA_WGMMA_PARTS"); parts != nullptr) {
    c.caps.max_parts = std::clamp(std::atoi(parts), 1, kMaxKParts);
  }
  if (const char* split = std::getenv("EDGEVLA_CUDA_WGMMA_SPLIT"); split != nullptr) {
    c.caps.max_split = std::clamp(std::atoi(split), 1, kWgmmaMaxSplit);
  }
  return c;
}

Status wgmma_tile_in_place(cudaStream_t stream, const std::vector<WgmmaWeight>& weights, std::string_view what) {
  std::size_t largest = 0;
  for (const WgmmaWeight& t : weights) {
    const DevLinear& w = *t.w;
    if (w.ld != w.in || !wgmma_gemm_fits(1, w.out, w.in, t.epilogue) || (t.head_dim > 0 && w.out % t.head_dim != 0)) {
      return internal_error(std::string(what) + ": a weight of " + std::to_string(w.out) + " x " +
                            std::to_string(w.in) + " (row stride " + std::to_string(w.ld) +
                            ") does not fit the warpgroup GEMM it was planned for");
    }
    largest = std::max(largest, wgmma_tiled_bytes(w.out, w.in));
  }
  if (largest == 0) return Status::ok();
  void* scratch = nullptr;
  const cudaError_t got = cudaMalloc(&scratch, largest);
  if (got != cudaSuccess) {
    return resource_exhausted(std::string(what) + ": " + std::to_string(largest) +
                              " bytes of scratch to lay out weights for the warpgroup GEMM: " +
                              cudaGetErrorString(got) + " (EDGEVLA_CUDA_WGMMA=0 runs without it)");
  }
  Status st = Status::ok();
  for (const WgmmaWeight& t : weights) {
    DevLinear& w = *t.w;
    st = t.head_dim > 0 ? wgmma_heads_tile_weight(stream, w.w, w.out, w.in, w.ld, t.head_dim, scratch)
                        : wgmma_tile_weight(stream, w.w, w.out, w.in, w.ld, t.epilogue, scratch, t.rope);
    if (!st.is_ok()) break;
    const cudaError_t copied =
        cudaMemcpyAsync(w.w, scratch, wgmma_tiled_bytes(w.out, w.in), cudaMemcpyDeviceToDevice, stream);
    if (copied != cudaSuccess) {
      st = internal_error(std::string(what) + ": tiling a weight: " + cudaGetErrorString(copied));
      break;
    }
  }
  const cudaError_t synced = cudaStreamSynchronize(stream);
  cudaFree(scratch);
  EDGEVLA_RETURN_IF_ERROR(st);
  if (synced != cudaSuccess) return internal_error(std::string(what) + ": tiling: " + cudaGetErrorString(synced));
  return Status::ok();
}

Expected<int> wgmma_linear(cudaStream_t stream, const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w,
                           WgmmaEpilogue epilogue, void* d, std::int64_t ldd, int max_parts, const WgmmaLaunch& how,
                           const WgmmaRope& rope, const float* addend, std::int64_t ld_add) {
  WgmmaGemmArgs g;
  g.addend = addend, g.ld_add = ld_add;
  g.a = a, g.m = m, g.k = w.in, g.lda = lda;
  g.w_tiled = w.w, g.n = w.out;
  g.d = d, g.ldd = ldd;
  g.epilogue = epilogue;
  g.rope = rope;
  if (max_parts > 1) {
    g.epilogue = WgmmaEpilogue::kF32Parts;
    g.k_parts = wgmma_k_parts(w.out, w.in, std::min(max_parts, how.max_parts), how.multiprocessors);
    g.part_stride = m * ldd;
  } else {
    if (epilogue != WgmmaEpilogue::kGeglu) g.bias = w.bias;
    if (epilogue != WgmmaEpilogue::kRope && m <= kWgmmaMaxRows) {
      g.k_split = wgmma_k_split(w.out, w.in, how.max_split, how.multiprocessors);
    }
  }
  EDGEVLA_RETURN_IF_ERROR(wgmma_gemm(stream, g));
  return g.k_parts;
}

int wgmma_norm_parts(std::int64_t n, std::int64_t k, int max_parts, const WgmmaLaunch& how) {
  const int parts = wgmma_k_parts(n, k, std::min(max_parts, how.max_parts), how.multiprocessors);
  return std::min(parts, kWgmmaMaxSplit);
}

bool wgmma_linear_norm_fits(std::int64_t m, std::int64_t n, std::int64_t k, int max_parts, const WgmmaLaunch& how,
                            bool clusters) {
  const int parts = wgmma_norm_parts(n, k, max_parts, how);
  return wgmma_norm_fits(m, n, clusters ? parts : 1, clusters ? 1 : parts);
}

Status wgmma_linear_norm(cudaStream_t stream, const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w,
                         const WgmmaNorm& norm, void* y, std::int64_t ldy, int max_parts, const WgmmaLaunch& how,
                         bool clusters) {
  WgmmaGemmArgs g;
  g.a = a, g.m = m, g.k = w.in, g.lda = lda;
  g.w_tiled = w.w, g.n = w.out;
  g.d = y, g.ldd = ldy;
  g.epilogue = WgmmaEpilogue::kNorm;
  g.bias = w.bias;
  g.norm = norm;
  const int parts = wgmma_norm_parts(w.out, w.in, max_parts, how);
  (clusters ? g.k_split : g.k_parts) = parts;
  return wgmma_gemm(stream, g);
}

namespace {
std::size_t aligned256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }
}  // namespace

std::size_t WgmmaW8Weights::bytes(const std::vector<Entry>& entries) {
  std::size_t total = 0;
  for (const Entry& e : entries) {
    total += aligned256(wgmma_w8_tiled_bytes(e.w->out, e.w->in)) + aligned256(static_cast<std::size_t>(e.w->out) * 4);
  }
  return total;
}

Status WgmmaW8Weights::quantize(cudaStream_t stream, void* buffer, const std::vector<Entry>& entries) {
  map_.clear();
  auto* at = static_cast<std::byte*>(buffer);
  for (const Entry& e : entries) {
    const DevLinear& w = *e.w;
    Quantised q;
    q.form = e.form;
    q.q = at;
    at += aligned256(wgmma_w8_tiled_bytes(w.out, w.in));
    q.scales = reinterpret_cast<const float*>(at);
    at += aligned256(static_cast<std::size_t>(w.out) * 4);
    // The tiling follows the form (the GeGLU form pairs gate and up rows); the others share one.
    const WgmmaW8Epilogue layout = e.form == WgmmaW8Epilogue::kGeglu ? e.form : WgmmaW8Epilogue::kBf16;
    EDGEVLA_RETURN_IF_ERROR(wgmma_w8_quantize(stream, w.w, w.out, w.in, w.ld, const_cast<void*>(q.q),
                                              const_cast<float*>(q.scales), layout));
    map_.emplace(e.w, q);
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return Status::ok();
}

Expected<int> WgmmaW8Weights::linear(cudaStream_t stream, const void* a, std::int64_t m, std::int64_t lda,
                                     const DevLinear& w, void* d, std::int64_t ldd, int max_parts,
                                     const WgmmaLaunch& how) const {
  const auto it = map_.find(&w);
  if (it == map_.end()) return internal_error("wgmma int8 weights: a projection without its int8 copy");
  const Quantised& q = it->second;
  WgmmaW8Args g;
  g.a = a, g.m = m, g.k = w.in, g.lda = lda;
  g.w_tiled = q.q, g.scales = q.scales, g.n = w.out;
  g.d = d, g.ldd = ldd;
  if (max_parts > 1) {
    g.epilogue = WgmmaW8Epilogue::kF32Parts;
    g.k_parts = wgmma_k_parts(w.out, w.in, std::min(max_parts, how.max_parts), how.multiprocessors);
    g.part_stride = m * ldd;
  } else {
    g.epilogue = q.form;
    if (q.form != WgmmaW8Epilogue::kGeglu) g.bias = w.bias;
  }
  EDGEVLA_RETURN_IF_ERROR(wgmma_w8_gemm(stream, g));
  return g.k_parts;
}

}  // namespace edgevla::backends::cuda
