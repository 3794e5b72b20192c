// Element-wise and layout kernels of the cuda backend (everything of kernels.hpp but the norms).
//
// Row kernels run a 2-D grid: y over rows, x over chunks of V elements of a row, both
// grid-stride, so any row count and width fits one launch. Flat kernels run a 1-D grid-stride
// loop over chunks, the last chunk taking the n % V tail element by element. V = 8 (16-byte
// accesses: one for bf16/f16, two for f32) when every pointer is 16-byte aligned and widths and
// row strides are multiples of 8; otherwise V = 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/kernels.hpp"

namespace edgevla::backends::cuda {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxGridX = 8192;
constexpr std::int64_t kMaxGridY = 65535;

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
// cancellation of 1 + tanh(u) for negative x.
__device__ __forceinline__ float gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.0f + __expf(-2.0f * u));
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

dim3 grid_rows(std::int64_t rows, std::int64_t chunks) {
  const std::int64_t x = std::min<std::int64_t>((chunks + kThreads - 1) / kThreads, kMaxGridX);
  const std::int64_t y = std::min<std::int64_t>(rows, kMaxGridY);
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

dim3 grid_flat(std::int64_t n, std::int64_t v) {
  const std::int64_t chunks = (n + v - 1) / v;
  return dim3(static_cast<unsigned>(std::min<std::int64_t>((chunks + kThreads - 1) / kThreads, kMaxGridX * 8)));
}

// ---- kernels --------------------------------------------------------------------------------

template <class T, int V>
__global__ void rope_kernel(T* x, std::int64_t rows, std::int64_t heads, std::int64_t h, std::int64_t ldx,
                            const std::int32_t* first_pos, const float* __restrict__ inv_freq) {
  const std::int64_t half = h / 2;
  const std::int64_t per_head = half / V;
  const std::int64_t p0 = *first_pos;
  for_rows(rows, heads * per_head, [&](std::int64_t r, std::int64_t c) {
    const std::int64_t head = c / per_head;
    const std::int64_t k = (c - head * per_head) * V;
    T* a = x + r * ldx + head * h + k;
    T* b = a + half;
    // The angle is an f32 product of the position and the frequency, as the CPU backend's.
    const float pos = static_cast<float>(p0 + r);
    float va[V], vb[V], oa[V], ob[V];
    load<V>(a, va);
    load<V>(b, vb);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float s, co;
      sincosf(pos * inv_freq[k + i], &s, &co);
      oa[i] = va[i] * co - vb[i] * s;
      ob[i] = vb[i] * co + va[i] * s;
    }
    store<V>(a, oa);
    store<V>(b, ob);
  });
}

template <class T, int V>
__global__ void geglu_kernel(const T* gu, std::int64_t rows, std::int64_t f, T* out) {
  for_rows(rows, f / V, [&](std::int64_t r, std::int64_t c) {
    const T* g = gu + r * 2 * f + c * V;
    float vg[V], vu[V], o[V];
    load<V>(g, vg);
    load<V>(g + f, vu);
#pragma unroll
    for (int i = 0; i < V; ++i) o[i] = gelu_tanh(vg[i]) * vu[i];
    store<V>(out + r * f + c * V, o);
  });
}

template <class T, int V>
__global__ void bias_act_kernel(T* x, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                                const float* __restrict__ bias, bool gelu) {
  for_rows(rows, n / V, [&](std::int64_t r, std::int64_t c) {
    T* p = x + r * ldx + c * V;
    float v[V];
    load<V>(p, v);
    if (bias != nullptr) {
      float b[V];
      load<V>(bias + c * V, b);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] += b[i];
    }
    if (gelu) {
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = gelu_tanh(v[i]);
    }
    store<V>(p, v);
  });
}

template <class T, int V>
__global__ void gated_add_kernel(float* x, const T* y, std::int64_t rows, std::int64_t n,
                                 const float* __restrict__ gate) {
  for_rows(rows, n / V, [&](std::int64_t r, std::int64_t c) {
    const std::int64_t off = r * n + c * V;
    float vx[V], vy[V], g[V];
    load<V>(x + off, vx);
    load<V>(y + off, vy);
    load<V>(gate + c * V, g);
#pragma unroll
    for (int i = 0; i < V; ++i) vx[i] += vy[i] * g[i];
    store<V>(x + off, vx);
  });
}

