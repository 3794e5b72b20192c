// GR00T N1.6's own kernels (groot_kernels.hpp). Correctness first: plain grid-stride loops, one
// warp per normalised row; none of them is on a path where it dominates (the GEMMs and the
// attention do).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"
#include "runtime/backends/cuda/kernels/groot_kernels.hpp"
#include "runtime/backends/cuda/kernels/launch.cuh"

namespace edgevla::backends::cuda {

using ew::from_f32;
using ew::kThreads;
using ew::to_f32;
using ew::with_act;
using ew::with_float;

namespace {

constexpr std::int64_t kMaxBlocks = 65535;

inline unsigned blocks_for(std::int64_t n, std::int64_t per_block = kThreads) {
  const std::int64_t b = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

__device__ __forceinline__ std::int64_t global_id() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t global_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- RMSNorm (× w), one warp per row ---------------------------------------------------------

template <class TX, class TY>
__global__ void rms_rows_kernel(const TX* x, std::int64_t ldx, std::int64_t rows,
                                std::int64_t group, std::int64_t width, const float* __restrict__ w,
                                float eps, TY* y, std::int64_t ldy) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (std::int64_t r =
           static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       r < rows; r += warps) {
    const std::int64_t tok = r / group, part = r % group;
    const TX* xr = x + tok * ldx + part * width;
    TY* yr = y + tok * ldy + part * width;
    float ss = 0.0f;
    for (std::int64_t i = lane; i < width; i += 32) {
      const float v = to_f32(xr[i]);
      ss += v * v;
    }
    const float inv = rsqrtf(warp_sum(ss) / static_cast<float>(width) + eps);
    for (std::int64_t i = lane; i < width; i += 32)
      yr[i] = from_f32<TY>(to_f32(xr[i]) * inv * w[i]);
  }
}

// The same, one block of kWideThreads per row, for wide rows (the LLM's 2048): one warp per
// row left most multiprocessors idle at a few hundred rows (24 µs a call on an H200, against
// ~3 µs this way).
constexpr int kWideThreads = 256;

template <class TX, class TY>
__global__ void __launch_bounds__(kWideThreads)
    rms_rows_wide_kernel(const TX* x, std::int64_t ldx, std::int64_t group, std::int64_t width,
                         const float* __restrict__ w, float eps, TY* y, std::int64_t ldy) {
  __shared__ float partial[kWideThreads / 32];
  const std::int64_t r = blockIdx.x;
  const std::int64_t tok = r / group, part = r % group;
  const TX* xr = x + tok * ldx + part * width;
  TY* yr = y + tok * ldy + part * width;
  const int tid = static_cast<int>(threadIdx.x);
  float ss = 0.0f;
  for (std::int64_t i = tid; i < width; i += kWideThreads) {
    const float v = to_f32(xr[i]);
    ss += v * v;
  }
  ss = warp_sum(ss);
  if ((tid & 31) == 0) partial[tid >> 5] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < kWideThreads / 32; ++k) total += partial[k];
  const float inv = rsqrtf(total / static_cast<float>(width) + eps);
  for (std::int64_t i = tid; i < width; i += kWideThreads)
    yr[i] = from_f32<TY>(to_f32(xr[i]) * inv * w[i]);
}

// ---- Qwen3 q/k norm + RoPE + key|value packing ---------------------------------------------

// Two adjacent elements as one access (4 bytes at bf16, 8 at f32).
__device__ __forceinline__ void load2(const float* p, float& a, float& b) {
  const float2 v = *reinterpret_cast<const float2*>(p);
  a = v.x, b = v.y;
}
__device__ __forceinline__ void load2(const __nv_bfloat16* p, float& a, float& b) {
  const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
  a = v.x, b = v.y;
}
__device__ __forceinline__ void store2(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

// Qwen3's q/k norm + RoPE + key|value packing, one warp per (row, head). P > 0: each lane holds P
// pairs of adjacent elements of each half of a head (head dims h % 4 == 0, h ≤ 128 · P), every
// element loaded once, two at a time, and rotated from registers. P = 0: an element at a time,
// for any even h (and EDGEVLA_CUDA_GROOT_SCALAR=1). The element form ran 6.2 µs at the LLM's
// 224 rows on an H200 where PyTorch's fused q/k norm + RoPE took 4.4 (run 54 call 1); the pairs
// 5.0 (run 55 call 2). angles (or null: sincosf here): row r's (cos, sin) at [r · h/2 + i].
template <class T, int P>
__global__ void qk_norm_rope_kernel(T* qkv, std::int64_t ldq, std::int64_t rows, int heads,
                                    int kv_heads, int h, const float* __restrict__ q_norm,
                                    const float* __restrict__ k_norm, float eps,
                                    const float* __restrict__ inv_freq,
                                    const std::int32_t* __restrict__ key_limit, T* kv,
                                    const float2* __restrict__ angles) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int all_heads = heads + 2 * kv_heads, half = h / 2;
  const std::int64_t items = rows * all_heads;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (std::int64_t it =
           static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       it < items; it += warps) {
    const std::int64_t r = it / all_heads;
    const int j = static_cast<int>(it % all_heads);
    T* src = qkv + r * ldq + static_cast<std::int64_t>(j) * h;
    const int limit = key_limit[r];
    const std::int64_t kv_row = static_cast<std::int64_t>(limit - 1) * 2 * kv_heads * h;
    if (j >= heads + kv_heads) {  // a v head: packed as it is
      if (limit <= 0) continue;
      T* dst = kv + kv_row + static_cast<std::int64_t>(j - heads) * h;
      if constexpr (P == 0) {
        for (int i = lane; i < h; i += 32) dst[i] = src[i];
      } else {
        for (int i = 2 * lane; i < h; i += 64) {
          float a, b;
          load2(src + i, a, b);
          store2(dst + i, a, b);
        }
      }
      continue;
    }
    const bool is_q = j < heads;
    if (!is_q && limit <= 0) continue;  // a padding row's key is never read
    const float* w = is_q ? q_norm : k_norm;
    T* dst = is_q ? src : kv + kv_row + static_cast<std::int64_t>(j - heads) * h;
    const float pos = static_cast<float>(r);
    const float2* row_angles = angles != nullptr ? angles + r * half : nullptr;
    // Angle i's (cos, sin): from the table, or the table's own expression.
    const auto cos_sin = [&](int i, float& cs, float& sn) {
      if (row_angles != nullptr) {
        const float2 a = row_angles[i];
        cs = a.x, sn = a.y;
      } else {
        sincosf(pos * inv_freq[i], &sn, &cs);
      }
    };
    if constexpr (P == 0) {
      float ss = 0.0f;
      for (int i = lane; i < h; i += 32) {
        const float v = to_f32(src[i]);
        ss += v * v;
      }
      const float inv = rsqrtf(warp_sum(ss) / static_cast<float>(h) + eps);
      for (int i = lane; i < half; i += 32) {
        const float a = to_f32(src[i]) * inv * w[i];
        const float b = to_f32(src[i + half]) * inv * w[i + half];
        float sn, cs;
        cos_sin(i, cs, sn);
        dst[i] = from_f32<T>(a * cs - b * sn);
        dst[i + half] = from_f32<T>(b * cs + a * sn);
      }
      continue;
    }
    float a[P > 0 ? P : 1][2], b[P > 0 ? P : 1][2];
    float ss = 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int i = 2 * lane + 64 * p;
      if (i < half) {
        load2(src + i, a[p][0], a[p][1]);
        load2(src + i + half, b[p][0], b[p][1]);
        ss += a[p][0] * a[p][0] + a[p][1] * a[p][1] + b[p][0] * b[p][0] + b[p][1] * b[p][1];
      }
    }
    const float inv = rsqrtf(warp_sum(ss) / static_cast<float>(h) + eps);
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int i = 2 * lane + 64 * p;
      if (i >= half) continue;
      float lo[2], hi[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float x = a[p][e] * inv * w[i + e];
        const float y = b[p][e] * inv * w[i + e + half];
        float sn, cs;
        cos_sin(i + e, cs, sn);
        lo[e] = x * cs - y * sn;
        hi[e] = y * cs + x * sn;
      }
      store2(dst + i, lo[0], lo[1]);
      store2(dst + i + half, hi[0], hi[1]);
    }
  }
}

