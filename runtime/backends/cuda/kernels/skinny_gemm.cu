// The few-rows GEMM (see skinny_gemm.hpp).
//
// Layout. A block owns 64 weight rows (output features) and one k share. Its k share goes
// through shared memory in 128-wide stages: the stage's 64 weight rows and the activation rows
// (rows past m zero-filled), each row padded to 136 bf16 so that the 16-byte rows of an 8×8
// ldmatrix fall in distinct banks. Four stages are in flight (cp.async, weights marked
// evict-first in L2: they are read once per pass, the activations by every block).
//
// Fragment bookkeeping. mma.m16n8k16 multiplies a 16×16 "A" tile by a 16×8 "B" tile. Here A is
// 16 weight rows and B is 8 activation rows (both stored k-contiguous, so both come straight
// from ldmatrix without a transpose), and the MMA computes Dᵀ: lane (g = lane / 4, q = lane % 4)
// holds D for features g and g + 8 of its warp's 16 and activation rows 2q and 2q + 1 of the
// tile. Eight warps: warp w takes feature rows 16 (w % 4) .. + 16 and the k half w / 4 of every
// stage; the two halves' sums are added in shared memory at the end (fixed order).
//
// Split k: each block writes its partial sums to the workspace and the last block of a row range
// (an arrival counter) adds them in split order: deterministic, no atomics on the data, no second
// launch.
#include "runtime/backends/cuda/kernels/skinny_gemm.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace edgevla::backends::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBK = 128;          // k per stage
constexpr int kStages = 4;        // stages in flight
constexpr int kLds = kBK + 8;     // bf16 per shared row: 17 16-byte chunks, conflict-free ldmatrix
constexpr int kMaxSplits = 16;    // k shares at most

template <int T>
struct Layout {
  static constexpr int kW = 64 * kLds;     // weight rows of a stage (bf16)
  static constexpr int kA = 8 * T * kLds;  // activation rows of a stage
  static constexpr int kStage = kW + kA;
  static constexpr int kBytes = kStages * kStage * 2;
};

struct Params {
  int m, n, k, kc, splits;
  const bf16* a;
  long long lda;
  const bf16* w;
  long long ldw;
  void* d;
  long long ldd;
  float alpha, beta;
  const float* bias;
  float* part;  // [splits][m][n]
  int* counters;
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool ok, unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(ok ? 16 : 0), "l"(policy));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float load_out(const float* p) { return *p; }
__device__ __forceinline__ float load_out(const bf16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store_out(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_out(bf16* p, float v) { *p = __float2bfloat16_rn(v); }

// alpha · sum (+ bias) (+ beta · D) into D[m, n], for an element inside the output.
template <typename OutT>
__device__ __forceinline__ void finish(const Params& p, int m, int n, float sum) {
  if (m >= p.m || n >= p.n) return;
  float v = p.alpha * sum;
  if (p.bias != nullptr) v += p.bias[n];
  OutT* d = static_cast<OutT*>(p.d) + static_cast<long long>(m) * p.ldd + n;
  if (p.beta != 0.0f) v += p.beta * load_out(d);
  store_out(d, v);
}

template <int T, typename OutT>
__global__ void __launch_bounds__(kThreads) skinny_kernel(const Params p) {
  using L = Layout<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int s_last;
  bf16* sm = reinterpret_cast<bf16*>(smem);
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  const int rb = static_cast<int>(blockIdx.x), split = static_cast<int>(blockIdx.y);
  const int n0 = rb * 64;
  const int k0 = split * p.kc;
  const int stages = min(p.kc, p.k - k0) / kBK;
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));

  auto load_stage = [&](int st) {
    bf16* sw = sm + (st % kStages) * L::kStage;
    bf16* sa = sw + L::kW;
    const int kk = k0 + st * kBK;
#pragma unroll
    for (int i = 0; i < 64 * 16 / kThreads; ++i) {
      const int c = tid + i * kThreads;
      const int r = c / 16, col = c % 16;
      const bool ok = n0 + r < p.n;
      cp_async16(sw + r * kLds + col * 8, p.w + (ok ? static_cast<long long>(n0 + r) * p.ldw + kk + col * 8 : 0), ok,
                 policy);
    }
#pragma unroll
    for (int i = 0; i < (8 * T * 16 + kThreads - 1) / kThreads; ++i) {
      const int c = tid + i * kThreads;
      if (c < 8 * T * 16) {
        const int r = c / 16, col = c % 16;
        const bool ok = r < p.m;
        // Activations are shared by every block: an ordinary (evict-normal) copy.
        const unsigned dst = smem_addr(sa + r * kLds + col * 8);
        const bf16* src = p.a + (ok ? static_cast<long long>(r) * p.lda + kk + col * 8 : 0);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
      }
    }
  };

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < stages) load_stage(st);
    asm volatile("cp.async.commit_group;\n" ::);
  }

  float acc[T][4];
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
  const int wrow = (warp % 4) * 16;
  const int khalf = warp / 4;
  // ldmatrix addresses: A matrices (rows 0-7 | 8-15) × (k 0-7 | 8-15); B pairs of 8-row tiles.
  const int a_row = wrow + (lane % 8) + ((lane / 8) % 2) * 8;
  const int a_k = (lane / 16) * 8;
  const int b_row = (lane % 8) + (lane / 16) * 8;
  const int b_k = ((lane / 8) % 2) * 8;

  for (int st = 0; st < stages; ++st) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 2) : "memory");
    __syncthreads();
    if (st + kStages - 1 < stages) load_stage(st + kStages - 1);
    asm volatile("cp.async.commit_group;\n" ::);
    const bf16* sw = sm + (st % kStages) * L::kStage;
    const bf16* sa = sw + L::kW;
