// Standalone probe (run 29): can a weight stream run underneath latency-bound phases without
// slowing them? A persistent kernel of 128 blocks: warps 0-7 run R rounds of a latency-bound
// phase (read a slice another block wrote in the round before, from L2; write its own; a grid
// barrier on an atomic counter), while warp 8 copies 192 KB of weights per block into shared
// memory (12 bulk copies of 16 KB) with at most D copies in flight (D = 0: no stream). Per D:
// the time per round, when the stream has landed, and the kernel in a graph of 36 launches over
// weight copies larger than L2.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1);} } while (0)

constexpr int kBlocks = 128, kSlices = 12, kSlice = 16384, kMaxRounds = 16;
constexpr int kSmem = kSlices * kSlice + 256;

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
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ unsigned long long gns() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ void compute_sync() { asm volatile("bar.sync 1, 256;" ::: "memory"); }
__device__ __forceinline__ void grid_barrier(unsigned* bar, unsigned target) {
  compute_sync();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(bar, 1u);
    while ((int)(ld_acquire(bar) - target) < 0) {}
    __threadfence();
  }
  compute_sync();
}

struct Args {
  const unsigned char* w;     // [block][12 × 16 KB]
  float4* buf;                // [2][block][slice_f4]
  int slice_f4;               // float4s a block reads and writes a round (256 · k)
  int rounds, depth;
  unsigned* bar;              // [2]
  unsigned long long* trace;  // [block][kMaxRounds + 2] or null
};

__global__ void __launch_bounds__(288, 1) probe(Args a) {
  extern __shared__ __align__(128) unsigned char sm[];
  unsigned long long* mb = reinterpret_cast<unsigned long long*>(sm + kSlices * kSlice);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, b = blockIdx.x;
  const unsigned long long t0 = gns();
  if (tid < kSlices) mbar_init(&mb[tid], 1);
  if (tid == 0) asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  if (warp == 8) {
    if (a.depth > 0 && lane == 0) {
      for (int i = 0; i < kSlices; ++i) {
        if (i >= a.depth) mbar_wait(&mb[i - a.depth], 0);
        mbar_expect(&mb[i], kSlice);
        bulk_copy(sm + i * kSlice, a.w + (size_t)b * kSlices * kSlice + (size_t)i * kSlice, kSlice, &mb[i]);
      }
      for (int i = 0; i < kSlices; ++i) mbar_wait(&mb[i], 0);
      if (a.trace) a.trace[b * (kMaxRounds + 2) + kMaxRounds + 1] = gns() - t0;
    }
    return;
  }
  float4 acc = make_float4(0, 0, 0, 0);
  for (int r = 0; r < a.rounds; ++r) {
    const float4* src = a.buf + ((size_t)(r & 1) * gridDim.x + (b + 1 + r) % gridDim.x) * a.slice_f4;
    float4* dst = a.buf + ((size_t)((r + 1) & 1) * gridDim.x + b) * a.slice_f4;
    for (int i = tid; i < a.slice_f4; i += 256) {
      const float4 v = __ldcg(src + i);
      acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
      __stcg(dst + i, make_float4(acc.x * 0.5f, acc.y, acc.z, acc.w));
    }
    grid_barrier(a.bar, (unsigned)(r + 1) * gridDim.x);
    if (a.trace && tid == 0) a.trace[b * (kMaxRounds + 2) + r] = gns() - t0;
  }
  if (tid == 0) {
    if (a.trace) a.trace[b * (kMaxRounds + 2) + kMaxRounds] = gns() - t0;
    __threadfence();
    if (atomicAdd(a.bar + 1, 1u) == gridDim.x - 1) { atomicExch(a.bar, 0u); atomicExch(a.bar + 1, 0u); }
  }
  if (acc.x == 12345.f) a.buf[0] = acc;  // keep the reads
}

int main() {
  const int copies = 24;  // 24 × 25 MB: far more than L2
  const size_t wb = (size_t)kBlocks * kSlices * kSlice;
  unsigned char* w; CK(cudaMalloc(&w, wb * copies)); CK(cudaMemset(w, 1, wb * copies));
  float4* buf; CK(cudaMalloc(&buf, (size_t)2 * kBlocks * 256 * 16 * 16));
  CK(cudaMemset(buf, 0, (size_t)2 * kBlocks * 256 * 16 * 16));
  unsigned* bar; CK(cudaMalloc(&bar, 64)); CK(cudaMemset(bar, 0, 64));
  unsigned long long* tr; CK(cudaMalloc(&tr, kBlocks * (kMaxRounds + 2) * 8));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  auto launch = [&](Args a) {
    void* args[] = {&a};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kBlocks); cfg.blockDim = dim3(288); cfg.dynamicSmemBytes = kSmem; cfg.stream = s;
    cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeCooperative; at[0].val.cooperative = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    CK(cudaLaunchKernelExC(&cfg, (const void*)probe, args));
  };
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::printf("rounds slice_kb depth | per round us (traced: avg of blocks, last round / rounds) | stream landed us (avg, max) | graph us per launch\n");
  for (const int slice_kb : {4, 32}) {
    for (const int rounds : {8}) {
      for (const int depth : {0, 1, 2, 3, 4, 6, 12}) {
        Args a{w, buf, slice_kb * 1024 / 16, rounds, depth, bar, tr};
        double round_us = 0, land_avg = 0, land_max = 0;
        for (int rep = 0; rep < 3; ++rep) {
          a.w = w + (size_t)(rep % copies) * wb;
          CK(cudaMemset(tr, 0, kBlocks * (kMaxRounds + 2) * 8));
          launch(a);
          CK(cudaStreamSynchronize(s));
        }
        std::vector<unsigned long long> h(kBlocks * (kMaxRounds + 2));
        CK(cudaMemcpy(h.data(), tr, h.size() * 8, cudaMemcpyDeviceToHost));
        for (int b = 0; b < kBlocks; ++b) {
          round_us += h[b * (kMaxRounds + 2) + rounds - 1] / 1000.0 / rounds / kBlocks;
          const double l = h[b * (kMaxRounds + 2) + kMaxRounds + 1] / 1000.0;
          land_avg += l / kBlocks;
          land_max = std::max(land_max, l);
        }
        a.trace = nullptr;
        cudaGraph_t g; cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < 36; ++i) { a.w = w + (size_t)(i % copies) * wb; launch(a); }
        CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
        float best = 1e30f;
        for (int r = 0; r < 10; ++r) {
          CK(cudaEventRecord(e0, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(e1, s));
          CK(cudaEventSynchronize(e1));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); best = std::min(best, ms);
        }
        CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
        std::printf("%6d %8d %5d | %8.2f | %7.2f %7.2f | %7.2f\n", rounds, slice_kb, depth, round_us, land_avg, land_max,
                    best * 1000 / 36);
      }
    }
  }
  CK(cudaGetLastError());
  return 0;
}
