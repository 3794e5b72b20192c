// The few-rows GEMM (see skinny_gemm.hpp).
//
// Block layout. A block owns 64 weight rows (output features) and one k share, and runs nine
// warps: warp 8 is the producer, warps 0-7 multiply. The producer moves each 128-wide k stage
// of the block's weight rows and of the activation rows into shared memory with bulk copies
// (one instruction per 256-byte row segment, completion counted in bytes on the stage's "full"
// mbarrier; weights marked evict-first in L2: they are read once per pass, the activations by
// every block), up to kStages stages ahead; the multiplying warps release a stage through its
// "empty" mbarrier. Shared rows are padded to 136 bf16 so that the eight 16-byte rows an
// ldmatrix reads fall in distinct banks. Rows past m or n are never copied: what stale data
// they hold reaches only output rows or features that are not stored.
//
// Fragment bookkeeping. mma.m16n8k16 multiplies a 16×16 "A" tile by a 16×8 "B" tile. A is 16
// weight rows and B is 8 activation rows (both stored k-contiguous, so both come straight from
// ldmatrix without a transpose), and the MMA computes Dᵀ: lane (g = lane / 4, q = lane % 4)
// holds D for features g and g + 8 of its warp's 16 and activation rows 2q and 2q + 1 of the
// tile. Warp w takes feature rows 16 (w % 4) .. + 16 and the k half w / 4 of every stage; the
// two halves are added in shared memory at the end (fixed order).
//
// Split k: the blocks sharing a row range form one thread-block cluster (at most 8), each puts
// its 64 × rows sums in its shared memory, and after a cluster barrier every block adds one
// slice of the tile across the cluster's shared memories in rank order: deterministic, no
// workspace, no atomics, one launch.
#include "runtime/backends/cuda/kernels/skinny_gemm.hpp"

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace edgevla::backends::cuda {
namespace {

namespace cg = cooperative_groups;
using bf16 = __nv_bfloat16;

constexpr int kMmaWarps = 8;
constexpr int kThreads = (kMmaWarps + 1) * 32;
constexpr int kBK = 128;              // k per stage
constexpr int kStages = 6;            // stages in flight
constexpr int kLds = kBK + 8;         // bf16 per shared row: 17 16-byte chunks, conflict-free ldmatrix
constexpr int kMaxSplits = 8;         // k shares at most (a portable cluster)

template <int T>
struct Layout {
  static constexpr int kRows = 8 * T;        // activation rows held (m rounded up to 8)
  static constexpr int kW = 64 * kLds;       // weight rows of a stage (bf16)
  static constexpr int kStage = kW + kRows * kLds;
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
};

// The kernel's body exists for compute capability 9.0 and newer only (the host refuses to launch
// it elsewhere); older device passes compile an empty kernel.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define EDGEVLA_SKINNY_BODY 1
constexpr int kProducer = kMmaWarps;  // warp index of the producer

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (done == 0);
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar,
                                          unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
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
#endif

template <int T, typename OutT>
__global__ void __launch_bounds__(kThreads) skinny_kernel(const Params p) {
#ifdef EDGEVLA_SKINNY_BODY
  using L = Layout<T>;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long full[kStages], empty[kStages];
  bf16* sm = reinterpret_cast<bf16*>(smem);
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int n0 = static_cast<int>(blockIdx.x) * 64;
  const int split = static_cast<int>(blockIdx.y);
  const int k0 = split * p.kc;
  const int stages = min(p.kc, p.k - k0) / kBK;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kMmaWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  float acc[T][4];
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
  const int w_rows = min(64, p.n - n0);

  if (warp == kProducer) {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    unsigned long long keep;
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(keep));
    const unsigned stage_bytes = static_cast<unsigned>((w_rows + p.m) * kBK * 2);
    for (int st = 0; st < stages; ++st) {
      const int slot = st % kStages;
      if (st >= kStages) mbar_wait(&empty[slot], static_cast<unsigned>((st / kStages + 1) & 1));
      if (lane == 0) mbar_expect_tx(&full[slot], stage_bytes);
      __syncwarp();
      bf16* sw = sm + slot * L::kStage;
      bf16* sa = sw + L::kW;
      const int kk = k0 + st * kBK;
      for (int r = lane; r < w_rows; r += 32) {
        bulk_copy(sw + r * kLds, p.w + static_cast<long long>(n0 + r) * p.ldw + kk, kBK * 2, &full[slot], policy);
      }
      for (int r = lane; r < p.m; r += 32) {
        bulk_copy(sa + r * kLds, p.a + static_cast<long long>(r) * p.lda + kk, kBK * 2, &full[slot], keep);
      }
    }
  } else {
    const int wrow = (warp % 4) * 16;
    const int khalf = warp / 4;
    // ldmatrix addresses: A matrices (rows 0-7 | 8-15) × (k 0-7 | 8-15); B pairs of 8-row tiles.
    const int a_row = wrow + (lane % 8) + ((lane / 8) % 2) * 8;
    const int a_k = (lane / 16) * 8;
    const int b_row = (lane % 8) + (lane / 16) * 8;
    const int b_k = ((lane / 8) % 2) * 8;
    for (int st = 0; st < stages; ++st) {
      const int slot = st % kStages;
      mbar_wait(&full[slot], static_cast<unsigned>((st / kStages) & 1));
      const bf16* sw = sm + slot * L::kStage;
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
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[slot]);
    }
  }
  // Every stage has been read (and so every copy has landed): the stage memory is free.
  __syncthreads();

  // The second k half joins the first through shared memory.
  float* red = reinterpret_cast<float*>(smem);
  const bool owner = warp < 4;
  if (warp >= 4 && warp < kMmaWarps) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) red[((warp % 4) * T * 4 + t * 4 + e) * 32 + lane] = acc[t][e];
    }
  }
  __syncthreads();
  if (owner) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[t][e] += red[(warp * T * 4 + t * 4 + e) * 32 + lane];
    }
  }
  // acc[t]: [0] feature g, row 2q; [1] feature g, row 2q + 1; [2], [3] the same for feature g + 8.
  const int g = lane / 4, q = lane % 4;
  const int f_lo = (warp % 4) * 16 + g, f_hi = f_lo + 8;
  if (p.splits == 1) {
    if (!owner) return;
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const int m = 8 * t + 2 * q;
      finish<OutT>(p, m, n0 + f_lo, acc[t][0]);
      finish<OutT>(p, m + 1, n0 + f_lo, acc[t][1]);
      finish<OutT>(p, m, n0 + f_hi, acc[t][2]);
      finish<OutT>(p, m + 1, n0 + f_hi, acc[t][3]);
    }
    return;
  }

  // Split k: this block's sums as a [64 features][8T rows] tile, past the halves' area.
  float* tile = red + 4 * T * 4 * 32;
  if (owner) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const int m = 8 * t + 2 * q;
      tile[f_lo * L::kRows + m] = acc[t][0];
      tile[f_lo * L::kRows + m + 1] = acc[t][1];
      tile[f_hi * L::kRows + m] = acc[t][2];
      tile[f_hi * L::kRows + m + 1] = acc[t][3];
    }
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  // This block adds its slice of the tile over every block of the cluster, in rank order.
  const int rank = static_cast<int>(cluster.block_rank());
  constexpr int kElems = 64 * L::kRows;
  const int per = (kElems + p.splits - 1) / p.splits;
  const int e0 = rank * per, e1 = min(kElems, e0 + per);
  for (int e = e0 + tid; e < e1; e += kThreads) {
    const int f = e / L::kRows, m = e % L::kRows;
    if (m >= p.m || f >= w_rows) continue;
    float v[kMaxSplits];
#pragma unroll
    for (int r = 0; r < kMaxSplits; ++r) v[r] = r < p.splits ? *cluster.map_shared_rank(tile + e, r) : 0.0f;
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < kMaxSplits; ++r) sum += v[r];
    finish<OutT>(p, m, n0 + f, sum);
  }
  // No block leaves while another may still read its shared memory.
  cluster.sync();