template <class T, int V>
__global__ void silu_kernel(T* x, std::int64_t n) {
  for_flat<V>(n, [&](std::int64_t first, std::int64_t count) {
    if (count == V) {
      float v[V];
      load<V>(x + first, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = silu_f(v[i]);
      store<V>(x + first, v);
    } else {
      for (std::int64_t i = first; i < first + count; ++i) x[i] = from_f32<T>(silu_f(to_f32(x[i])));
    }
  });
}

template <class T>
__global__ void im2col_kernel(const float* __restrict__ images, std::int64_t s, std::int64_t p, std::int64_t g,
                              std::int64_t rows, T* out) {
  const std::int64_t pp = p * p;
  const std::int64_t cols = 3 * pp;
  const std::int64_t gg = g * g;
  for_rows(rows, cols, [&](std::int64_t row, std::int64_t col) {
    const std::int64_t cam = row / gg;
    const std::int64_t pr = (row - cam * gg) / g;
    const std::int64_t pc = row - cam * gg - pr * g;
    const std::int64_t ch = col / pp;
    const std::int64_t u = (col - ch * pp) / p;
    const std::int64_t w = col - ch * pp - u * p;
    const float v = images[((cam * 3 + ch) * s + pr * p + u) * s + pc * p + w];
    out[row * cols + col] = from_f32<T>(v);
  });
}

template <int V>
__global__ void add_periodic_kernel(float* x, std::int64_t rows, std::int64_t width,
                                    const float* __restrict__ table, std::int64_t period) {
  for_rows(rows, width / V, [&](std::int64_t r, std::int64_t c) {
    float vx[V], vt[V];
    float* p = x + r * width + c * V;
    load<V>(p, vx);
    load<V>(table + (r % period) * width + c * V, vt);
#pragma unroll
    for (int i = 0; i < V; ++i) vx[i] += vt[i];
    store<V>(p, vx);
  });
}

template <class T, int V>
__global__ void embed_kernel(const std::int32_t* ids, std::int64_t n, const T* table, std::int64_t vocab,
                             std::int64_t width, float scale, float* out) {
  for_rows(n, width / V, [&](std::int64_t r, std::int64_t c) {
    const std::int64_t id = ids[r];
    float v[V];
    if (id >= 0 && id < vocab) {
      load<V>(table + id * width + c * V, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] *= scale;
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = 0.0f;
    }
    store<V>(out + r * width + c * V, v);
  });
}

template <class TS, class TD, int V>
__global__ void convert_kernel(const TS* src, TD* dst, std::int64_t n) {
  for_flat<V>(n, [&](std::int64_t first, std::int64_t count) {
    if (count == V) {
      float v[V];
      load<V>(src + first, v);
      store<V>(dst + first, v);
    } else {
      for (std::int64_t i = first; i < first + count; ++i) dst[i] = from_f32<TD>(to_f32(src[i]));
    }
  });
}

template <int V>
__global__ void euler_kernel(float* x, const float* v, float dt, std::int64_t n, float* v_out) {
  for_flat<V>(n, [&](std::int64_t first, std::int64_t count) {
    if (count == V) {
      float vx[V], vv[V];
      load<V>(x + first, vx);
      load<V>(v + first, vv);
#pragma unroll
      for (int i = 0; i < V; ++i) vx[i] += dt * vv[i];
      store<V>(x + first, vx);
      if (v_out != nullptr) store<V>(v_out + first, vv);
    } else {
      for (std::int64_t i = first; i < first + count; ++i) {
        const float vi = v[i];
        x[i] += dt * vi;
        if (v_out != nullptr) v_out[i] = vi;
      }
    }
  });
}

template <int V>
__global__ void add_bias_kernel(const float* in, std::int64_t rows, std::int64_t n, const float* __restrict__ bias,
                                float* out) {
  for_rows(rows, n / V, [&](std::int64_t r, std::int64_t c) {
    const std::int64_t off = r * n + c * V;
    float v[V], b[V];
    load<V>(in + off, v);
    load<V>(bias + c * V, b);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] += b[i];
    store<V>(out + off, v);
  });
}