#pragma unroll
    for (int j = 0; j < kBK / 32; ++j) {
      const int kk = khalf * (kBK / 2) + j * 16;
      unsigned a[4];
      ldmatrix_x4(a, sw + a_row * kLds + kk + a_k);
#pragma unroll
      for (int t = 0; t + 1 < T; t += 2) {
        unsigned b[4];
        ldmatrix_x4(b, sa + (8 * t + b_row) * kLds + kk + b_k);
        mma_bf16(acc[t], a, b[0], b[1]);
        mma_bf16(acc[t + 1], a, b[2], b[3]);
      }
      if constexpr (T % 2 == 1) {
        unsigned b[2];
        ldmatrix_x2(b, sa + (8 * (T - 1) + lane % 8) * kLds + kk + b_k);
        mma_bf16(acc[T - 1], a, b[0], b[1]);
      }
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();

  // The second k half's sums join the first's through shared memory (the stages are free now).
  float* red = reinterpret_cast<float*>(smem);
  if (khalf == 1) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) red[((warp % 4) * T * 4 + t * 4 + e) * 32 + lane] = acc[t][e];
    }
  }
  __syncthreads();
  const bool owner = khalf == 0;
  if (owner) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[t][e] += red[(warp * T * 4 + t * 4 + e) * 32 + lane];
    }
  }

  // acc[t]: [0] feature g, row 2q; [1] feature g, row 2q + 1; [2], [3] the same for feature g + 8.
  const int n_lo = n0 + wrow + g, n_hi = n_lo + 8;
  if (p.splits == 1) {
    if (!owner) return;
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const int m = 8 * t + 2 * q;
      finish<OutT>(p, m, n_lo, acc[t][0]);
      finish<OutT>(p, m + 1, n_lo, acc[t][1]);
      finish<OutT>(p, m, n_hi, acc[t][2]);
      finish<OutT>(p, m + 1, n_hi, acc[t][3]);
    }
    return;
  }

  // Split k: this block's partial sums, then the last block of the row range adds them up.
  if (owner) {
    float* part = p.part + static_cast<long long>(split) * p.m * p.n;
    auto put = [&](int m, int n, float v) {
      if (m < p.m && n < p.n) part[static_cast<long long>(m) * p.n + n] = v;
    };
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const int m = 8 * t + 2 * q;
      put(m, n_lo, acc[t][0]);
      put(m + 1, n_lo, acc[t][1]);
      put(m, n_hi, acc[t][2]);
      put(m + 1, n_hi, acc[t][3]);
    }
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(p.counters + rb, 1) == p.splits - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  // Four outputs per thread per pass, every share of all four loaded before any is added.
  const int rows_here = min(64, p.n - n0);
  const long long stride = static_cast<long long>(p.m) * p.n;
  constexpr int kPer = 4;
  for (int i0 = tid; i0 < p.m * 64; i0 += kPer * kThreads) {
    float v[kPer][kMaxSplits];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = i0 + j * kThreads;
      const int m = i / 64, r = i % 64;
      const bool ok = i < p.m * 64 && r < rows_here;
      const float* src = p.part + static_cast<long long>(ok ? m : 0) * p.n + n0 + (ok ? r : 0);
#pragma unroll
      for (int sp = 0; sp < kMaxSplits; ++sp) v[j][sp] = ok && sp < p.splits ? __ldcg(src + sp * stride) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = i0 + j * kThreads;
      const int m = i / 64, r = i % 64;
      if (i >= p.m * 64 || r >= rows_here) continue;
      float sum = 0.0f;
#pragma unroll
      for (int sp = 0; sp < kMaxSplits; ++sp) sum += v[j][sp];  // split order: deterministic
      finish<OutT>(p, m, n0 + r, sum);
    }
  }
  if (tid == 0) p.counters[rb] = 0;  // ready for the next launch (and the next graph replay)
}

