// The warpgroup GEMM on int8 weights (contract in wgmma_w8.hpp).
//
// Block: 288 threads. Warps 0-7: two consumer warpgroups, warpgroup g taking the stages i with
// i % 2 == g into its own accumulators. Each thread loads its own 32 int8 weights of a stage from
// shared memory (two 16-byte loads, contiguous across the warpgroup: the tile is stored in the
// order of the multiplies' register fragments), widens them to bf16 in registers and issues
// wgmma.m64n56k16 with the weights as the register operand and A's swizzled box as the
// shared-memory one, then waits for them (a fragment written while an earlier multiply is in
// flight makes ptxas serialise every multiply), so one warpgroup widens while the other's
// multiplies run. Warpgroup 1 hands its sums to warpgroup 0 through shared memory for the
// epilogue. Warp 8, lane 0: the producer. Barriers per stage: weights in (the int8 tile's bytes),
// A in (A's box), empty (the stage's warpgroup's warps, once its multiplies are done). The
// weights' and A's barriers are apart so that the stages copied before the chain's wait are
// widened while it waits.
// (Run 42 measured the first form, a converter warpgroup widening each tile into a bf16 tile in
// shared memory for the multiplies to read, at 1.2-1.9x the bf16 kernel's time: the extra pass
// through shared memory, a proxy fence and a barrier a stage sat on the pipeline's critical path.)
#include "runtime/backends/cuda/kernels/wgmma_w8.hpp"

#include <cuda.h>
#include <cuda_bf16.h>

#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"  // gelu_tanh, as the geglu kernel
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::backends::cuda {
namespace {

using namespace wgmma;

constexpr int kThreads = 288;
constexpr int kStages = 8;
constexpr int kABytes = kATile * static_cast<int>(sizeof(bf16));  // 7 KB, a multiple of 1024
constexpr int kW8Bytes = kWTile;                                   // 4 KB of int8
constexpr int kBarBytes = 3 * kStages * 8;
// A's ring first (its swizzle needs 1024-byte alignment), then the int8 ring.
constexpr int kSmemBytes = 1024 + kBarBytes + kStages * (kABytes + kW8Bytes);
static_assert(kSmemBytes <= 227 * 1024, "the rings fit a Hopper multiprocessor");

struct Params {
  const std::int8_t* w;
  const float* scales;
  const float* bias;
  void* d;
  long long ldd, part_stride;
  int m, n, k, parts;
  int ahead;
};

__global__ void row_scales_kernel(const bf16* w, long long k, long long ld, float* scales) {
  __shared__ float partial[8];
  const bf16* row = w + static_cast<long long>(blockIdx.x) * ld;
  float mx = 0.0f;
  for (long long c = threadIdx.x; c < k; c += blockDim.x) mx = fmaxf(mx, fabsf(__bfloat162float(row[c])));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = mx;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < static_cast<int>(blockDim.x / 32); ++i) mx = fmaxf(mx, partial[i]);
    scales[blockIdx.x] = mx > 0.0f ? mx / 127.0f : 1.0f;
  }
}

// Where byte i of the tiled int8 weight [n, k] comes from. Tiles of kBm rows × kBk columns, one
// (feature block nt, k block kb) after another along k, as the bf16 kernel's; inside a tile, the
// consumer thread t = 32w + l's register fragments (rows 16w + l / 4 (+ 8), columns 16kk + 2(l % 4)
// (+ 1) (+ 8) of each k16 slice kk, in the order a0 a1 a2 a3 of the m64nNk16 A operand): slices
// 0-1 as thread t's 16 bytes at 16t, slices 2-3 at 2048 + 16t.
__host__ __device__ inline TiledPosition w8_position(long long i, long long k) {
  const long long kbs = k / kBk;
  const long long tile = i / kWTile;
  const int e = static_cast<int>(i % kWTile);
  const int t = (e % 2048) / 16, byte = e % 16;
  const int kk = (e / 2048) * 2 + byte / 8, reg = (byte % 8) / 2;
  const int w = t / 32, l = t % 32;
  return {tile / kbs, tile % kbs, 16 * w + l / 4 + (reg & 1) * 8, 16 * kk + 2 * (l % 4) + byte % 2 + (reg >> 1) * 8};
}