// The vectorised forms (swiglu_kernel with V = 8, qk_norm_rope_kernel with P > 0) unless
// EDGEVLA_CUDA_GROOT_SCALAR=1 asks for an element at a time, to compare the two in one run.
bool groot_vec_on() {
  static const bool on = env_int("EDGEVLA_CUDA_GROOT_SCALAR", 0, 0, 1) == 0;
  return on;
}

// ---- element-wise ----------------------------------------------------------------------------

__device__ __forceinline__ float silu_exact(float x) { return x / (1.0f + expf(-x)); }

// SiLU(gate) · up, V columns a thread on a rows × columns grid (no division per element, 16-byte
// accesses at V = 8). An element a thread with two 64-bit divisions ran 7.4 µs at the LLM's 224
// rows × 6144 on an H200 where PyTorch's fused kernel took 3.9 (run 54 call 1); V = 8 4.3 (run
// 55 call 2).
template <class T, int V>
__global__ void swiglu_kernel(const T* gu, std::int64_t rows, std::int64_t f, T* out) {
  ew::for_rows(rows, f / V, [&](std::int64_t r, std::int64_t c) {
    const T* g = gu + r * 2 * f + c * V;
    float vg[V], vu[V], o[V];
    ew::load<V>(g, vg);
    ew::load<V>(g + f, vu);
#pragma unroll
    for (int i = 0; i < V; ++i) o[i] = silu_exact(vg[i]) * vu[i];
    ew::store<V>(out + r * f + c * V, o);
  });
}

