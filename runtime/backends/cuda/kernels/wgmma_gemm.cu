// Few-rows GEMM on warpgroup multiplies (contract in wgmma_gemm.hpp).
//
// Block: 64 output features × all rows (≤ 56) × one k part, 160 threads. Warps 0-3 are the
// consumer warpgroup: per stage, four wgmma.m64n56k16 (k 16 each) with both operands in shared
// memory, K-major. Warp 4's lane 0 is the producer: per stage, one 8 KB bulk copy of the weight
// tile (laid out at upload in core-matrix order without swizzle: leading offset 128 bytes, the
// next core matrix along k; stride offset 1024 bytes, the next 8 rows) and one bulk tensor copy
// (TMA) of A's 56 × 64 box straight from the row-major activations, which the copy engine lays
// out with the 128-byte swizzle that the multiplies read (rows of 128 bytes, 8-row groups 1024
// bytes apart, 16-byte chunk c of row r at c ^ (r % 8); rows past m are zero-filled). Both are
// counted in bytes on the stage's full barrier, so every stage of the ring is in flight at once.
// A consumer releases a stage (empty barrier) once the multiplies that read it are done.
// Launched inside a DependentLaunchScope (launch.cuh), it is a programmatic dependent of the
// kernel before it: its first weight tiles (wgmma_stages_ahead: four) load before it waits for
// that kernel's A.
// Accumulator layout (m64nNk16, f32): warp w's thread holds, for each 8 columns j, rows
// 16w + lane/4 and + 8, columns 8j + 2(lane % 4) and + 1; here rows are output features and
// columns the activation rows.
//
// k slices (every output but kF32Parts and kRope; wgmma_k_split): the blocks of one feature block are a cluster
// along y, each multiplying a slice of k; the slices' consumers store their sums into the leader's
// shared memory (st.async, counted in bytes on the leader's barrier, set up before a cluster
// barrier), and the leader adds them in rank order before its epilogue.
//
// Forms of A's copy measured before this one (bench/results/issue9_h200, run 34 call 1, pi0.5's
// gate|up, the same weights): A pre-tiled by the caller and bulk-copied 6.24 µs; the producer
// warp's loads and stores 20.9 µs; its cp.async copies counted on the barrier 13.4 µs.
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"

#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"  // gelu_tanh, as the geglu kernel
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"
#include "runtime/backends/cuda/kernels/wgmma_norm.cuh"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::backends::cuda {
namespace {

using namespace wgmma;

constexpr int kThreads = 160;           // the consumer warpgroup and the producer warp
constexpr int kConsumers = 128;
constexpr int kBarBytes = 256;          // full and empty barriers of every stage, the split's barrier
constexpr int kAccFloats = 28;          // a consumer thread's accumulators
constexpr int kSliceBytes = kConsumers * kAccFloats * static_cast<int>(sizeof(float));  // a k slice's sums
constexpr int kMaxRowTiles = 4;         // 224 rows a block (A's box at most 256 rows)
// A stage: the weight tile and A's box of `tiles` row tiles.
constexpr int stage_bytes(int tiles) { return (kWTile + tiles * kATile) * static_cast<int>(sizeof(bf16)); }
// The ring: 8 stages (a ring of 6 or 12 instead was slower in both heads, run 35 call 2), fewer
// where a block's A boxes of three or four row tiles would not fit the shared memory. Profiling
// builds may set another depth (-DEDGEVLA_WGMMA_RING=N, 4-8) to time it.
#ifndef EDGEVLA_WGMMA_RING
#define EDGEVLA_WGMMA_RING 8
#endif
static_assert(EDGEVLA_WGMMA_RING >= 4 && EDGEVLA_WGMMA_RING <= 8, "EDGEVLA_WGMMA_RING: 4 to 8 stages");
constexpr int stages_for(int tiles) {
  return std::min(EDGEVLA_WGMMA_RING, tiles <= 2 ? 8 : (tiles == 3 ? 7 : 6));
}
// Shared memory of a block of a cluster of `split` k slices: the tiles start at the next 1024-byte
// boundary past the barriers (the swizzle's period); the leader of a split keeps the other slices'
// sums past them.
constexpr int smem_bytes(int split, int tiles) {
  return 1024 + kBarBytes + stages_for(tiles) * stage_bytes(tiles) + (split - 1) * kSliceBytes;
}
static_assert(smem_bytes(1, kMaxRowTiles) <= 227 * 1024, "the largest ring fits a Hopper multiprocessor");

// Which weight row tile row r of feature block nt holds. kGeglu: in warp w's 16 rows, row i < 8
// is gate feature nt·32 + 8w + i and row i + 8 its up (rows n/2 on). kRope: in the first
// rope_n features (heads of head_dim), the same pairing within a head: row i < 8 is dim
// d = 32j + 8w + i of the head's first half (j: the block's place in its head) and row i + 8 the
// dim d + head_dim/2 that RoPE rotates with it; features past rope_n keep their order.
__host__ __device__ inline long long source_row(long long nt, int r, long long n, WgmmaEpilogue epi, long long rope_n,
                                                long long head_dim) {
  if (epi == WgmmaEpilogue::kGeglu) return geglu_source_row(nt, r, n);
  if (epi == WgmmaEpilogue::kRope && nt * kBm < rope_n) {
    const long long per_head = head_dim / kBm;  // blocks a head
    const long long head = nt / per_head, j = nt % per_head;
    const long long d = 32 * j + (r / 16) * 8 + (r % 8);
    return head * head_dim + d + ((r % 16) < 8 ? 0 : head_dim / 2);
  }
  return nt * kBm + r;
}

__global__ void tile_weight_kernel(const bf16* w, long long n, long long k, long long ld, WgmmaEpilogue epi,
                                   long long rope_n, long long head_dim, bf16* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * k) return;
  // i walks the output: tile (nt, kb), then its element in core-matrix order.
  const TiledPosition t = tiled_position(i, k);
  out[i] = w[source_row(t.nt, t.r, n, epi, rope_n, head_dim) * ld + t.kb * kBk + t.c];
}