// Counts per thread, sums per block through warp shuffles and shared memory, and adds one
// total per block to *count (a diagnostic, not a hot path).
template <int V>
__global__ void count_nonfinite_kernel(const float* x, std::int64_t n, std::int32_t* count) {
  __shared__ int partials[kThreads / 32];
  int local = 0;
  for_flat<V>(n, [&](std::int64_t first, std::int64_t cnt) {
    if (cnt == V) {
      float v[V];
      load<V>(x + first, v);
#pragma unroll
      for (int i = 0; i < V; ++i) local += isfinite(v[i]) ? 0 : 1;
    } else {
      for (std::int64_t i = first; i < first + cnt; ++i) local += isfinite(x[i]) ? 0 : 1;
    }
  });
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) local += __shfl_xor_sync(0xffffffffu, local, o);
  if ((threadIdx.x & 31) == 0) partials[threadIdx.x >> 5] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    int total = 0;
    for (int w = 0; w < kThreads / 32; ++w) total += partials[w];
    if (total != 0) atomicAdd(count, total);
  }
}

// ---- host side ------------------------------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

template <class... P>
bool all_aligned16(const P*... p) {
  return (aligned16(p) && ...);
}

Status bad_dtype(const char* kernel, const char* what, DType t, const char* accepted) {
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

Status negative(const char* kernel, const char* what, std::int64_t v) {
  return invalid_argument(std::string(kernel) + ": " + what + " (" + std::to_string(v) + ") must not be negative");
}

Status null_pointer(const char* kernel, const char* what) {
  return invalid_argument(std::string(kernel) + ": " + what + " is a null pointer");
}

#define EDGEVLA_CHECK_NONNEG(kernel, v) \
  if ((v) < 0) return negative(kernel, #v, v)
#define EDGEVLA_CHECK_PTR(kernel, p) \
  if ((p) == nullptr) return null_pointer(kernel, #p)

}  // namespace

Status rope(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t heads, std::int64_t h,
            std::int64_t ldx, const std::int32_t* first_pos, const float* inv_freq) {
  constexpr const char* kName = "rope";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, heads);
  EDGEVLA_CHECK_NONNEG(kName, h);
  if (h % 2 != 0) return invalid_argument("rope: head size " + std::to_string(h) + " must be even");
  if (ldx < heads * h) {
    return invalid_argument("rope: row stride " + std::to_string(ldx) + " is smaller than heads·h = " +
                            std::to_string(heads * h));
  }
  if (rows == 0 || heads == 0 || h == 0) return with_act(act, kName, "activation", [](auto) { return Status::ok(); });
  EDGEVLA_CHECK_PTR(kName, x);
  EDGEVLA_CHECK_PTR(kName, first_pos);
  EDGEVLA_CHECK_PTR(kName, inv_freq);
  return with_act(act, kName, "activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(x);
    const std::int64_t half = h / 2;
    if (half % 8 == 0 && ldx % 8 == 0 && all_aligned16(p, inv_freq)) {
      rope_kernel<T, 8><<<grid_rows(rows, heads * half / 8), kThreads, 0, stream>>>(p, rows, heads, h, ldx,
                                                                                    first_pos, inv_freq);
    } else {
      rope_kernel<T, 1><<<grid_rows(rows, heads * half), kThreads, 0, stream>>>(p, rows, heads, h, ldx, first_pos,
                                                                               inv_freq);
    }
    return last_launch_status(kName);
  });
}

Status geglu(cudaStream_t stream, const void* gu, std::int64_t rows, std::int64_t f, void* out, DType act) {
  constexpr const char* kName = "geglu";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, f);
  return with_act(act, kName, "activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (rows == 0 || f == 0) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, gu);
    EDGEVLA_CHECK_PTR(kName, out);
    const T* g = static_cast<const T*>(gu);
    T* o = static_cast<T*>(out);
    if (f % 8 == 0 && all_aligned16(g, o)) {
      geglu_kernel<T, 8><<<grid_rows(rows, f / 8), kThreads, 0, stream>>>(g, rows, f, o);
    } else {
      geglu_kernel<T, 1><<<grid_rows(rows, f), kThreads, 0, stream>>>(g, rows, f, o);
    }
    return last_launch_status(kName);
  });
}

namespace {

Status bias_act_named(const char* kName, cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t n,
                      std::int64_t ldx, const float* bias, bool gelu) {
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, n);
  if (ldx < n) {
    return invalid_argument(std::string(kName) + ": row stride " + std::to_string(ldx) +
                            " is smaller than the width " + std::to_string(n));
  }
  return with_act(act, kName, "activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (rows == 0 || n == 0 || (bias == nullptr && !gelu)) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, x);
    T* p = static_cast<T*>(x);
    if (n % 8 == 0 && ldx % 8 == 0 && aligned16(p) && (bias == nullptr || aligned16(bias))) {
      bias_act_kernel<T, 8><<<grid_rows(rows, n / 8), kThreads, 0, stream>>>(p, rows, n, ldx, bias, gelu);
    } else {
      bias_act_kernel<T, 1><<<grid_rows(rows, n), kThreads, 0, stream>>>(p, rows, n, ldx, bias, gelu);
    }
    return last_launch_status(kName);
  });
}

}  // namespace