__global__ void quantize_tiled_kernel(const bf16* w, long long n, long long k, long long ld, const float* scales,
                                      bool geglu, std::int8_t* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * k) return;
  const TiledPosition t = w8_position(i, k);
  const long long row = geglu ? geglu_source_row(t.nt, t.r, n) : t.nt * kBm + t.r;
  const float q = rintf(__bfloat162float(w[row * ld + t.kb * kBk + t.c]) / scales[row]);
  out[i] = static_cast<std::int8_t>(fminf(fmaxf(q, -127.0f), 127.0f));
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kAccFloats = 28;  // a consumer thread's accumulators (m64n56)

// Four int8 (the bytes of w) as two bf16 pairs, exactly, in 11 integer and f32 operations: each
// byte, offset to 0..255 (one xor for all four), is placed by a byte permute as the low mantissa
// of 2^23 in f32; subtracting 2^23 + 128 leaves the integer, and an integer of magnitude ≤ 128
// is its f32's upper half exactly, so a second permute packs two of them.
__device__ __forceinline__ uint2 widen4(unsigned w) {
  const unsigned u = w ^ 0x80808080u;
  const float f0 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7650)) - 8388736.0f;
  const float f1 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7651)) - 8388736.0f;
  const float f2 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7652)) - 8388736.0f;
  const float f3 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7653)) - 8388736.0f;
  return make_uint2(__byte_perm(__float_as_uint(f0), __float_as_uint(f1), 0x7632),
                    __byte_perm(__float_as_uint(f2), __float_as_uint(f3), 0x7632));
}

// One thread's fragments of a stage: [k16 slice][a0..a3], each two bf16.
using Fragments = unsigned[kBk / 16][4];

__device__ __forceinline__ void widen_stage(const std::int8_t* tile, int t, Fragments& f) {
  const uint4 lo = reinterpret_cast<const uint4*>(tile)[t];
  const uint4 hi = reinterpret_cast<const uint4*>(tile + kW8Bytes / 2)[t];
  const unsigned words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
  for (int kk = 0; kk < kBk / 16; ++kk) {
    const uint2 a01 = widen4(words[2 * kk]), a23 = widen4(words[2 * kk + 1]);
    f[kk][0] = a01.x, f[kk][1] = a01.y, f[kk][2] = a23.x, f[kk][3] = a23.y;
  }
}

// wgmma.m64n56k16 with the weights (M) from registers and A (N) from its swizzled box.
__device__ __forceinline__ void wgmma_m64n56_rs(float (&d)[28], const unsigned (&a)[4], unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n56k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27}, {%28, %29, %30, %31}, %32, p, 1, 1, "
      "0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
#endif

__global__ void __launch_bounds__(kThreads, 1) wgmma_w8_kernel(const Params p, const __grid_constant__ CUtensorMap a_map,
                                                               WgmmaW8Epilogue epilogue) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char smem[];
  auto* w_in = reinterpret_cast<unsigned long long*>(smem);
  auto* a_in = w_in + kStages;
  auto* empty = a_in + kStages;
  const unsigned pad = (1024 - (ptx::smem_addr(smem) + kBarBytes) % 1024) % 1024;
  bf16* s_a = reinterpret_cast<bf16*>(smem + kBarBytes + pad);
  auto* s_q = reinterpret_cast<std::int8_t*>(s_a + kStages * kATile);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int nt = static_cast<int>(blockIdx.x), part = static_cast<int>(blockIdx.y);
  const int kbs = p.k / kBk;
  const int kb0 = part * kbs / p.parts, kb_count = (part + 1) * kbs / p.parts - kb0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&w_in[s], 1);       // the producer's arrival, with the int8 tile's bytes
      ptx::mbar_init(&a_in[s], 1);       // the producer's arrival, with A's box's bytes
      ptx::mbar_init(&empty[s], 4);      // one arrival a consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == 8) {
    if (lane != 0) return;
    const std::int8_t* w = p.w + (static_cast<long long>(nt) * kbs + kb0) * kWTile;
    // The weights are no kernel's output: the first stages load before the chain's wait. The int8
    // tile and A's box each have their own barrier (the consumers widen the one before the other
    // has arrived).
    const int ahead = min(kb_count, min(kStages, p.ahead));
    produce_stages(
        kb_count, kStages, ahead, kW8Bytes, w_in, empty,
        [&](int s, int i) {
          ptx::bulk_copy(s_q + s * kW8Bytes, w + static_cast<long long>(i) * kWTile, kW8Bytes, &w_in[s]);
        },
        [&](int s, int i) {
          ptx::mbar_expect_tx(&a_in[s], kABytes);
          ptx::tma_load_2d(s_a + s * kATile, &a_map, (kb0 + i) * kBk, 0, &a_in[s]);
        });
    return;
  }

  float acc[kAccFloats];