struct Params {
  const bf16* w;
  const float* bias;  // every output but kGeglu and kF32Parts: f32 [n] or null
  const float* addend;  // kF32: f32 [m, ld_add] added to the output, or null
  long long ld_add;
  const int* first_pos;  // kRope: the first row's position (device)
  const float* inv_freq;  // kRope: [head_dim / 2]
  const float2* rope_table;  // kRope: (cos, sin) [m][head_dim / 2], or null (computed)
  long long rope_n, head_dim;
  void* d;
  long long ldd, part_stride;
  int m, n, k, parts;
  NormParams norm;  // kNorm
  int ahead;        // weight stages copied before the chain's wait (wgmma_stages_ahead)
  int evict_first;  // the weights' lines marked first to evict from L2 (wgmma_weights_evict_first)
};


#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// One row tile's epilogue: acc holds features nt·64 + (this thread's rows of the m64 tile) for the
// block's rows row0 .. row0 + 55 (the columns of the m64n56 accumulator).
template <WgmmaEpilogue kEpilogue>
__device__ __forceinline__ void epilogue_tile(const Params& p, const float (&acc)[kAccFloats], int row0, int nt,
                                              int part, int warp, int lane) {
  if constexpr (kEpilogue == WgmmaEpilogue::kGeglu) {
    auto* d = static_cast<bf16*>(p.d);
    const int f = nt * (kBm / 2) + warp * 8 + lane / 4;
#pragma unroll
    for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int row = row0 + 8 * j + 2 * (lane % 4) + e;
        const float g = __bfloat162float(__float2bfloat16_rn(acc[4 * j + e]));
        const float u = __bfloat162float(__float2bfloat16_rn(acc[4 * j + 2 + e]));
        if (row < p.m) d[static_cast<long long>(row) * p.ldd + f] = __float2bfloat16_rn(ew::gelu_tanh(g) * u);
      }
    }
    return;
  }
  if constexpr (kEpilogue == WgmmaEpilogue::kRope) {
    if (static_cast<long long>(nt) * kBm < p.rope_n) {
      // Rows i and i + 8 of this warp hold dims d and d + head_dim/2 of one head: rounded to bf16
      // (as the GEMM's output), rotated by the row's position in f32, rounded again (as the rope
      // kernel does).
      auto* d = static_cast<bf16*>(p.d);
      const long long per_head = p.head_dim / kBm;
      const long long head = nt / per_head;
      const int dim = static_cast<int>(32 * (nt % per_head)) + warp * 8 + lane / 4;
      const long long fa = head * p.head_dim + dim, fb = fa + p.head_dim / 2;
      const float ba = p.bias != nullptr ? p.bias[fa] : 0.0f, bb = p.bias != nullptr ? p.bias[fb] : 0.0f;
      const int p0 = *p.first_pos;
      const float freq = p.inv_freq[dim];
      const float2* table = p.rope_table != nullptr ? p.rope_table + dim : nullptr;
      const long long half = p.head_dim / 2;
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int row = row0 + 8 * j + 2 * (lane % 4) + e;
          const float va = __bfloat162float(__float2bfloat16_rn(acc[4 * j + e] + ba));
          const float vb = __bfloat162float(__float2bfloat16_rn(acc[4 * j + 2 + e] + bb));
          float sn, co;
          if (table != nullptr) {
            const float2 cs = row < p.m ? table[row * half] : make_float2(1.0f, 0.0f);
            co = cs.x, sn = cs.y;
          } else {
            sincosf(static_cast<float>(p0 + row) * freq, &sn, &co);
          }
          if (row < p.m) {
            d[row * p.ldd + fa] = __float2bfloat16_rn(va * co - vb * sn);
            d[row * p.ldd + fb] = __float2bfloat16_rn(vb * co + va * sn);
          }
        }
      }
      return;
    }
  }
  const int f = nt * kBm + warp * 16 + lane / 4;
  if constexpr (kEpilogue == WgmmaEpilogue::kF32Parts) {
    float* d = static_cast<float*>(p.d) + part * p.part_stride;
#pragma unroll
    for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = row0 + 8 * j + 2 * (lane % 4) + (e & 1);
        if (row < p.m) d[static_cast<long long>(row) * p.ldd + f + (e >= 2 ? 8 : 0)] = acc[4 * j + e];
      }
    }
    return;
  }
  const float b0 = p.bias != nullptr ? p.bias[f] : 0.0f, b8 = p.bias != nullptr ? p.bias[f + 8] : 0.0f;
  if constexpr (kEpilogue == WgmmaEpilogue::kF32) {
    // One f32 output: the bias and the addend (which may be this output, read before it is written).
    float* d = static_cast<float*>(p.d);
#pragma unroll
    for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = row0 + 8 * j + 2 * (lane % 4) + (e & 1);
        const int col = f + (e >= 2 ? 8 : 0);
        if (row < p.m) {
          const float add = p.addend != nullptr ? p.addend[static_cast<long long>(row) * p.ld_add + col] : 0.0f;
          d[static_cast<long long>(row) * p.ldd + col] = acc[4 * j + e] + (e >= 2 ? b8 : b0) + add;
        }
      }
    }
    return;
  }
  // bf16 out (kNone, kGelu, kSilu, kRelu): the bias, then the activation, rounded once (as
  // cuBLASLt's epilogue).
  auto* d = static_cast<bf16*>(p.d);
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = row0 + 8 * j + 2 * (lane % 4) + (e & 1);
      float v = acc[4 * j + e] + (e >= 2 ? b8 : b0);
      if constexpr (kEpilogue == WgmmaEpilogue::kGelu) v = ew::gelu_tanh(v);
      if constexpr (kEpilogue == WgmmaEpilogue::kSilu) v = v / (1.0f + expf(-v));
      if constexpr (kEpilogue == WgmmaEpilogue::kRelu) v = fmaxf(v, 0.0f);
      if (row < p.m) d[static_cast<long long>(row) * p.ldd + f + (e >= 2 ? 8 : 0)] = __float2bfloat16_rn(v);
    }
  }
}
#endif

