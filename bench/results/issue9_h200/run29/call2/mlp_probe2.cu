// Standalone probe, v2 (run 29): v1 (run 27) and v2 side by side. v2 changes three things that
// v1's trace blamed: blocks with a norm row issue their weight copies only after the norm (its
// loads no longer queue behind 192 KB of copies); the weights are laid out per block and k slice
// on the host (16 KB contiguous, 16-byte chunks XOR-swizzled by row) so a block moves them in
// 12 bulk copies; and each warp waits only for its own k slice (one mbarrier per slice), so the
// gate|up products start as their slices land.
//
// v1: the pi0.5 expert's MLP half (gated residual add + adaRMS norm, gate|up GEMM,
// GeGLU, down GEMM into k parts) as ONE persistent kernel whose blocks copy all their weights into
// shared memory at start (bulk copies, 192 KB a block), against the same four steps as separate
// kernels (norm, cuBLASLt gate|up, GeGLU, cuBLASLt down in 8 parts) in the same graph harness.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1);} } while (0)
#define LK(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { std::printf("cublasLt %s at %d: %d\n", #x, __LINE__, (int)s_); std::exit(1);} } while (0)

using bf16 = __nv_bfloat16;

constexpr int S = 50, E = 1024, F = 4096;
constexpr int NT = 7;             // activation n-tiles of 8 rows (56 >= S)
constexpr int kBlocks = 128;
constexpr int kFeat = F / kBlocks;  // 32 gate|up features a block
constexpr int kDownTiles = 16, kDownGroups = 8;  // 64 outputs × 512 k a block
constexpr int kDownK = F / kDownGroups;          // 512
constexpr int kGuStride = E * 2 + 16;            // bytes per gate|up row in smem (padded)
constexpr int kDnStride = kDownK * 2 + 16;       // bytes per down row in smem
constexpr int kGuBytes = 64 * kGuStride;         // 132096
constexpr int kDnBytes = 64 * kDnStride;         // 66560
constexpr int kRedRow = 57;                      // floats per reduction row (56 + 1 pad)
constexpr int kSmem = kGuBytes + kDnBytes + 64;

__device__ __forceinline__ unsigned saddr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned c) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(b)), "r"(c) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(saddr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(saddr(b)), "r"(parity) : "memory");
  } while (!done);
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(saddr(dst)), "l"(src), "r"(bytes), "r"(saddr(b)) : "memory");
}
__device__ __forceinline__ void mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ void grid_barrier(unsigned* bar, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(bar, 1u);
    while ((int)(ld_acquire(bar) - target) < 0) {}
    __threadfence();
  }
  __syncthreads();
}
__device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

struct MlpArgs {
  float* x;                // [S, E] residual, updated
  const float* parts;      // [np][S, E] pending product parts
  int np;
  const float* pbias;      // [E] bias of the pending product
  const float* gate;       // [E]
  const float* scale;      // [E] (1 + scale folded)
  const float* shift;      // [E]
  bf16* ys;                // [S, E] normalised
  const bf16* w_gu;        // [2F, E] gate rows then up rows
  const bf16* w_dn;        // [E, F]
  bf16* g;                 // [S, F]
  float* out_parts;        // [8][S, E]
  unsigned* bar;           // two counters
  unsigned long long* trace;  // [grid][8] or null
};
__device__ __forceinline__ unsigned long long gns() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
#define TR(i) do { if (a.trace && threadIdx.x == 0) a.trace[blockIdx.x * 12 + (i)] = gns(); } while (0)

