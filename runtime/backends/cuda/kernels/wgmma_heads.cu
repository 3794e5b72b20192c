// A head's projections and attention in one kernel (contract in wgmma_heads.hpp).
//
// Block: 160 threads, as wgmma_gemm's: warps 0-3 the consumer warpgroup, warp 4's lane 0 the
// producer. The producer streams the block's weight tiles (hd rows × 64 k, one bulk copy each) and
// A's 56 × 64 box beside each (one bulk tensor copy, 128-byte swizzle) through a ring; the first
// stages' weights before it waits for the kernel ahead in a chain. The consumers multiply
// (wgmma.m64n56k16, features × rows; accumulator rows past hd are not used: they read whatever
// follows the tile in shared memory, and a product's row depends on its own weight row only).
//
// The head's cluster runs along y (rank = blockIdx.y); the leader (rank 0) attends:
//   kSelf:  rank j makes projection j (q, k, v); each writes its bf16 product transposed,
//           [feature][row], into the leader's tile j (ranks 1 and 2 by st.async, counted in bytes
//           on the leader's barrier).
//   kCross: rank j multiplies k slice j; the other ranks store their f32 sums into the leader (as
//           wgmma_gemm's k slices), which adds them in rank order and writes q transposed. Its
//           consumers copy the head's keys and values into shared memory ([key][dim]) with cp.async
//           at the start (no kernel of the chain writes them), longer walks chunk by chunk.
// Attention: warp w holds query rows 16w .. 16w + 15 (mma.sync m16n8k16: q's fragments by
// ldmatrix.trans from the transposed tile; keys 64 a tile, an online softmax across tiles).
#include "runtime/backends/cuda/kernels/wgmma_heads.hpp"

#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::backends::cuda {
namespace {

using namespace wgmma;

constexpr int kThreads = 160;
constexpr int kConsumers = 128;
constexpr int kAccFloats = 28;
constexpr int kBarBytes = 256;
constexpr int kLdT = 72;                      // a transposed tile's row: 64 rows + 8 (144 bytes, no bank conflicts)
constexpr int kABytes = kATile * 2;           // A's box a stage (7 KB, 1024-byte multiple)
constexpr int kChunk = static_cast<int>(kWgmmaHeadsKeyChunk);

template <int HD>
struct Shape {
  static_assert(HD % 16 == 0 && HD <= kBm, "head dim a multiple of 16, at most 64");
  static constexpr int kWBytes = HD * kBk * 2;                          // a weight tile
  static constexpr int kStage = kABytes + (kWBytes + 1023) / 1024 * 1024;  // A's box, then the weight tile
  static constexpr int kSlack = (kBm - HD) * kBk * 2;                   // what the last tile's unused rows read
  static constexpr int kLdKv = HD + 8;                                  // a staged key's row (odd 16-byte chunks)
  static constexpr int kTBytes = HD * kLdT * 2;                         // one transposed tile
};

template <int HD, bool kCross, int kSplitCount>
struct Layout {
  static constexpr int kSplit = kSplitCount;
  static constexpr int kStages = kCross ? 4 : 8;
  static constexpr int kRing = kStages * Shape<HD>::kStage + Shape<HD>::kSlack;
  static constexpr int kSums = kCross ? (kSplit - 1) * kConsumers * kAccFloats * 4 : 0;
  static constexpr int kTiles = kCross ? 1 : 3;
  static constexpr int kKv = kCross ? 2 * kChunk * Shape<HD>::kLdKv * 2 : 0;
  static constexpr int kBytes = 1024 + kBarBytes + kRing + kSums + kTiles * Shape<HD>::kTBytes + kKv;
  static_assert(kBytes <= 227 * 1024, "fits a Hopper multiprocessor");
};

struct Params {
  const bf16* w;
  const float* bias;
  const bf16* keys;
  const bf16* values;
  long long ld_kv;
  const int* key_count;
  bf16* out;
  long long ldo;
  int m, k, heads;
  float scale_log2;
  int ahead, evict_first;
};

// hd rows × 64 k tiles in core-matrix order, one group of hd rows after another.
__global__ void heads_tile_kernel(const bf16* w, long long n, long long k, long long ld, int hd, bf16* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * k) return;
  const long long tile_elems = static_cast<long long>(hd) * kBk;
  const long long group = i / (hd * k);
  const long long kb = (i % (hd * k)) / tile_elems;
  const int e = static_cast<int>(i % tile_elems);
  const int cm = e / 64;  // core matrix: 8 along k, then the next 8 rows
  const int r = (cm / (kBk / 8)) * 8 + (e % 64) / 8, c = (cm % (kBk / 8)) * 8 + e % 8;
  out[i] = w[(group * hd + r) * ld + kb * kBk + c];
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void store_async_b32(unsigned addr, unsigned v, unsigned bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(addr), "r"(v),
               "r"(bar)
               : "memory");
}
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }

// One tile of 64 keys for this warp's 16 rows: scores against q's fragments, masked from `keys`
// on, the online softmax, then o += p · v. kT: keys and values transposed ([dim][key], ld apart,
// this tile's keys from column `at`); else [key][dim] (ld apart, from row `at`).
template <int HD, bool kT>
__device__ __forceinline__ void attend_tile(const unsigned (&qa)[HD / 16][4], const bf16* s_k, const bf16* s_v, int ld,
                                            int at, int key0, int keys, float scale_log2, float (&o)[HD / 8][4],
                                            float (&row_max)[2], float (&row_sum)[2], int lane) {
  float s[8][4];
#pragma unroll
  for (int n = 0; n < 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
#pragma unroll
    for (int nn = 0; nn < 4; ++nn) {
      unsigned kf[4];
      if constexpr (kT) {
        ptx::ldmatrix_x4_trans(kf, s_k + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * ld + at + nn * 16 + (lane / 16) * 8);
      } else {
        ptx::ldmatrix_x4(kf, s_k + (at + nn * 16 + (lane / 16) * 8 + lane % 8) * ld + kk * 16 + ((lane / 8) % 2) * 8);
      }
      ptx::mma_bf16(s[2 * nn], qa[kk], kf[0], kf[1]);
      ptx::mma_bf16(s[2 * nn + 1], qa[kk], kf[2], kf[3]);
    }
  }
  // A quad of lanes shares a row: lane holds rows lane / 4 and + 8, keys 8n + 2 (lane % 4) + {0, 1}.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float& v = s[n][2 * i + j];
        v = key0 + n * 8 + 2 * (lane % 4) + j < keys ? v * scale_log2 : -INFINITY;
        mx = fmaxf(mx, v);
      }
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float new_max = fmaxf(row_max[i], mx);
    const float base = new_max == -INFINITY ? 0.0f : new_max;
    const float alpha = exp2f(row_max[i] - base);
    row_max[i] = new_max;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      s[n][2 * i] = exp2f(s[n][2 * i] - base);
      s[n][2 * i + 1] = exp2f(s[n][2 * i + 1] - base);
      sum += s[n][2 * i] + s[n][2 * i + 1];
    }
    row_sum[i] = row_sum[i] * alpha + sum;
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) o[d][2 * i] *= alpha, o[d][2 * i + 1] *= alpha;
  }
  // p's accumulator layout is the A fragment layout of p · v.
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    unsigned pa[4];
    pa[0] = ptx::pack_bf16(s[2 * kk][0], s[2 * kk][1]);
    pa[1] = ptx::pack_bf16(s[2 * kk][2], s[2 * kk][3]);
    pa[2] = ptx::pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pa[3] = ptx::pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
    for (int dd = 0; dd < HD / 16; ++dd) {
      unsigned vf[4];
      if constexpr (kT) {
        ptx::ldmatrix_x4(vf, s_v + (dd * 16 + lane % 8 + (lane / 16) * 8) * ld + at + kk * 16 + ((lane / 8) % 2) * 8);
      } else {
        ptx::ldmatrix_x4_trans(vf, s_v + (at + kk * 16 + lane % 16) * ld + dd * 16 + (lane / 16) * 8);
      }
      ptx::mma_bf16(o[2 * dd], pa, vf[0], vf[1]);
      ptx::mma_bf16(o[2 * dd + 1], pa, vf[2], vf[3]);
    }
  }
}
#endif