Status bias_act(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t n, std::int64_t ldx,
                const float* bias, bool gelu) {
  return bias_act_named("bias_act", stream, x, act, rows, n, ldx, bias, gelu);
}

Status bias_gelu(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t n, const float* bias) {
  return bias_act_named("bias_gelu", stream, x, act, rows, n, n, bias, /*gelu=*/true);
}

Status gated_add(cudaStream_t stream, float* x, const void* y, DType y_type, std::int64_t rows, std::int64_t n,
                 const float* gate) {
  constexpr const char* kName = "gated_add";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, n);
  return with_act(y_type, kName, "y", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (rows == 0 || n == 0) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, x);
    EDGEVLA_CHECK_PTR(kName, y);
    EDGEVLA_CHECK_PTR(kName, gate);
    const T* py = static_cast<const T*>(y);
    if (n % 8 == 0 && all_aligned16(x, py, gate)) {
      gated_add_kernel<T, 8><<<grid_rows(rows, n / 8), kThreads, 0, stream>>>(x, py, rows, n, gate);
    } else {
      gated_add_kernel<T, 1><<<grid_rows(rows, n), kThreads, 0, stream>>>(x, py, rows, n, gate);
    }
    return last_launch_status(kName);
  });
}

Status silu(cudaStream_t stream, void* x, DType type, std::int64_t n) {
  constexpr const char* kName = "silu";
  EDGEVLA_CHECK_NONNEG(kName, n);
  return with_act(type, kName, "x", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (n == 0) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, x);
    T* p = static_cast<T*>(x);
    if (aligned16(p)) {
      silu_kernel<T, 8><<<grid_flat(n, 8), kThreads, 0, stream>>>(p, n);
    } else {
      silu_kernel<T, 1><<<grid_flat(n, 1), kThreads, 0, stream>>>(p, n);
    }
    return last_launch_status(kName);
  });
}

Status im2col_patches(cudaStream_t stream, const float* images, std::int64_t cams, std::int64_t s, std::int64_t p,
                      void* out, DType act) {
  constexpr const char* kName = "im2col_patches";
  EDGEVLA_CHECK_NONNEG(kName, cams);
  if (p <= 0 || s < p) {
    return invalid_argument("im2col_patches: patch size " + std::to_string(p) +
                            " must be positive and at most the image size " + std::to_string(s));
  }
  return with_act(act, kName, "activation (out)", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (cams == 0) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, images);
    EDGEVLA_CHECK_PTR(kName, out);
    const std::int64_t g = s / p;
    const std::int64_t rows = cams * g * g;
    im2col_kernel<T><<<grid_rows(rows, 3 * p * p), kThreads, 0, stream>>>(images, s, p, g, rows,
                                                                           static_cast<T*>(out));
    return last_launch_status(kName);
  });
}

Status add_periodic_rows(cudaStream_t stream, float* x, std::int64_t rows, std::int64_t width, const float* table,
                         std::int64_t period) {
  constexpr const char* kName = "add_periodic_rows";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, width);
  if (period <= 0) return invalid_argument("add_periodic_rows: period " + std::to_string(period) + " must be positive");
  if (rows == 0 || width == 0) return Status::ok();
  EDGEVLA_CHECK_PTR(kName, x);
  EDGEVLA_CHECK_PTR(kName, table);
  if (width % 8 == 0 && all_aligned16(x, table)) {
    add_periodic_kernel<8><<<grid_rows(rows, width / 8), kThreads, 0, stream>>>(x, rows, width, table, period);
  } else {
    add_periodic_kernel<1><<<grid_rows(rows, width), kThreads, 0, stream>>>(x, rows, width, table, period);
  }
  return last_launch_status(kName);
}

