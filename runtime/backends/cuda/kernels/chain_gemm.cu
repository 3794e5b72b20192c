// The chained few-rows GEMM of the cuda backend (contract in chain_gemm.hpp).
//
// Block (x, y) computes rows [0, m) × columns [x·BN, (x+1)·BN) over k slice y. Shared memory
// holds the block's whole weight tile [BN][ks] and its whole slice of A [64][ks] (rows past m
// are never copied: a row of the product depends on its own row of A only, and rows past m are
// never written). Both arrive by bulk copies, one per row, issued by warp 0 and counted on two
// mbarriers: the weights before the block releases the next kernel and waits, A right after
// the wait, so the activations cost one round trip to L2 and the copies a few instructions.
// Warp w covers 32 columns (group w % NG, NG = BN / 32) for all 64 rows and the k steps
// kk ≡ w / NG (mod KG, KG = 8 / NG); the KG sums of each output are then added in shared
// memory, in warp order (deterministic).
#include "runtime/backends/cuda/kernels/chain_gemm.hpp"

#include <cuda_bf16.h>

#include <algorithm>

#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"

namespace edgevla::backends::cuda {
namespace {

using bf16 = __nv_bfloat16;
using namespace ptx;

constexpr int kThreads = 256;  // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kRows = 64;      // A rows the multiply reads (m ≤ 64)
constexpr int kStep = 128;     // k granularity of a slice
constexpr int kMaxSmem = 227 * 1024;
constexpr int kBarBytes = 16;  // two mbarriers at the start of shared memory

struct Params {
  const bf16* a;
  const bf16* w;
  void* d;
  const float* bias;
  long long lda, ldw, ldd;
  int m, n, k, ks, parts;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// `rows` rows of `bytes` each, from src (row stride ld elements) to dst (row stride lds), by
// the 32 lanes of the calling warp; counted on bar, which expects all of them.
__device__ __forceinline__ void copy_rows(bf16* dst, int lds, const bf16* src, long long ld, int rows, unsigned bytes,
                                          unsigned long long* bar, int lane) {
  if (lane == 0) mbar_expect_tx(bar, bytes * static_cast<unsigned>(rows));
  __syncwarp();
  for (int r = lane; r < rows; r += 32) bulk_copy(dst + r * lds, src + r * ld, bytes, bar);
}
#endif

template <int BN>
__global__ void __launch_bounds__(kThreads, 1) chain_gemm_kernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int NG = BN / 32;      // column groups of 32
  constexpr int KG = kWarps / NG;  // k-step groups
  extern __shared__ __align__(128) unsigned char smem[];
  auto* bars = reinterpret_cast<unsigned long long*>(smem);  // [0]: weights, [1]: A
  const int lds = p.ks + 8;  // an odd count of 16-byte pieces per row: no ldmatrix bank conflicts
  bf16* s_w = reinterpret_cast<bf16*>(smem + kBarBytes);  // [BN][lds]
  bf16* s_a = s_w + BN * lds;                             // [64][lds]

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int n0 = static_cast<int>(blockIdx.x) * BN;
  const int k0 = static_cast<int>(blockIdx.y) * p.ks;
  const unsigned row_bytes = static_cast<unsigned>(p.ks) * 2u;