template <class T>
__global__ void bias_activation_kernel(T* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                                       const float* __restrict__ bias, Activation act) {
  const std::int64_t total = rows * n;
  for (std::int64_t i = global_id(); i < total; i += global_stride()) {
    const std::int64_t r = i / n, c = i % n;
    T* p = x + r * ldx + c;
    float v = to_f32(*p);
    if (bias != nullptr) v += bias[c];
    switch (act) {
      case Activation::kRelu:
        v = fmaxf(v, 0.0f);
        break;
      case Activation::kSilu:
        v = silu_exact(v);
        break;
      case Activation::kGeluErf:
        v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        break;
    }
    *p = from_f32<T>(v);
  }
}

template <class TS, class TD>
__global__ void gather_kernel(const TS* src, std::int64_t lds, const std::int32_t* __restrict__ idx,
                              std::int64_t rows, std::int64_t width, TD* dst, std::int64_t ldd,
                              bool zero_missing) {
  const std::int64_t total = rows * width;
  for (std::int64_t i = global_id(); i < total; i += global_stride()) {
    const std::int64_t r = i / width, c = i % width;
    const std::int32_t s = idx[r];
    if (s >= 0) {
      dst[r * ldd + c] = from_f32<TD>(to_f32(src[static_cast<std::int64_t>(s) * lds + c]));
    } else if (zero_missing) {
      dst[r * ldd + c] = from_f32<TD>(0.0f);
    }
  }
}

// Rows ld apart; columns from p·p·3 to ld are zeros (the patch GEMM's k padded).
template <class TS, class TD>
__global__ void patches_kernel(const TS* image, std::int64_t h, std::int64_t w, std::int64_t p,
                               std::int64_t ld, TD* out) {
  const std::int64_t gw = w / p, cols = p * p * 3, total = (h / p) * gw * ld;
  for (std::int64_t i = global_id(); i < total; i += global_stride()) {
    const std::int64_t row = i / ld, col = i % ld;
    if (col >= cols) {
      out[i] = from_f32<TD>(0.0f);
      continue;
    }
    const std::int64_t a = row / gw, b = row % gw;
    const std::int64_t c = col % 3, pix = col / 3, py = pix / p, px = pix % p;
    out[i] = from_f32<TD>(to_f32(image[(c * h + a * p + py) * w + b * p + px]));
  }
}