// B fragments: lane (g8, t) holds act row 8j + g8, k = base + 8t .. 8t + 7.
__global__ void __launch_bounds__(256, 1) mlp_fused(MlpArgs a) {
  extern __shared__ __align__(128) unsigned char sm[];
  unsigned char* gu = sm;
  unsigned char* dn = sm + kGuBytes;
  unsigned long long* mb = reinterpret_cast<unsigned long long*>(sm + kGuBytes + kDnBytes);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g8 = lane >> 2, t = lane & 3;
  const int b = blockIdx.x;
  const int f0 = b * kFeat;
  const int nt = b % kDownTiles, kg = b / kDownTiles;
  TR(0);
  if (tid == 0) {
    mbar_init(&mb[0], 1);
    mbar_init(&mb[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 7) {
    if (lane == 0) { mbar_expect(&mb[0], 64 * E * 2); mbar_expect(&mb[1], 64 * kDownK * 2); }
    __syncwarp();
    // smem row i of gate|up: tile i/16, r = i%16: r < 8 gate feature f0 + 8(i/16) + r, else up.
    for (int i = lane; i < 64; i += 32) {
      const int tile = i / 16, r = i % 16;
      const int feat = f0 + 8 * tile + (r & 7);
      const bf16* src = a.w_gu + (long long)(r < 8 ? feat : F + feat) * E;
      bulk_copy(gu + i * kGuStride, src, E * 2, &mb[0]);
    }
    for (int i = lane; i < 64; i += 32) {
      const bf16* src = a.w_dn + (long long)(nt * 64 + i) * F + kg * kDownK;
      bulk_copy(dn + i * kDnStride, src, kDownK * 2, &mb[1]);
    }
  }
  // Phase A: gated residual add + adaRMS norm, one row per block.
  for (int r = b; r < S; r += gridDim.x) {
    float v[4];
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = tid + 256 * i;
      float p = a.pbias ? a.pbias[c] : 0.f;
      for (int q = 0; q < a.np; ++q) p += a.parts[((long long)q * S + r) * E + c];
      v[i] = a.x[r * E + c] + a.gate[c] * p;
      ss += v[i] * v[i];
    }
    __shared__ float red_ss[8];
#pragma unroll
    for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(~0u, ss, o);
    if (lane == 0) red_ss[warp] = ss;
    __syncthreads();
    float tot = 0.f;
#pragma unroll
    for (int w = 0; w < 8; ++w) tot += red_ss[w];
    const float inv = rsqrtf(tot / E + 1e-6f);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = tid + 256 * i;
      a.x[r * E + c] = v[i];
      a.ys[r * E + c] = __float2bfloat16(v[i] * inv * a.scale[c] + a.shift[c]);
    }
    __syncthreads();
  }
  TR(1);
  grid_barrier(a.bar, gridDim.x);
  TR(2);
  // Phase B: gate|up over this block's features; warp w takes k [128w, 128w + 128).
  {
    float acc[4][NT][4];
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.f;
#pragma unroll
    for (int cp = 0; cp < 4; cp += 2) {
      uint4 xf[NT][2];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int row = 8 * j + g8;
          xf[j][c] = row < S ? __ldcg(reinterpret_cast<const uint4*>(a.ys + row * E + 128 * warp + 32 * (cp + c) + 8 * t))
                             : make_uint4(0, 0, 0, 0);
        }
      if (cp == 0) { mbar_wait(&mb[0], 0); TR(3); }
#pragma unroll
      for (int c = 0; c < 2; ++c) {
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int kb = (128 * warp + 32 * (cp + c) + 8 * t) * 2;
          const uint4 w0 = *reinterpret_cast<const uint4*>(gu + (16 * m + g8) * kGuStride + kb);
          const uint4 w1 = *reinterpret_cast<const uint4*>(gu + (16 * m + g8 + 8) * kGuStride + kb);
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            mma(acc[m][j], w0.x, w1.x, w0.y, w1.y, xf[j][c].x, xf[j][c].y);
            mma(acc[m][j], w0.z, w1.z, w0.w, w1.w, xf[j][c].z, xf[j][c].w);
          }
        }
      }
    }
    TR(8);
    __syncthreads();  // everyone is done with the gate|up weights: the region holds the sums now
    float* red = reinterpret_cast<float*>(gu);
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        float* r0 = red + ((warp * 64) + 16 * m + g8) * kRedRow + 8 * j + 2 * t;
        float* r1 = r0 + 8 * kRedRow;
        r0[0] = acc[m][j][0]; r0[1] = acc[m][j][1];
        r1[0] = acc[m][j][2]; r1[1] = acc[m][j][3];
      }
    __syncthreads();
    TR(9);
    for (int e = tid; e < kFeat * S; e += 256) {
      const int r = e / kFeat, f = e % kFeat;  // consecutive threads: consecutive features
      const int row_g = 16 * (f / 8) + (f % 8), row_u = row_g + 8;
      float gs = 0.f, us = 0.f;
#pragma unroll
      for (int w = 0; w < 8; ++w) {
        gs += red[(w * 64 + row_g) * kRedRow + r];
        us += red[(w * 64 + row_u) * kRedRow + r];
      }
      a.g[r * F + f0 + f] = __float2bfloat16(gelu_tanh(gs) * us);
    }
  }
  TR(4);
  grid_barrier(a.bar, 2 * gridDim.x);
  TR(5);
  // Phase C: down, tile nt (64 outputs) × k group kg (512); warp w takes k [64w, 64w + 64).
  {
    uint4 xf[NT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int row = 8 * j + g8;
        xf[j][c] = row < S ? __ldcg(reinterpret_cast<const uint4*>(a.g + (long long)row * F + kg * kDownK + 64 * warp + 32 * c + 8 * t))
                           : make_uint4(0, 0, 0, 0);
      }
    mbar_wait(&mb[1], 0);
    TR(6);
    float acc[4][NT][4];
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.f;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int kb = (64 * warp + 32 * c + 8 * t) * 2;
        const uint4 w0 = *reinterpret_cast<const uint4*>(dn + (16 * m + g8) * kDnStride + kb);
        const uint4 w1 = *reinterpret_cast<const uint4*>(dn + (16 * m + g8 + 8) * kDnStride + kb);
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          mma(acc[m][j], w0.x, w1.x, w0.y, w1.y, xf[j][c].x, xf[j][c].y);
          mma(acc[m][j], w0.z, w1.z, w0.w, w1.w, xf[j][c].z, xf[j][c].w);
        }
      }
    }
    TR(10);
    float* red = reinterpret_cast<float*>(gu);
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        float* r0 = red + ((warp * 64) + 16 * m + g8) * kRedRow + 8 * j + 2 * t;
        float* r1 = r0 + 8 * kRedRow;
        r0[0] = acc[m][j][0]; r0[1] = acc[m][j][1];
        r1[0] = acc[m][j][2]; r1[1] = acc[m][j][3];
      }
    __syncthreads();
    TR(11);
    for (int e = tid; e < 64 * S; e += 256) {
      const int r = e / 64, o = e % 64;
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < 8; ++w) s += red[(w * 64 + o) * kRedRow + r];
      a.out_parts[((long long)kg * S + r) * E + nt * 64 + o] = s;
    }
  }
  TR(7);
  // reset the barrier counters: the last block out
  if (tid == 0) {
    __threadfence();
    if (atomicAdd(a.bar + 1, 1u) == gridDim.x - 1) { atomicExch(a.bar, 0u); atomicExch(a.bar + 1, 0u); }
  }
}