#pragma unroll
  for (int i = 0; i < kAccFloats; ++i) acc[i] = 0.0f;
  const int group = warp / 4, t = static_cast<int>(threadIdx.x) % 128;
  for (int i = group; i < kb_count; i += 2) {
    const int s = i % kStages;
    Fragments f;
    ptx::mbar_wait(&w_in[s], (i / kStages) & 1);  // the int8 tile
    widen_stage(s_q + s * kW8Bytes, t, f);
    ptx::mbar_wait(&a_in[s], (i / kStages) & 1);  // A's box
    ptx::wg_fence();
#pragma unroll
    for (int kk = 0; kk < kBk / 16; ++kk) wgmma_m64n56_rs(acc, f[kk], swizzled_descriptor(s_a + s * kATile + kk * 16));
    ptx::wg_commit();
    ptx::wg_wait<0>();
    if (lane == 0) ptx::mbar_arrive(&empty[s]);
  }
  // Warpgroup 1's sums into warpgroup 0's, over A's ring once both warpgroups' multiplies are done
  // (every copy has landed and been consumed by then).
  float* handed = reinterpret_cast<float*>(s_a);
  asm volatile("bar.sync 1, 256;\n" ::: "memory");
  if (group == 1) {
#pragma unroll
    for (int e = 0; e < kAccFloats; ++e) handed[e * 128 + t] = acc[e];
  }
  asm volatile("bar.sync 1, 256;\n" ::: "memory");
  if (group == 1) return;
#pragma unroll
  for (int e = 0; e < kAccFloats; ++e) acc[e] += handed[e * 128 + t];

  if (epilogue == WgmmaW8Epilogue::kGeglu) {
    // acc[4j + e] the gate of feature g, acc[4j + 2 + e] its up (the GeGLU tiling), each scaled by
    // its own row's scale, rounded to bf16 (as a bf16 gate|up GEMM's output), then the GeGLU.
    const int g = nt * (kBm / 2) + warp * 8 + lane / 4;
    const float sg = p.scales[g], su = p.scales[p.n / 2 + g];
    auto* d = static_cast<bf16*>(p.d);
#pragma unroll
    for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int row = 8 * j + 2 * (lane % 4) + e;
        const float gate = __bfloat162float(__float2bfloat16_rn(acc[4 * j + e] * sg));
        const float up = __bfloat162float(__float2bfloat16_rn(acc[4 * j + 2 + e] * su));
        if (row < p.m) d[static_cast<long long>(row) * p.ldd + g] = __float2bfloat16_rn(ew::gelu_tanh(gate) * up);
      }
    }
    return;
  }
  // acc: features f and f + 8 (this thread's rows of the m64 tile), rows 8j + 2(lane % 4) + {0, 1}.
  const int f = nt * kBm + warp * 16 + lane / 4;
  const float sa = p.scales[f], sb = p.scales[f + 8];
  if (epilogue == WgmmaW8Epilogue::kF32Parts) {
    float* d = static_cast<float*>(p.d) + part * p.part_stride;
#pragma unroll
    for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = 8 * j + 2 * (lane % 4) + (e & 1);
        if (row < p.m) d[static_cast<long long>(row) * p.ldd + f + (e >= 2 ? 8 : 0)] = acc[4 * j + e] * (e >= 2 ? sb : sa);
      }
    }
    return;
  }
  const float ba = p.bias != nullptr ? p.bias[f] : 0.0f, bb = p.bias != nullptr ? p.bias[f + 8] : 0.0f;
  auto* d = static_cast<bf16*>(p.d);
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 8 * j + 2 * (lane % 4) + (e & 1);
      float v = acc[4 * j + e] * (e >= 2 ? sb : sa) + (e >= 2 ? bb : ba);
      if (epilogue == WgmmaW8Epilogue::kGelu) v = ew::gelu_tanh(v);
      if (row < p.m) d[static_cast<long long>(row) * p.ldd + f + (e >= 2 ? 8 : 0)] = __float2bfloat16_rn(v);
    }
  }
#else
  (void)p;
  (void)a_map;
  (void)epilogue;
  __trap();  // the host launches it only where wgmma_gemm_available() holds
#endif
}

}  // namespace

std::size_t wgmma_w8_tiled_bytes(std::int64_t n, std::int64_t k) {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
}