__global__ void grid_positions_kernel(float* x, std::int64_t gh, std::int64_t gw,
                                      std::int64_t width, const float* __restrict__ table,
                                      std::int64_t side, const float* __restrict__ wy,
                                      const float* __restrict__ wx) {
  const std::int64_t total = gh * gw * width;
  for (std::int64_t i = global_id(); i < total; i += global_stride()) {
    const std::int64_t row = i / width, c = i % width;
    const std::int64_t a = row / gw, b = row % gw;
    float acc = 0.0f;
    // Along y first, then along x (the order of the CPU backend's two GEMMs).
    for (std::int64_t j = 0; j < side; ++j) {
      const float wj = wx[b * side + j];
      if (wj == 0.0f) continue;
      float t = 0.0f;
      for (std::int64_t k = 0; k < side; ++k) {
        const float wk = wy[a * side + k];
        if (wk != 0.0f) t += wk * table[(k * side + j) * width + c];
      }
      acc += wj * t;
    }
    x[i] += acc;
  }
}

// One thread a (merged token, channel): its r·r source values (consecutive threads read
// consecutive channels of each source token), written as one run of r·r floats (one 16-byte
// store at r = 2). The element-a-thread form, two 64-bit divisions an element, ran 7 µs a view
// at GR00T's 324 tokens × 1152 on an H200 (run 55 call 2).
template <int RR>
__global__ void unshuffle_kernel(const float* src, std::int64_t gh, std::int64_t gw, std::int64_t d,
                                 std::int64_t r, float* dst) {
  const std::int64_t mw = gw / r, total = (gh / r) * mw * d;
  for (std::int64_t i = global_id(); i < total; i += global_stride()) {
    const std::int64_t m = i / d, c = i - m * d;
    const std::int64_t ti = m / mw, tj = m - ti * mw;
    const float* s0 = src + ((ti * r) * gw + tj * r) * d + c;
    float* out = dst + i * r * r;
    if constexpr (RR == 4) {
      *reinterpret_cast<float4*>(out) = make_float4(s0[0], s0[d], s0[gw * d], s0[gw * d + d]);
    } else {
      for (std::int64_t dy = 0; dy < r; ++dy) {
        for (std::int64_t dx = 0; dx < r; ++dx) out[dy * r + dx] = s0[(dy * gw + dx) * d];
      }
    }
  }
}

constexpr int kTile = 32;

template <class T>
__global__ void transpose_kernel(const T* src, std::int64_t rows, std::int64_t cols, T* dst) {
  __shared__ T tile[kTile][kTile + 1];
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  for (int k = ty; k < kTile; k += static_cast<int>(blockDim.y)) {
    const std::int64_t r = r0 + k, c = c0 + tx;
    if (r < rows && c < cols) tile[k][tx] = src[r * cols + c];
  }
  __syncthreads();
  for (int k = ty; k < kTile; k += static_cast<int>(blockDim.y)) {
    const std::int64_t c = c0 + k, r = r0 + tx;  // dst row c, column r
    if (c < cols && r < rows) dst[c * rows + r] = tile[tx][k];
  }
}

Status bad(const char* kernel, const std::string& why) {
  return invalid_argument(std::string(kernel) + ": " + why);
}

}  // namespace

Status rms_norm_rows(cudaStream_t stream, const void* x, DType x_type, std::int64_t ldx,
                     std::int64_t rows, std::int64_t group, std::int64_t width, const float* w,
                     float eps, void* y, DType y_type, std::int64_t ldy) {
  constexpr const char* kName = "rms_norm_rows";
  if (rows < 0 || width < 0 || group < 1) return bad(kName, "bad rows/width/group");
  if (rows == 0 || width == 0) return Status::ok();
  if (x == nullptr || y == nullptr || w == nullptr) return bad(kName, "null pointer");
  if (ldx < group * width || ldy < group * width)
    return bad(kName, "a row stride is shorter than its row");
  const unsigned blocks = blocks_for(rows, kThreads / 32);
  return with_act(x_type, kName, "x", [&](auto tx) -> Status {
    using TX = typename decltype(tx)::type;
    return with_act(y_type, kName, "y", [&](auto ty) -> Status {
      using TY = typename decltype(ty)::type;
      if (width >= 512 && rows <= kMaxBlocks) {
        rms_rows_wide_kernel<TX, TY><<<static_cast<unsigned>(rows), kWideThreads, 0, stream>>>(
            static_cast<const TX*>(x), ldx, group, width, w, eps, static_cast<TY*>(y), ldy);
      } else {
        rms_rows_kernel<TX, TY><<<blocks, kThreads, 0, stream>>>(
            static_cast<const TX*>(x), ldx, rows, group, width, w, eps, static_cast<TY*>(y), ldy);
      }
      return last_launch_status(kName);
    });
  });
}