template <int T, typename OutT>
cudaError_t launch_t(cudaStream_t stream, const Params& p, dim3 grid) {
  // The shared-memory limit is raised once per device (outside a capture: the first call of a
  // shape happens in the engines' eager pass).
  static std::atomic<std::uint64_t> raised{0};
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  const std::uint64_t bit = std::uint64_t{1} << (dev % 64);
  if ((raised.load(std::memory_order_acquire) & bit) == 0) {
    err = cudaFuncSetAttribute(reinterpret_cast<const void*>(&skinny_kernel<T, OutT>),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, Layout<T>::kBytes);
    if (err != cudaSuccess) return err;
    raised.fetch_or(bit, std::memory_order_acq_rel);
  }
  skinny_kernel<T, OutT><<<grid, kThreads, Layout<T>::kBytes, stream>>>(p);
  return cudaGetLastError();
}

template <typename OutT>
cudaError_t launch(cudaStream_t stream, int tiles, const Params& p, dim3 grid) {
  switch (tiles) {
    case 1: return launch_t<1, OutT>(stream, p, grid);
    case 2: return launch_t<2, OutT>(stream, p, grid);
    case 3: return launch_t<3, OutT>(stream, p, grid);
    case 4: return launch_t<4, OutT>(stream, p, grid);
    case 5: return launch_t<5, OutT>(stream, p, grid);
    case 6: return launch_t<6, OutT>(stream, p, grid);
    case 7: return launch_t<7, OutT>(stream, p, grid);
    default: return launch_t<8, OutT>(stream, p, grid);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

std::int64_t splits_of(const SkinnyGemmArgs& a) { return (a.k + a.k_chunk - 1) / a.k_chunk; }

}  // namespace

const char* skinny_gemm_unsupported(const SkinnyGemmArgs& a) {
  if (a.m < 1 || a.m > kSkinnyMaxRows) return "m must be 1..64";
  if (a.n < 1 || a.n > (1 << 30) || a.k < 1 || a.k > (1 << 30)) return "n and k must be positive";
  if (a.k % kBK != 0) return "k must be a multiple of 128";
  if (a.k_chunk < kBK || a.k_chunk % kBK != 0) return "k_chunk must be a positive multiple of 128";
  if (splits_of(a) > kMaxSplits) return "k may be split into at most 16 k_chunks";
  if (a.lda % 8 != 0 || a.ldw % 8 != 0 || a.lda < a.k || a.ldw < a.k || a.ldd < a.n) {
    return "lda and ldw must be multiples of 8 and at least k, ldd at least n";
  }
  if (a.a == nullptr || a.w == nullptr || a.d == nullptr || !aligned16(a.a) || !aligned16(a.w)) {
    return "a and w must be 16-byte aligned device pointers, d non-null";
  }
  if (a.d_type != DType::kF32 && a.d_type != DType::kBF16) return "d must be f32 or bf16";
  if (a.k_chunk < a.k && (a.partials == nullptr || a.counters == nullptr)) {
    return "split k needs the partials workspace and counters";
  }
  return nullptr;
}

std::size_t skinny_gemm_partial_bytes(const SkinnyGemmArgs& a) {
  if (a.k_chunk <= 0 || a.k_chunk >= a.k) return 0;
  return static_cast<std::size_t>(splits_of(a)) * static_cast<std::size_t>(a.m * a.n) * sizeof(float);
}

Status skinny_gemm(cudaStream_t stream, const SkinnyGemmArgs& a) {
  if (const char* why = skinny_gemm_unsupported(a)) {
    return invalid_argument("skinny gemm m=" + std::to_string(a.m) + " n=" + std::to_string(a.n) +
                            " k=" + std::to_string(a.k) + ": " + why);
  }
  Params p{};
  p.m = static_cast<int>(a.m);
  p.n = static_cast<int>(a.n);
  p.k = static_cast<int>(a.k);
  p.kc = static_cast<int>(std::min<std::int64_t>(a.k_chunk, a.k));
  p.splits = static_cast<int>(splits_of(a));
  p.a = static_cast<const bf16*>(a.a);
  p.lda = a.lda;
  p.w = static_cast<const bf16*>(a.w);
  p.ldw = a.ldw;
  p.d = a.d;
  p.ldd = a.ldd;
  p.alpha = a.alpha;
  p.beta = a.beta;
  p.bias = a.bias;
  p.part = a.partials;
  p.counters = a.counters;
  const int tiles = static_cast<int>((a.m + 7) / 8);
  const dim3 grid(static_cast<unsigned>((a.n + kSkinnyBlockRows - 1) / kSkinnyBlockRows),
                  static_cast<unsigned>(p.splits));
  const cudaError_t err = a.d_type == DType::kF32 ? launch<float>(stream, tiles, p, grid)
                                                  : launch<bf16>(stream, tiles, p, grid);
  if (err != cudaSuccess) {
    return internal_error(std::string("skinny gemm launch: ") + cudaGetErrorName(err) + " (" +
                          cudaGetErrorString(err) + ")");
  }
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