// ---- v2 ----
constexpr int kSlice = 64 * 128 * 2;                // 16 KB: 64 rows × 128 k
constexpr int kGu2 = 8 * kSlice, kDn2 = 4 * kSlice; // per block
constexpr int kSmem2 = kGu2 + kDn2 + 128;
__device__ __forceinline__ const uint4* sw(const unsigned char* base, int slice, int row, int chunk) {
  return reinterpret_cast<const uint4*>(base + ((slice * 64 + row) * 16 + (chunk ^ (row & 7))) * 16);
}
struct Mlp2Args {
  MlpArgs a;
  const unsigned char* gu_t;  // [block][8 slices][64 rows][16 chunks] swizzled
  const unsigned char* dn_t;  // [block][4 slices][64 rows][16 chunks] swizzled
  int norm_first;             // 0: every block issues its copies at once (as v1)
};
__global__ void __launch_bounds__(256, 1) mlp_fused2(Mlp2Args A) {
  const MlpArgs& a = A.a;
  extern __shared__ __align__(128) unsigned char sm[];
  unsigned char* gu = sm;
  unsigned char* dn = sm + kGu2;
  unsigned long long* mb = reinterpret_cast<unsigned long long*>(sm + kGu2 + kDn2);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g8 = lane >> 2, t = lane & 3;
  const int b = blockIdx.x;
  const int f0 = b * kFeat;
  const int nt = b % kDownTiles, kg = b / kDownTiles;
  TR(0);
  if (tid < 12) mbar_init(&mb[tid], 1);
  if (tid == 0) asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  auto issue = [&] {
    if (warp == 7 && lane < 12) {
      mbar_expect(&mb[lane], kSlice);
      const unsigned char* src = lane < 8 ? A.gu_t + (size_t)b * kGu2 + lane * kSlice
                                          : A.dn_t + (size_t)b * kDn2 + (lane - 8) * kSlice;
      bulk_copy(lane < 8 ? gu + lane * kSlice : dn + (lane - 8) * kSlice, src, kSlice, &mb[lane]);
    }
  };
  const bool early = b >= S || !A.norm_first;
  if (early) issue();
  for (int r = b; r < S; r += gridDim.x) {
    float v[4];
    float ss = 0.f;
    float pr[4][8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = tid + 256 * i;
#pragma unroll
      for (int q = 0; q < 8; ++q) pr[i][q] = q < a.np ? __ldcg(a.parts + ((long long)q * S + r) * E + c) : 0.f;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = tid + 256 * i;
      float p = a.pbias ? a.pbias[c] : 0.f;
#pragma unroll
      for (int q = 0; q < 8; ++q) p += pr[i][q];
      v[i] = a.x[r * E + c] + a.gate[c] * p;
      ss += v[i] * v[i];
    }
    __shared__ float red_ss2[8];
#pragma unroll
    for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(~0u, ss, o);
    if (lane == 0) red_ss2[warp] = ss;
    __syncthreads();
    float tot = 0.f;
#pragma unroll
    for (int w = 0; w < 8; ++w) tot += red_ss2[w];
    const float inv = rsqrtf(tot / E + 1e-6f);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = tid + 256 * i;
      a.x[r * E + c] = v[i];
      a.ys[r * E + c] = __float2bfloat16(v[i] * inv * a.scale[c] + a.shift[c]);
    }
    __syncthreads();
  }
  if (!early) issue();
  TR(1);
  grid_barrier(a.bar, gridDim.x);
  TR(2);
  {
    float acc[4][NT][4];
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.f;
#pragma unroll
    for (int cp = 0; cp < 4; cp += 2) {
      uint4 xf[NT][2];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int row = 8 * j + g8;
          xf[j][c] = row < S ? __ldcg(reinterpret_cast<const uint4*>(a.ys + row * E + 128 * warp + 32 * (cp + c) + 8 * t))
                             : make_uint4(0, 0, 0, 0);
        }
      if (cp == 0) { mbar_wait(&mb[warp], 0); TR(3); }
#pragma unroll
      for (int c = 0; c < 2; ++c) {
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int chunk = 4 * (cp + c) + t;
          const uint4 w0 = *sw(gu, warp, 16 * m + g8, chunk);
          const uint4 w1 = *sw(gu, warp, 16 * m + g8 + 8, chunk);
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            mma(acc[m][j], w0.x, w1.x, w0.y, w1.y, xf[j][c].x, xf[j][c].y);
            mma(acc[m][j], w0.z, w1.z, w0.w, w1.w, xf[j][c].z, xf[j][c].w);
          }
        }
      }
    }
    TR(8);
    __syncthreads();
    float* red = reinterpret_cast<float*>(gu);
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        float* r0 = red + ((warp * 64) + 16 * m + g8) * kRedRow + 8 * j + 2 * t;
        float* r1 = r0 + 8 * kRedRow;
        r0[0] = acc[m][j][0]; r0[1] = acc[m][j][1];
        r1[0] = acc[m][j][2]; r1[1] = acc[m][j][3];
      }
    __syncthreads();
    TR(9);
    for (int e = tid; e < kFeat * S; e += 256) {
      const int r = e / kFeat, f = e % kFeat;
      const int row_g = 16 * (f / 8) + (f % 8), row_u = row_g + 8;
      float gs = 0.f, us = 0.f;
#pragma unroll
      for (int w = 0; w < 8; ++w) {
        gs += red[(w * 64 + row_g) * kRedRow + r];
        us += red[(w * 64 + row_u) * kRedRow + r];
      }
      a.g[r * F + f0 + f] = __float2bfloat16(gelu_tanh(gs) * us);
    }
  }
  TR(4);
  grid_barrier(a.bar, 2 * gridDim.x);
  TR(5);
  {
    uint4 xf[NT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int row = 8 * j + g8;
        xf[j][c] = row < S ? __ldcg(reinterpret_cast<const uint4*>(a.g + (long long)row * F + kg * kDownK + 64 * warp + 32 * c + 8 * t))
                           : make_uint4(0, 0, 0, 0);
      }
    mbar_wait(&mb[8 + warp / 2], 0);
    TR(6);
    float acc[4][NT][4];
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.f;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int chunk = 8 * (warp % 2) + 4 * c + t;
        const uint4 w0 = *sw(dn, warp / 2, 16 * m + g8, chunk);
        const uint4 w1 = *sw(dn, warp / 2, 16 * m + g8 + 8, chunk);
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          mma(acc[m][j], w0.x, w1.x, w0.y, w1.y, xf[j][c].x, xf[j][c].y);
          mma(acc[m][j], w0.z, w1.z, w0.w, w1.w, xf[j][c].z, xf[j][c].w);
        }
      }
    }
    TR(10);
    float* red = reinterpret_cast<float*>(gu);
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        float* r0 = red + ((warp * 64) + 16 * m + g8) * kRedRow + 8 * j + 2 * t;
        float* r1 = r0 + 8 * kRedRow;
        r0[0] = acc[m][j][0]; r0[1] = acc[m][j][1];
        r1[0] = acc[m][j][2]; r1[1] = acc[m][j][3];
      }
    __syncthreads();
    TR(11);
    for (int e = tid; e < 64 * S; e += 256) {
      const int r = e / 64, o = e % 64;
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < 8; ++w) s += red[(w * 64 + o) * kRedRow + r];
      a.out_parts[((long long)kg * S + r) * E + nt * 64 + o] = s;
    }
  }
  TR(7);
  if (tid == 0) {
    __threadfence();
    if (atomicAdd(a.bar + 1, 1u) == gridDim.x - 1) { atomicExch(a.bar, 0u); atomicExch(a.bar + 1, 0u); }
  }
}

