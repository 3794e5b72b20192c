// Row normalisations of the cuda backend: Gemma RMSNorm (with the residual add fused in front),
// pi0.5's adaptive RMSNorm and SigLIP's LayerNorm.
//
// One block per row. Each thread keeps its part of the row in registers (ITEMS chunks of V
// elements, chunk c of the row at threads c, c + blockDim, ...), so x is read once; the sums go
// through warp shuffles and one shared-memory exchange between warps. V = 8 (two 16-byte loads
// of f32, one of bf16) when the row width is a multiple of 8 and every pointer is 16-byte
// aligned, else 1 (plain scalar accesses, for odd widths).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/kernels/launch.cuh"

namespace edgevla::backends::cuda {

using ew::aligned16;
using ew::load;
using ew::store;
using ew::with_act;

namespace {

constexpr int kMaxThreads = 512;  // 128 registers a thread: room for every residual part in flight
constexpr int kMaxItems = 4;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block (blockDim.x a multiple of 32), returned to every thread. Every warp adds
// the per-warp partials itself, so no second barrier is needed to broadcast; the trailing
// barrier lets a following call reuse `partials`.
__device__ __forceinline__ float block_sum(float v, float* partials) {
  v = warp_sum(v);
  const int warps = static_cast<int>(blockDim.x) >> 5;
  if (warps == 1) return v;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  if (lane == 0) partials[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = lane < warps ? partials[lane] : 0.0f;
  t = warp_sum(t);
  __syncthreads();
  return t;
}

enum class NormKind { kRms, kAda, kLayer };

// One row per block.
//   kRms:   p0 = w;      y = x·inv·(1 + w)           (res: x += res first, written back to x)
//   kAda:   p0 = scale;  p1 = shift; y = x·inv·(1 + scale) + shift
//           (res: x += res · gate first, written back to x: pi0.5's gated residual fused in)
//   kLayer: p0 = w;      p1 = b;     y = (x - mean)·inv·w + b  (res: x += res first, written back)
// res is the sum of `parts` tensors `part_stride` elements apart, added in order, plus res_bias
// when given (a k-split GEMM's products and its bias; ResidualParts in kernels.hpp).
constexpr int kMaxParts = 8;

template <class TR, int V>
__device__ __forceinline__ void load_residual(const TR* res, std::int64_t at, int parts, std::int64_t part_stride,
                                              const float* __restrict__ res_bias, std::int64_t col, float (&r)[V]) {
  load<V>(res + at, r);
  if (parts > 1) {
    float q[kMaxParts - 1][V];
#pragma unroll
    for (int p = 1; p < kMaxParts; ++p) {
      if (p < parts) load<V>(res + at + p * part_stride, q[p - 1]);
    }
#pragma unroll
    for (int p = 1; p < kMaxParts; ++p) {
      if (p < parts) {
#pragma unroll
        for (int j = 0; j < V; ++j) r[j] += q[p - 1][j];
      }
    }
  }
  if (res_bias != nullptr) {
    float b[V];
    load<V>(res_bias + col, b);
#pragma unroll
    for (int j = 0; j < V; ++j) r[j] += b[j];
  }
}

template <NormKind K, class TY, class TR, int V, int ITEMS, class TX = float>
__global__ void __launch_bounds__(kMaxThreads) norm_kernel(TX* x, const TR* res, const float* __restrict__ gate,
                                                             std::int64_t width, const float* __restrict__ p0,
                                                             const float* __restrict__ p1, float eps, TY* y,
                                                             int parts, std::int64_t part_stride,
                                                             const float* __restrict__ res_bias) {
  __shared__ float partials[32];
  chain_enter();
  const std::int64_t row = blockIdx.x;
  TX* xr = x + row * width;
  const std::int64_t chunks = width / V;
  float v[ITEMS][V];
  float s = 0.0f;
  // One chunk a thread (rows up to 4096 wide): the row's parameters are loaded before the
  // reduction, so their round trip overlaps it instead of following it.
  constexpr bool kEarlyParams = ITEMS == 1;
  float pa[V], pb[V];
  if constexpr (kEarlyParams) {
    if (static_cast<std::int64_t>(threadIdx.x) < width / V) {
      load<V>(p0 + threadIdx.x * V, pa);
      if constexpr (K != NormKind::kRms) load<V>(p1 + threadIdx.x * V, pb);
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const std::int64_t c = threadIdx.x + static_cast<std::int64_t>(it) * blockDim.x;
#pragma unroll
    for (int j = 0; j < V; ++j) v[it][j] = 0.0f;
    if (c < chunks) {
      load<V>(xr + c * V, v[it]);
      if constexpr (K == NormKind::kRms || K == NormKind::kLayer) {
        if (res != nullptr) {
          float r[V];
          load_residual<TR, V>(res, row * width + c * V, parts, part_stride, res_bias, c * V, r);
#pragma unroll
          for (int j = 0; j < V; ++j) v[it][j] += r[j];
          store<V>(xr + c * V, v[it]);
        }
      } else if constexpr (K == NormKind::kAda) {
        if (res != nullptr) {
          float r[V], g[V];
          load_residual<TR, V>(res, row * width + c * V, parts, part_stride, res_bias, c * V, r);
          load<V>(gate + c * V, g);
#pragma unroll
          for (int j = 0; j < V; ++j) v[it][j] = fmaf(r[j], g[j], v[it][j]);
          store<V>(xr + c * V, v[it]);
        }
      }
#pragma unroll
      for (int j = 0; j < V; ++j) s += K == NormKind::kLayer ? v[it][j] : v[it][j] * v[it][j];
    }
  }
  const float inv_width = 1.0f / static_cast<float>(width);
  float mean = 0.0f;
  float inv;
  if constexpr (K == NormKind::kLayer) {
    mean = block_sum(s, partials) * inv_width;
    float q = 0.0f;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const std::int64_t c = threadIdx.x + static_cast<std::int64_t>(it) * blockDim.x;
      if (c < chunks) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const float d = v[it][j] - mean;
          q += d * d;
        }
      }
    }
    inv = rsqrtf(block_sum(q, partials) * inv_width + eps);
  } else {
    inv = rsqrtf(block_sum(s, partials) * inv_width + eps);
  }
  TY* yr = y + row * width;
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const std::int64_t c = threadIdx.x + static_cast<std::int64_t>(it) * blockDim.x;
    if (c < chunks) {
      float a[V], b[V];
      float o[V];
      if constexpr (kEarlyParams) {
#pragma unroll
        for (int j = 0; j < V; ++j) a[j] = pa[j], b[j] = pb[j];
      } else {
        load<V>(p0 + c * V, a);
        if constexpr (K != NormKind::kRms) load<V>(p1 + c * V, b);
      }
      if constexpr (K == NormKind::kRms) {
#pragma unroll
        for (int j = 0; j < V; ++j) o[j] = v[it][j] * inv * (1.0f + a[j]);
      } else if constexpr (K == NormKind::kAda) {
#pragma unroll
        for (int j = 0; j < V; ++j) o[j] = v[it][j] * inv * (1.0f + a[j]) + b[j];
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) o[j] = (v[it][j] - mean) * inv * a[j] + b[j];
      }
      store<V>(yr + c * V, o);
    }
  }
}