template <int HD, bool kCross, int kSplitCount>
__global__ void __launch_bounds__(kThreads, 1) heads_kernel(const Params p, const __grid_constant__ CUtensorMap a_map) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = Layout<HD, kCross, kSplitCount>;
  using Sh = Shape<HD>;
  constexpr int kSplit = L::kSplit, kStages = L::kStages;
  // What the leader's barrier counts from the other ranks: kSelf, hd × 56 bf16 each; kCross, the
  // consumers' sums.
  constexpr unsigned kInBytes = kCross ? (kSplit - 1) * kConsumers * kAccFloats * 4 : (kSplit - 1) * HD * kBn * 2;
  extern __shared__ __align__(128) unsigned char smem[];
  auto* full = reinterpret_cast<unsigned long long*>(smem);
  auto* empty = full + kStages;
  auto* in_bar = empty + kStages;  // the leader: the other ranks' products (kSelf) or sums (kCross) are in
  const unsigned pad = (1024 - (ptx::smem_addr(smem) + kBarBytes) % 1024) % 1024;
  unsigned char* ring = smem + kBarBytes + pad;
  auto* s_sums = reinterpret_cast<float*>(ring + L::kRing);                       // kCross: [3][128][28]
  auto* s_t = reinterpret_cast<bf16*>(ring + L::kRing + L::kSums);                // [kTiles][HD][kLdT]
  auto* s_kv = reinterpret_cast<bf16*>(ring + L::kRing + L::kSums + L::kTiles * Sh::kTBytes);  // K, V [kChunk][kLdKv]
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int head = static_cast<int>(blockIdx.x), rank = static_cast<int>(blockIdx.y);
  const int group = kCross ? head : rank * p.heads + head;  // the block's hd weight rows
  const int kbs = p.k / kBk;
  const int kb0 = kCross ? rank * kbs / kSplit : 0;
  const int kb_count = kCross ? (rank + 1) * kbs / kSplit - kb0 : kbs;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], 4);
    }
    if (rank == 0) {
      ptx::mbar_init(in_bar, 1);
      ptx::mbar_expect_tx(in_bar, kInBytes);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  // The other ranks write into the leader once its barrier is set up: every thread arrives here;
  // only the writers wait, later.
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");

  constexpr unsigned kStageTx = static_cast<unsigned>(Sh::kWBytes + kABytes);
  if (warp == 4) {
    if (lane != 0) return;
    const bf16* w = p.w + (static_cast<long long>(group) * kbs + kb0) * (HD * kBk);
    const int ahead = min(kb_count, min(kStages, p.ahead));
    const unsigned long long policy = p.evict_first ? ptx::l2_evict_first_policy() : 0ull;
    const auto copy_w = [&](int slot, int i) {
      void* dst = ring + slot * Sh::kStage + kABytes;
      const bf16* src = w + static_cast<long long>(i) * (HD * kBk);
      if (p.evict_first) {
        ptx::bulk_copy_hint(dst, src, Sh::kWBytes, &full[slot], policy);
      } else {
        ptx::bulk_copy(dst, src, Sh::kWBytes, &full[slot]);
      }
    };
    produce_stages(kb_count, kStages, ahead, kStageTx, full, empty, copy_w, [&](int s, int i) {
      ptx::tma_load_2d(ring + s * Sh::kStage, &a_map, (kb0 + i) * kBk, 0, &full[s]);
    });
    return;
  }

  const int tid = static_cast<int>(threadIdx.x);
  const int keys = kCross ? max(0, *p.key_count) : p.m;
  // kCross: chunk c of the head's keys and values into shared memory (rows past the keys zero).
  const auto stage_kv = [&](int c) {
    const int key0 = c * kChunk, rows = min(keys - key0, kChunk), padded = (rows + 63) / 64 * 64;
    const long long col = static_cast<long long>(head) * HD;
    for (int i = tid; i < padded * (HD / 8); i += kConsumers) {
      const int r = i / (HD / 8), ch = i % (HD / 8);
      const bool ok = r < rows;
      const long long off = ok ? static_cast<long long>(key0 + r) * p.ld_kv + col + ch * 8 : 0;
      ptx::cp_async16(s_kv + r * Sh::kLdKv + ch * 8, p.keys + off, ok);
      ptx::cp_async16(s_kv + (kChunk + r) * Sh::kLdKv + ch * 8, p.values + off, ok);
    }
    ptx::cp_async_commit();
  };
  if (rank == 0) {
    // Rows 56-63 of the transposed tiles (no product writes them) read as zeros.
    for (int i = tid; i < L::kTiles * HD; i += kConsumers) {
      *reinterpret_cast<uint4*>(s_t + i * kLdT + kBn) = make_uint4(0, 0, 0, 0);
    }
    if constexpr (kCross) {
      if (keys > 0) stage_kv(0);
    }
  }

  float acc[kAccFloats];
#pragma unroll
  for (int i = 0; i < kAccFloats; ++i) acc[i] = 0.0f;
  for (int i = 0; i < kb_count; ++i) {
    const int s = i % kStages;
    ptx::mbar_wait(&full[s], (i / kStages) & 1);
    ptx::wg_fence();
    const unsigned char* stage = ring + s * Sh::kStage;
#pragma unroll
    for (int kk = 0; kk < kBk / 16; ++kk) {
      wgmma_m64n56(acc, weight_descriptor(stage + kABytes + kk * 256), swizzled_descriptor(stage + kk * 32));
    }
    ptx::wg_commit();
    ptx::wg_wait<1>();
    if (i > 0 && lane == 0) ptx::mbar_arrive(&empty[(i - 1) % kStages]);
  }
  ptx::wg_wait<0>();

  if constexpr (kCross) {
    if (rank != 0) {
      asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
      send_slice_sums(acc, s_sums, rank - 1, tid, in_bar, 0);
      return;
    }
    ptx::mbar_wait(in_bar, 0);
    add_slice_sums<kSplit - 1>(acc, s_sums, tid);
  }

  // The product plus its bias in bf16, transposed: thread holds features f and f + 8, rows
  // 8j + 2 (lane % 4) + {0, 1}.
  if (warp * 16 < HD) {
    const int f = warp * 16 + lane / 4;
    const long long brow = static_cast<long long>(group) * HD;
    const float b0 = p.bias != nullptr ? p.bias[brow + f] : 0.0f, b8 = p.bias != nullptr ? p.bias[brow + f + 8] : 0.0f;
    bf16* t = s_t + (kCross ? 0 : rank) * HD * kLdT;
    const bool remote = !kCross && rank != 0;
    unsigned base = ptx::smem_addr(t), bar = 0;
    if (remote) {
      asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
      base = ptx::cluster_map(base, 0);
      bar = ptx::cluster_map(ptx::smem_addr(in_bar), 0);
    }
#pragma unroll
    for (int j = 0; j < kBn / 8; ++j) {
      const int row = 8 * j + 2 * (lane % 4);
      const unsigned lo = ptx::pack_bf16(acc[4 * j] + b0, acc[4 * j + 1] + b0);
      const unsigned hi = ptx::pack_bf16(acc[4 * j + 2] + b8, acc[4 * j + 3] + b8);
      const unsigned at_lo = base + static_cast<unsigned>((f * kLdT + row) * 2);
      const unsigned at_hi = base + static_cast<unsigned>(((f + 8) * kLdT + row) * 2);
      if (remote) {
        store_async_b32(at_lo, lo, bar);
        store_async_b32(at_hi, hi, bar);
      } else {
        *reinterpret_cast<unsigned*>(t + f * kLdT + row) = lo;
        *reinterpret_cast<unsigned*>(t + (f + 8) * kLdT + row) = hi;
      }
    }
  }
  if (!kCross && rank != 0) return;

  // The leader attends.
  if constexpr (kCross) {
    ptx::cp_async_wait_all();
  } else {
    ptx::mbar_wait(in_bar, 0);
  }
  consumers_sync();
  unsigned qa[HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    ptx::ldmatrix_x4_trans(qa[kk], s_t + (kk * 16 + lane % 8 + (lane / 16) * 8) * kLdT + warp * 16 + ((lane / 8) % 2) * 8);
  }
  float o[HD / 8][4];
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  if constexpr (kCross) {
    for (int c = 0; c * kChunk < keys; ++c) {
      if (c > 0) {
        consumers_sync();  // every warp is done with the chunk before
        stage_kv(c);
        ptx::cp_async_wait_all();
        consumers_sync();
      }
      const int in_chunk = min(keys - c * kChunk, kChunk);
      for (int t = 0; t * 64 < in_chunk; ++t) {
        attend_tile<HD, false>(qa, s_kv, s_kv + kChunk * Sh::kLdKv, Sh::kLdKv, t * 64, c * kChunk + t * 64, keys,
                               p.scale_log2, o, row_max, row_sum, lane);
      }
    }
  } else {
    attend_tile<HD, true>(qa, s_t + HD * kLdT, s_t + 2 * HD * kLdT, kLdT, 0, 0, keys, p.scale_log2, o, row_max, row_sum,
                          lane);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 1);
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 2);
  }
  const float inv[2] = {row_sum[0] > 0.0f ? 1.0f / row_sum[0] : 0.0f, row_sum[1] > 0.0f ? 1.0f / row_sum[1] : 0.0f};
  bf16* out = p.out + static_cast<long long>(head) * HD;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = warp * 16 + lane / 4 + 8 * i;
    if (row >= p.m) continue;
