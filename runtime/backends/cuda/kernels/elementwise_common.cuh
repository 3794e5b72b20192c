// What the element-wise (elementwise.cu), layout (layout.cu) and norm (norms.cu) kernels
// share: vector accesses (V elements as f32), the grid-stride loops and the host-side dtype
// dispatch and argument checks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/kernels.hpp"

namespace edgevla::backends::cuda::ew {


inline constexpr int kThreads = 256;
inline constexpr std::int64_t kMaxGridX = 8192;
inline constexpr std::int64_t kMaxGridY = 65535;

// ---- element conversions and vector accesses ------------------------------------------------

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

template <class T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) {
  return __float2half_rn(v);
}

template <int V>
__device__ __forceinline__ void load(const float* p, float (&v)[V]) {
  if constexpr (V == 8) {
    const float4 a = reinterpret_cast<const float4*>(p)[0];
    const float4 b = reinterpret_cast<const float4*>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = p[i];
  }
}

template <int V>
__device__ __forceinline__ void load(const __nv_bfloat16* p, float (&v)[V]) {
  if constexpr (V == 8) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const auto* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = __bfloat162float(p[i]);
  }
}

template <int V>
__device__ __forceinline__ void load(const __half* p, float (&v)[V]) {
  if constexpr (V == 8) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const auto* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(h[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = __half2float(p[i]);
  }
}

template <int V>
__device__ __forceinline__ void store(float* p, const float (&v)[V]) {
  if constexpr (V == 8) {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = v[i];
  }
}

template <int V>
__device__ __forceinline__ void store(__nv_bfloat16* p, const float (&v)[V]) {
  if constexpr (V == 8) {
    alignas(16) __nv_bfloat162 h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(h);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = __float2bfloat16_rn(v[i]);
  }
}

template <int V>
__device__ __forceinline__ void store(__half* p, const float (&v)[V]) {
  if constexpr (V == 8) {
    alignas(16) __half2 h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(h);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = __float2half_rn(v[i]);
  }
}

// gelu with the tanh approximation, as the CPU backend: 0.5·x·(1 + tanh(u)),
// u = √(2/π)·(x + 0.044715·x³). Written as x·sigmoid(2u), the same function without the
// cancellation of 1 + tanh(u) for negative x. The division is the fast one (2 ulp): the IEEE
// division's slow path (taken where 1 + e^-2u is large, x well below 0) made the warpgroup GEMM's
// GELU and GeGLU epilogues 450k instructions and ~3 µs longer than its plain one at pi0.5's
// gate|up (Nsight Compute, bench/results/issue9_h200 run 35 call 4). For x → -∞ the denominator
// passes 2^126 and the quotient is 0, the function's limit.
__device__ __forceinline__ float gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return __fdividef(x, 1.0f + __expf(-2.0f * u));
}

__device__ __forceinline__ float silu_f(float x) { return x / (1.0f + __expf(-x)); }

// ---- grid-stride loops ----------------------------------------------------------------------

// f(row, chunk) over rows × chunks (2-D grid: y rows, x chunks).
template <class F>
__device__ __forceinline__ void for_rows(std::int64_t rows, std::int64_t chunks, F&& f) {
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < chunks;
         c += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      f(r, c);
    }
  }
}

// f(first, count) over n elements in chunks of V (count < V only for the last chunk).
template <int V, class F>
__device__ __forceinline__ void for_flat(std::int64_t n, F&& f) {
  const std::int64_t chunks = (n + V - 1) / V;
  for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < chunks;
       c += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t first = c * V;
    f(first, n - first < V ? n - first : V);
  }
}

inline dim3 grid_rows(std::int64_t rows, std::int64_t chunks) {
  const std::int64_t x = std::min<std::int64_t>((chunks + kThreads - 1) / kThreads, kMaxGridX);
  const std::int64_t y = std::min<std::int64_t>(rows, kMaxGridY);
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

inline dim3 grid_flat(std::int64_t n, std::int64_t v) {
  const std::int64_t chunks = (n + v - 1) / v;
  return dim3(static_cast<unsigned>(std::min<std::int64_t>((chunks + kThreads - 1) / kThreads, kMaxGridX * 8)));
}

// ---- host side ------------------------------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};

inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

template <class... P>
bool all_aligned16(const P*... p) {
  return (aligned16(p) && ...);
}

inline Status bad_dtype(const char* kernel, const char* what, DType t, const char* accepted) {
  return invalid_argument(std::string(kernel) + ": " + what + " dtype '" + std::string(dtype_name(t)) +
                          "' is not supported; use " + accepted);
}

// f(Tag<T>) for the activation dtypes (f32, bf16).
template <class F>
Status with_act(DType t, const char* kernel, const char* what, F&& f) {
  switch (t) {
    case DType::kF32:
      return f(Tag<float>{});
    case DType::kBF16:
      return f(Tag<__nv_bfloat16>{});
    default:
      return bad_dtype(kernel, what, t, "f32 or bf16");
  }
}

// f(Tag<T>) for the floating dtypes of convert and embed_tokens (f32, bf16, f16).
template <class F>
Status with_float(DType t, const char* kernel, const char* what, F&& f) {
  switch (t) {
    case DType::kF32:
      return f(Tag<float>{});
    case DType::kBF16:
      return f(Tag<__nv_bfloat16>{});
    case DType::kF16:
      return f(Tag<__half>{});
    default:
      return bad_dtype(kernel, what, t, "f32, bf16 or f16");
  }
}

inline Status negative(const char* kernel, const char* what, std::int64_t v) {
  return invalid_argument(std::string(kernel) + ": " + what + " (" + std::to_string(v) + ") must not be negative");
}

inline Status null_pointer(const char* kernel, const char* what) {
  return invalid_argument(std::string(kernel) + ": " + what + " is a null pointer");
}

#define EDGEVLA_CHECK_NONNEG(kernel, v) \
  if ((v) < 0) return negative(kernel, #v, v)
#define EDGEVLA_CHECK_PTR(kernel, p) \
  if ((p) == nullptr) return null_pointer(kernel, #p)

}  // namespace edgevla::backends::cuda::ew