  if (tid == 0) {
    mbar_init(&bars[0], 1);
    mbar_init(&bars[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  // The weights first: nothing in the chain writes them.
  if (warp == 0) copy_rows(s_w, lds, p.w + static_cast<long long>(n0) * p.ldw + k0, p.ldw, BN, row_bytes, &bars[0], lane);
  chain_release();
  chain_wait();
  if (warp == 0) copy_rows(s_a, lds, p.a + k0, p.lda, p.m, row_bytes, &bars[1], lane);

  const int ng = warp % NG, kg = warp / NG;
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

  mbar_wait(&bars[0], 0);
  mbar_wait(&bars[1], 0);
  const bf16* w_s = s_w + (ng * 32) * lds;
  const int steps = p.ks / 16;
#pragma unroll 2
  for (int kk = kg; kk < steps; kk += KG) {
    unsigned af[4][4];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) ldmatrix_x4(af[mt], s_a + (mt * 16 + lane % 16) * lds + kk * 16 + (lane / 16) * 8);
#pragma unroll
    for (int nn = 0; nn < 2; ++nn) {
      unsigned bw[4];
      ldmatrix_x4(bw, w_s + (nn * 16 + (lane / 16) * 8 + lane % 8) * lds + kk * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        mma_bf16(acc[mt][2 * nn], af[mt], bw[0], bw[1]);
        mma_bf16(acc[mt][2 * nn + 1], af[mt], bw[2], bw[3]);
      }
    }
  }
  __syncthreads();  // every warp is done with the operands: shared memory becomes the sum buffer

  // red[kg][row][BN + 4] f32, rows < m only.
  constexpr int kLdR = BN + 4;
  float* red = reinterpret_cast<float*>(smem + kBarBytes);
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = mt * 16 + lane / 4 + h * 8;
      if (row >= p.m) continue;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int col = ng * 32 + nt * 8 + 2 * (lane % 4);
        *reinterpret_cast<float2*>(red + (kg * p.m + row) * kLdR + col) =
            make_float2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
      }
    }
  }
  __syncthreads();

  // Sums in warp order, two columns a thread at a time.
  for (int i = tid; i < p.m * (BN / 2); i += kThreads) {
    const int row = i / (BN / 2), col = (i % (BN / 2)) * 2;
    float2 s = *reinterpret_cast<const float2*>(red + row * kLdR + col);
#pragma unroll
    for (int g = 1; g < KG; ++g) {
      const float2 t = *reinterpret_cast<const float2*>(red + (g * p.m + row) * kLdR + col);
      s.x += t.x;
      s.y += t.y;
    }
    const int n = n0 + col;
    if (p.parts == 1) {
      if (p.bias != nullptr) {
        s.x += p.bias[n];
        s.y += p.bias[n + 1];
      }
      *reinterpret_cast<__nv_bfloat162*>(static_cast<bf16*>(p.d) + row * p.ldd + n) = __floats2bfloat162_rn(s.x, s.y);
    } else {
      float* dst = static_cast<float*>(p.d) + (static_cast<long long>(blockIdx.y) * p.m + row) * p.ldd + n;
      *reinterpret_cast<float2*>(dst) = s;
    }
  }
#else
  __trap();  // the host launches it on compute capability 9.0+ only
#endif
}

std::size_t smem_for(std::int64_t ks, int block_n, std::int64_t m) {
  const std::size_t operands = static_cast<std::size_t>((block_n + kRows) * (ks + 8)) * sizeof(bf16);
  const std::size_t sums = static_cast<std::size_t>((kWarps / (block_n / 32)) * m * (block_n + 4)) * sizeof(float);
  return kBarBytes + std::max(operands, sums);
}

bool valid_block_n(int b) { return b == 32 || b == 64 || b == 128; }
bool valid_parts(int p) { return p == 1 || p == 2 || p == 4 || p == 8; }

}  // namespace

std::size_t chain_gemm_smem_bytes(std::int64_t k, int parts, int block_n) {
  if (!valid_parts(parts) || !valid_block_n(block_n)) return 0;
  return smem_for(k / parts, block_n, kChainGemmMaxRows);
}

ChainGemmShape chain_gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k, int sms, int max_parts) {
  ChainGemmShape best;
  std::int64_t best_blocks = 0;
  if (m <= 0 || m > kChainGemmMaxRows || n <= 0 || k <= 0 || sms <= 0) return best;
  for (const int parts : {1, 2, 4, 8}) {
    if (parts > max_parts || k % (static_cast<std::int64_t>(parts) * kStep) != 0) continue;
    for (const int bn : {32, 64, 128}) {
      if (n % bn != 0 || smem_for(k / parts, bn, m) > static_cast<std::size_t>(kMaxSmem)) continue;
      const std::int64_t blocks = n / bn * parts;
      if (blocks > sms && best_blocks > 0) continue;
      // One wave at most; the most blocks; parts ascend, so a tie keeps the fewer parts.
      const bool better = best_blocks == 0 || (best_blocks > sms && blocks < best_blocks) ||
                          (blocks <= sms && blocks > best_blocks);
      if (better) {
        best = ChainGemmShape{bn, parts};
        best_blocks = blocks;
      }
    }
  }
  return best;
}

