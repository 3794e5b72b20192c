// The PTX instructions the cuda backend's tensor-core kernels share (attention, chain_gemm):
// shared-memory addresses, cp.async copies, ldmatrix, mma.sync m16n8k16 in bf16 with f32
// accumulation, the mbarriers that count bulk copies, and the warpgroup multiply's (wgmma)
// descriptors, fences and waits. Inline and in a named namespace, so a file that uses only some of
// them compiles the rest to nothing. The mbarrier and bulk-copy forms need compute capability
// 9.0, the warpgroup forms sm_90a; call them only from code built for it.
#pragma once

#include <cuda_bf16.h>

namespace edgevla::backends::cuda::ptx {

// A load of a counter other blocks increment, with acquire semantics at device scope (what they
// wrote before their increment is visible after it).
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte copy global -> shared; ok false fills the destination with zeros (src is not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool ok) {
  const int n = ok ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
// Waits until at most N of this thread's committed cp.async groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a · b, a 16×16 (row), b 16×8 (col), bf16 in, f32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

// mbarriers (compute capability 9.0+).
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// Barrier kId (1-15; 0 is __syncthreads') among kThreads threads (a multiple of 32). The id a
// constant, so that the compiler reserves only the barriers a kernel names.
template <int kId, int kThreads>
__device__ __forceinline__ void named_barrier() {
  static_assert(kId > 0 && kId < 16 && kThreads % 32 == 0, "barrier id 1-15, whole warps");
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}
// Arrival at barrier kId without waiting (the other kThreads minus these wait with named_barrier).
template <int kId, int kThreads>
__device__ __forceinline__ void named_arrive() {
  static_assert(kId > 0 && kId < 16 && kThreads % 32 == 0, "barrier id 1-15, whole warps");
  asm volatile("bar.arrive %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// One bulk copy of `bytes` (a multiple of 16, both ends 16-byte aligned) from global to shared
// memory, counted in bytes on `bar` (whose expected bytes the caller raised with mbar_expect_tx).
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
// The same with an L2 eviction policy (from l2_evict_first_policy) for the bytes read.
__device__ __forceinline__ void bulk_copy_hint(void* dst, const void* src, unsigned bytes, unsigned long long* bar,
                                               unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}
// A policy marking every line a copy reads as the first to evict from L2: for bytes read once (a
// weight streamed through), so that what is read again stays.
__device__ __forceinline__ unsigned long long l2_evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// One 2-d box of the tensor map at `map` (a __grid_constant__ parameter's address), element
// coordinates (x: the inner dimension, y: rows), into shared memory at dst, counted in bytes on
// `bar` (the whole box, zero-filled parts included).
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, int x, int y, unsigned long long* bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
                   smem_addr(dst)),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(smem_addr(bar))
               : "memory");
}
// The same for a 3-d box (x: the inner dimension, y: rows, z: the outer dimension).
__device__ __forceinline__ void tma_load_3d(void* dst, const void* map, int x, int y, int z, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
      : "memory");
}
// The same for a 4-d box (x: the inner dimension, then y, z, w outwards).
__device__ __forceinline__ void tma_load_4d(void* dst, const void* map, int x, int y, int z, int w,
                                            unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(z), "r"(w), "r"(smem_addr(bar))
      : "memory");
}
// The same box written into the shared memory of every block of the cluster in `mask` (bit r:
// cluster rank r), at dst's offset in each, counted in bytes on the barrier at bar's offset in
// each.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const void* map, int x, int y, unsigned long long* bar,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
      "%3}], [%4], %5;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(smem_addr(bar)), "h"(mask)
      : "memory");
}
// Thread-block clusters (compute capability 9.0+). The shared::cluster address of the same
// location (a shared::cta address) in the block of cluster rank `rank`.
__device__ __forceinline__ unsigned cluster_map(unsigned cta_addr, unsigned rank) {
  unsigned out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(cta_addr), "r"(rank));
  return out;
}
// One arrival on the barrier at `bar` (a shared::cluster address from cluster_map: this block's or
// another's of the cluster).
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Every thread of every block of the cluster meets here (what each wrote to shared memory before
// is visible to the others after).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// `bytes` (a multiple of 16) of this block's shared memory at src to another block's of the
// cluster (dst and bar: shared::cluster addresses from cluster_map), counted in bytes on that
// block's barrier.
__device__ __forceinline__ void bulk_copy_to_cluster(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "r"(smem_addr(src)), "r"(bytes), "r"(bar)
               : "memory");
}
// Loads from another block's shared memory (shared::cluster addresses from cluster_map).
__device__ __forceinline__ float2 cluster_load2(unsigned addr) {
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float4 cluster_load4(unsigned addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
// Four floats to another block's shared memory (shared::cluster addresses from cluster_map, the
// destination 16-byte aligned), counted in bytes on that block's barrier `bar`.
__device__ __forceinline__ void store_async4(unsigned addr, float a, float b, float c, float d, unsigned bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(addr),
               "f"(a), "f"(b), "f"(c), "f"(d), "r"(bar)
               : "memory");
}
// Warpgroup multiply (sm_90a). A shared-memory matrix descriptor without swizzle: the tile's
// address, the leading and stride byte offsets (multiples of 16).
__device__ __forceinline__ unsigned long long wg_descriptor(const void* tile, unsigned leading, unsigned stride) {
  return static_cast<unsigned long long>((smem_addr(tile) >> 4) & 0x3fff) |
         (static_cast<unsigned long long>((leading >> 4) & 0x3fff) << 16) |
         (static_cast<unsigned long long>((stride >> 4) & 0x3fff) << 32);
}
// The same for a tile written with the 128-byte swizzle (layout type 1 in bits 62-63; the tile
// 1024-byte aligned, so that the swizzle, applied to the full address, matches the copy's).
__device__ __forceinline__ unsigned long long wg_descriptor_sw128(const void* tile, unsigned leading, unsigned stride) {
  return wg_descriptor(tile, leading, stride) | (1ull << 62);
}
// Orders register accesses before the next multiplies; closes a group of them; waits until at
// most N groups are in flight.
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// This thread's generic-proxy shared-memory writes (st.shared, cp.async) made visible to the
// async proxy (wgmma's operand reads, bulk copies).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (done == 0);
}

}  // namespace edgevla::backends::cuda::ptx
