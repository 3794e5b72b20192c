// The few-rows GEMM (see skinny_gemm.hpp).
//
// Block layout. A block owns 64 weight rows (output features) and one k share, and runs nine
// warps: warp 8 is the producer, warps 0-7 multiply. The producer moves each 128-wide k stage
// into shared memory as four tensor-memory-access boxes (weights and activations, each as two
// 64-wide k halves of 128-byte rows; rows past n or m arrive as zeros), completion counted in
// bytes on the stage's "full" mbarrier, up to kStages stages ahead; weights are marked
// evict-first in L2 (read once per pass, while every block reads the activations). The
// multiplying warps release a stage through its "empty" mbarrier. The boxes use the 128-byte
// swizzle: 16-byte chunk c of row r sits at chunk c ^ (r % 8), so the eight rows an ldmatrix
// reads fall in distinct banks.
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
#include <array>
#include <atomic>
#include <string>

#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"

namespace edgevla::backends::cuda {
namespace {

namespace cg = cooperative_groups;
using bf16 = __nv_bfloat16;

constexpr int kMmaWarps = 8;
constexpr int kThreads = (kMmaWarps + 1) * 32;
constexpr int kBK = 128;              // k per stage
constexpr int kStages = 6;            // stages in flight
constexpr int kHalfBytes = 128;       // bytes per row of one 64-wide k half (a box row)
constexpr int kMaxSplits = 8;         // k shares at most (a portable cluster)

template <int T>
struct Layout {
  static constexpr int kRows = 8 * T;                 // activation rows held (m rounded up to 8)
  static constexpr int kWBox = 64 * kHalfBytes;       // one k half of the weight rows (bytes)
  static constexpr int kABox = kRows * kHalfBytes;    // one k half of the activation rows
  static constexpr int kStage = 2 * kWBox + 2 * kABox;
  static constexpr int kBytes = kStages * kStage + 1024;  // + room to align the start to 1024
};

// What the kernel reads besides the two tensor maps (the operands' addresses and strides).
struct Params {
  int m, n, k, kc, splits;
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

using namespace ptx;  // smem_addr, mma_bf16, the mbarrier calls

// One 2-d box of `map` at element coordinates (x: k, y: row) into shared memory at dst.
__device__ __forceinline__ void tma_load(unsigned dst, const CUtensorMap* map, int x, int y, unsigned long long* bar,
                                         unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

// Shared address of 16-byte chunk c of row r in a box of 128-byte rows with the 128-byte swizzle.
__device__ __forceinline__ unsigned swizzled(unsigned box, int r, int c) {
  return box + static_cast<unsigned>(r * kHalfBytes + ((c ^ (r & 7)) << 4));
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
__global__ void __launch_bounds__(kThreads)
    skinny_kernel(const Params p, const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap a_map) {
#ifdef EDGEVLA_SKINNY_BODY
  using L = Layout<T>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long full[kStages], empty[kStages];
  // Swizzled boxes need 1024-byte aligned destinations.
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  const unsigned sbase = smem_addr(smem);
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
    const unsigned long long policy = ptx::l2_evict_first_policy();
    unsigned long long keep;
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(keep));
    for (int st = 0; st < stages && lane == 0; ++st) {
      const int slot = st % kStages;
      if (st >= kStages) mbar_wait(&empty[slot], static_cast<unsigned>((st / kStages + 1) & 1));
      mbar_expect_tx(&full[slot], L::kStage);  // boxes arrive whole (zeros past the edges)
      const unsigned stage = sbase + static_cast<unsigned>(slot * L::kStage);
      const int kk = k0 + st * kBK;
      for (int h = 0; h < 2; ++h) {
        tma_load(stage + h * L::kWBox, &w_map, kk + 64 * h, n0, &full[slot], policy);
        tma_load(stage + 2 * L::kWBox + h * L::kABox, &a_map, kk + 64 * h, 0, &full[slot], keep);
      }
    }
  } else {
    const int wrow = (warp % 4) * 16;
    const int khalf = warp / 4;
    // ldmatrix rows and chunks: A matrices (rows 0-7 | 8-15) × (k 0-7 | 8-15); B pairs of
    // 8-row tiles × (k 0-7 | 8-15).
    const int a_row = wrow + (lane % 8) + ((lane / 8) % 2) * 8;
    const int a_c = lane / 16;
    const int b_row = (lane % 8) + (lane / 16) * 8;
    const int b_c = (lane / 8) % 2;
    for (int st = 0; st < stages; ++st) {
      const int slot = st % kStages;
      mbar_wait(&full[slot], static_cast<unsigned>((st / kStages) & 1));
      const unsigned wbox = sbase + static_cast<unsigned>(slot * L::kStage + khalf * L::kWBox);
      const unsigned abox = sbase + static_cast<unsigned>(slot * L::kStage + 2 * L::kWBox + khalf * L::kABox);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        unsigned a[4];
        ldmatrix_x4(a, swizzled(wbox, a_row, 2 * j + a_c));
#pragma unroll
        for (int t = 0; t + 1 < T; t += 2) {
          unsigned b[4];
          ldmatrix_x4(b, swizzled(abox, 8 * t + b_row, 2 * j + b_c));
          mma_bf16(acc[t], a, b[0], b[1]);
          mma_bf16(acc[t + 1], a, b[2], b[3]);
        }
        if constexpr (T % 2 == 1) {
          unsigned b[2];
          ldmatrix_x2(b, swizzled(abox, 8 * (T - 1) + lane % 8, 2 * j + b_c));
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
cudaError_t launch_t(cudaStream_t stream, const Params& p, dim3 grid, const CUtensorMap& w_map,
                     const CUtensorMap& a_map) {
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
  return cudaLaunchKernelEx(&cfg, &skinny_kernel<T, OutT>, p, w_map, a_map);
}

template <typename OutT>
cudaError_t launch(cudaStream_t stream, int tiles, const Params& p, dim3 grid, const CUtensorMap& w,
                   const CUtensorMap& a) {
  switch (tiles) {
    case 1: return launch_t<1, OutT>(stream, p, grid, w, a);
    case 2: return launch_t<2, OutT>(stream, p, grid, w, a);
    case 3: return launch_t<3, OutT>(stream, p, grid, w, a);
    case 4: return launch_t<4, OutT>(stream, p, grid, w, a);
    case 5: return launch_t<5, OutT>(stream, p, grid, w, a);
    case 6: return launch_t<6, OutT>(stream, p, grid, w, a);
    case 7: return launch_t<7, OutT>(stream, p, grid, w, a);
    default: return launch_t<8, OutT>(stream, p, grid, w, a);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

std::int64_t splits_of(const SkinnyGemmArgs& a) { return (a.k + a.k_chunk - 1) / a.k_chunk; }

// Compute capability major of the current device, or 0; asked of the driver once per device.
int device_major() {
  static std::array<std::atomic<int>, 64> known{};  // major + 1, 0: not asked yet
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 0;
  if (dev < 64) {
    if (const int k = known[static_cast<std::size_t>(dev)].load(std::memory_order_relaxed); k > 0) return k - 1;
  }
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return 0;
  if (dev < 64) known[static_cast<std::size_t>(dev)].store(major + 1, std::memory_order_relaxed);
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
  p.d = a.d;
  p.ldd = a.ldd;
  p.alpha = a.alpha;
  p.beta = a.beta;
  p.bias = a.bias;
  const int tiles = static_cast<int>((a.m + 7) / 8);
  const dim3 grid(static_cast<unsigned>((a.n + kSkinnyBlockRows - 1) / kSkinnyBlockRows),
                  static_cast<unsigned>(p.splits));
  CUtensorMap w_map, a_map;
  if (!encode_bf16_boxes(w_map, a.w, a.k, a.n, a.ldw, 64) ||
      !encode_bf16_boxes(a_map, a.a, a.k, a.m, a.lda, 8 * tiles)) {
    return internal_error("skinny gemm: the driver could not describe the operands for bulk tensor copies "
                          "(cuTensorMapEncodeTiled)");
  }
  const cudaError_t err = a.d_type == DType::kF32 ? launch<float>(stream, tiles, p, grid, w_map, a_map)
                                                  : launch<bf16>(stream, tiles, p, grid, w_map, a_map);
  if (err != cudaSuccess) {
    return internal_error(std::string("skinny gemm launch: ") + cudaGetErrorName(err) + " (" +
                          cudaGetErrorString(err) + ")");
  }
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
