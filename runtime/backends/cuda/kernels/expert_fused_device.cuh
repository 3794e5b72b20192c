// Device helpers of the fused expert kernel (expert_fused.cu): tensor-core MMA and ldmatrix,
// L2-only and read-only loads, cp.async, the grid barrier and its timing trace.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "runtime/backends/cuda/kernels/ptx.cuh"

namespace edgevla::backends::cuda::fused_device {

// ---- small device helpers ------------------------------------------------------------------

__device__ __forceinline__ void mma16816(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

__device__ __forceinline__ float round_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

__device__ __forceinline__ uint4 ld_cg(const void* p) { return __ldcg(static_cast<const uint4*>(p)); }
__device__ __forceinline__ uint4 ld_ro(const void* p) { return __ldg(static_cast<const uint4*>(p)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}


__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Barrier i of a launch (i = 1, 2, ...) opens when the arrival count reaches i · grid: one
// atomic per block and a poll. The count is reset by the last block to leave the kernel
// (finish_barriers), so every launch starts from zero. With a trace buffer, each block's arrival
// time and block 0's release time are written to slot `bi` (fused_expert_trace_slots).
__device__ __forceinline__ void grid_barrier(unsigned* bar, unsigned long long* trace, int& bi) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (trace != nullptr) trace[bi * (gridDim.x + 1) + blockIdx.x] = global_ns();
    __threadfence();
    atomicAdd(bar, 1u);
    const unsigned target = static_cast<unsigned>(bi) * gridDim.x;
    while (static_cast<int>(ptx::ld_acquire(bar) - target) < 0) {
    }
    __threadfence();
    if (trace != nullptr && blockIdx.x == 0) trace[bi * (gridDim.x + 1) + gridDim.x] = global_ns();
  }
  ++bi;
  __syncthreads();
}

__device__ __forceinline__ void finish_barriers(unsigned* bar) {
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(bar + 1, 1u) == gridDim.x - 1) {  // every block is past its last barrier
      atomicExch(bar, 0u);
      atomicExch(bar + 1, 0u);
    }
  }
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ uint4 lds128(const unsigned char* p) { return *reinterpret_cast<const uint4*>(p); }

}  // namespace edgevla::backends::cuda::fused_device
