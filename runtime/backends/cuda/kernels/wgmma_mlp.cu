// The MLP half as one kernel (contract in wgmma_mlp.hpp).
//
// Block: 160 threads, as wgmma_gemm's: warps 0-3 the consumer warpgroup, warp 4's lane 0 the
// producer. The producer streams one ring of 8 stages: first the block's kbs1 = d / 64 stages of
// W1 (an 8 KB tile) with x's 56 × 64 box beside it (a bulk tensor copy in the 128-byte swizzle),
// then cluster · kMt stages of W2 alone: for each of the cluster's 64-wide k blocks of h (kc) the
// tiles of the block's kMt feature blocks of the output. Its first eight tiles load before the
// chain's wait, as the GEMM's do.
// The consumers make h's 64 features (wgmma.m64n56k16 over x), add b1, apply GELU-tanh and round to
// bf16 exactly as wgmma_gemm's kGelu epilogue, and write them into their own slot of the cluster's
// h (cluster boxes of 56 rows × 64 features, each in the swizzled layout x's boxes have, so that
// the second product reads them as it would read a copied box). One thread then bulk-copies the
// slot to the same place in every other block of the cluster, counted on that block's h barrier.
// Once all of h has arrived, the consumers multiply it by the streamed W2 tiles, k blocks in
// ascending order as the GEMM's k parts do, and write their part (the cluster's index).
// A cluster barrier at the start (the h barriers set up before any copy into them) and one at the
// end (every copy out of a block's shared memory read before the block leaves).
#include "runtime/backends/cuda/kernels/wgmma_mlp.hpp"

