// The few-rows GEMM (see skinny_gemm.hpp).
//
// Fragment bookkeeping. mma.m16n8k16 multiplies a 16×16 "A" tile by a 16×8 "B" tile. Here A is
// 16 weight rows (output features) and B is 8 activation rows, so the MMA computes Dᵀ: lane
// (g = lane / 4, q = lane % 4) holds D for features g and g + 8 of its warp's 16 and activation
// rows 2q and 2q + 1 of the tile. Per 64-wide k chunk a lane loads 16 consecutive bf16 of each of
// its two weight rows (bytes [32q, 32q + 32) of the chunk) and the same 16 k of its activation
// row. MMA step j of the chunk takes 32-bit words 2j and 2j + 1 of those 16 values as the
// fragment's "low" and "high" k pairs: logical k pair (2q, 2q + 1) of step j is physical
// k = 16q + 4j + {0, 1}, pair (2q + 8, 2q + 9) is 16q + 4j + {2, 3}. The map depends on q and j
// only, and weights and activations use the same one, so every product pairs the right k.
#include "runtime/backends/cuda/kernels/skinny_gemm.hpp"

#include <cuda_bf16.h>

#include <atomic>
#include <string>

namespace edgevla::backends::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBatch = 4;  // 64-wide k chunks of weights a warp has in flight at once
constexpr int kPad = 8;    // bf16 of padding per shared activation row: rows 16 bytes apart in banks
constexpr int kMaxSplits = 16;  // k / k_chunk at most