// kSplit: k slices of one cluster whose sums the leader (rank 0) adds before its epilogue (1: none;
// a compile-time count, as the reduction's code in the one-slice kernel cost its main loop 1.7 µs
// a launch, run 35 call 2). kTiles: row tiles of 56 a block (blockIdx.z: the block's rows, 56 ·
// kTiles of them); more than one only without a split.
template <WgmmaEpilogue kEpilogue, int kSplit, int kTiles>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_gemm_kernel(const Params p, const __grid_constant__ CUtensorMap a_map) {
  static_assert(kSplit == 1 || kTiles == 1, "k slices only with one row tile");
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kStages = stages_for(kTiles);
  constexpr int kABox = kTiles * kATile;  // elements of A a stage
  extern __shared__ __align__(128) unsigned char smem[];
  auto* full = reinterpret_cast<unsigned long long*>(smem);
  auto* empty = full + kStages;
  auto* sums_in = empty + kStages;  // the split's leader: every other slice's sums have arrived
  const unsigned pad = (1024 - (ptx::smem_addr(smem) + kBarBytes) % 1024) % 1024;
  bf16* s_w = reinterpret_cast<bf16*>(smem + kBarBytes + pad);
  bf16* s_a = s_w + kStages * kWTile;
  auto* s_sums = reinterpret_cast<float*>(s_a + kStages * kABox);  // [split - 1][128][28]
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int nt = static_cast<int>(blockIdx.x), part = static_cast<int>(blockIdx.y);
  const int row0 = static_cast<int>(blockIdx.z) * kBn * kTiles;
  const int kbs = p.k / kBk;
  // This block's k blocks: part `part` of p.parts (or slice `part` of p.split) near-equal ones.
  const int slices = kSplit > 1 ? kSplit : p.parts;
  const int kb0 = part * kbs / slices, kb_count = (part + 1) * kbs / slices - kb0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);  // the producer's arrival, with the bytes of both copies
      ptx::mbar_init(&empty[s], 4);      // one arrival a consumer warp
    }
    if (kSplit > 1 && part == 0) {
      // The leader's own arrival, expecting every other slice's sums in bytes.
      ptx::mbar_init(sums_in, 1);
      ptx::mbar_expect_tx(sums_in, static_cast<unsigned>((kSplit - 1) * kSliceBytes));
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  // A split's slices store their sums into the leader's shared memory once its barrier is set up:
  // every thread arrives here (all are still running); only the slices' consumers wait, later.
  if constexpr (kSplit > 1) asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");

  constexpr unsigned kStageTx = (kWTile + kABox) * static_cast<unsigned>(sizeof(bf16));
  if (warp == 4) {
    if (lane != 0) return;
    const bf16* w = p.w + (static_cast<long long>(nt) * kbs + kb0) * kWTile;
    // The weights are no kernel's output: the first stages' tiles (p.ahead of them, at most the
    // ring) start before the wait for the kernel ahead in the chain (which wrote A), so they load
    // while it finishes.
    const int ahead = min(kb_count, min(kStages, p.ahead));
    const unsigned long long policy = p.evict_first ? ptx::l2_evict_first_policy() : 0ull;
    // Weight tile i into ring slot `slot`.
    const auto copy_w = [&](int slot, int i) {
      bf16* dst = s_w + slot * kWTile;
      const bf16* src = w + static_cast<long long>(i) * kWTile;
      constexpr unsigned kBytes = kWTile * sizeof(bf16);
      if (p.evict_first) {
        ptx::bulk_copy_hint(dst, src, kBytes, &full[slot], policy);
      } else {
        ptx::bulk_copy(dst, src, kBytes, &full[slot]);
      }
    };
    // One box of A a stage: the block's 56 · kTiles rows (past m zero-filled), tile t at t · 7 KB.
    produce_stages(kb_count, kStages, ahead, kStageTx, full, empty, copy_w, [&](int s, int i) {
      ptx::tma_load_2d(s_a + s * kABox, &a_map, (kb0 + i) * kBk, row0, &full[s]);
    });
    return;
  }

  float acc[kTiles][kAccFloats];
#pragma unroll
  for (int t = 0; t < kTiles; ++t) {
#pragma unroll
    for (int i = 0; i < kAccFloats; ++i) acc[t][i] = 0.0f;
  }
  for (int i = 0; i < kb_count; ++i) {
    const int s = i % kStages;
    ptx::mbar_wait(&full[s], (i / kStages) & 1);
    ptx::wg_fence();
#pragma unroll
    for (int kk = 0; kk < kBk / 16; ++kk) {
#pragma unroll
      for (int t = 0; t < kTiles; ++t) {
        wgmma_m64n56(acc[t], weight_descriptor(s_w + s * kWTile + kk * 128),
                     swizzled_descriptor(s_a + s * kABox + t * kATile + kk * 16));
      }
    }
    ptx::wg_commit();
    ptx::wg_wait<1>();
    if (i > 0 && lane == 0) ptx::mbar_arrive(&empty[(i - 1) % kStages]);
  }
  ptx::wg_wait<0>();

  if constexpr (kSplit > 1) {
    float (&a0)[kAccFloats] = acc[0];
    const int tid = static_cast<int>(threadIdx.x);
    if (part != 0) {
      // A slice: its sums into the leader's shared memory (slot part - 1), counted in bytes on the
      // leader's barrier; then this block is done.
      asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
      send_slice_sums(a0, s_sums, part - 1, tid, sums_in, 0);
      return;
    }
    // The leader adds the other slices' sums in rank order (deterministic), then writes.
    ptx::mbar_wait(sums_in, 0);
    add_slice_sums<kSplit - 1>(a0, s_sums, tid);
  }
  if constexpr (kEpilogue == WgmmaEpilogue::kNorm) {
    // The ring's weight tiles are all read: their shared memory holds the rows' sums.
    if constexpr (kSplit == 1) {
      if (p.parts > 1 && !gather_parts(p.norm, acc[0], p.m, p.n, nt, part, p.parts, warp, lane,
                                       reinterpret_cast<unsigned*>(s_w) + 5 * kBn)) {
        return;
      }
    }
    norm_epilogue(p.norm, acc[0], p.bias, static_cast<bf16*>(p.d), p.ldd, p.m, p.n, nt, warp, lane,
                  reinterpret_cast<float*>(s_w));
  } else {
#pragma unroll
    for (int t = 0; t < kTiles; ++t) epilogue_tile<kEpilogue>(p, acc[t], row0 + t * kBn, nt, part, warp, lane);
  }
#endif
}

