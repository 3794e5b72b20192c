#include "runtime/backends/cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <cblas.h>
#include <sys/mman.h>
#include <unistd.h>

// Hot loops are compiled twice on x86-64: for AVX2+FMA (x86-64-v3) and for the baseline, the
// loader picks one at start-up. Other architectures build the plain version, and so do
// ThreadSanitizer builds: the loader runs the clones' resolvers before the sanitizer's runtime
// is up, and an instrumented resolver crashes there.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define EDGEVLA_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define EDGEVLA_KERNEL
#endif

namespace edgevla::backends::cpu {
namespace {

// exp(x) for x in the float range, vectorizable (no branches, no libm call): 2^k · e^r with
// r in [-ln2/2, ln2/2] and a degree-6 polynomial; relative error below 2e-7.
inline float fast_exp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float kLog2e = 1.44269504088896341f;
  const float kRound = 12582912.0f;  // 1.5·2^23: adding and subtracting it rounds to an integer
  const float k = (x * kLog2e + kRound) - kRound;
  const float r = x - k * 0.693145751953125f - k * 1.428606765330187e-06f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  const float t = 1.0f - 2.0f / (fast_exp(2.0f * u) + 1.0f);  // tanh(u)
  return 0.5f * x * (1.0f + t);
}

EDGEVLA_KERNEL void bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(src[i]) << 16;
    std::memcpy(&dst[i], &bits, sizeof(float));
  }
}

EDGEVLA_KERNEL void f16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) {
  // The compiler's half type where C++ has one: Arm's __fp16 (Jetson), x86's _Float16 (g++ 12
  // defines __FLT16_MAX__ on aarch64 too, but takes _Float16 only in C there).
#if defined(__aarch64__)
  const auto* h = reinterpret_cast<const __fp16*>(src);
  for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(h[i]);
#elif defined(__x86_64__) && defined(__FLT16_MAX__)
  const auto* h = reinterpret_cast<const _Float16*>(src);
  for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(h[i]);
#else
  for (std::int64_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
#endif
}

// Runs single-threaded OpenBLAS GEMMs over blocks of the output. Splitting columns keeps each
// thread on its own slice of the weight (what dominates memory traffic); rows are split when
// there are too few columns.
struct Split {
  std::int64_t parts = 1;
  bool by_columns = true;
};

Split choose_split(const ThreadPool& pool, std::int64_t m, std::int64_t n, std::int64_t k) {
  Split s;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (pool.size() == 1 || work < 262144.0) return s;
  const std::int64_t threads = pool.size();
  if (n >= threads * 32) {
    s.parts = threads;
  } else if (m >= threads * 8) {
    s.parts = threads;
    s.by_columns = false;
  }
  return s;
}

EDGEVLA_KERNEL void add_bias_rows(float* y, std::int64_t rows, std::int64_t n, std::int64_t ldy,
                                  const float* bias) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * ldy;
    for (std::int64_t i = 0; i < n; ++i) yr[i] += bias[i];
  }
}

EDGEVLA_KERNEL void softmax_row(float* row, std::int64_t limit, std::int64_t total) {
  float mx = row[0];
  for (std::int64_t i = 1; i < limit; ++i) mx = std::max(mx, row[i]);
  float sum = 0.0f;
  for (std::int64_t i = 0; i < limit; ++i) {
    row[i] = fast_exp(row[i] - mx);
    sum += row[i];
  }
  const float inv = 1.0f / sum;
  for (std::int64_t i = 0; i < limit; ++i) row[i] *= inv;
  for (std::int64_t i = limit; i < total; ++i) row[i] = 0.0f;
}

}  // namespace

KernelContext::KernelContext(int threads) : pool_(threads) {
  // OpenBLAS is called from the pool's threads, one GEMM block each.
  openblas_set_num_threads(1);
  panels_.resize(static_cast<std::size_t>(pool_.size()));
}

void KernelContext::reserve_panels(std::int64_t max_in) {
  // About 256 KiB of converted weight per thread and panel: stays in L2 while it is used.
  panel_rows_ = std::max<std::int64_t>(16, (std::int64_t{1} << 16) / std::max<std::int64_t>(max_in, 1));
  for (auto& p : panels_) {
    const auto need = static_cast<std::size_t>(panel_rows_ * max_in);
    if (p.size() < need) p.resize(need);
  }
}

std::int64_t resident_bytes(const void* p, std::size_t n) {
  if (p == nullptr || n == 0) return 0;
  static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + n + page - 1) & ~(page - 1);
  std::int64_t total = 0;
  unsigned char vec[4096];
  for (std::uintptr_t a = begin; a < end; a += page * sizeof vec) {
    const std::uintptr_t len = std::min<std::uintptr_t>(end - a, page * sizeof vec);
    if (::mincore(reinterpret_cast<void*>(a), len, vec) != 0) return total;
    for (std::uintptr_t i = 0; i < len / page; ++i) total += (vec[i] & 1) ? static_cast<std::int64_t>(page) : 0;
  }
  return total;
}

