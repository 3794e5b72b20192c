// Many-rows GEMM on warpgroup multiplies (contract in wide_gemm.hpp).
//
// Block: R rows × 128 output features × one k part, 288 threads. Warps 0-3 and 4-7 are two
// consumer warpgroups, each owning 64 of the block's features: per stage, four
// wgmma.m64nRk16 (k 16 each) with the weight rows as the multiply's M side and the activation
// rows as its N side, both read from shared memory, K-major, 128-byte swizzled. Warp 8's lane 0
// is the producer: per stage one bulk tensor copy (TMA) of W's 128 × 64 box and one of A's R × 64
// box, both counted in bytes on the stage's full barrier, so that the whole ring is in flight at
// once; a consumer warp releases a stage (empty barrier, eight arrivals) once the multiplies that
// read it are done.
// Epilogue: the ring's memory, all read by then, holds the block's sums as f32 [R][128 + 4] (the
// four floats of padding keep the accumulator layout's stores free of bank conflicts); then each
// consumer thread writes four features of a row at a time, a warp a row: 512 contiguous bytes of
// f32 or 256 of bf16.
// Accumulator layout (m64nRk16, f32): warp w of a warpgroup holds, for each 8 columns j, rows
// 16w + lane/4 and + 8, columns 8j + 2(lane % 4) and + 1; here rows are output features and
// columns activation rows.
#include "runtime/backends/cuda/kernels/wide_gemm.hpp"

#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"  // gelu_tanh, as the GELU epilogues
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"  // wgmma_gemm_available
#include "runtime/backends/cuda/kernels/wgmma_shapes.cuh"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::backends::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kFeatures = 128;  // output features a block: two consumer warpgroups of 64
constexpr int kDepth = 64;      // k a stage
constexpr int kThreads = 288;   // two consumer warpgroups and the producer warp
constexpr int kConsumers = 256;
constexpr int kBarBytes = 256;
constexpr int kSmemLimit = 227 * 1024;  // a Hopper multiprocessor's shared memory for one block
[[maybe_unused]] constexpr int kStagedLd = kFeatures + 4;  // floats a staged row
constexpr int kMaxParts = 4;

[[maybe_unused]] constexpr int w_box_elems() { return kFeatures * kDepth; }
constexpr int stage_bytes(int rows) { return (kFeatures + rows) * kDepth * static_cast<int>(sizeof(bf16)); }
constexpr int stages_for(int rows) { return std::min(8, (kSmemLimit - 1024 - kBarBytes) / stage_bytes(rows)); }
constexpr int smem_bytes(int rows) { return 1024 + kBarBytes + stages_for(rows) * stage_bytes(rows); }
static_assert(stages_for(256) >= 4, "at least four stages at the widest row tile");
static_assert(kBarBytes >= 4 * 8 * 8, "the barriers fit");
template <int R>
constexpr bool staged_fits() {
  return R * kStagedLd * static_cast<int>(sizeof(float)) <= stages_for(R) * stage_bytes(R);
}

struct Params {
  const float* bias;
  void* d;
  long long ldd, part_stride;
  int m, n, k, parts;
  WideEpilogue epilogue;
  int cx, cz;  // the cluster: cx feature blocks sharing A's boxes × cz row blocks sharing W's
};

[[maybe_unused]] __device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumers) : "memory");
}