template <WgmmaEpilogue kEpilogue, int kSplit, int kTiles>
cudaError_t launch_split(cudaStream_t stream, dim3 grid, const Params& p, const CUtensorMap& a_map) {
  constexpr int smem = smem_bytes(kSplit, kTiles);
  const cudaError_t err = cudaFuncSetAttribute(wgmma_gemm_kernel<kEpilogue, kSplit, kTiles>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  // Chained to the kernel before it inside a DependentLaunchScope (launch.cuh), plain otherwise;
  // a split's k slices of one feature block form one cluster.
  cudaLaunchAttribute attributes[2]{};
  cudaLaunchConfig_t config = chain_config(grid, dim3(kThreads), static_cast<std::size_t>(smem), stream, &attributes[0]);
  if (kSplit > 1) add_cluster(config, attributes, dim3(1, kSplit, 1));
  const void* kernel = reinterpret_cast<const void*>(wgmma_gemm_kernel<kEpilogue, kSplit, kTiles>);
  void* args[] = {const_cast<Params*>(&p), const_cast<CUtensorMap*>(&a_map)};
  return cudaLaunchKernelExC(&config, kernel, args);
}

// One row tile: the k parts and RoPE forms have no split, the other outputs 1 to kWgmmaMaxSplit
// slices. Two to four row tiles: no split (kNorm has one row tile only).
template <WgmmaEpilogue kEpilogue>
cudaError_t launch_form(cudaStream_t stream, dim3 grid, int split, int tiles, const Params& p,
                        const CUtensorMap& a_map) {
  static_assert(kWgmmaMaxSplit == 4 && kMaxRowTiles == 4, "one instance a split count and a row-tile count");
  if constexpr (kEpilogue != WgmmaEpilogue::kNorm) {
    switch (tiles) {
      case 2: return launch_split<kEpilogue, 1, 2>(stream, grid, p, a_map);
      case 3: return launch_split<kEpilogue, 1, 3>(stream, grid, p, a_map);
      case 4: return launch_split<kEpilogue, 1, 4>(stream, grid, p, a_map);
      default: break;
    }
  }
  if constexpr (kEpilogue != WgmmaEpilogue::kF32Parts && kEpilogue != WgmmaEpilogue::kRope) {
    switch (split) {
      case 2: return launch_split<kEpilogue, 2, 1>(stream, grid, p, a_map);
      case 3: return launch_split<kEpilogue, 3, 1>(stream, grid, p, a_map);
      case 4: return launch_split<kEpilogue, 4, 1>(stream, grid, p, a_map);
      default: break;
    }
  }
  return launch_split<kEpilogue, 1, 1>(stream, grid, p, a_map);
}

// kNorm: how many of its calls' blocks of `split` k slices (clusters where split > 1) the current
// device holds at once.
template <int kSplit>
int norm_groups_resident() {
  return clusters_resident(reinterpret_cast<const void*>(wgmma_gemm_kernel<WgmmaEpilogue::kNorm, kSplit, 1>), kThreads,
                           smem_bytes(kSplit, 1), dim3(1, kSplit, 1));
}

int norm_groups_resident(int split) {
  switch (split) {
    case 2: return norm_groups_resident<2>();
    case 3: return norm_groups_resident<3>();
    case 4: return norm_groups_resident<4>();
    default: return norm_groups_resident<1>();
  }
}

}  // namespace