#endif
}

template <int T, typename OutT>
cudaError_t launch_t(cudaStream_t stream, const Params& p, dim3 grid) {
  // The shared-memory limit is raised once per device (outside a capture: the first call of a
  // shape happens in the engines' eager pass).
  const void* fn = reinterpret_cast<const void*>(&skinny_kernel<T, OutT>);
  static std::atomic<std::uint64_t> raised{0};
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  const std::uint64_t bit = std::uint64_t{1} << (dev % 64);
  if ((raised.load(std::memory_order_acquire) & bit) == 0) {
    err = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, Layout<T>::kBytes);
    if (err != cudaSuccess) return err;
    raised.fetch_or(bit, std::memory_order_acq_rel);
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = Layout<T>::kBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = static_cast<unsigned>(p.splits);
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, &skinny_kernel<T, OutT>, p);
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

// Compute capability major of the current device, or 0.
int device_major() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return 0;
  return major;
}

}  // namespace

const char* skinny_gemm_unsupported(const SkinnyGemmArgs& a) {
  if (a.m < 1 || a.m > kSkinnyMaxRows) return "m must be 1..64";
  if (a.n < 1 || a.n > (1 << 30) || a.k < 1 || a.k > (1 << 30)) return "n and k must be positive";
  if (a.k % kBK != 0) return "k must be a multiple of 128";
  if (a.k_chunk < kBK || a.k_chunk % kBK != 0) return "k_chunk must be a positive multiple of 128";
  if (splits_of(a) > kMaxSplits) return "k may be split into at most 8 k_chunks";
  if (a.lda % 8 != 0 || a.ldw % 8 != 0 || a.lda < a.k || a.ldw < a.k || a.ldd < a.n) {
    return "lda and ldw must be multiples of 8 and at least k, ldd at least n";
  }
  if (a.a == nullptr || a.w == nullptr || a.d == nullptr || !aligned16(a.a) || !aligned16(a.w)) {
    return "a and w must be 16-byte aligned device pointers, d non-null";
  }
  if (a.d_type != DType::kF32 && a.d_type != DType::kBF16) return "d must be f32 or bf16";
  if (device_major() < 9) return "needs a GPU of compute capability 9.0 or newer (bulk copies, clusters)";
  return nullptr;
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