struct Params {
  int m, n, kc, splits;
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

__device__ __forceinline__ void mma_bf16(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
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
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int s_last;
  bf16* s_a = reinterpret_cast<bf16*>(smem);  // [8T][kc + kPad]
  const int lds = p.kc + kPad;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  const int rb = static_cast<int>(blockIdx.x), split = static_cast<int>(blockIdx.y);
  const int k0 = split * p.kc;
  const int row0 = rb * 64 + warp * 16;
  // Rows past n load row n - 1 (inside W) and store nothing.
  const bf16* w_lo = p.w + static_cast<long long>(min(row0 + g, p.n - 1)) * p.ldw + k0 + 16 * q;
  const bf16* w_hi = p.w + static_cast<long long>(min(row0 + g + 8, p.n - 1)) * p.ldw + k0 + 16 * q;
  const int chunks = p.kc / 64;

  // The weights do not depend on anything this block computes: their first loads go out before
  // the activations are staged, and every later batch is loaded while the one before it is
  // multiplied (two register buffers).
  uint4 wa[kBatch][4], wb[kBatch][4];
  auto load_batch = [&](uint4 (&wr)[kBatch][4], int c0) {
#pragma unroll
    for (int c = 0; c < kBatch; ++c) {
      const int off = (c0 + c) * 64;
      wr[c][0] = __ldcs(reinterpret_cast<const uint4*>(w_lo + off));
      wr[c][1] = __ldcs(reinterpret_cast<const uint4*>(w_lo + off + 8));
      wr[c][2] = __ldcs(reinterpret_cast<const uint4*>(w_hi + off));
      wr[c][3] = __ldcs(reinterpret_cast<const uint4*>(w_hi + off + 8));
    }
  };
  load_batch(wa, 0);

  // Activations to shared memory with asynchronous copies, all in flight at once (rows past m
  // are zero-filled).
  const int vecs = p.kc / 8;  // 16-byte vectors per activation row
  for (int i = tid; i < 8 * T * vecs; i += kThreads) {
    const int r = i / vecs, c = i % vecs;
    const bool ok = r < p.m;
    const bf16* src = p.a + (ok ? static_cast<long long>(r) * p.lda + k0 + c * 8 : 0);
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(s_a + r * lds + c * 8));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();

  float acc[T][4];
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
  auto multiply = [&](const uint4 (&wr)[kBatch][4], int c0) {
#pragma unroll
    for (int c = 0; c < kBatch; ++c) {
      const int kk = (c0 + c) * 64 + 16 * q;
#pragma unroll
      for (int t = 0; t < T; ++t) {
        const bf16* src = s_a + (8 * t + g) * lds + kk;
        const uint4 b0 = *reinterpret_cast<const uint4*>(src);
        const uint4 b1 = *reinterpret_cast<const uint4*>(src + 8);
        mma_bf16(acc[t], wr[c][0].x, wr[c][2].x, wr[c][0].y, wr[c][2].y, b0.x, b0.y);
        mma_bf16(acc[t], wr[c][0].z, wr[c][2].z, wr[c][0].w, wr[c][2].w, b0.z, b0.w);
        mma_bf16(acc[t], wr[c][1].x, wr[c][3].x, wr[c][1].y, wr[c][3].y, b1.x, b1.y);
        mma_bf16(acc[t], wr[c][1].z, wr[c][3].z, wr[c][1].w, wr[c][3].w, b1.z, b1.w);
      }
    }
  };
  for (int c0 = 0; c0 < chunks; c0 += 2 * kBatch) {
    if (c0 + kBatch < chunks) load_batch(wb, c0 + kBatch);
    multiply(wa, c0);
    if (c0 + 2 * kBatch < chunks) load_batch(wa, c0 + 2 * kBatch);
    if (c0 + kBatch < chunks) multiply(wb, c0 + kBatch);
  }

  // acc[t]: [0] feature g, row 2q; [1] feature g, row 2q + 1; [2], [3] the same for feature g + 8.
  const int n_lo = row0 + g, n_hi = row0 + g + 8;
  if (p.splits == 1) {
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
  __threadfence();
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(p.counters + rb, 1) == p.splits - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  // Four outputs per thread per pass, every share of all four loaded before any is added.
  const int rows_here = min(64, p.n - rb * 64);
  const long long stride = static_cast<long long>(p.m) * p.n;
  constexpr int kPer = 4;
  for (int i0 = tid; i0 < p.m * 64; i0 += kPer * kThreads) {
    float v[kPer][kMaxSplits];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = i0 + j * kThreads;
      const int m = i / 64, r = i % 64;
      const bool ok = i < p.m * 64 && r < rows_here;
      const float* src = p.part + static_cast<long long>(ok ? m : 0) * p.n + rb * 64 + (ok ? r : 0);
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
      finish<OutT>(p, m, rb * 64 + r, sum);
    }
  }
  if (tid == 0) p.counters[rb] = 0;  // ready for the next launch (and the next graph replay)
}

template <int T, typename OutT>
cudaError_t launch_t(cudaStream_t stream, const Params& p, dim3 grid, std::size_t smem) {
  // The shared-memory limit is raised once per device to the most any call can use (outside a
  // capture: the first call of a shape happens in the engines' eager pass).
  static std::atomic<std::uint64_t> raised{0};
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  const std::uint64_t bit = std::uint64_t{1} << (dev % 64);
  if ((raised.load(std::memory_order_acquire) & bit) == 0) {
    const int most = 8 * T * (1024 + kPad) * 2;
    err = cudaFuncSetAttribute(reinterpret_cast<const void*>(&skinny_kernel<T, OutT>),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, most);
    if (err != cudaSuccess) return err;
    raised.fetch_or(bit, std::memory_order_acq_rel);
  }
  skinny_kernel<T, OutT><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

template <typename OutT>
cudaError_t launch(cudaStream_t stream, int tiles, const Params& p, dim3 grid, std::size_t smem) {
  switch (tiles) {
    case 1: return launch_t<1, OutT>(stream, p, grid, smem);
    case 2: return launch_t<2, OutT>(stream, p, grid, smem);
    case 3: return launch_t<3, OutT>(stream, p, grid, smem);
    case 4: return launch_t<4, OutT>(stream, p, grid, smem);
    case 5: return launch_t<5, OutT>(stream, p, grid, smem);
    case 6: return launch_t<6, OutT>(stream, p, grid, smem);
    case 7: return launch_t<7, OutT>(stream, p, grid, smem);
    default: return launch_t<8, OutT>(stream, p, grid, smem);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

const char* skinny_gemm_unsupported(const SkinnyGemmArgs& a) {
  if (a.m < 1 || a.m > kSkinnyMaxRows) return "m must be 1..64";
  if (a.n < 1 || a.n > (1 << 30) || a.k < 1 || a.k > (1 << 30)) return "n and k must be positive";
  if (a.k_chunk != 256 && a.k_chunk != 512 && a.k_chunk != 1024) return "k_chunk must be 256, 512 or 1024";
  if (a.k % a.k_chunk != 0) return "k must be a multiple of k_chunk";
  if (a.k / a.k_chunk > kMaxSplits) return "k may be at most 16 k_chunks";
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
  return static_cast<std::size_t>(a.k / a.k_chunk) * static_cast<std::size_t>(a.m * a.n) * sizeof(float);
}

Status skinny_gemm(cudaStream_t stream, const SkinnyGemmArgs& a) {
  if (const char* why = skinny_gemm_unsupported(a)) {
    return invalid_argument("skinny gemm m=" + std::to_string(a.m) + " n=" + std::to_string(a.n) +
                            " k=" + std::to_string(a.k) + ": " + why);
  }
  Params p{};
  p.m = static_cast<int>(a.m);
  p.n = static_cast<int>(a.n);
  p.kc = a.k_chunk;
  p.splits = static_cast<int>(a.k / a.k_chunk);
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
  const std::size_t smem = static_cast<std::size_t>(8 * tiles) * static_cast<std::size_t>(a.k_chunk + kPad) * 2;
  const cudaError_t err = a.d_type == DType::kF32 ? launch<float>(stream, tiles, p, grid, smem)
                                                  : launch<bf16>(stream, tiles, p, grid, smem);
  if (err != cudaSuccess) {
    return internal_error(std::string("skinny gemm launch: ") + cudaGetErrorName(err) + " (" +
                          cudaGetErrorString(err) + ")");
  }
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