int wgmma_stages_ahead() {
  // Four: GR00T's head 0.1-0.2 ms and pi0.5's up to 0.06 ms faster than with the whole ring (eight)
  // in three alternations; two, three and six between them (bench/results/issue9_h200 run 41,
  // calls 5 and 7). Copies issued before the wait share the memory system with the kernel ahead,
  // whose own loads are on the chain's critical path.
  static const int ahead = env_int("EDGEVLA_WGMMA_AHEAD", 4, 0, 8);
  return ahead;
}

bool wgmma_weights_evict_first() {
  // On: both heads 0.2-0.3 ms faster at one view (pi0.5 6.27-6.29 against 6.47-6.52 ms, GR00T
  // 4.51-4.52 against 4.69-4.79), pi0.5 at three views 0.03-0.1 (bench/results/issue9_h200 run 50,
  // call 3, alternated twice); the backbones, on cuBLASLt, unchanged.
  static const bool on = env_int("EDGEVLA_WGMMA_EVICT_FIRST", 1, 0, 1) == 1;
  return on;
}

bool wgmma_gemm_available() {
#if defined(EDGEVLA_CUDA_SM90A)
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    return false;
  }
  // A's copies need the driver's tensor-map encoder.
  return major == 9 && minor == 0 && tensor_map_encoder() != nullptr;