// ---- fill only: every block copies its 192 KB (rows as in mlp_fused, or 16 KB chunks) and waits ----
__global__ void __launch_bounds__(256, 1) fill_only(const bf16* w_gu, const bf16* w_dn, int chunky, unsigned* sink) {
  extern __shared__ __align__(128) unsigned char sm[];
  unsigned long long* mb = reinterpret_cast<unsigned long long*>(sm + kGuBytes + kDnBytes);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, b = blockIdx.x;
  const int f0 = b * kFeat, nt = b % kDownTiles, kg = b / kDownTiles;
  if (tid == 0) { mbar_init(&mb[0], 1); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  __syncthreads();
  if (warp == 0) {
    if (lane == 0) mbar_expect(&mb[0], 64 * E * 2 + 64 * kDownK * 2);
    __syncwarp();
    if (chunky) {
      const char* src = reinterpret_cast<const char*>(w_gu) + (size_t)b * (64 * E * 2 + 64 * kDownK * 2);
      for (int i = lane; i < 12; i += 32) bulk_copy(sm + i * 16384, src + i * 16384, 16384, &mb[0]);
    } else {
      for (int i = lane; i < 64; i += 32) {
        const int tile = i / 16, r = i % 16, feat = f0 + 8 * tile + (r & 7);
        bulk_copy(sm + i * kGuStride, w_gu + (long long)(r < 8 ? feat : F + feat) * E, E * 2, &mb[0]);
      }
      for (int i = lane; i < 64; i += 32)
        bulk_copy(sm + kGuBytes + i * kDnStride, w_dn + (long long)(nt * 64 + i) * F + kg * kDownK, kDownK * 2, &mb[0]);
    }
  }
  mbar_wait(&mb[0], 0);
  if (sm[tid * 16] == 0x7f && sink) sink[0] = 1;
}

// ---- baseline pieces ----
__global__ void norm_kernel(MlpArgs a) {
  const int r = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  float v[4], ss = 0.f;
  for (int i = 0; i < 4; ++i) {
    const int c = tid + 256 * i;
    float p = a.pbias ? a.pbias[c] : 0.f;
    for (int q = 0; q < a.np; ++q) p += a.parts[((long long)q * S + r) * E + c];
    v[i] = a.x[r * E + c] + a.gate[c] * p;
    ss += v[i] * v[i];
  }
  __shared__ float red_ss[8];
  for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(~0u, ss, o);
  if (lane == 0) red_ss[warp] = ss;
  __syncthreads();
  float tot = 0.f;
  for (int w = 0; w < 8; ++w) tot += red_ss[w];
  const float inv = rsqrtf(tot / E + 1e-6f);
  for (int i = 0; i < 4; ++i) {
    const int c = tid + 256 * i;
    a.x[r * E + c] = v[i];
    a.ys[r * E + c] = __float2bfloat16(v[i] * inv * a.scale[c] + a.shift[c]);
  }
}
__global__ void geglu_kernel(const bf16* gu, bf16* g) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * F) return;
  const int r = i / F, f = i % F;
  g[i] = __float2bfloat16(gelu_tanh(__bfloat162float(gu[r * 2 * F + f])) * __bfloat162float(gu[r * 2 * F + F + f]));
}