template <int R>
__global__ void __launch_bounds__(kThreads, 1)
    wide_gemm_kernel(const Params p, const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap w_map) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(R % 8 == 0 && R <= 256 && staged_fits<R>(), "a row tile the multiply and the staging take");
  constexpr int kStages = stages_for(R);
  constexpr int kABox = R * kDepth;  // elements of A a stage
  extern __shared__ __align__(128) unsigned char smem[];
  // Barriers a stage: full (the producer's arrival and both boxes' bytes), empty (this block's
  // consumer warps are done with the slot), and for the blocks that issue a cluster's copies,
  // empty_a / empty_w (every block the A / W box goes to is done with it).
  auto* full = reinterpret_cast<unsigned long long*>(smem);
  auto* empty = full + kStages;
  auto* empty_a = empty + kStages;
  auto* empty_w = empty_a + kStages;
  const unsigned pad = (1024 - (ptx::smem_addr(smem) + kBarBytes) % 1024) % 1024;
  bf16* s_w = reinterpret_cast<bf16*>(smem + kBarBytes + pad);
  bf16* s_a = s_w + kStages * w_box_elems();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int nt = static_cast<int>(blockIdx.x), part = static_cast<int>(blockIdx.y);
  const int row0 = static_cast<int>(blockIdx.z) * R;
  const int kbs = p.k / kDepth;
  const int kb0 = part * kbs / p.parts, kb_count = (part + 1) * kbs / p.parts - kb0;
  // This block's place in its cluster (x along features, z along rows; rank x + cx · z): the
  // block at x = 0 of a row of the cluster copies A's box for all of that row, the block at z = 0
  // of a column W's box for all of that column.
  const int cx = p.cx, cz = p.cz, clustered = cx * cz > 1;
  const int px = nt % cx, pz = static_cast<int>(blockIdx.z) % cz;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);  // the producer's arrival, with the bytes of both boxes
      ptx::mbar_init(&empty[s], 8);  // one arrival a consumer warp
      ptx::mbar_init(&empty_a[s], 8 * cx);  // ... of every block of the row
      ptx::mbar_init(&empty_w[s], 8 * cz);  // ... of every block of the column
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  // No copy lands in, and no arrival reaches, a block whose barriers are not set up yet.
  if (clustered) ptx::cluster_sync();

  if (warp == 8) {
    if (lane == 0) {
      chain_wait();
      chain_release();
      const bool copies_a = px == 0, copies_w = pz == 0;
      const unsigned short row_mask = static_cast<unsigned short>(((1u << cx) - 1u) << (cx * pz));
      unsigned short col_mask = 0;
      for (int z = 0; z < cz; ++z) col_mask = static_cast<unsigned short>(col_mask | (1u << (px + cx * z)));
      for (int i = 0; i < kb_count; ++i) {
        const int s = i % kStages;
        if (i >= kStages) {
          const unsigned phase = ((i / kStages) - 1) & 1;
          ptx::mbar_wait(&empty[s], phase);
          if (copies_a && cx > 1) ptx::mbar_wait(&empty_a[s], phase);
          if (copies_w && cz > 1) ptx::mbar_wait(&empty_w[s], phase);
        }
        ptx::mbar_expect_tx(&full[s], static_cast<unsigned>(stage_bytes(R)));
        const int kx = (kb0 + i) * kDepth;
        if (copies_w) {
          if (cz > 1) {
            ptx::tma_load_2d_multicast(s_w + s * w_box_elems(), &w_map, kx, nt * kFeatures, &full[s], col_mask);
          } else {
            ptx::tma_load_2d(s_w + s * w_box_elems(), &w_map, kx, nt * kFeatures, &full[s]);
          }
        }
        if (copies_a) {
          if (cx > 1) {
            ptx::tma_load_2d_multicast(s_a + s * kABox, &a_map, kx, row0, &full[s], row_mask);
          } else {
            ptx::tma_load_2d(s_a + s * kABox, &a_map, kx, row0, &full[s]);
          }
        }
      }
    }
    __syncwarp();
    // Stays until every block of the cluster is done: the others' consumers still arrive on this
    // block's barriers.
    if (clustered) ptx::cluster_sync();
    return;
  }

  // Where this block's consumers release a stage: its own barrier, and the copying blocks' of its
  // row (A) and column (W), which may be this block.
  const unsigned release_a = clustered ? ptx::cluster_map(ptx::smem_addr(empty_a), static_cast<unsigned>(cx * pz)) : 0u;
  const unsigned release_w = clustered ? ptx::cluster_map(ptx::smem_addr(empty_w), static_cast<unsigned>(px)) : 0u;
  const int group = warp / 4;  // this consumer's 64 features: group · 64 of the block's 128
  float acc[R / 2];
