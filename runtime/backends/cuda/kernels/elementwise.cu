// Element-wise and layout kernels of the cuda backend (everything of kernels.hpp but the norms).
//
// Row kernels run a 2-D grid: y over rows, x over chunks of V elements of a row, both
// grid-stride, so any row count and width fits one launch. Flat kernels run a 1-D grid-stride
// loop over chunks, the last chunk taking the n % V tail element by element. V = 8 (16-byte
// accesses: one for bf16/f16, two for f32) when every pointer is 16-byte aligned and widths and
// row strides are multiples of 8; otherwise V = 1. RoPE and GeGLU, whose elements each cost a
// sincosf or a tanh, take V = 2 when eight a thread would leave the device short of threads
// (the action expert's 50 rows), so that each thread's chain stays short.
#include "runtime/backends/cuda/kernels/elementwise_common.cuh"
#include "runtime/backends/cuda/kernels/launch.cuh"

namespace edgevla::backends::cuda {

using namespace ew;

namespace {

// Threads below which RoPE and GeGLU take two elements a thread instead of eight.
constexpr std::int64_t kWideThreads = 32768;

// ---- kernels --------------------------------------------------------------------------------

// V rotate-half pairs (a[i], b[i]) at position pos and frequencies inv_freq[0, V) into
// (out_a[i], out_b[i]) (in place when they are a and b). The angle is an f32 product of the
// position and the frequency, as the CPU backend's.
template <class T, int V>
__device__ __forceinline__ void rope_pairs(const T* a, const T* b, T* out_a, T* out_b, float pos,
                                           const float* __restrict__ inv_freq) {
  float va[V], vb[V], oa[V], ob[V];
  load<V>(a, va);
  load<V>(b, vb);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    float s, co;
    sincosf(pos * inv_freq[i], &s, &co);
    oa[i] = va[i] * co - vb[i] * s;
    ob[i] = vb[i] * co + va[i] * s;
  }
  store<V>(out_a, oa);
  store<V>(out_b, ob);
}

template <class T, int V>
__global__ void rope_kernel(T* x, std::int64_t rows, std::int64_t heads, std::int64_t h, std::int64_t ldx,
                            const std::int32_t* first_pos, const float* __restrict__ inv_freq) {
  chain_enter();
  const std::int64_t half = h / 2;
  const std::int64_t per_head = half / V;
  const std::int64_t p0 = *first_pos;
  for_rows(rows, heads * per_head, [&](std::int64_t r, std::int64_t c) {
    const std::int64_t head = c / per_head;
    const std::int64_t k = (c - head * per_head) * V;
    T* a = x + r * ldx + head * h + k;
    rope_pairs<T, V>(a, a + half, a, a + half, static_cast<float>(p0 + r), inv_freq + k);
  });
}

// rope_into_cache: per row, (q_heads + kv_heads) · half / V rotation items (query heads in place,
// key heads into k_cache), then kv_heads · h / (2V) items copying 2V values into v_cache.
template <class T, int V>
__global__ void rope_into_cache_kernel(T* x, std::int64_t rows, std::int64_t q_heads, std::int64_t kv_heads,
                                       std::int64_t h, std::int64_t ldx, T* k_cache, T* v_cache, std::int64_t ldc,
                                       const std::int32_t* first_pos, const float* __restrict__ inv_freq) {
  chain_enter();
  const std::int64_t half = h / 2;
  const std::int64_t per_head = half / V;
  const std::int64_t rotations = (q_heads + kv_heads) * per_head;
  const std::int64_t p0 = *first_pos;
  for_rows(rows, rotations + kv_heads * per_head, [&](std::int64_t r, std::int64_t c) {
    if (c >= rotations) {
      const std::int64_t e = (c - rotations) * 2 * V;  // element within the row's values
      const T* src = x + r * ldx + (q_heads + kv_heads) * h + e;
      float v0[V], v1[V];
      load<V>(src, v0);
      load<V>(src + V, v1);
      store<V>(v_cache + r * ldc + e, v0);
      store<V>(v_cache + r * ldc + e + V, v1);
      return;
    }
    const std::int64_t head = c / per_head;
    const std::int64_t k = (c - head * per_head) * V;
    const T* a = x + r * ldx + head * h + k;
    T* out = head < q_heads ? x + r * ldx + head * h + k : k_cache + r * ldc + (head - q_heads) * h + k;
    rope_pairs<T, V>(a, a + half, out, out + half, static_cast<float>(p0 + r), inv_freq + k);
  });
}

// RoPE's (cos, sin) for rows positions from *first_pos, the same expression as rope_kernel's.
__global__ void rope_table_kernel(std::int64_t rows, std::int64_t half, const std::int32_t* first_pos,
                                  const float* __restrict__ inv_freq, float2* table) {
  chain_enter();
  const std::int64_t p0 = *first_pos;
  for_rows(rows, half, [&](std::int64_t r, std::int64_t k) {
    const float pos = static_cast<float>(p0 + r);
    float s, co;
    sincosf(pos * inv_freq[k], &s, &co);
    table[r * half + k] = make_float2(co, s);
  });
}

template <class T, int V>
__global__ void geglu_kernel(const T* gu, std::int64_t rows, std::int64_t f, T* out) {
  chain_enter();
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

// GeGLU over f32 k parts of the gate|up product (chain_gemm with parts > 1): the parts are summed
// first, in order. V = 8 (aligned) or 1.
template <class T, int V>
__global__ void geglu_parts_kernel(const float* gu, int count, std::int64_t stride, std::int64_t rows, std::int64_t f,
                                   T* out) {
  chain_enter();
  for_rows(rows, f / V, [&](std::int64_t r, std::int64_t c) {
    const float* g = gu + r * 2 * f + c * V;
    float vg[V], vu[V], o[V];
    load<V>(g, vg);
    load<V>(g + f, vu);
    for (int p = 1; p < count; ++p) {
      float tg[V], tu[V];
      load<V>(g + p * stride, tg);
      load<V>(g + p * stride + f, tu);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        vg[i] += tg[i];
        vu[i] += tu[i];
      }
    }
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
    const bool wide = rows * heads * half / 8 >= kWideThreads;
    if (wide && half % 8 == 0 && ldx % 8 == 0 && all_aligned16(p, inv_freq)) {
      launch(&rope_kernel<T, 8>, dim3(grid_rows(rows, heads * half / 8)), dim3(kThreads), 0, stream, p, rows, heads,
             h, ldx, first_pos, inv_freq);
    } else if (half % 2 == 0) {
      launch(&rope_kernel<T, 2>, dim3(grid_rows(rows, heads * half / 2)), dim3(kThreads), 0, stream, p, rows, heads,
             h, ldx, first_pos, inv_freq);
    } else {
      launch(&rope_kernel<T, 1>, dim3(grid_rows(rows, heads * half)), dim3(kThreads), 0, stream, p, rows, heads, h,
             ldx, first_pos, inv_freq);
    }
    return last_launch_status(kName);
  });
}

Status rope_into_cache(cudaStream_t stream, void* x, DType act, std::int64_t rows, std::int64_t q_heads,
                       std::int64_t kv_heads, std::int64_t h, std::int64_t ldx, void* k_cache, void* v_cache,
                       std::int64_t ld_cache, const std::int32_t* first_pos, const float* inv_freq) {
  constexpr const char* kName = "rope_into_cache";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, q_heads);
  EDGEVLA_CHECK_NONNEG(kName, kv_heads);
  EDGEVLA_CHECK_NONNEG(kName, h);
  if (h % 2 != 0) return invalid_argument("rope_into_cache: head size " + std::to_string(h) + " must be even");
  if (ldx < (q_heads + 2 * kv_heads) * h) {
    return invalid_argument("rope_into_cache: row stride " + std::to_string(ldx) +
                            " is smaller than (q_heads + 2·kv_heads)·h = " + std::to_string((q_heads + 2 * kv_heads) * h));
  }
  if (ld_cache < kv_heads * h) {
    return invalid_argument("rope_into_cache: cache row stride " + std::to_string(ld_cache) +
                            " is smaller than kv_heads·h = " + std::to_string(kv_heads * h));
  }
  if (rows == 0 || kv_heads == 0 || h == 0) {
    return with_act(act, kName, "activation", [](auto) { return Status::ok(); });
  }
  EDGEVLA_CHECK_PTR(kName, x);
  EDGEVLA_CHECK_PTR(kName, k_cache);
  EDGEVLA_CHECK_PTR(kName, v_cache);
  EDGEVLA_CHECK_PTR(kName, first_pos);
  EDGEVLA_CHECK_PTR(kName, inv_freq);
  return with_act(act, kName, "activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(x);
    T* kc = static_cast<T*>(k_cache);
    T* vc = static_cast<T*>(v_cache);
    const std::int64_t half = h / 2, items = (q_heads + 2 * kv_heads) * half;  // pairs a row
    const bool wide = rows * items / 8 >= kWideThreads;
    if (wide && half % 8 == 0 && ldx % 8 == 0 && ld_cache % 8 == 0 && all_aligned16(p, kc, vc, inv_freq)) {
      launch(&rope_into_cache_kernel<T, 8>, dim3(grid_rows(rows, items / 8)), dim3(kThreads), 0, stream, p, rows,
             q_heads, kv_heads, h, ldx, kc, vc, ld_cache, first_pos, inv_freq);
    } else {
      launch(&rope_into_cache_kernel<T, 1>, dim3(grid_rows(rows, items)), dim3(kThreads), 0, stream, p, rows,
             q_heads, kv_heads, h, ldx, kc, vc, ld_cache, first_pos, inv_freq);
    }
    return last_launch_status(kName);
  });
}