Status embed_tokens(cudaStream_t stream, const std::int32_t* ids, std::int64_t n, const void* table,
                    DType table_type, std::int64_t vocab, std::int64_t width, float scale, float* out) {
  constexpr const char* kName = "embed_tokens";
  EDGEVLA_CHECK_NONNEG(kName, n);
  EDGEVLA_CHECK_NONNEG(kName, vocab);
  EDGEVLA_CHECK_NONNEG(kName, width);
  return with_float(table_type, kName, "table", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (n == 0 || width == 0) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, ids);
    EDGEVLA_CHECK_PTR(kName, table);
    EDGEVLA_CHECK_PTR(kName, out);
    const T* t = static_cast<const T*>(table);
    if (width % 8 == 0 && all_aligned16(t, out)) {
      embed_kernel<T, 8><<<grid_rows(n, width / 8), kThreads, 0, stream>>>(ids, n, t, vocab, width, scale, out);
    } else {
      embed_kernel<T, 1><<<grid_rows(n, width), kThreads, 0, stream>>>(ids, n, t, vocab, width, scale, out);
    }
    return last_launch_status(kName);
  });
}

Status convert(cudaStream_t stream, const void* src, DType src_type, void* dst, DType dst_type, std::int64_t n) {
  constexpr const char* kName = "convert";
  EDGEVLA_CHECK_NONNEG(kName, n);
  return with_float(src_type, kName, "source", [&](auto ts) -> Status {
    return with_float(dst_type, kName, "destination", [&](auto td) -> Status {
      using TS = typename decltype(ts)::type;
      using TD = typename decltype(td)::type;
      if (n == 0) return Status::ok();
      EDGEVLA_CHECK_PTR(kName, src);
      EDGEVLA_CHECK_PTR(kName, dst);
      const TS* s = static_cast<const TS*>(src);
      TD* d = static_cast<TD*>(dst);
      if (all_aligned16(s, d)) {
        convert_kernel<TS, TD, 8><<<grid_flat(n, 8), kThreads, 0, stream>>>(s, d, n);
      } else {
        convert_kernel<TS, TD, 1><<<grid_flat(n, 1), kThreads, 0, stream>>>(s, d, n);
      }
      return last_launch_status(kName);
    });
  });
}

Status euler_step(cudaStream_t stream, float* x, const float* v, float dt, std::int64_t n, float* v_out) {
  constexpr const char* kName = "euler_step";
  EDGEVLA_CHECK_NONNEG(kName, n);
  if (n == 0) return Status::ok();
  EDGEVLA_CHECK_PTR(kName, x);
  EDGEVLA_CHECK_PTR(kName, v);
  if (all_aligned16(x, v) && (v_out == nullptr || aligned16(v_out))) {
    euler_kernel<8><<<grid_flat(n, 8), kThreads, 0, stream>>>(x, v, dt, n, v_out);
  } else {
    euler_kernel<1><<<grid_flat(n, 1), kThreads, 0, stream>>>(x, v, dt, n, v_out);
  }
  return last_launch_status(kName);
}

Status add_bias(cudaStream_t stream, const float* in, std::int64_t rows, std::int64_t n, const float* bias,
                float* out) {
  constexpr const char* kName = "add_bias";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, n);
  if (rows == 0 || n == 0) return Status::ok();
  EDGEVLA_CHECK_PTR(kName, in);
  EDGEVLA_CHECK_PTR(kName, bias);
  EDGEVLA_CHECK_PTR(kName, out);
  if (n % 8 == 0 && all_aligned16(in, bias, out)) {
    add_bias_kernel<8><<<grid_rows(rows, n / 8), kThreads, 0, stream>>>(in, rows, n, bias, out);
  } else {
    add_bias_kernel<1><<<grid_rows(rows, n), kThreads, 0, stream>>>(in, rows, n, bias, out);
  }
  return last_launch_status(kName);
}

Status count_nonfinite(cudaStream_t stream, const float* x, std::int64_t n, std::int32_t* count) {
  constexpr const char* kName = "count_nonfinite";
  EDGEVLA_CHECK_NONNEG(kName, n);
  if (n == 0) return Status::ok();
  EDGEVLA_CHECK_PTR(kName, x);
  EDGEVLA_CHECK_PTR(kName, count);
  // A bounded grid: each block adds its total once.
  const auto blocks = [](std::int64_t chunks) {
    return dim3(static_cast<unsigned>(std::min<std::int64_t>((chunks + kThreads - 1) / kThreads, 1024)));
  };
  if (aligned16(x)) {
    count_nonfinite_kernel<8><<<blocks((n + 7) / 8), kThreads, 0, stream>>>(x, n, count);
  } else {
    count_nonfinite_kernel<1><<<blocks(n), kThreads, 0, stream>>>(x, n, count);
  }
  return last_launch_status(kName);
}

}  // namespace edgevla::backends::cuda