Status qwen_qk_norm_rope(cudaStream_t stream, void* qkv, std::int64_t ldq, std::int64_t rows,
                         std::int64_t heads, std::int64_t kv_heads, std::int64_t h,
                         const float* q_norm, const float* k_norm, float eps, const float* inv_freq,
                         const std::int32_t* key_limit, void* kv, DType act, const float* angles) {
  constexpr const char* kName = "qwen_qk_norm_rope";
  if (rows < 0 || heads < 1 || kv_heads < 1 || h < 2 || h % 2 != 0 || h > 4096) {
    return bad(kName, "bad rows/heads/kv_heads/h (h even)");
  }
  if (ldq < (heads + 2 * kv_heads) * h) return bad(kName, "row stride shorter than q|k|v");
  if (rows == 0) return Status::ok();
  if (qkv == nullptr || q_norm == nullptr || k_norm == nullptr || inv_freq == nullptr ||
      key_limit == nullptr || kv == nullptr) {
    return bad(kName, "null pointer");
  }
  if (angles != nullptr && reinterpret_cast<std::uintptr_t>(angles) % 8 != 0) {
    return bad(kName, "the angle table must be 8-byte aligned");
  }
  const unsigned blocks = blocks_for(rows * (heads + 2 * kv_heads), kThreads / 32);
  // Pairs of elements need h % 4 == 0 and every pair aligned to two elements.
  const bool pairs = groot_vec_on() && h % 4 == 0 && h <= 256 && ldq % 2 == 0;
  const auto bits = reinterpret_cast<std::uintptr_t>(qkv) | reinterpret_cast<std::uintptr_t>(kv);
  return with_act(act, kName, "activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const auto kernel = !(pairs && bits % (2 * sizeof(T)) == 0) ? &qk_norm_rope_kernel<T, 0>
                        : h <= 128                              ? &qk_norm_rope_kernel<T, 1>
                                                                : &qk_norm_rope_kernel<T, 2>;
    kernel<<<blocks, kThreads, 0, stream>>>(
        static_cast<T*>(qkv), ldq, rows, static_cast<int>(heads), static_cast<int>(kv_heads),
        static_cast<int>(h), q_norm, k_norm, eps, inv_freq, key_limit, static_cast<T*>(kv),
        reinterpret_cast<const float2*>(angles));
    return last_launch_status(kName);
  });
}

Status swiglu(cudaStream_t stream, const void* gu, std::int64_t rows, std::int64_t f, void* out,
              DType act) {
  constexpr const char* kName = "swiglu";
  if (rows < 0 || f < 0) return bad(kName, "bad rows/f");
  if (rows == 0 || f == 0) return Status::ok();
  if (gu == nullptr || out == nullptr) return bad(kName, "null pointer");
  return with_act(act, kName, "activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const auto* g = static_cast<const T*>(gu);
    auto* o = static_cast<T*>(out);
    if (groot_vec_on() && f % 8 == 0 && ew::all_aligned16(gu, out)) {
      swiglu_kernel<T, 8><<<ew::grid_rows(rows, f / 8), kThreads, 0, stream>>>(g, rows, f, o);
    } else {
      swiglu_kernel<T, 1><<<ew::grid_rows(rows, f), kThreads, 0, stream>>>(g, rows, f, o);
    }
    return last_launch_status(kName);
  });
}