const char* chain_gemm_unsupported(const ChainGemmArgs& a) {
  if (a.m <= 0 || a.m > kChainGemmMaxRows) return "m must be in [1, 64]";
  if (!valid_parts(a.parts)) return "parts must be 1, 2, 4 or 8";
  if (!valid_block_n(a.block_n)) return "block_n must be 32, 64 or 128";
  if (a.n <= 0 || a.n % a.block_n != 0) return "n must be a positive multiple of block_n";
  if (a.k <= 0 || a.k % (static_cast<std::int64_t>(a.parts) * kStep) != 0) return "k must be a multiple of 128 · parts";
  if (a.k > (1 << 24) || a.n > (1 << 24)) return "n and k must be below 2^24";
  if (a.parts > 1 && a.bias != nullptr) return "a bias needs parts == 1 (the parts' consumer adds it)";
  if (a.a == nullptr || a.w == nullptr || a.d == nullptr) return "a, w and d are required";
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (!aligned(a.a) || !aligned(a.w) || !aligned(a.d)) return "a, w and d must be 16-byte aligned";
  if (a.lda < a.k || a.ldw < a.k || a.ldd < a.n || a.lda % 8 != 0 || a.ldw % 8 != 0 || a.ldd % 8 != 0) {
    return "lda and ldw must be ≥ k, ldd ≥ n, all multiples of 8";
  }
  if (smem_for(a.k / a.parts, a.block_n, a.m) > static_cast<std::size_t>(kMaxSmem)) {
    return "the block's weight tile does not fit in shared memory (more parts or a smaller block_n)";
  }
  return nullptr;
}

Status chain_gemm(cudaStream_t stream, const ChainGemmArgs& args) {
  if (!dependent_launch_supported()) {
    return unavailable("chain_gemm needs compute capability 9.0 or newer (Hopper, Thor); run the GEMM through Blas");
  }
  if (const char* why = chain_gemm_unsupported(args)) {
    return invalid_argument(std::string("chain_gemm (m ") + std::to_string(args.m) + ", n " + std::to_string(args.n) +
                            ", k " + std::to_string(args.k) + ", parts " + std::to_string(args.parts) + ", block_n " +
                            std::to_string(args.block_n) + "): " + why);
  }
  Params p{};
  p.a = static_cast<const bf16*>(args.a);
  p.w = static_cast<const bf16*>(args.w);
  p.d = args.d;
  p.bias = args.bias;
  p.lda = args.lda;
  p.ldw = args.ldw;
  p.ldd = args.ldd;
  p.m = static_cast<int>(args.m);
  p.n = static_cast<int>(args.n);
  p.k = static_cast<int>(args.k);
  p.ks = static_cast<int>(args.k / args.parts);
  p.parts = args.parts;
  const std::size_t smem = smem_for(p.ks, args.block_n, args.m);
  const dim3 grid(static_cast<unsigned>(args.n / args.block_n), static_cast<unsigned>(args.parts));
  auto run = [&](auto kernel) -> Status {
    const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (err != cudaSuccess) return cuda_status(err, "cudaFuncSetAttribute(chain_gemm)", __FILE__, __LINE__);
    launch(kernel, grid, dim3(kThreads), smem, stream, p);
    return last_launch_status("chain_gemm");
  };
  switch (args.block_n) {
    case 32: return run(&chain_gemm_kernel<32>);
    case 64: return run(&chain_gemm_kernel<64>);
    default: return run(&chain_gemm_kernel<128>);
  }
}

}  // namespace edgevla::backends::cuda