#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"  // gelu_tanh, as wgmma_gemm's kGelu
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::backends::cuda {
namespace {

using namespace wgmma;

constexpr int kThreads = 160;
constexpr int kBarBytes = 256;       // full and empty barriers of every stage, the h barrier
constexpr int kMaxCluster = 12;
constexpr int kMaxOutTiles = 4;      // 64-feature output tiles a block
// W1 tiles a stage and block: 1 (GELU: a 64-row tile makes 64 features of h) or 2 (GeGLU: a tile
// pairs 32 gate rows with their up rows, wgmma_gemm's kGeglu layout, so 64 features take two).
constexpr int w1_tiles(bool geglu) { return geglu ? 2 : 1; }
// Ring stages: 8 (as the GEMM), 6 where a stage holds two W1 tiles.
constexpr int stages(bool geglu) { return geglu ? 6 : 8; }
// Shared memory: the barriers, the ring (W1's tiles + x's box a stage; W2's stages use one tile),
// the cluster's h boxes, the tiles 1024-aligned for the swizzle.
constexpr int smem_bytes(int cluster, bool geglu) {
  return 1024 + kBarBytes + stages(geglu) * (w1_tiles(geglu) * kWTile + kATile) * static_cast<int>(sizeof(bf16)) +
         cluster * kATile * static_cast<int>(sizeof(bf16));
}
static_assert(smem_bytes(kMaxCluster, false) <= 227 * 1024 && smem_bytes(kMaxCluster, true) <= 227 * 1024,
              "the largest cluster's h fits beside the ring");

struct Params {
  const bf16* w1;
  const float* b1;
  const bf16* w2;
  float* parts;
  long long ldp, part_stride;
  int m, d, hidden, n_out, cluster;
};

// kMt: 64-feature tiles of the output a block (n_out / cluster / 64). kGeglu: h = gelu_tanh(gate) ·
// up from a fused gate|up W1 (pi0.5's expert), else gelu_tanh(x · W1ᵀ + b1) (GR00T's DiT).
template <int kMt, bool kGeglu>
__global__ void __launch_bounds__(kThreads, 1) wgmma_mlp_kernel(const Params p, const __grid_constant__ CUtensorMap x_map) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kAccFloats = 28;  // a consumer thread's accumulators of one 64-feature tile
  constexpr int kStages = stages(kGeglu), kT = w1_tiles(kGeglu), kSlot = kT * kWTile;
  extern __shared__ __align__(128) unsigned char smem[];
  auto* full = reinterpret_cast<unsigned long long*>(smem);
  auto* empty = full + kStages;
  auto* h_full = empty + kStages;
  const unsigned pad = (1024 - (ptx::smem_addr(smem) + kBarBytes) % 1024) % 1024;
  bf16* s_w = reinterpret_cast<bf16*>(smem + kBarBytes + pad);
  bf16* s_x = s_w + kStages * kSlot;
  bf16* s_h = s_x + kStages * kATile;  // [cluster] boxes of 56 rows × 64 features
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int C = p.cluster;
  const int nt1 = static_cast<int>(blockIdx.x);  // h's feature block
  const int rank = nt1 % C, c = nt1 / C;         // the cluster is C consecutive blocks along x
  const int kbs1 = p.d / kBk, kbs2 = p.hidden / kBk;
  const int total = kbs1 + C * kMt;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);   // the producer's arrival, with the stage's bytes
      ptx::mbar_init(&empty[s], 4);  // one arrival a consumer warp
    }
    // Its own arrival, expecting the other blocks' slots of h in bytes.
    ptx::mbar_init(h_full, 1);
    ptx::mbar_expect_tx(h_full, static_cast<unsigned>((C - 1) * kATile * sizeof(bf16)));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");  // this block's barriers are set up

  if (warp == 4) {
    if (lane == 0) {
      // Stage i's weight tiles into slot s: W1's tiles nt1 · kT .. + kT - 1 at k block i, then W2's
      // tile (output block rank · kMt + mt, k block c · C + kc of h) for i = kbs1 + kc · kMt + mt.
      auto weights = [&](int i, int s) {
        if (i < kbs1) {
          ptx::mbar_expect_tx(&full[s], static_cast<unsigned>((kSlot + kATile) * sizeof(bf16)));
          for (int t = 0; t < kT; ++t) {
            const long long tile = (static_cast<long long>(nt1) * kT + t) * kbs1 + i;
            ptx::bulk_copy(s_w + s * kSlot + t * kWTile, p.w1 + tile * kWTile, kWTile * sizeof(bf16), &full[s]);
          }
          return;
        }
        const int j = i - kbs1, kc = j / kMt, mt = j % kMt;
        const long long nt2 = static_cast<long long>(rank) * kMt + mt, kb2 = static_cast<long long>(c) * C + kc;
        ptx::mbar_expect_tx(&full[s], static_cast<unsigned>(kWTile * sizeof(bf16)));
        ptx::bulk_copy(s_w + s * kSlot, p.w2 + (nt2 * kbs2 + kb2) * kWTile, kWTile * sizeof(bf16), &full[s]);
      };
      const int ahead = total < kStages ? total : kStages;
      for (int i = 0; i < ahead; ++i) weights(i, i);
      chain_wait();
      chain_release();  // as wgmma_gemm: only once the kernel ahead has finished
      for (int i = 0; i < total; ++i) {
        const int s = i % kStages;
        if (i >= kStages) {
          ptx::mbar_wait(&empty[s], ((i / kStages) - 1) & 1);
          weights(i, s);
        }
        if (i < kbs1) ptx::tma_load_2d(s_x + s * kATile, &x_map, i * kBk, 0, &full[s]);
      }
    }
    __syncwarp();
    asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
  } else {
    // h's 64 features for the 56 rows (GeGLU: gate and up in each of two tiles).
    float acc[kT][kAccFloats];
#pragma unroll
    for (int t = 0; t < kT; ++t) {
#pragma unroll
      for (int i = 0; i < kAccFloats; ++i) acc[t][i] = 0.0f;
    }
    for (int i = 0; i < kbs1; ++i) {
      const int s = i % kStages;
      ptx::mbar_wait(&full[s], (i / kStages) & 1);
      ptx::wg_fence();
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk) {
#pragma unroll
        for (int t = 0; t < kT; ++t) {
          wgmma_m64n56(acc[t], weight_descriptor(s_w + s * kSlot + t * kWTile + kk * 128),
                       swizzled_descriptor(s_x + s * kATile + kk * 16));
        }
      }
      ptx::wg_commit();
      ptx::wg_wait<1>();
      if (i > 0 && lane == 0) ptx::mbar_arrive(&empty[(i - 1) % kStages]);
    }
    ptx::wg_wait<0>();
    if (lane == 0) ptx::mbar_arrive(&empty[(kbs1 - 1) % kStages]);  // the producer goes on into W2

    // h into this block's slot, feature f of row r at 16-byte chunk (f / 8) ^ (r % 8) of the row's
    // 128 bytes: bias, GELU-tanh, bf16 (kGelu's epilogue), or gelu_tanh(gate) · up of the gate and
    // up rounded to bf16 first (kGeglu's: tile t's thread holds gate rows i and their up rows i + 8).
    bf16* mine = s_h + rank * kATile;
    auto put = [&](int row, int f, float v) { mine[row * kBk + (((f >> 3) ^ (row & 7)) << 3) + (f & 7)] = __float2bfloat16_rn(v); };
    const int f0 = warp * 16 + lane / 4;
    if constexpr (kGeglu) {
#pragma unroll
      for (int t = 0; t < kT; ++t) {
#pragma unroll
        for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float g = __bfloat162float(__float2bfloat16_rn(acc[t][4 * j + e]));
            const float u = __bfloat162float(__float2bfloat16_rn(acc[t][4 * j + 2 + e]));
            put(8 * j + 2 * (lane % 4) + e, t * (kBm / 2) + warp * 8 + lane / 4, ew::gelu_tanh(g) * u);
          }
        }
      }
    } else {
      const float b0 = p.b1 != nullptr ? p.b1[nt1 * kBm + f0] : 0.0f;
      const float b8 = p.b1 != nullptr ? p.b1[nt1 * kBm + f0 + 8] : 0.0f;
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          put(8 * j + 2 * (lane % 4) + (e & 1), f0 + (e >= 2 ? 8 : 0), ew::gelu_tanh(acc[0][4 * j + e] + (e >= 2 ? b8 : b0)));
        }
      }
    }
    ptx::fence_proxy_async();  // the slot's writes, for the copies and this block's multiplies
    asm volatile("bar.sync 1, 128;\n" ::: "memory");  // the consumers' writes are all in
    asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");  // every block's h barrier is set up
    if (tid == 0) {
      const unsigned slot = ptx::smem_addr(mine), bar = ptx::smem_addr(h_full);
      for (int r = 0; r < C; ++r) {
        if (r == rank) continue;
        ptx::bulk_copy_to_cluster(ptx::cluster_map(slot, static_cast<unsigned>(r)), mine,
                                  static_cast<unsigned>(kATile * sizeof(bf16)), ptx::cluster_map(bar, static_cast<unsigned>(r)));
      }
    }

    // The cluster's h times W2's tiles: part c of the block's kMt output tiles.
    ptx::mbar_wait(h_full, 0);
    float out[kMt][kAccFloats];