Status wgmma_w8_quantize(cudaStream_t stream, const void* w, std::int64_t n, std::int64_t k, std::int64_t ld, void* tiled,
                         float* scales, WgmmaW8Epilogue epilogue) {
  const bool geglu = epilogue == WgmmaW8Epilogue::kGeglu;
  if (n <= 0 || k <= 0 || n % (geglu ? 2 * kBm : kBm) != 0 || k % kBk != 0 || ld < k || w == nullptr ||
      tiled == nullptr || scales == nullptr || reinterpret_cast<std::uintptr_t>(tiled) % 16 != 0) {
    return invalid_argument("wgmma_w8_quantize: a weight of " + std::to_string(n) + " × " + std::to_string(k) +
                            " (row stride " + std::to_string(ld) +
                            ") does not fit (n a multiple of 64, 128 for the GeGLU form; k of 64; a 16-byte aligned "
                            "output)");
  }
  row_scales_kernel<<<static_cast<unsigned>(n), 256, 0, stream>>>(static_cast<const bf16*>(w), k, ld, scales);
  const long long total = n * k;
  quantize_tiled_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
      static_cast<const bf16*>(w), n, k, ld, scales, geglu, static_cast<std::int8_t*>(tiled));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return internal_error(std::string("wgmma_w8_quantize: ") + cudaGetErrorString(err));
  return Status::ok();
}

Status wgmma_w8_gemm(cudaStream_t stream, const WgmmaW8Args& args) {
  if (!wgmma_gemm_available()) {
    return invalid_argument("wgmma_w8_gemm: needs compute capability 9.0 and a build with sm_90a code "
                            "(wgmma_gemm_available)");
  }
  const bool parts_out = args.epilogue == WgmmaW8Epilogue::kF32Parts;
  const bool geglu = args.epilogue == WgmmaW8Epilogue::kGeglu;
  if (args.m < 1 || args.m > kWgmmaMaxRows || args.n <= 0 || args.n % (geglu ? 2 * kBm : kBm) != 0 || args.k <= 0 ||
      args.k % kBk != 0 || args.n / kBm > 65535) {
    return invalid_argument("wgmma_w8_gemm: shape " + std::to_string(args.m) + " × " + std::to_string(args.k) + " → " +
                            std::to_string(args.n) + " does not fit (rows 1 to " + std::to_string(kWgmmaMaxRows) +
                            "; n and k multiples of 64)");
  }
  if (args.a == nullptr || args.w_tiled == nullptr || args.scales == nullptr || args.d == nullptr ||
      args.lda < args.k || args.lda % 8 != 0 || args.ldd < (geglu ? args.n / 2 : args.n) ||
      reinterpret_cast<std::uintptr_t>(args.a) % 16 != 0) {
    return invalid_argument("wgmma_w8_gemm: null pointer, misaligned A, or a row stride shorter than its row");
  }
  if (args.k_parts < 1 || args.k_parts > args.k / kBk || (args.k_parts > 1 && !parts_out) ||
      (parts_out && args.k_parts > 1 && args.part_stride < (args.m - 1) * args.ldd + args.n) ||
      (args.bias != nullptr && (parts_out || geglu))) {
    return invalid_argument("wgmma_w8_gemm: " + std::to_string(args.k_parts) +
                            " k parts (1 to k / 64, more than 1 only with the f32 parts output, parts apart by at "
                            "least rows × ldd; a bias with the bf16 and GELU outputs only)");
  }
  CUtensorMap a_map;
  if (!encode_bf16_boxes(a_map, args.a, args.k, args.m, args.lda, kBn)) {
    return internal_error("wgmma_w8_gemm: the driver could not describe A for bulk tensor copies");
  }
  const Params p{static_cast<const std::int8_t*>(args.w_tiled), args.scales, args.bias, args.d, args.ldd,
                 args.part_stride, static_cast<int>(args.m), static_cast<int>(args.n), static_cast<int>(args.k),
                 args.k_parts, wgmma_stages_ahead()};
  cudaError_t err = cudaFuncSetAttribute(wgmma_w8_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (err == cudaSuccess) {
    const dim3 grid(static_cast<unsigned>(args.n / kBm), static_cast<unsigned>(parts_out ? args.k_parts : 1));
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t config = chain_config(grid, dim3(kThreads), kSmemBytes, stream, &attribute);
    WgmmaW8Epilogue epi = args.epilogue;
    void* kargs[] = {const_cast<Params*>(&p), &a_map, &epi};
    err = cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(wgmma_w8_kernel), kargs);
  }
  if (err != cudaSuccess) return internal_error(std::string("wgmma_w8_gemm: launch: ") + cudaGetErrorString(err));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