Status bias_activation(cudaStream_t stream, void* x, DType type, std::int64_t rows, std::int64_t n,
                       std::int64_t ldx, const float* bias, Activation act) {
  constexpr const char* kName = "bias_activation";
  if (rows < 0 || n < 0 || ldx < n) return bad(kName, "bad rows/n/ldx");
  if (rows == 0 || n == 0) return Status::ok();
  if (x == nullptr) return bad(kName, "null pointer");
  return with_act(type, kName, "x", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    bias_activation_kernel<T><<<blocks_for(rows * n), kThreads, 0, stream>>>(
        static_cast<T*>(x), rows, n, ldx, bias, act);
    return last_launch_status(kName);
  });
}

Status gather_rows(cudaStream_t stream, const void* src, DType src_type, std::int64_t lds,
                   const std::int32_t* idx, std::int64_t rows, std::int64_t width, void* dst,
                   DType dst_type, std::int64_t ldd, bool zero_missing) {
  constexpr const char* kName = "gather_rows";
  if (rows < 0 || width < 0 || lds < width || ldd < width)
    return bad(kName, "bad rows/width/strides");
  if (rows == 0 || width == 0) return Status::ok();
  if (src == nullptr || dst == nullptr || idx == nullptr) return bad(kName, "null pointer");
  return with_float(src_type, kName, "src", [&](auto ts) -> Status {
    using TS = typename decltype(ts)::type;
    return with_act(dst_type, kName, "dst", [&](auto td) -> Status {
      using TD = typename decltype(td)::type;
      gather_kernel<TS, TD><<<blocks_for(rows * width), kThreads, 0, stream>>>(
          static_cast<const TS*>(src), lds, idx, rows, width, static_cast<TD*>(dst), ldd,
          zero_missing);
      return last_launch_status(kName);
    });
  });
}

Status image_patches(cudaStream_t stream, const void* image, DType src_type, std::int64_t h,
                     std::int64_t w, std::int64_t p, void* out, DType act, std::int64_t ld) {
  constexpr const char* kName = "image_patches";
  if (p < 1 || h < p || w < p || h % p != 0 || w % p != 0) {
    return bad(kName, "image " + std::to_string(h) + "x" + std::to_string(w) +
                          " is not a whole number of " + std::to_string(p) + "-pixel patches");
  }
  if (ld == 0) ld = p * p * 3;
  if (ld < p * p * 3) {
    return bad(kName, "row stride " + std::to_string(ld) + " is shorter than a patch (" +
                          std::to_string(p * p * 3) + " values); give 0 or at least that");
  }
  if (image == nullptr || out == nullptr) return bad(kName, "null pointer");
  return with_act(src_type, kName, "image", [&](auto ts) -> Status {
    using TS = typename decltype(ts)::type;
    return with_act(act, kName, "activation", [&](auto td) -> Status {
      using TD = typename decltype(td)::type;
      patches_kernel<TS, TD><<<blocks_for((h / p) * (w / p) * ld), kThreads, 0, stream>>>(
          static_cast<const TS*>(image), h, w, p, ld, static_cast<TD*>(out));
      return last_launch_status(kName);
    });
  });
}

Status add_grid_positions(cudaStream_t stream, float* x, std::int64_t gh, std::int64_t gw,
                          std::int64_t width, const float* table, std::int64_t side,
                          const float* wy, const float* wx) {
  constexpr const char* kName = "add_grid_positions";
  if (gh < 0 || gw < 0 || width < 0 || side < 1) return bad(kName, "bad grid/width/side");
  if (gh == 0 || gw == 0 || width == 0) return Status::ok();
  if (x == nullptr || table == nullptr || wy == nullptr || wx == nullptr)
    return bad(kName, "null pointer");
  grid_positions_kernel<<<blocks_for(gh * gw * width), kThreads, 0, stream>>>(x, gh, gw, width,
                                                                              table, side, wy, wx);
  return last_launch_status(kName);
}