#pragma unroll
    for (int t = 0; t < kMt; ++t) {
#pragma unroll
      for (int i = 0; i < kAccFloats; ++i) out[t][i] = 0.0f;
    }
    for (int kc = 0; kc < C; ++kc) {
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
        const int i = kbs1 + kc * kMt + mt, s = i % kStages;
        ptx::mbar_wait(&full[s], (i / kStages) & 1);
        ptx::wg_fence();
#pragma unroll
        for (int kk = 0; kk < kBk / 16; ++kk) {
          wgmma_m64n56(out[mt], weight_descriptor(s_w + s * kSlot + kk * 128),
                       swizzled_descriptor(s_h + kc * kATile + kk * 16));
        }
        ptx::wg_commit();
        ptx::wg_wait<1>();
        // Stage i - 1's multiplies are done (the first of these stages: the last of W1's, released
        // already).
        if (i > kbs1 && lane == 0) ptx::mbar_arrive(&empty[(i - 1) % kStages]);
      }
    }
    ptx::wg_wait<0>();
    float* d = p.parts + static_cast<long long>(c) * p.part_stride;
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
      const int f = (rank * kMt + mt) * kBm + f0;
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = 8 * j + 2 * (lane % 4) + (e & 1);
          if (row < p.m) d[static_cast<long long>(row) * p.ldp + f + (e >= 2 ? 8 : 0)] = out[mt][4 * j + e];
        }
      }
    }
  }
  // No block leaves while a copy out of its shared memory may still be reading it.
  asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