#pragma unroll
    for (int d = 0; d < HD / 8; ++d) {
      *reinterpret_cast<unsigned*>(out + row * p.ldo + d * 8 + 2 * (lane % 4)) =
          ptx::pack_bf16(o[d][2 * i] * inv[i], o[d][2 * i + 1] * inv[i]);
    }
  }
#endif
}

template <int HD, bool kCross, int kSplit>
const void* heads_kernel_address() {
  return reinterpret_cast<const void*>(heads_kernel<HD, kCross, kSplit>);
}

// kCross: the most k slices (4, 3 or 2) for which the device holds every head's cluster at once.
// A cluster's blocks share one GPC; four-block clusters of ~164 KB blocks do not all fit on an
// H200 for 32 heads, and a second wave would double the kernel.
template <int HD>
int cross_split(int heads) {
  static const int by4 = clusters_resident(heads_kernel_address<HD, true, 4>(), kThreads, Layout<HD, true, 4>::kBytes,
                                           dim3(1, 4, 1));
  static const int by3 = clusters_resident(heads_kernel_address<HD, true, 3>(), kThreads, Layout<HD, true, 3>::kBytes,
                                           dim3(1, 3, 1));
  return by4 >= heads ? 4 : by3 >= heads ? 3 : 2;
}

template <int HD, bool kCross, int kSplit>
cudaError_t launch_heads(cudaStream_t stream, const Params& p, const CUtensorMap& a_map) {
  using L = Layout<HD, kCross, kSplit>;
  const auto kernel = heads_kernel<HD, kCross, kSplit>;
  const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes);
  if (err != cudaSuccess) return err;
  cudaLaunchAttribute attributes[2]{};
  cudaLaunchConfig_t config = chain_config(dim3(static_cast<unsigned>(p.heads), L::kSplit), dim3(kThreads),
                                           static_cast<std::size_t>(L::kBytes), stream, &attributes[0]);
  add_cluster(config, attributes, dim3(1, L::kSplit, 1));
  void* args[] = {const_cast<Params*>(&p), const_cast<CUtensorMap*>(&a_map)};
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel), args);
}

}  // namespace