struct LtGemm {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo;
};

static float time_graph(cudaStream_t s, cudaGraphExec_t ge, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); best = std::min(best, ms);
  }
  return best;
}

static float bf(float v) { return __bfloat162float(__float2bfloat16(v)); }
static float hgelu(float x) { return 0.5f * x * (1.f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x))); }

int main() {
  const int calls = 36;
  const size_t wl = (size_t)2 * F * E * 2 + (size_t)E * F * 2;  // one layer's weights
  const int copies = 20;
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* pool; CK(cudaMalloc(&pool, wl * copies));
  // weights: deterministic pseudo-random bf16 in [-0.03, 0.03]
  std::vector<bf16> hw(wl / 2);
  for (size_t i = 0; i < hw.size(); ++i) hw[i] = __float2bfloat16(((int)(((i * 2654435761ull) >> 7) % 2001) - 1000) * 3e-5f);
  for (int c = 0; c < copies; ++c) CK(cudaMemcpy(pool + c * wl, hw.data(), wl, cudaMemcpyHostToDevice));
  // v2's per-block, per-slice, swizzled copies of the same weights
  char* pool2; CK(cudaMalloc(&pool2, wl * copies));
  {
    std::vector<unsigned char> t(wl);
    const unsigned char* hb = reinterpret_cast<const unsigned char*>(hw.data());
    for (int b = 0; b < kBlocks; ++b) {
      const int f0 = b * kFeat, nt = b % kDownTiles, kg = b / kDownTiles;
      for (int sl = 0; sl < 8; ++sl)
        for (int i = 0; i < 64; ++i) {
          const int tile = i / 16, r = i % 16, feat = f0 + 8 * tile + (r & 7);
          const size_t src_row = (size_t)(r < 8 ? feat : F + feat) * E * 2;
          for (int j = 0; j < 16; ++j)
            std::memcpy(&t[(size_t)b * kGu2 + ((sl * 64 + i) * 16 + (j ^ (i & 7))) * 16], hb + src_row + (128 * sl + 8 * j) * 2, 16);
        }
      const size_t dn_base = (size_t)2 * F * E * 2;
      for (int sl = 0; sl < 4; ++sl)
        for (int i = 0; i < 64; ++i) {
          const size_t src_row = dn_base + ((size_t)(nt * 64 + i) * F + kg * kDownK) * 2;
          for (int j = 0; j < 16; ++j)
            std::memcpy(&t[(size_t)kBlocks * kGu2 + (size_t)b * kDn2 + ((sl * 64 + i) * 16 + (j ^ (i & 7))) * 16],
                        hb + src_row + (128 * sl + 8 * j) * 2, 16);
        }
    }
    for (int c = 0; c < copies; ++c) CK(cudaMemcpy(pool2 + c * wl, t.data(), wl, cudaMemcpyHostToDevice));
  }
  auto gu_t = [&](int i) { return reinterpret_cast<const unsigned char*>(pool2 + (i % copies) * wl); };
  auto dn_t = [&](int i) { return reinterpret_cast<const unsigned char*>(pool2 + (i % copies) * wl + (size_t)kBlocks * kGu2); };
  auto w_gu = [&](int i) { return reinterpret_cast<bf16*>(pool + (i % copies) * wl); };
  auto w_dn = [&](int i) { return reinterpret_cast<bf16*>(pool + (i % copies) * wl + (size_t)2 * F * E * 2); };
  std::vector<float> hx(S * E), hparts(8 * S * E), hvec(4 * E);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = ((int)(i * 7919 % 201) - 100) / 50.f;
  for (size_t i = 0; i < hparts.size(); ++i) hparts[i] = ((int)(i * 104729 % 201) - 100) / 400.f;
  for (int c = 0; c < E; ++c) { hvec[c] = 0.01f * (c % 7); hvec[E + c] = 0.5f + 0.001f * (c % 13); hvec[2 * E + c] = 1.f + 0.002f * (c % 5); hvec[3 * E + c] = 0.01f * ((c % 3) - 1); }
  float *x, *x0, *parts, *vec, *out_parts, *out_parts2; bf16 *ys, *g, *gu; unsigned* bar;
  CK(cudaMalloc(&x, S * E * 4)); CK(cudaMalloc(&x0, S * E * 4)); CK(cudaMalloc(&parts, 8 * S * E * 4));
  CK(cudaMalloc(&vec, 4 * E * 4)); CK(cudaMalloc(&out_parts, 8 * S * E * 4)); CK(cudaMalloc(&out_parts2, 8 * S * E * 4));
  CK(cudaMalloc(&ys, S * E * 2)); CK(cudaMalloc(&g, S * F * 2)); CK(cudaMalloc(&gu, S * 2 * F * 2));
  CK(cudaMalloc(&bar, 64)); CK(cudaMemset(bar, 0, 64));
  CK(cudaMemcpy(x0, hx.data(), S * E * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(x, hx.data(), S * E * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(parts, hparts.data(), 8 * S * E * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(vec, hvec.data(), 4 * E * 4, cudaMemcpyHostToDevice));
  MlpArgs a{x, parts, 8, vec, vec + E, vec + 2 * E, vec + 3 * E, ys, nullptr, nullptr, g, out_parts, bar, nullptr};
  CK(cudaFuncSetAttribute(mlp_fused, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  auto launch_fused = [&](int i) {
    MlpArgs ai = a; ai.w_gu = w_gu(i); ai.w_dn = w_dn(i);
    void* args[] = {&ai};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kBlocks); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = kSmem; cfg.stream = s;
    cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeCooperative; at[0].val.cooperative = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    CK(cudaLaunchKernelExC(&cfg, (const void*)mlp_fused, args));
  };
  CK(cudaFuncSetAttribute(mlp_fused2, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem2));
  int norm_first = 1;
  auto launch_fused2 = [&](int i) {
    Mlp2Args A2{a, gu_t(i), dn_t(i), norm_first};
    void* args[] = {&A2};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kBlocks); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = kSmem2; cfg.stream = s;
    cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeCooperative; at[0].val.cooperative = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    CK(cudaLaunchKernelExC(&cfg, (const void*)mlp_fused2, args));
  };
  // correctness: one run of each fused kernel against the host
  for (int version = 1; version <= 2; ++version) {
  CK(cudaMemcpy(x, x0, S * E * 4, cudaMemcpyDeviceToDevice));
  CK(cudaMemset(out_parts, 0, 8 * S * E * 4));
  if (version == 1) launch_fused(0); else launch_fused2(0);
  CK(cudaStreamSynchronize(s));
  {
    std::vector<float> got(8 * S * E), gx(S * E);
    CK(cudaMemcpy(got.data(), out_parts, got.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gx.data(), x, gx.size() * 4, cudaMemcpyDeviceToHost));
    std::vector<float> xr(S * E), ysr(S * E), gr(S * F), outr(S * E, 0.f);
    for (int r = 0; r < S; ++r) {
      double ss = 0;
      for (int c = 0; c < E; ++c) {
        float p = hvec[c];
        for (int q = 0; q < 8; ++q) p += hparts[((size_t)q * S + r) * E + c];
        xr[r * E + c] = hx[r * E + c] + hvec[E + c] * p;
        ss += (double)xr[r * E + c] * xr[r * E + c];
      }
      const float inv = 1.f / std::sqrt((float)(ss / E) + 1e-6f);
      for (int c = 0; c < E; ++c) ysr[r * E + c] = bf(xr[r * E + c] * inv * hvec[2 * E + c] + hvec[3 * E + c]);
    }
    const bf16* hgu = hw.data();
    const bf16* hdn = hw.data() + (size_t)2 * F * E;
    for (int r = 0; r < S; ++r)
      for (int f = 0; f < F; ++f) {
        double gs = 0, us = 0;
        for (int k = 0; k < E; ++k) {
          gs += (double)ysr[r * E + k] * __bfloat162float(hgu[(size_t)f * E + k]);
          us += (double)ysr[r * E + k] * __bfloat162float(hgu[(size_t)(F + f) * E + k]);
        }
        gr[(size_t)r * F + f] = bf(hgelu((float)gs) * (float)us);
      }
    double e2 = 0, r2 = 0, xe = 0;
    for (int r = 0; r < S; ++r)
      for (int o = 0; o < E; ++o) {
        double acc = 0;
        for (int k = 0; k < F; ++k) acc += (double)gr[(size_t)r * F + k] * __bfloat162float(hdn[(size_t)o * F + k]);
        double sum = 0;
        for (int q = 0; q < 8; ++q) sum += got[((size_t)q * S + r) * E + o];
        e2 += (sum - acc) * (sum - acc); r2 += acc * acc;
        xe = std::max(xe, (double)std::fabs(gx[r * E + o] - xr[r * E + o]));
      }
    std::printf("fused v%d check: down rel-L2 %.3e, residual max err %.3e\n", version, std::sqrt(e2 / r2), xe);
  }
  }
  // baseline GEMMs through cuBLASLt (best heuristic candidate timed once each)
  cublasLtHandle_t lt; LK(cublasLtCreate(&lt));
  void* ws; const size_t ws_bytes = 32 << 20; CK(cudaMalloc(&ws, ws_bytes));
  auto make = [&](int m, int n, int k, int P, bool f32out) {
    LtGemm G;
    LK(cublasLtMatmulDescCreate(&G.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LK(cublasLtMatmulDescSetAttribute(G.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LK(cublasLtMatmulDescSetAttribute(G.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const int kp = k / P;
    LK(cublasLtMatrixLayoutCreate(&G.la, CUDA_R_16BF, kp, n, k));
    LK(cublasLtMatrixLayoutCreate(&G.lb, CUDA_R_16BF, kp, m, k));
    LK(cublasLtMatrixLayoutCreate(&G.ld, f32out ? CUDA_R_32F : CUDA_R_16BF, n, m, n));
    if (P > 1) {
      int32_t bc = P; int64_t sa = kp, sb = kp, sd = (int64_t)n * m;
      for (auto l : {G.la, G.lb, G.ld}) LK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
      LK(cublasLtMatrixLayoutSetAttribute(G.la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa));
      LK(cublasLtMatrixLayoutSetAttribute(G.lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb));
      LK(cublasLtMatrixLayoutSetAttribute(G.ld, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sd, sizeof sd));
    }
    cublasLtMatmulPreference_t pref; LK(cublasLtMatmulPreferenceCreate(&pref));
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t res[16]; int nres = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(lt, G.op, G.la, G.lb, G.ld, G.ld, pref, 16, res, &nres));
    G.algo = res[0].algo;
    return std::make_pair(G, std::vector<cublasLtMatmulHeuristicResult_t>(res, res + nres));
  };
  auto run_graph = [&](auto&& body) {
    cudaGraph_t gr; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < calls; ++i) body(i);
    CK(cudaStreamEndCapture(s, &gr)); CK(cudaGraphInstantiate(&ge, gr, 0));
    const float us = time_graph(s, ge, 20) * 1000 / calls;
    CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(gr));
    return us;
  };
  auto pgu = make(S, 2 * F, E, 1, false);
  auto pdn = make(S, E, F, 8, true);
  LtGemm& Ggu = pgu.first; auto& cand_gu = pgu.second;
  LtGemm& Gdn = pdn.first; auto& cand_dn = pdn.second;
  const float one = 1.f, zero = 0.f;
  // pick the best candidate of each, timed alone in the graph harness
  auto pick = [&](LtGemm& G, std::vector<cublasLtMatmulHeuristicResult_t>& cand, const bf16* A, void* D, bool is_gu) {
    float best = 1e30f;
    for (auto& c : cand) {
      const float us = run_graph([&](int i) {
        cublasLtMatmul(lt, G.op, &one, is_gu ? w_gu(i) : w_dn(i), G.la, A, G.lb, &zero, D, G.ld, D, G.ld, &c.algo, ws, ws_bytes, s);
      });
      if (us < best) { best = us; G.algo = c.algo; }
    }
    return best;
  };
  const float t_gu = pick(Ggu, cand_gu, ys, gu, true);
  const float t_dn = pick(Gdn, cand_dn, g, out_parts2, false);
  const float t_norm = run_graph([&](int) { norm_kernel<<<S, 256, 0, s>>>(a); });
  const float t_geglu = run_graph([&](int) { geglu_kernel<<<(S * F + 255) / 256, 256, 0, s>>>(gu, g); });
  std::printf("separate, each alone: norm %.2f  gate|up %.2f  geglu %.2f  down(8 parts) %.2f us  sum %.2f\n", t_norm, t_gu, t_geglu, t_dn,
              t_norm + t_gu + t_geglu + t_dn);
  CK(cudaFuncSetAttribute(fill_only, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  for (int chunky = 0; chunky < 2; ++chunky) {
    const float us = run_graph([&](int i) { fill_only<<<kBlocks, 256, kSmem, s>>>(w_gu(i), w_dn(i), chunky, nullptr); });
    std::printf("fill only (%s): %.2f us for %.1f MB: %.2f TB/s\n", chunky ? "16 KB copies" : "row copies", us, kBlocks * 196608 / 1e6, kBlocks * 196608 / us / 1e6);
  }
  for (int version = 1; version <= 2; ++version) {
    std::printf("trace, v%d (one launch outside a graph; the last of three)\n", version);
    unsigned long long* tr; CK(cudaMalloc(&tr, kBlocks * 12 * 8));
    a.trace = tr;
    for (int rep = 0; rep < 3; ++rep) { if (version == 1) launch_fused(7 + rep); else launch_fused2(7 + rep); CK(cudaStreamSynchronize(s)); }
    a.trace = nullptr;
    std::vector<unsigned long long> h(kBlocks * 12);
    CK(cudaMemcpy(h.data(), tr, h.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (int b = 0; b < kBlocks; ++b) t0 = std::min(t0, h[b * 12]);
    const char* names[12] = {"start", "normed", "barrier1", "gu weights in", "gateup done", "barrier2", "down weights in", "end", "B mma done", "B red stored", "C mma done", "C red stored"};
    for (int i : {0, 1, 2, 3, 8, 9, 4, 5, 6, 10, 11, 7}) {
      double mn = 1e30, mx = 0, avg = 0;
      for (int b = 0; b < kBlocks; ++b) { const double v = (h[b * 12 + i] - t0) / 1000.0; mn = std::min(mn, v); mx = std::max(mx, v); avg += v / kBlocks; }
      std::printf("  trace %-16s min %6.2f  avg %6.2f  max %6.2f us\n", names[i], mn, avg, mx);
    }
  }
  for (int rep = 0; rep < 2; ++rep) {
    const float t_sep = run_graph([&](int i) {
      norm_kernel<<<S, 256, 0, s>>>(a);
      cublasLtMatmul(lt, Ggu.op, &one, w_gu(i), Ggu.la, ys, Ggu.lb, &zero, gu, Ggu.ld, gu, Ggu.ld, &Ggu.algo, ws, ws_bytes, s);
      geglu_kernel<<<(S * F + 255) / 256, 256, 0, s>>>(gu, g);
      cublasLtMatmul(lt, Gdn.op, &one, w_dn(i), Gdn.la, g, Gdn.lb, &zero, out_parts2, Gdn.ld, out_parts2, Gdn.ld, &Gdn.algo, ws, ws_bytes, s);
    });
    const float t_fused = run_graph([&](int i) { launch_fused(i); });
    const float t_fused2 = run_graph([&](int i) { launch_fused2(i); });
    norm_first = 0;
    const float t_fused2b = run_graph([&](int i) { launch_fused2(i); });
    norm_first = 1;
    std::printf("MLP half per layer: separate kernels %.2f us, fused v1 %.2f us (%.2fx), v2 %.2f us (%.2fx), "
                "v2 with copies before the norm %.2f us\n", t_sep, t_fused, t_sep / t_fused, t_fused2, t_sep / t_fused2,
                t_fused2b);
  }
  CK(cudaGetLastError());
  return 0;
}
