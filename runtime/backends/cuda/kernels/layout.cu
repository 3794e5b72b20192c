// Layout kernels of the cuda backend: image patches as GEMM rows, periodic row adds (position
// embeddings), token-embedding gathers and dtype conversions. Shared machinery:
// elementwise_common.cuh.

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"

namespace edgevla::backends::cuda {

using namespace ew;

namespace {

// Rows ld apart; columns from 3·p·p to ld are zeros (the patch GEMM's k padded).
template <class T>
__global__ void im2col_kernel(const float* __restrict__ images, std::int64_t s, std::int64_t p, std::int64_t g,
                              std::int64_t rows, std::int64_t ld, T* out) {
  const std::int64_t pp = p * p;
  const std::int64_t cols = 3 * pp;
  const std::int64_t gg = g * g;
  for_rows(rows, ld, [&](std::int64_t row, std::int64_t col) {
    if (col >= cols) {
      out[row * ld + col] = from_f32<T>(0.0f);
      return;
    }
    const std::int64_t cam = row / gg;
    const std::int64_t pr = (row - cam * gg) / g;
    const std::int64_t pc = row - cam * gg - pr * g;
    const std::int64_t ch = col / pp;
    const std::int64_t u = (col - ch * pp) / p;
    const std::int64_t w = col - ch * pp - u * p;
    const float v = images[((cam * 3 + ch) * s + pr * p + u) * s + pc * p + w];
    out[row * ld + col] = from_f32<T>(v);
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

}  // namespace

Status im2col_patches(cudaStream_t stream, const float* images, std::int64_t cams, std::int64_t s, std::int64_t p,
                      void* out, DType act, std::int64_t ld) {
  constexpr const char* kName = "im2col_patches";
  EDGEVLA_CHECK_NONNEG(kName, cams);
  if (p <= 0 || s < p) {
    return invalid_argument("im2col_patches: patch size " + std::to_string(p) +
                            " must be positive and at most the image size " + std::to_string(s));
  }
  if (ld == 0) ld = 3 * p * p;
  if (ld < 3 * p * p) {
    return invalid_argument("im2col_patches: row stride " + std::to_string(ld) + " is shorter than a patch (" +
                            std::to_string(3 * p * p) + " values); give 0 or at least that");
  }
  return with_act(act, kName, "activation (out)", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (cams == 0) return Status::ok();
    EDGEVLA_CHECK_PTR(kName, images);
    EDGEVLA_CHECK_PTR(kName, out);
    const std::int64_t g = s / p;
    const std::int64_t rows = cams * g * g;
    im2col_kernel<T><<<grid_rows(rows, ld), kThreads, 0, stream>>>(images, s, p, g, rows, ld, static_cast<T*>(out));
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

}  // namespace edgevla::backends::cuda