#else
  return false;
#endif
}

bool wgmma_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k, WgmmaEpilogue epilogue) {
  const std::int64_t n_step = epilogue == WgmmaEpilogue::kGeglu ? 2 * kBm : kBm;
  return m >= 1 && m <= kWgmmaMaxAllRows && n > 0 && n % n_step == 0 && k > 0 && k % kBk == 0 && n / kBm <= 65535;
}

int wgmma_row_tiles(std::int64_t m) {
  return static_cast<int>(std::clamp<std::int64_t>((m + kBn - 1) / kBn, 1, kMaxRowTiles));
}

bool wgmma_norm_fits(std::int64_t m, std::int64_t n, int k_split, int k_parts) {
  if (m < 1 || m > kWgmmaMaxRows || n <= 0 || n % kBm != 0 || k_split < 1 || k_split > kWgmmaMaxSplit ||
      k_parts < 1 || k_parts > kNormMaxParts || (k_split > 1 && k_parts > 1)) {
    return false;
  }
  // k parts: the whole grid resident (each feature block's last part waits for the others').
  return (n / kBm) * k_parts <= norm_groups_resident(k_split);
}

std::size_t wgmma_norm_scratch_bytes(std::int64_t n) {
  return static_cast<std::size_t>(norm_scratch_bytes(n));
}

std::size_t wgmma_tiled_bytes(std::int64_t n, std::int64_t k) {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(k) * sizeof(bf16);
}

namespace {
// The rotated part of a kRope layout: whole heads of head_dim (a multiple of 64), within n.
bool rope_layout_ok(std::int64_t n, const WgmmaRope& rope) {
  return rope.head_dim >= kBm && rope.head_dim % kBm == 0 && rope.features > 0 && rope.features % rope.head_dim == 0 &&
         rope.features <= n;
}
}  // namespace

Status wgmma_tile_weight(cudaStream_t stream, const void* w, std::int64_t n, std::int64_t k, std::int64_t ld,
                         WgmmaEpilogue epilogue, void* out, const WgmmaRope& rope) {
  if (!wgmma_gemm_fits(1, n, k, epilogue) || ld < k || w == nullptr || out == nullptr) {
    return invalid_argument("wgmma_tile_weight: a weight of " + std::to_string(n) + " × " + std::to_string(k) +
                            " (row stride " + std::to_string(ld) + ") does not fit the warpgroup GEMM");
  }
  if (epilogue == WgmmaEpilogue::kRope && !rope_layout_ok(n, rope)) {
    return invalid_argument("wgmma_tile_weight: RoPE over " + std::to_string(rope.features) + " features in heads of " +
                            std::to_string(rope.head_dim) + " (whole heads, a multiple of 64, within the " +
                            std::to_string(n) + " outputs)");
  }
  const long long total = n * k;
  tile_weight_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
      static_cast<const bf16*>(w), n, k, ld, epilogue, rope.features, rope.head_dim, static_cast<bf16*>(out));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return internal_error(std::string("wgmma_tile_weight: ") + cudaGetErrorString(err));
  return Status::ok();
}

int wgmma_k_parts(std::int64_t n, std::int64_t k, int max_parts, int multiprocessors) {
  const std::int64_t blocks = std::max<std::int64_t>(n / kBm, 1);
  const std::int64_t by_sms = std::max<std::int64_t>(multiprocessors / blocks, 1);
  // At least two stages a part, so that a part's weight copies still overlap.
  const std::int64_t by_k = std::max<std::int64_t>(k / kBk / 2, 1);
  return static_cast<int>(std::clamp<std::int64_t>(std::min(by_sms, by_k), 1, std::max(max_parts, 1)));
}