Status check_shape(const char* kernel, std::int64_t rows, std::int64_t width, const void* x, const void* y,
                   const void* p0, const void* p1, bool need_p1) {
  if (rows < 0 || width < 0) {
    return invalid_argument(std::string(kernel) + ": rows (" + std::to_string(rows) + ") and width (" +
                            std::to_string(width) + ") must not be negative");
  }
  if (rows > 0x7fffffff) {
    return invalid_argument(std::string(kernel) + ": " + std::to_string(rows) +
                            " rows exceed one launch (2^31 - 1); split the rows");
  }
  if (rows > 0 && width > 0 && (x == nullptr || y == nullptr || p0 == nullptr || (need_p1 && p1 == nullptr))) {
    return invalid_argument(std::string(kernel) + ": a null tensor pointer was given");
  }
  return Status::ok();
}

template <NormKind K, class TY, class TR, class TX = float>
Status launch_norm(const char* kernel, cudaStream_t stream, TX* x, const TR* res, std::int64_t rows,
                   std::int64_t width, const float* p0, const float* p1, float eps, TY* y,
                   const float* gate = nullptr, ResidualParts parts = {}) {
  if (rows == 0 || width == 0) return Status::ok();
  if (parts.count < 1 || parts.count > kMaxParts || (parts.count > 1 && parts.stride < rows * width)) {
    return invalid_argument(std::string(kernel) + ": " + std::to_string(parts.count) + " residual parts " +
                            std::to_string(parts.stride) + " elements apart; give 1 to " +
                            std::to_string(kMaxParts) + " parts, each at least rows · width apart");
  }
  const bool vec = width % 8 == 0 && aligned16(x) && aligned16(y) && aligned16(p0) &&
                   (p1 == nullptr || aligned16(p1)) && (res == nullptr || aligned16(res)) &&
                   (gate == nullptr || aligned16(gate)) && (parts.stride % 8 == 0) &&
                   (parts.bias == nullptr || aligned16(parts.bias));
  const std::int64_t v = vec ? 8 : 1;
  const std::int64_t chunks = width / v;
  std::int64_t items = 1;
  while (items < kMaxItems && (chunks + items - 1) / items > kMaxThreads) items *= 2;
  const std::int64_t per_thread = (chunks + items - 1) / items;
  if (per_thread > kMaxThreads) {
    return invalid_argument(std::string(kernel) + ": width " + std::to_string(width) +
                            " is wider than one block holds (at most " +
                            std::to_string(kMaxThreads * kMaxItems * 8) +
                            " for 16-byte aligned rows whose width is a multiple of 8, else " +
                            std::to_string(kMaxThreads * kMaxItems) + ")");
  }
  const unsigned threads = static_cast<unsigned>((per_thread + 31) / 32 * 32);
  const dim3 grid(static_cast<unsigned>(rows));
#define EDGEVLA_NORM_LAUNCH(VV, II) \
  launch(&norm_kernel<K, TY, TR, VV, II, TX>, grid, dim3(threads), 0, stream, x, res, gate, width, p0, p1, eps, y, \
         static_cast<int>(parts.count), parts.stride, parts.bias)
  if (vec) {
    if (items == 1) {
      EDGEVLA_NORM_LAUNCH(8, 1);
    } else if (items == 2) {
      EDGEVLA_NORM_LAUNCH(8, 2);
    } else {
      EDGEVLA_NORM_LAUNCH(8, 4);
    }
  } else {
    if (items == 1) {
      EDGEVLA_NORM_LAUNCH(1, 1);
    } else if (items == 2) {
      EDGEVLA_NORM_LAUNCH(1, 2);
    } else {
      EDGEVLA_NORM_LAUNCH(1, 4);
    }
  }
#undef EDGEVLA_NORM_LAUNCH
  return last_launch_status(kernel);
}

}  // namespace