#else
  (void)p;
  (void)x_map;
  __trap();  // the host launches this kernel only on a 9.0 device from an sm_90a build
#endif
}

cudaLaunchConfig_t mlp_config(dim3 grid, int cluster, bool geglu, cudaStream_t stream, cudaLaunchAttribute (&attributes)[2]) {
  cudaLaunchConfig_t config =
      chain_config(grid, dim3(kThreads), static_cast<std::size_t>(smem_bytes(cluster, geglu)), stream, &attributes[0]);
  add_cluster(config, attributes, dim3(static_cast<unsigned>(cluster), 1, 1));
  return config;
}

template <int kMt, bool kGeglu>
cudaError_t prepare(int cluster) {
  const void* kernel = reinterpret_cast<const void*>(wgmma_mlp_kernel<kMt, kGeglu>);
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes(cluster, kGeglu));
  if (err == cudaSuccess && cluster > 8) err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  return err;
}

template <int kMt, bool kGeglu>
cudaError_t launch(cudaStream_t stream, dim3 grid, int cluster, const Params& p, const CUtensorMap& x_map) {
  cudaError_t err = prepare<kMt, kGeglu>(cluster);
  if (err != cudaSuccess) return err;
  cudaLaunchAttribute attributes[2]{};
  const cudaLaunchConfig_t config = mlp_config(grid, cluster, kGeglu, stream, attributes);
  void* args[] = {const_cast<Params*>(&p), const_cast<CUtensorMap*>(&x_map)};
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(wgmma_mlp_kernel<kMt, kGeglu>), args);
}

template <int kMt, bool kGeglu>
int resident(int cluster) {
  return clusters_resident(reinterpret_cast<const void*>(wgmma_mlp_kernel<kMt, kGeglu>), kThreads,
                           smem_bytes(cluster, kGeglu), dim3(static_cast<unsigned>(cluster), 1, 1));
}

// The instance for kMt output tiles a block (1 to 4) and the form.
template <bool kGeglu>
cudaError_t launch_form(int out_tiles, cudaStream_t stream, dim3 grid, int cluster, const Params& p,
                        const CUtensorMap& x_map) {
  switch (out_tiles) {
    case 1: return launch<1, kGeglu>(stream, grid, cluster, p, x_map);
    case 2: return launch<2, kGeglu>(stream, grid, cluster, p, x_map);
    case 3: return launch<3, kGeglu>(stream, grid, cluster, p, x_map);
    default: return launch<4, kGeglu>(stream, grid, cluster, p, x_map);
  }
}
template <bool kGeglu>
int resident_form(int out_tiles, int cluster) {
  switch (out_tiles) {
    case 1: return resident<1, kGeglu>(cluster);
    case 2: return resident<2, kGeglu>(cluster);
    case 3: return resident<3, kGeglu>(cluster);
    default: return resident<4, kGeglu>(cluster);
  }
}

}  // namespace