int wgmma_heads_cross_split(std::int64_t heads, std::int64_t head_dim) {
  const int h = static_cast<int>(std::min<std::int64_t>(heads, 65535));
  return head_dim == 48 ? cross_split<48>(h) : cross_split<32>(h);
}

bool wgmma_heads_fits(std::int64_t m, std::int64_t heads, std::int64_t head_dim, std::int64_t k, WgmmaHeadsMode mode) {
  const std::int64_t min_kbs = mode == WgmmaHeadsMode::kCross ? 4 : 1;
  return m >= 1 && m <= kBn && (head_dim == 32 || head_dim == 48) && heads >= 1 && heads <= 65535 && k > 0 &&
         k % kBk == 0 && k / kBk >= min_kbs;
}

Status wgmma_heads_tile_weight(cudaStream_t stream, const void* w, std::int64_t n, std::int64_t k, std::int64_t ld,
                               std::int64_t head_dim, void* out) {
  if (w == nullptr || out == nullptr || (head_dim != 32 && head_dim != 48) || n <= 0 || n % head_dim != 0 || k <= 0 ||
      k % kBk != 0 || ld < k) {
    return invalid_argument("wgmma_heads_tile_weight: a weight of " + std::to_string(n) + " × " + std::to_string(k) +
                            " (row stride " + std::to_string(ld) + ") in heads of " + std::to_string(head_dim) +
                            " (32 or 48, whole heads; k a multiple of 64)");
  }
  const long long total = n * k;
  heads_tile_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
      static_cast<const bf16*>(w), n, k, ld, static_cast<int>(head_dim), static_cast<bf16*>(out));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return internal_error(std::string("wgmma_heads_tile_weight: ") + cudaGetErrorString(err));
  return Status::ok();
}