#pragma unroll
  for (int i = 0; i < R / 2; ++i) acc[i] = 0.0f;
  for (int i = 0; i < kb_count; ++i) {
    const int s = i % kStages;
    ptx::mbar_wait(&full[s], (i / kStages) & 1);
    ptx::wg_fence();
    const bf16* w_tile = s_w + s * w_box_elems() + group * 64 * kDepth;
    const bf16* a_tile = s_a + s * kABox;
#pragma unroll
    for (int kk = 0; kk < kDepth / 16; ++kk) {
      wgmma::Mma<R>::ss(acc, wgmma::swizzled_descriptor(w_tile + kk * 16), wgmma::swizzled_descriptor(a_tile + kk * 16));
    }
    ptx::wg_commit();
    ptx::wg_wait<1>();
    if (i > 0 && lane == 0) {
      const int r = (i - 1) % kStages;
      ptx::mbar_arrive(&empty[r]);
      if (cx > 1) ptx::mbar_arrive_cluster(release_a + r * 8);
      if (cz > 1) ptx::mbar_arrive_cluster(release_w + r * 8);
    }
  }
  ptx::wg_wait<0>();
  if (clustered) ptx::cluster_sync();

  // Both warpgroups are done with the ring: it holds the sums, f32 [R][kStagedLd].
  consumers_sync();
  float* staged = reinterpret_cast<float*>(s_w);
  {
    const int f = group * 64 + (warp % 4) * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < R / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = 8 * j + 2 * (lane % 4) + (e & 1);
        staged[r * kStagedLd + f + (e >= 2 ? 8 : 0)] = acc[4 * j + e];
      }
    }
  }
  consumers_sync();
  // Four features (chunk) of a row a thread, a warp a row, eight rows at once.
  const int chunk = lane, f = nt * kFeatures + 4 * chunk;
  float4 b = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (p.bias != nullptr) b = *reinterpret_cast<const float4*>(p.bias + f);
  const int rows = min(R, p.m - row0);
  for (int r = warp; r < rows; r += kConsumers / 32) {
    const float4 v = *reinterpret_cast<const float4*>(staged + r * kStagedLd + 4 * chunk);
    const long long at = static_cast<long long>(row0 + r) * p.ldd + f;
    switch (p.epilogue) {
      case WideEpilogue::kBias:
      case WideEpilogue::kGelu: {
        float o[4] = {v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w};
        if (p.epilogue == WideEpilogue::kGelu) {
#pragma unroll
          for (int e = 0; e < 4; ++e) o[e] = ew::gelu_tanh(o[e]);
        }
        uint2 packed;
        packed.x = ptx::pack_bf16(o[0], o[1]);
        packed.y = ptx::pack_bf16(o[2], o[3]);
        *reinterpret_cast<uint2*>(static_cast<bf16*>(p.d) + at) = packed;
        break;
      }
      case WideEpilogue::kResidual: {
        float4* x = reinterpret_cast<float4*>(static_cast<float*>(p.d) + at);
        const float4 old = *x;
        *x = make_float4(old.x + (v.x + b.x), old.y + (v.y + b.y), old.z + (v.z + b.z), old.w + (v.w + b.w));
        break;
      }
      case WideEpilogue::kF32Parts:
        *reinterpret_cast<float4*>(static_cast<float*>(p.d) + part * p.part_stride + at) = v;
        break;
    }
  }
#endif
}

template <int R>
cudaError_t launch_rows(cudaStream_t stream, dim3 grid, const Params& p, const CUtensorMap& a_map,
                        const CUtensorMap& w_map) {
  constexpr int smem = smem_bytes(R);
  static const cudaError_t set =
      cudaFuncSetAttribute(wide_gemm_kernel<R>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (set != cudaSuccess) return set;
  cudaLaunchAttribute attributes[2]{};
  cudaLaunchConfig_t config = chain_config(grid, dim3(kThreads), static_cast<std::size_t>(smem), stream, &attributes[0]);
  if (p.cx * p.cz > 1) add_cluster(config, attributes, dim3(static_cast<unsigned>(p.cx), 1, static_cast<unsigned>(p.cz)));
  void* args[] = {const_cast<Params*>(&p), const_cast<CUtensorMap*>(&a_map), const_cast<CUtensorMap*>(&w_map)};
  return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(wide_gemm_kernel<R>), args);
}