int wgmma_mlp_parts(std::int64_t hidden, int cluster) {
  return cluster > 0 ? static_cast<int>(hidden / (kBm * static_cast<std::int64_t>(cluster))) : 0;
}

bool wgmma_mlp_fits(std::int64_t m, std::int64_t d, std::int64_t hidden, std::int64_t n_out, int cluster) {
  if (cluster < 2 || cluster > kMaxCluster || m < 1 || m > kBn || d <= 0 || d % kBk != 0) return false;
  const std::int64_t span = kBm * static_cast<std::int64_t>(cluster);
  return hidden > 0 && hidden % span == 0 && hidden / kBm <= 65535 && n_out > 0 && n_out % span == 0 &&
         n_out / span <= kMaxOutTiles;
}

int wgmma_mlp_resident_clusters(std::int64_t m, std::int64_t d, std::int64_t hidden, std::int64_t n_out, int cluster,
                                bool geglu) {
  if (!wgmma_mlp_fits(m, d, hidden, n_out, cluster)) return 0;
  const int out_tiles = static_cast<int>(n_out / (kBm * cluster));
  return geglu ? resident_form<true>(out_tiles, cluster) : resident_form<false>(out_tiles, cluster);
}

Status wgmma_mlp(cudaStream_t stream, const WgmmaMlpArgs& args) {
  if (!wgmma_mlp_fits(args.m, args.d, args.hidden, args.n_out, args.cluster)) {
    return invalid_argument("wgmma_mlp: rows " + std::to_string(args.m) + ", " + std::to_string(args.d) + " → " +
                            std::to_string(args.hidden) + " → " + std::to_string(args.n_out) + " in clusters of " +
                            std::to_string(args.cluster) + " do not fit (1 to 56 rows; d a multiple of 64; hidden and " +
                            "n_out multiples of 64 · cluster, at most 4 · 64 outputs a block; clusters of 2 to 12)");
  }
  const int parts = wgmma_mlp_parts(args.hidden, args.cluster);
  if (args.x == nullptr || args.w1_tiled == nullptr || args.w2_tiled == nullptr || args.parts == nullptr ||
      args.ldx < args.d || args.ldx % 8 != 0 || reinterpret_cast<std::uintptr_t>(args.x) % 16 != 0 ||
      args.ldp < args.n_out || (parts > 1 && args.part_stride < (args.m - 1) * args.ldp + args.n_out)) {
    return invalid_argument("wgmma_mlp: null pointer, misaligned x, a row stride shorter than its row, or parts "
                            "closer than rows × ldp");
  }
  if (args.geglu && args.b1 != nullptr) {
    return invalid_argument("wgmma_mlp: the GeGLU form takes no bias (as wgmma_gemm's kGeglu)");
  }
  CUtensorMap x_map;
  if (!encode_bf16_boxes(x_map, args.x, args.d, args.m, args.ldx, kBn)) {
    return internal_error("wgmma_mlp: the driver could not describe x for bulk tensor copies (cuTensorMapEncodeTiled)");
  }
  const Params p{static_cast<const bf16*>(args.w1_tiled), args.b1, static_cast<const bf16*>(args.w2_tiled), args.parts,
                 args.ldp, args.part_stride, static_cast<int>(args.m), static_cast<int>(args.d),
                 static_cast<int>(args.hidden), static_cast<int>(args.n_out), args.cluster};
  const dim3 grid(static_cast<unsigned>(args.hidden / kBm));
  const int out_tiles = static_cast<int>(args.n_out / (kBm * args.cluster));
  const cudaError_t err = args.geglu ? launch_form<true>(out_tiles, stream, grid, args.cluster, p, x_map)
                                     : launch_form<false>(out_tiles, stream, grid, args.cluster, p, x_map);
  if (err != cudaSuccess) return internal_error(std::string("wgmma_mlp: launch: ") + cudaGetErrorString(err));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