Status rms_norm(cudaStream_t stream, float* x, const void* residual, DType residual_type, std::int64_t rows,
                std::int64_t width, const float* w, float eps, void* y, DType act, ResidualParts parts) {
  constexpr const char* kName = "rms_norm";
  EDGEVLA_RETURN_IF_ERROR(check_shape(kName, rows, width, x, y, w, nullptr, false));
  return with_act(act, kName, "activation (y)", [&](auto ty) -> Status {
    using TY = typename decltype(ty)::type;
    if (residual == nullptr) {
      return launch_norm<NormKind::kRms, TY, float>(kName, stream, x, nullptr, rows, width, w, nullptr, eps,
                                                    static_cast<TY*>(y));
    }
    return with_act(residual_type, kName, "residual", [&](auto tr) -> Status {
      using TR = typename decltype(tr)::type;
      return launch_norm<NormKind::kRms, TY, TR>(kName, stream, x, static_cast<const TR*>(residual), rows,
                                                 width, w, nullptr, eps, static_cast<TY*>(y), nullptr, parts);
    });
  });
}

Status ada_rms_norm(cudaStream_t stream, const float* x, std::int64_t rows, std::int64_t width,
                    const float* scale, const float* shift, float eps, void* y, DType act) {
  constexpr const char* kName = "ada_rms_norm";
  EDGEVLA_RETURN_IF_ERROR(check_shape(kName, rows, width, x, y, scale, shift, true));
  return with_act(act, kName, "activation (y)", [&](auto ty) -> Status {
    using TY = typename decltype(ty)::type;
    // x is only read (the kernel writes x back only for kRms with a residual).
    return launch_norm<NormKind::kAda, TY, float>(kName, stream, const_cast<float*>(x), nullptr, rows, width,
                                                  scale, shift, eps, static_cast<TY*>(y));
  });
}