int wgmma_k_split(std::int64_t n, std::int64_t k, int max_split, int multiprocessors) {
  const std::int64_t blocks = std::max<std::int64_t>(n / kBm, 1);
  const std::int64_t by_sms = std::max<std::int64_t>(multiprocessors / blocks, 1);
  // Only where the feature blocks fill at most a quarter of the device: the slices' reduction and
  // the cluster launch cost more than they save above that (pi0.5's q|k|v, 40 blocks on 132
  // multiprocessors: head 7.08 ms in three slices, 6.57 in two, 6.54 in one; GR00T's cross q, 24
  // blocks: 4.86 against 4.98 ms in four; run 35 call 3).
  if (by_sms < 4) return 1;
  const std::int64_t by_k = std::max<std::int64_t>(k / kBk / 2, 1);
  return static_cast<int>(std::clamp<std::int64_t>(std::min(by_sms, by_k), 1, std::clamp(max_split, 1, kWgmmaMaxSplit)));
}

Status wgmma_gemm(cudaStream_t stream, const WgmmaGemmArgs& args) {
  if (!wgmma_gemm_fits(args.m, args.n, args.k, args.epilogue)) {
    return invalid_argument("wgmma_gemm: shape " + std::to_string(args.m) + " × " + std::to_string(args.k) + " → " +
                            std::to_string(args.n) + " does not fit (rows 1 to " + std::to_string(kWgmmaMaxAllRows) +
                            "; n and k multiples of 64)");
  }
  const bool parts_out = args.epilogue == WgmmaEpilogue::kF32Parts;
  const std::int64_t out_n = args.epilogue == WgmmaEpilogue::kGeglu ? args.n / 2 : args.n;
  if (args.a == nullptr || args.w_tiled == nullptr || args.d == nullptr || args.lda < args.k || args.lda % 8 != 0 ||
      args.ldd < out_n || reinterpret_cast<std::uintptr_t>(args.a) % 16 != 0) {
    return invalid_argument("wgmma_gemm: null pointer, misaligned A, or a row stride shorter than its row");
  }
  if (args.epilogue == WgmmaEpilogue::kRope &&
      (!rope_layout_ok(args.n, args.rope) || args.rope.first_pos == nullptr || args.rope.inv_freq == nullptr ||
       reinterpret_cast<std::uintptr_t>(args.rope.table) % 16 != 0)) {
    return invalid_argument("wgmma_gemm: RoPE needs whole heads (a multiple of 64) within n, the first position and "
                            "the frequencies (and a 16-byte aligned table, if one)");
  }
  if (args.bias != nullptr && (args.epilogue == WgmmaEpilogue::kGeglu || parts_out)) {
    return invalid_argument("wgmma_gemm: a bias goes with the plain, activation and f32 outputs only (k parts "
                            "leave it to the kernel that sums them)");
  }
  if (args.addend != nullptr && (args.epilogue != WgmmaEpilogue::kF32 || args.ld_add < args.n)) {
    return invalid_argument("wgmma_gemm: an addend goes with the f32 output only, with a row stride of at least n");
  }
  const bool norm_parts = args.epilogue == WgmmaEpilogue::kNorm && args.k_split == 1 && args.k_parts <= kNormMaxParts;
  if (args.k_parts < 1 || args.k_parts > args.k / kBk || (args.k_parts > 1 && !parts_out && !norm_parts) ||
      (parts_out && args.k_parts > 1 && args.part_stride < (args.m - 1) * args.ldd + out_n)) {
    return invalid_argument("wgmma_gemm: " + std::to_string(args.k_parts) +
                            " k parts (1 to k / 64, more than 1 only with the f32 parts output, parts apart by at "
                            "least rows × ldd, or with the norm epilogue without k slices, at most " +
                            std::to_string(kNormMaxParts) + ")");
  }
  if (args.k_split < 1 || args.k_split > kWgmmaMaxSplit || args.k_split > args.k / kBk ||
      (args.k_split > 1 && (parts_out || args.epilogue == WgmmaEpilogue::kRope))) {
    return invalid_argument("wgmma_gemm: a k split of " + std::to_string(args.k_split) + " (1 to " +
                            std::to_string(kWgmmaMaxSplit) + " and k / 64; not with the k parts or RoPE)");
  }
  if (args.epilogue == WgmmaEpilogue::kNorm) {
    const WgmmaNorm& q = args.norm;
    if (args.m > kWgmmaMaxRows || q.x == nullptr || q.ldx < args.n || q.weight == nullptr || q.scratch == nullptr ||
        (q.kind == WgmmaNormKind::kGatedAda && q.shift == nullptr)) {
      return invalid_argument("wgmma_gemm: the norm epilogue needs at most " + std::to_string(kWgmmaMaxRows) +
                              " rows, the residual stream (row stride at least n), the norm's weight (and shift for "
                              "the adaptive norm) and its scratch (wgmma_norm_scratch_bytes)");
    }
    // Its feature blocks wait for each other's partial sums: all of them must be resident at once.
    if (!wgmma_norm_fits(args.m, args.n, args.k_split, args.k_parts)) {
      const int groups = norm_groups_resident(args.k_split);
      return invalid_argument("wgmma_gemm: the norm epilogue's " + std::to_string(args.n / kBm) + " feature blocks in " +
                              std::to_string(args.k_split) + " k slices or " + std::to_string(args.k_parts) +
                              " k parts (at most " + std::to_string(kNormMaxParts) +
                              ", not both) do not fit the device at once (it holds " + std::to_string(groups) +
                              " such groups); run the GEMM in k parts and a norm kernel instead");
    }
  }
  if (args.k_split > 1 && args.m > kWgmmaMaxRows) {
    return invalid_argument("wgmma_gemm: k slices need at most " + std::to_string(kWgmmaMaxRows) + " rows, got " +
                            std::to_string(args.m));
  }
  // Up to 56 rows: one row tile a block, as the action heads run it; more: up to four a block,
  // and blocks along z for the rest.
  const int tiles = wgmma_row_tiles(args.m);
  const std::int64_t row_blocks = (args.m + kBn * tiles - 1) / (kBn * tiles);
  CUtensorMap a_map;
  if (!encode_bf16_boxes(a_map, args.a, args.k, args.m, args.lda, kBn * tiles)) {
    return internal_error("wgmma_gemm: the driver could not describe A for bulk tensor copies (cuTensorMapEncodeTiled)");
  }
  Params p{static_cast<const bf16*>(args.w_tiled), args.bias, args.addend, args.ld_add, args.rope.first_pos, args.rope.inv_freq,
           reinterpret_cast<const float2*>(args.rope.table), args.rope.features, args.rope.head_dim, args.d, args.ldd,
           args.part_stride, static_cast<int>(args.m), static_cast<int>(args.n), static_cast<int>(args.k),
           args.k_parts, NormParams{}, wgmma_stages_ahead(), wgmma_weights_evict_first() ? 1 : 0};
  if (args.epilogue == WgmmaEpilogue::kNorm) {
    static_assert(static_cast<int>(WgmmaNormKind::kRms) == kNormRms &&
                  static_cast<int>(WgmmaNormKind::kGatedAda) == kNormGatedAda);
    const WgmmaNorm& q = args.norm;
    auto* sync = static_cast<unsigned*>(q.scratch);
    auto* base = static_cast<unsigned char*>(q.scratch);
    const long long n = args.n;
    p.norm = NormParams{static_cast<int>(q.kind), q.x, q.ldx, q.gate, q.weight, q.shift, q.eps, sync,
                        reinterpret_cast<float*>(base + kNormSyncBytes),
                        reinterpret_cast<unsigned*>(base + kNormSyncBytes + norm_partials_bytes(n)),
                        reinterpret_cast<float*>(base + kNormSyncBytes + norm_partials_bytes(n) + norm_arrived_bytes(n))};
  }
  const dim3 grid(static_cast<unsigned>(args.n / kBm),
                  static_cast<unsigned>(parts_out || args.k_parts > 1 ? args.k_parts : args.k_split),
                  static_cast<unsigned>(row_blocks));
  cudaError_t err = cudaSuccess;
  switch (args.epilogue) {
    case WgmmaEpilogue::kNone: err = launch_form<WgmmaEpilogue::kNone>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kGeglu: err = launch_form<WgmmaEpilogue::kGeglu>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kF32Parts: err = launch_form<WgmmaEpilogue::kF32Parts>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kGelu: err = launch_form<WgmmaEpilogue::kGelu>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kRope: err = launch_form<WgmmaEpilogue::kRope>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kSilu: err = launch_form<WgmmaEpilogue::kSilu>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kRelu: err = launch_form<WgmmaEpilogue::kRelu>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kF32: err = launch_form<WgmmaEpilogue::kF32>(stream, grid, args.k_split, tiles, p, a_map); break;
    case WgmmaEpilogue::kNorm: err = launch_form<WgmmaEpilogue::kNorm>(stream, grid, args.k_split, tiles, p, a_map); break;
  }
  if (err != cudaSuccess) return internal_error(std::string("wgmma_gemm: launch: ") + cudaGetErrorString(err));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