Status wgmma_heads_attention(cudaStream_t stream, const WgmmaHeadsArgs& args) {
  const bool cross = args.mode == WgmmaHeadsMode::kCross;
  if (!wgmma_heads_fits(args.m, args.heads, args.head_dim, args.k, args.mode)) {
    return invalid_argument("wgmma_heads_attention: " + std::to_string(args.m) + " rows, " + std::to_string(args.heads) +
                            " heads of " + std::to_string(args.head_dim) + ", k " + std::to_string(args.k) +
                            " do not fit (rows 1 to 56, head dim 32 or 48, k a multiple of 64" +
                            (cross ? ", at least 256)" : ")"));
  }
  const std::int64_t width = args.heads * args.head_dim;
  if (args.a == nullptr || args.w_tiled == nullptr || args.out == nullptr || args.lda < args.k || args.lda % 8 != 0 ||
      reinterpret_cast<std::uintptr_t>(args.a) % 16 != 0 || args.ldo < width || args.ldo % 2 != 0 ||
      reinterpret_cast<std::uintptr_t>(args.out) % 4 != 0) {
    return invalid_argument("wgmma_heads_attention: null pointer, misaligned A or output, or a row stride shorter "
                            "than its row");
  }
  if (cross && (args.keys == nullptr || args.values == nullptr || args.key_count == nullptr || args.ld_kv < width ||
                args.ld_kv % 8 != 0 || reinterpret_cast<std::uintptr_t>(args.keys) % 16 != 0 ||
                reinterpret_cast<std::uintptr_t>(args.values) % 16 != 0)) {
    return invalid_argument("wgmma_heads_attention: cross attention needs 16-byte aligned keys and values, a row "
                            "stride of at least heads × head dim (a multiple of 8) and the key count");
  }
  CUtensorMap a_map;
  if (!encode_bf16_boxes(a_map, args.a, args.k, args.m, args.lda, kBn)) {
    return internal_error("wgmma_heads_attention: the driver could not describe A for bulk tensor copies");
  }
  const Params p{static_cast<const bf16*>(args.w_tiled),
                 args.bias,
                 static_cast<const bf16*>(args.keys),
                 static_cast<const bf16*>(args.values),
                 args.ld_kv,
                 args.key_count,
                 static_cast<bf16*>(args.out),
                 args.ldo,
                 static_cast<int>(args.m),
                 static_cast<int>(args.k),
                 static_cast<int>(args.heads),
                 args.scale * 1.4426950408889634f,
                 wgmma_stages_ahead(),
                 wgmma_weights_evict_first() ? 1 : 0};
  cudaError_t err = cudaSuccess;
  const int split = cross ? wgmma_heads_cross_split(args.heads, args.head_dim) : 3;
  if (args.head_dim == 48) {
    err = !cross ? launch_heads<48, false, 3>(stream, p, a_map)
          : split == 4 ? launch_heads<48, true, 4>(stream, p, a_map)
          : split == 3 ? launch_heads<48, true, 3>(stream, p, a_map)
                       : launch_heads<48, true, 2>(stream, p, a_map);
  } else {
    err = !cross ? launch_heads<32, false, 3>(stream, p, a_map)
          : split == 4 ? launch_heads<32, true, 4>(stream, p, a_map)
          : split == 3 ? launch_heads<32, true, 3>(stream, p, a_map)
                       : launch_heads<32, true, 2>(stream, p, a_map);
  }
  if (err != cudaSuccess) return internal_error(std::string("wgmma_heads_attention: launch: ") + cudaGetErrorString(err));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