void to_f32(DType dtype, const void* src, float* dst, std::int64_t n) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case DType::kBF16:
      bf16_to_f32(static_cast<const std::uint16_t*>(src), dst, n);
      return;
    case DType::kF16:
      f16_to_f32(static_cast<const std::uint16_t*>(src), dst, n);
      return;
    default:
      std::fill(dst, dst + n, 0.0f);  // callers only pass floating dtypes (checked at load)
  }
}

void gemm(KernelContext& ctx, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, bool trans_b,
          float beta, float* c, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const Split s = choose_split(ctx.pool(), m, n, k);
  auto block = [&](std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
    const float* bb = trans_b ? b + c0 * ldb : b + c0;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<int>(r1 - r0), static_cast<int>(c1 - c0), static_cast<int>(k), alpha,
                a + r0 * lda, static_cast<int>(lda), bb, static_cast<int>(ldb), beta,
                c + r0 * ldc + c0, static_cast<int>(ldc));
  };
  if (s.parts == 1) {
    block(0, m, 0, n);
    return;
  }
  if (s.by_columns) {
    // Column blocks rounded to 16 so every block keeps aligned, vector-friendly widths.
    const std::int64_t step = ((n + s.parts - 1) / s.parts + 15) / 16 * 16;
    ctx.pool().run(static_cast<int>(s.parts), [&](int t) {
      const std::int64_t c0 = t * step, c1 = std::min(n, c0 + step);
      if (c0 < c1) block(0, m, c0, c1);
    });
  } else {
    const std::int64_t step = (m + s.parts - 1) / s.parts;
    ctx.pool().run(static_cast<int>(s.parts), [&](int t) {
      const std::int64_t r0 = t * step, r1 = std::min(m, r0 + step);
      if (r0 < r1) block(r0, r1, 0, n);
    });
  }
}

void linear(KernelContext& ctx, const float* x, std::int64_t m, std::int64_t ldx, const Linear& w,
            float* y, std::int64_t ldy, bool accumulate, bool add_bias) {
  if (m <= 0) return;
  const float beta = accumulate ? 1.0f : 0.0f;
  if (w.dtype == DType::kF32) {
    gemm(ctx, m, w.out, w.in, 1.0f, x, ldx, static_cast<const float*>(w.w), w.in, true, beta, y, ldy);
  } else {
    // Reduced-precision weights: each thread converts panels of its own output columns into
    // its scratch and multiplies them, so no full-size f32 copy of the weight ever exists.
    const std::int64_t threads = ctx.pool().size();
    const std::int64_t rows_per = std::max<std::int64_t>(
        16, ((w.out + threads - 1) / threads + 15) / 16 * 16);
    const int parts = static_cast<int>((w.out + rows_per - 1) / rows_per);
    const std::size_t esize = dtype_size(w.dtype);
    ctx.pool().run(parts, [&](int t) {
      // Tasks may land on any thread; the scratch index is the task index modulo the pool.
      float* panel = ctx.panel(t);  // parts <= threads, so task t owns panel t
      const std::int64_t end = std::min(w.out, (t + 1) * rows_per);
      for (std::int64_t r0 = t * rows_per; r0 < end; r0 += ctx.panel_rows()) {
        const std::int64_t r1 = std::min(end, r0 + ctx.panel_rows());
        to_f32(w.dtype, static_cast<const std::byte*>(w.w) + static_cast<std::size_t>(r0 * w.in) * esize,
               panel, (r1 - r0) * w.in);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m),
                    static_cast<int>(r1 - r0), static_cast<int>(w.in), 1.0f, x,
                    static_cast<int>(ldx), panel, static_cast<int>(w.in), beta, y + r0,
                    static_cast<int>(ldy));
      }
    });
  }
  if (add_bias && !w.bias.empty()) add_bias_rows(y, m, w.out, ldy, w.bias.data());
}

// `adaptive`: w is a modulation scale applied as (1 + w) (DiT's AdaLN), else the norm's weight.
EDGEVLA_KERNEL static void layer_norm_rows(const float* x, std::int64_t r0, std::int64_t r1,
                                           std::int64_t width, const float* w, const float* b,
                                           float eps, bool adaptive, float* y) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    float mean = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) mean += xr[i];
    mean /= static_cast<float>(width);
    float var = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) {
      const float d = xr[i] - mean;
      var += d * d;
    }
    var /= static_cast<float>(width);
    const float inv = 1.0f / std::sqrt(var + eps);
    if (adaptive) {
      for (std::int64_t i = 0; i < width; ++i) yr[i] = (xr[i] - mean) * inv * (1.0f + w[i]) + b[i];
    } else {
      for (std::int64_t i = 0; i < width; ++i) yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
    }
  }
}

