// Standalone check of the wgmma descriptor layouts the attention kernel uses (no swizzle).
#include <cuda_bf16.h>
#include <cstdio>
#include <cmath>
#include <vector>
#include <random>
typedef __nv_bfloat16 bf16;
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
#include "wgmma_ops.inc"
__device__ __forceinline__ unsigned long long desc(const void* p, unsigned lbo, unsigned sbo) {
  unsigned long long d = 0;
  d |= (unsigned long long)((smem_addr(p) >> 4) & 0x3fff);
  d |= (unsigned long long)((lbo >> 4) & 0x3fff) << 16;
  d |= (unsigned long long)((sbo >> 4) & 0x3fff) << 32;
  return d;
}
// element (r, c) of a tile with KC 8-element chunks per row, in core-matrix order
__host__ __device__ inline int cm(int r, int c, int kc) { return ((r / 8) * kc + c / 8) * 64 + (r % 8) * 8 + (c % 8); }
__global__ void k1(const bf16* A, const bf16* B, float* D, const bf16* P, const bf16* V, float* O) {
  __shared__ __align__(128) bf16 sa[64 * 32];
  __shared__ __align__(128) bf16 sb[32 * 32];
  __shared__ __align__(128) bf16 sv[32 * 256];
  int tid = threadIdx.x;
  for (int i = tid; i < 64 * 32; i += 128) sa[cm(i / 32, i % 32, 4)] = A[i];
  for (int i = tid; i < 32 * 32; i += 128) sb[cm(i / 32, i % 32, 4)] = B[i];
  for (int i = tid; i < 32 * 256; i += 128) sv[cm(i / 256, i % 256, 32)] = V[i];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  float d[16];
  for (int i = 0; i < 16; ++i) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int kk = 0; kk < 2; ++kk) wgmma_ss_m64n32(d, desc(sa + kk * 128, 128, 512), desc(sb + kk * 128, 128, 512), kk);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  for (int j = 0; j < 4; ++j)
    for (int c = 0; c < 4; ++c) D[(16 * w + g + (c / 2) * 8) * 32 + 8 * j + 2 * t + c % 2] = d[j * 4 + c];
  // O = P V : P 64 x 32 from registers
  float o[128];
  for (int i = 0; i < 128; ++i) o[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int kk = 0; kk < 2; ++kk) {
    auto pk = [&](int r, int c) {
      __nv_bfloat162 v; v.x = P[r * 32 + c]; v.y = P[r * 32 + c + 1];
      return *reinterpret_cast<unsigned*>(&v);
    };
    int r0 = 16 * w + g, c0 = kk * 16 + 2 * t;
    unsigned a[4] = {pk(r0, c0), pk(r0 + 8, c0), pk(r0, c0 + 8), pk(r0 + 8, c0 + 8)};
    wgmma_rs_m64n256(o, a, desc(sv + kk * 2 * 32 * 64, 4096, 128));
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int j = 0; j < 32; ++j)
    for (int c = 0; c < 4; ++c) O[(16 * w + g + (c / 2) * 8) * 256 + 8 * j + 2 * t + c % 2] = o[j * 4 + c];
}
int main() {
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
  auto mk = [&](int n, std::vector<float>& f) { std::vector<bf16> h(n); f.resize(n); for (int i = 0; i < n; ++i) { h[i] = __float2bfloat16(u(rng)); f[i] = __bfloat162float(h[i]); } bf16* d; cudaMalloc(&d, n * 2); cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice); return d; };
  std::vector<float> A, B, P, V;
  bf16 *dA = mk(64 * 32, A), *dB = mk(32 * 32, B), *dP = mk(64 * 32, P), *dV = mk(32 * 256, V);
  float *dD, *dO; cudaMalloc(&dD, 64 * 32 * 4); cudaMalloc(&dO, 64 * 256 * 4);
  k1<<<1, 128>>>(dA, dB, dD, dP, dV, dO);
  cudaError_t e = cudaDeviceSynchronize(); printf("kernel: %s\n", cudaGetErrorString(e));
  std::vector<float> D(64 * 32), O(64 * 256);
  cudaMemcpy(D.data(), dD, D.size() * 4, cudaMemcpyDeviceToHost); cudaMemcpy(O.data(), dO, O.size() * 4, cudaMemcpyDeviceToHost);
  double e1 = 0, n1 = 0, e2 = 0, n2 = 0;
  for (int r = 0; r < 64; ++r) for (int c = 0; c < 32; ++c) { double s = 0; for (int k = 0; k < 32; ++k) s += A[r * 32 + k] * B[c * 32 + k]; e1 += (s - D[r * 32 + c]) * (s - D[r * 32 + c]); n1 += s * s; }
  for (int r = 0; r < 64; ++r) for (int c = 0; c < 256; ++c) { double s = 0; for (int k = 0; k < 32; ++k) s += P[r * 32 + k] * V[k * 256 + c]; e2 += (s - O[r * 256 + c]) * (s - O[r * 256 + c]); n2 += s * s; }
  printf("SS m64n32 (K-major A, B) rel-L2 %.3e\nRS m64n256 (MN-major B) rel-L2 %.3e\n", sqrt(e1 / n1), sqrt(e2 / n2));
  return 0;
}