Status pixel_unshuffle(cudaStream_t stream, const float* src, std::int64_t gh, std::int64_t gw,
                       std::int64_t d, std::int64_t r, float* dst) {
  constexpr const char* kName = "pixel_unshuffle";
  if (r < 1 || gh % r != 0 || gw % r != 0 || d < 0)
    return bad(kName, "grid not divisible by the factor");
  if (gh == 0 || gw == 0 || d == 0) return Status::ok();
  if (src == nullptr || dst == nullptr) return bad(kName, "null pointer");
  const unsigned blocks = blocks_for((gh / r) * (gw / r) * d);
  if (r == 2 && ew::aligned16(dst)) {
    unshuffle_kernel<4><<<blocks, kThreads, 0, stream>>>(src, gh, gw, d, r, dst);
  } else {
    unshuffle_kernel<0><<<blocks, kThreads, 0, stream>>>(src, gh, gw, d, r, dst);
  }
  return last_launch_status(kName);
}

namespace {

// Threads [0, rows·n) update one element each; threads [rows·n, rows·n + width) copy the row.
template <class T>
__global__ void step_end_kernel(const float* __restrict__ parts, int count,
                                std::int64_t part_stride, const float* __restrict__ bias,
                                std::int64_t rows, std::int64_t n, float dt, float* x, float* vel,
                                T* x_act, const float* __restrict__ row_src, float* row_dst,
                                std::int64_t width) {
  chain_enter();
  const std::int64_t total = rows * n;
  for (std::int64_t i = global_id(); i < total + width; i += global_stride()) {
    if (i >= total) {
      row_dst[i - total] = row_src[i - total];
      continue;
    }
    float v = bias != nullptr ? bias[i % n] : 0.0f;
    for (int q = 0; q < count; ++q) v += parts[q * part_stride + i];
    const float nx = x[i] + dt * v;
    x[i] = nx;
    vel[i] = v;
    x_act[i] = from_f32<T>(nx);
  }
}

}  // namespace

Status groot_step_end(cudaStream_t stream, const float* parts, int count, std::int64_t part_stride,
                      const float* bias, std::int64_t rows, std::int64_t n, float dt, float* x,
                      float* vel, void* x_act, DType act, const float* row_src, float* row_dst,
                      std::int64_t width) {
  constexpr const char* kName = "groot_step_end";
  if (rows < 0 || n < 0 || width < 0 || count < 1 || part_stride < rows * n) {
    return bad(kName, "bad rows/n/width, or parts (at least one, rows × n apart)");
  }
  if (parts == nullptr || x == nullptr || vel == nullptr || x_act == nullptr ||
      (width > 0 && (row_src == nullptr || row_dst == nullptr))) {
    return bad(kName, "null pointer");
  }
  if (rows * n + width == 0) return Status::ok();
  return with_act(act, kName, "x_act", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    launch(step_end_kernel<T>, dim3(blocks_for(rows * n + width)), dim3(kThreads), 0, stream, parts,
           count, part_stride, bias, rows, n, dt, x, vel, static_cast<T*>(x_act), row_src, row_dst,
           width);
    return last_launch_status(kName);
  });
}

Status transpose(cudaStream_t stream, const void* src, std::int64_t rows, std::int64_t cols,
                 void* dst, DType type) {
  constexpr const char* kName = "transpose";
  if (rows < 0 || cols < 0) return bad(kName, "bad rows/cols");
  if (rows == 0 || cols == 0) return Status::ok();
  if (src == nullptr || dst == nullptr) return bad(kName, "null pointer");
  const std::int64_t gx = (cols + kTile - 1) / kTile, gy = (rows + kTile - 1) / kTile;
  if (gy > kMaxBlocks) return bad(kName, "too many rows");
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), block(kTile, 8);
  // A bit move: by element size.
  if (type == DType::kF32) {
    transpose_kernel<std::uint32_t><<<grid, block, 0, stream>>>(
        static_cast<const std::uint32_t*>(src), rows, cols, static_cast<std::uint32_t*>(dst));
  } else if (type == DType::kBF16) {
    transpose_kernel<std::uint16_t><<<grid, block, 0, stream>>>(
        static_cast<const std::uint16_t*>(src), rows, cols, static_cast<std::uint16_t*>(dst));
  } else {
    return bad(kName, "dtype must be f32 or bf16");
  }
  return last_launch_status(kName);
}

}  // namespace edgevla::backends::cuda