void layer_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
                const float* w, const float* b, float eps, float* y) {
  ctx.pool().parallel_for(rows, std::max<std::int64_t>(1, 16384 / width), [&](std::int64_t r0, std::int64_t r1) {
    layer_norm_rows(x, r0, r1, width, w, b, eps, false, y);
  });
}

void ada_layer_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width, const float* scale,
                    const float* shift, float eps, float* y) {
  ctx.pool().parallel_for(rows, std::max<std::int64_t>(1, 16384 / width), [&](std::int64_t r0, std::int64_t r1) {
    layer_norm_rows(x, r0, r1, width, scale, shift, eps, true, y);
  });
}

EDGEVLA_KERNEL static void rms_norm_rows(const float* x, std::int64_t r0, std::int64_t r1,
                                         std::int64_t width, const float* w, const float* shift,
                                         float eps, float* y) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    float ss = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(width) + eps);
    if (shift == nullptr) {
      for (std::int64_t i = 0; i < width; ++i) yr[i] = xr[i] * inv * (1.0f + w[i]);
    } else {
      for (std::int64_t i = 0; i < width; ++i) yr[i] = xr[i] * inv * (1.0f + w[i]) + shift[i];
    }
  }
}

void rms_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
              const float* w, float eps, float* y) {
  ctx.pool().parallel_for(rows, std::max<std::int64_t>(1, 16384 / width), [&](std::int64_t r0, std::int64_t r1) {
    rms_norm_rows(x, r0, r1, width, w, nullptr, eps, y);
  });
}

void ada_rms_norm(KernelContext& ctx, const float* x, std::int64_t rows, std::int64_t width,
                  const float* scale, const float* shift, float eps, float* y) {
  ctx.pool().parallel_for(rows, std::max<std::int64_t>(1, 16384 / width), [&](std::int64_t r0, std::int64_t r1) {
    rms_norm_rows(x, r0, r1, width, scale, shift, eps, y);
  });
}

EDGEVLA_KERNEL static void rope_rows(float* x, std::int64_t r0, std::int64_t r1, std::int64_t heads,
                                     std::int64_t h, std::int64_t ldx, std::int64_t first_pos,
                                     const float* inv_freq, float* cs) {
  const std::int64_t half = h / 2;
  for (std::int64_t r = r0; r < r1; ++r) {
    // cos/sin of this position once per row, shared by all heads. The angle is a float32
    // product, as the reference computes it.
    const float pos = static_cast<float>(first_pos + r);
    for (std::int64_t k = 0; k < half; ++k) {
      const float theta = pos * inv_freq[k];
      cs[k] = std::cos(theta);
      cs[half + k] = std::sin(theta);
    }
    for (std::int64_t j = 0; j < heads; ++j) {
      float* v = x + r * ldx + j * h;
      for (std::int64_t k = 0; k < half; ++k) {
        const float a = v[k], b = v[k + half];
        v[k] = a * cs[k] - b * cs[half + k];
        v[k + half] = b * cs[k] + a * cs[half + k];
      }
    }
  }
}

void rope(KernelContext& ctx, float* x, std::int64_t rows, std::int64_t heads, std::int64_t h,
          std::int64_t ldx, std::int64_t first_pos, const float* inv_freq) {
  ctx.pool().parallel_for(rows, 8, [&](std::int64_t r0, std::int64_t r1) {
    float cs[4096];  // head_dim is at most 4096 (config check)
    rope_rows(x, r0, r1, heads, h, ldx, first_pos, inv_freq, cs);
  });
}

EDGEVLA_KERNEL static void bias_gelu_range(float* x, std::int64_t r0, std::int64_t r1, std::int64_t n,
                                           const float* bias) {
  for (std::int64_t r = r0; r < r1; ++r) {
    float* xr = x + r * n;
    for (std::int64_t i = 0; i < n; ++i) xr[i] = gelu_tanh(xr[i] + bias[i]);
  }
}

void bias_gelu(KernelContext& ctx, float* x, std::int64_t rows, std::int64_t n, const float* bias) {
  ctx.pool().parallel_for(rows, std::max<std::int64_t>(1, 16384 / n), [&](std::int64_t r0, std::int64_t r1) {
    bias_gelu_range(x, r0, r1, n, bias);
  });
}

EDGEVLA_KERNEL static void geglu_range(float* g, const float* u, std::int64_t b, std::int64_t e) {
  for (std::int64_t i = b; i < e; ++i) g[i] = gelu_tanh(g[i]) * u[i];
}