static_assert(std::size(kWideRowSizes) == 6 && kWideRowSizes[0] == 112 && kWideRowSizes[1] == 136 &&
                  kWideRowSizes[2] == 168 && kWideRowSizes[3] == 192 && kWideRowSizes[4] == 216 &&
                  kWideRowSizes[5] == 256,
              "one instance a row size (and scripts/gen_wgmma_shapes.py's SHAPES the same)");

cudaError_t launch(cudaStream_t stream, int rows, dim3 grid, const Params& p, const CUtensorMap& a_map,
                   const CUtensorMap& w_map) {
  switch (rows) {
    case 112: return launch_rows<112>(stream, grid, p, a_map, w_map);
    case 136: return launch_rows<136>(stream, grid, p, a_map, w_map);
    case 168: return launch_rows<168>(stream, grid, p, a_map, w_map);
    case 192: return launch_rows<192>(stream, grid, p, a_map, w_map);
    case 216: return launch_rows<216>(stream, grid, p, a_map, w_map);
    default: return launch_rows<256>(stream, grid, p, a_map, w_map);
  }
}

bool known_rows(int rows) { return std::find(std::begin(kWideRowSizes), std::end(kWideRowSizes), rows) != std::end(kWideRowSizes); }

}  // namespace

bool wide_gemm_available() { return wgmma_gemm_available(); }

bool wide_gemm_fits(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m >= 1 && m <= (1 << 24) && n > 0 && n % kFeatures == 0 && n / kFeatures <= 65535 && k > 0 && k % kDepth == 0;
}

WidePlan wide_gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k, int max_parts, int multiprocessors) {
  // Estimated time in units of one row × one 64-deep stage of a block: whole waves of blocks, each
  // R rows plus ~24 rows' worth of ramp and epilogue, (k blocks of its part + 4) stages long; a
  // k part adds its f32 bytes written here and read by the norm after it (~8 bytes an element
  // at ~5 TB/s, ~7e-4 units an element on an H200).
  const std::int64_t feature_blocks = std::max<std::int64_t>(n / kFeatures, 1);
  const std::int64_t kbs = std::max<std::int64_t>(k / kDepth, 1);
  const std::int64_t sms = std::max(multiprocessors, 1);
  WidePlan best{kWideRowSizes[std::size(kWideRowSizes) - 1], 1};
  double best_cost = 0.0;
  for (const int rows : kWideRowSizes) {
    for (int parts = 1; parts <= std::clamp(max_parts, 1, kMaxParts); ++parts) {
      if (parts > kbs) break;
      const std::int64_t blocks = feature_blocks * ((m + rows - 1) / rows) * parts;
      const std::int64_t waves = (blocks + sms - 1) / sms;
      const double stages = static_cast<double>((kbs + parts - 1) / parts + 4);
      double cost = static_cast<double>(waves) * (rows + 24) * stages;
      if (parts > 1) cost += 7e-4 * static_cast<double>(parts * m * n);
      if (best_cost == 0.0 || cost < best_cost) best_cost = cost, best = WidePlan{rows, parts};
    }
  }
  // No cluster: sharing the boxes made every measured shape slower (bench/results/issue9_h200
  // run 56 call 3: fc1 at 648 rows 23.2 µs in clusters of 2 against 17.4 without).
  return best;
}

void wide_gemm_cluster(WidePlan& plan, std::int64_t m, std::int64_t n, int max_blocks) {
  // A's boxes shared by cx feature blocks, W's by cz row blocks: the bytes a block reads a stage,
  // R · 128 / cx + 128 · 128 / cz, the least of the clusters that divide the grid.
  const std::int64_t feature_blocks = std::max<std::int64_t>(n / kFeatures, 1);
  const std::int64_t row_blocks = (m + plan.rows - 1) / plan.rows;
  double least = 0.0;
  plan.cluster_x = plan.cluster_z = 1;
  for (int cx = 1; cx <= max_blocks; ++cx) {
    for (int cz = 1; cx * cz <= max_blocks; ++cz) {
      if (feature_blocks % cx != 0 || row_blocks % cz != 0) continue;
      const double bytes = static_cast<double>(plan.rows) / cx + static_cast<double>(kFeatures) / cz;
      if (least == 0.0 || bytes < least) least = bytes, plan.cluster_x = cx, plan.cluster_z = cz;
    }
  }
}