Status rope_table(cudaStream_t stream, std::int64_t rows, std::int64_t half, const std::int32_t* first_pos,
                  const float* inv_freq, float* table) {
  constexpr const char* kName = "rope_table";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, half);
  if (rows == 0 || half == 0) return Status::ok();
  EDGEVLA_CHECK_PTR(kName, first_pos);
  EDGEVLA_CHECK_PTR(kName, inv_freq);
  EDGEVLA_CHECK_PTR(kName, table);
  if (!all_aligned16(table)) return invalid_argument("rope_table: the table must be 16-byte aligned");
  launch(&rope_table_kernel, dim3(grid_rows(rows, half)), dim3(kThreads), 0, stream, rows, half, first_pos, inv_freq,
         reinterpret_cast<float2*>(table));
  return last_launch_status(kName);
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
    if (rows * f / 8 >= kWideThreads && f % 8 == 0 && all_aligned16(g, o)) {
      launch(&geglu_kernel<T, 8>, dim3(grid_rows(rows, f / 8)), dim3(kThreads), 0, stream, g, rows, f, o);
    } else if (f % 2 == 0) {
      launch(&geglu_kernel<T, 2>, dim3(grid_rows(rows, f / 2)), dim3(kThreads), 0, stream, g, rows, f, o);
    } else {
      launch(&geglu_kernel<T, 1>, dim3(grid_rows(rows, f)), dim3(kThreads), 0, stream, g, rows, f, o);
    }
    return last_launch_status(kName);
  });
}

Status geglu_parts(cudaStream_t stream, const float* gu, int count, std::int64_t stride, std::int64_t rows,
                   std::int64_t f, void* out, DType act) {
  constexpr const char* kName = "geglu_parts";
  EDGEVLA_CHECK_NONNEG(kName, rows);
  EDGEVLA_CHECK_NONNEG(kName, f);
  if (count < 1 || stride < rows * 2 * f) {
    return invalid_argument("geglu_parts: count must be ≥ 1 and the part stride at least rows · 2f");
  }
  return with_act(act, kName, "activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (rows == 0 || f == 0) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, gu);
    EDGEVLA_CHECK_PTR(kName, out);
    T* o = static_cast<T*>(out);
    if (f % 8 == 0 && stride % 8 == 0 && all_aligned16(gu, o)) {
      launch(&geglu_parts_kernel<T, 8>, dim3(grid_rows(rows, f / 8)), dim3(kThreads), 0, stream, gu, count, stride,
             rows, f, o);
    } else {
      launch(&geglu_parts_kernel<T, 1>, dim3(grid_rows(rows, f)), dim3(kThreads), 0, stream, gu, count, stride, rows,
             f, o);
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