void geglu(KernelContext& ctx, float* gate, const float* up, std::int64_t rows, std::int64_t n) {
  ctx.pool().parallel_for(rows * n, 16384, [&](std::int64_t b, std::int64_t e) { geglu_range(gate, up, b, e); });
}

EDGEVLA_KERNEL static void gated_add_rows(float* x, const float* y, std::int64_t r0, std::int64_t r1,
                                          std::int64_t n, const float* gate) {
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t i = 0; i < n; ++i) x[r * n + i] += y[r * n + i] * gate[i];
  }
}

void gated_add(KernelContext& ctx, float* x, const float* y, std::int64_t rows, std::int64_t n,
               const float* gate) {
  ctx.pool().parallel_for(rows, std::max<std::int64_t>(1, 16384 / n), [&](std::int64_t r0, std::int64_t r1) {
    gated_add_rows(x, y, r0, r1, n, gate);
  });
}

EDGEVLA_KERNEL void silu_inplace(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + fast_exp(-x[i]));
}

void attention(KernelContext& ctx, const float* q, std::int64_t rows, std::int64_t ldq,
               std::int64_t heads, std::int64_t kv_heads, std::int64_t h, const KeyBlock& a,
               const KeyBlock& b, const std::int32_t* key_limit, float scale, float* out,
               std::int64_t ldo, AttentionScratch& scratch) {
  const std::int64_t total = a.len + b.len;
  const std::int64_t group = heads / kv_heads;

  // With one kv head and packed rows, the queries of all heads form one [rows·heads, h] matrix
  // against the shared keys: one GEMM per block instead of one per head.
  const bool stacked = kv_heads == 1 && ldq == heads * h && ldo == heads * h;
  std::vector<AttentionTask>& tasks = scratch.tasks;
  tasks.clear();
  const int threads = ctx.pool().size();
  if (stacked) {
    const std::int64_t n = rows * heads;
    const std::int64_t step = std::max<std::int64_t>(heads, ((n + threads - 1) / threads + heads - 1) / heads * heads);
    for (std::int64_t r0 = 0; r0 < n; r0 += step) {
      const std::int64_t r1 = std::min(n, r0 + step);
      tasks.push_back({q + r0 * h, out + r0 * h, r1 - r0, h, h, 0, r0, heads, nullptr});
    }
  } else {
    for (std::int64_t j = 0; j < heads; ++j) {
      tasks.push_back({q + j * h, out + j * h, rows, ldq, ldo, j / group, 0, 1, nullptr});
    }
  }
  // Each task scores its rows a tile at a time in its own slice of the scratch.
  const std::int64_t slice = kAttentionTile * total;
  scratch.logits.reserve(static_cast<std::int64_t>(tasks.size()) * slice);  // engines pre-size it
  for (std::size_t i = 0; i < tasks.size(); ++i) tasks[i].logits = scratch.logits.data() + static_cast<std::int64_t>(i) * slice;
  ctx.pool().run(static_cast<int>(tasks.size()), [&](int ti) {
    const AttentionTask& t = tasks[static_cast<std::size_t>(ti)];
    for (std::int64_t r0 = 0; r0 < t.n; r0 += kAttentionTile) {
      const int n = static_cast<int>(std::min(kAttentionTile, t.n - r0));
      const float* tq = t.q + r0 * t.lda;
      float* to = t.o + r0 * t.ldo;
      if (a.len > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(a.len), static_cast<int>(h),
                    scale, tq, static_cast<int>(t.lda), a.k + t.kv * h, static_cast<int>(a.ld), 0.0f,
                    t.logits, static_cast<int>(total));
      }
      if (b.len > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(b.len), static_cast<int>(h),
                    scale, tq, static_cast<int>(t.lda), b.k + t.kv * h, static_cast<int>(b.ld), 0.0f,
                    t.logits + a.len, static_cast<int>(total));
      }
      for (std::int64_t r = 0; r < n; ++r) {
        const std::int64_t original = (t.first + r0 + r) / t.per_row;
        const std::int64_t limit = key_limit == nullptr ? total : std::min<std::int64_t>(total, key_limit[original]);
        softmax_row(t.logits + r * total, limit, total);
      }
      if (a.len > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, static_cast<int>(h), static_cast<int>(a.len),
                    1.0f, t.logits, static_cast<int>(total), a.v + t.kv * h, static_cast<int>(a.ld), 0.0f,
                    to, static_cast<int>(t.ldo));
      }
      if (b.len > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, static_cast<int>(h), static_cast<int>(b.len),
                    1.0f, t.logits + a.len, static_cast<int>(total), b.v + t.kv * h, static_cast<int>(b.ld),
                    a.len > 0 ? 1.0f : 0.0f, to, static_cast<int>(t.ldo));
      }
    }
  });
}

}  // namespace edgevla::backends::cpu