Status wide_gemm(cudaStream_t stream, const WideGemmArgs& args) {
  if (!wide_gemm_fits(args.m, args.n, args.k)) {
    return invalid_argument("wide_gemm: shape " + std::to_string(args.m) + " × " + std::to_string(args.k) + " → " +
                            std::to_string(args.n) + " does not fit (n a multiple of 128, k of 64)");
  }
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (args.a == nullptr || args.w == nullptr || args.d == nullptr || !aligned(args.a) || !aligned(args.w) ||
      !aligned(args.d) || args.lda < args.k || args.lda % 8 != 0 || args.ldw < args.k || args.ldw % 8 != 0 ||
      args.ldd < args.n || args.ldd % 4 != 0) {
    return invalid_argument("wide_gemm: null or misaligned operand (16 bytes), or a row stride shorter than its row "
                            "or not a multiple of 8 (A, W) or 4 (D)");
  }
  const bool parts_out = args.epilogue == WideEpilogue::kF32Parts;
  if (args.k_parts < 1 || args.k_parts > kMaxParts || args.k_parts > args.k / kDepth ||
      (args.k_parts > 1 && (!parts_out || args.part_stride < (args.m - 1) * args.ldd + args.n ||
                            args.part_stride % 4 != 0))) {
    return invalid_argument("wide_gemm: " + std::to_string(args.k_parts) +
                            " k parts (1 to 4 and k / 64; more than 1 only with the f32 parts output, parts apart "
                            "by at least rows × ldd, a multiple of 4)");
  }
  if (args.bias != nullptr && (parts_out || !aligned(args.bias))) {
    return invalid_argument("wide_gemm: a bias (16-byte aligned) goes with the bf16 and residual outputs only (k "
                            "parts leave it to the kernel that sums them)");
  }
  const int rows = args.rows != 0 ? args.rows : wide_gemm_plan(args.m, args.n, args.k, 1, 132).rows;
  if (!known_rows(rows)) {
    return invalid_argument("wide_gemm: " + std::to_string(args.rows) + " rows a block is none of the built sizes");
  }
  const std::int64_t feature_blocks = args.n / kFeatures, row_blocks = (args.m + rows - 1) / rows;
  const int cx = args.cluster_x, cz = args.cluster_z;
  if (cx < 1 || cz < 1 || cx * cz > 8 || feature_blocks % cx != 0 || row_blocks % cz != 0) {
    return invalid_argument("wide_gemm: a cluster of " + std::to_string(cx) + " × " + std::to_string(cz) +
                            " blocks (at most 8, dividing the " + std::to_string(feature_blocks) + " feature blocks × " +
                            std::to_string(row_blocks) + " row blocks)");
  }
  CUtensorMap a_map, w_map;
  if (!encode_bf16_boxes(a_map, args.a, args.k, args.m, args.lda, rows) ||
      !encode_bf16_boxes(w_map, args.w, args.k, args.n, args.ldw, kFeatures)) {
    return internal_error("wide_gemm: the driver could not describe A or W for bulk tensor copies (cuTensorMapEncodeTiled)");
  }
  const Params p{args.bias, args.d, args.ldd, args.part_stride, static_cast<int>(args.m), static_cast<int>(args.n),
                 static_cast<int>(args.k), args.k_parts, args.epilogue, cx, cz};
  const dim3 grid(static_cast<unsigned>(feature_blocks), static_cast<unsigned>(args.k_parts),
                  static_cast<unsigned>(row_blocks));
  const cudaError_t err = launch(stream, rows, grid, p, a_map, w_map);
  if (err != cudaSuccess) return internal_error(std::string("wide_gemm: launch: ") + cudaGetErrorString(err));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