Status gated_add_ada_rms_norm(cudaStream_t stream, float* x, const void* y, DType y_type, std::int64_t rows,
                              std::int64_t width, const float* gate, const float* scale, const float* shift, float eps,
                              void* out, DType act, ResidualParts parts) {
  constexpr const char* kName = "gated_add_ada_rms_norm";
  EDGEVLA_RETURN_IF_ERROR(check_shape(kName, rows, width, x, out, scale, shift, true));
  if (rows > 0 && width > 0 && (y == nullptr || gate == nullptr)) {
    return invalid_argument(std::string(kName) + ": y and gate must be given (ada_rms_norm has neither)");
  }
  return with_act(act, kName, "activation (out)", [&](auto to) -> Status {
    using TO = typename decltype(to)::type;
    return with_act(y_type, kName, "y", [&](auto tr) -> Status {
      using TR = typename decltype(tr)::type;
      return launch_norm<NormKind::kAda, TO, TR>(kName, stream, x, static_cast<const TR*>(y), rows, width, scale,
                                                 shift, eps, static_cast<TO*>(out), gate, parts);
    });
  });
}

namespace {

// f(Tag<TY>, Tag<TX>): y in act, x in x_type, each f32 or bf16 (a residual stream kept in bf16
// may feed an f32 output: GR00T's post norm).
template <class F>
Status with_stream_type(DType x_type, DType act, const char* kernel, F&& f) {
  return with_act(act, kernel, "activation (y)", [&](auto ty) -> Status {
    return with_act(x_type, kernel, "stream (x)", [&](auto tx) -> Status { return f(ty, tx); });
  });
}

}  // namespace

Status layer_norm(cudaStream_t stream, const void* x, DType x_type, std::int64_t rows, std::int64_t width,
                  const float* w, const float* b, float eps, void* y, DType act) {
  constexpr const char* kName = "layer_norm";
  EDGEVLA_RETURN_IF_ERROR(check_shape(kName, rows, width, x, y, w, b, true));
  return with_stream_type(x_type, act, kName, [&](auto ty, auto tx) -> Status {
    using TY = typename decltype(ty)::type;
    using TX = typename decltype(tx)::type;
    // x is only read (the kernel writes x back only with a residual).
    return launch_norm<NormKind::kLayer, TY, float, TX>(kName, stream, static_cast<TX*>(const_cast<void*>(x)),
                                                        nullptr, rows, width, w, b, eps, static_cast<TY*>(y));
  });
}

Status layer_norm(cudaStream_t stream, const float* x, std::int64_t rows, std::int64_t width, const float* w,
                  const float* b, float eps, void* y, DType act) {
  return layer_norm(stream, x, DType::kF32, rows, width, w, b, eps, y, act);
}

Status add_layer_norm(cudaStream_t stream, void* x, DType x_type, const float* residual, std::int64_t rows,
                      std::int64_t width, const float* w, const float* b, float eps, void* y, DType act,
                      ResidualParts parts) {
  constexpr const char* kName = "add_layer_norm";
  EDGEVLA_RETURN_IF_ERROR(check_shape(kName, rows, width, x, y, w, b, true));
  if (rows > 0 && width > 0 && residual == nullptr) {
    return invalid_argument(std::string(kName) + ": the residual must be given (layer_norm takes none)");
  }
  return with_stream_type(x_type, act, kName, [&](auto ty, auto tx) -> Status {
    using TY = typename decltype(ty)::type;
    using TX = typename decltype(tx)::type;
    return launch_norm<NormKind::kLayer, TY, float, TX>(kName, stream, static_cast<TX*>(x), residual, rows, width,
                                                        w, b, eps, static_cast<TY*>(y), nullptr, parts);
  });
}

Status add_layer_norm(cudaStream_t stream, float* x, const float* residual, std::int64_t rows, std::int64_t width,
                      const float* w, const float* b, float eps, void* y, DType act, ResidualParts parts) {
  return add_layer_norm(stream, x, DType::kF32, residual, rows, width, w, b, eps, y, act, parts);
}

}  // namespace edgevla::backends::cuda
