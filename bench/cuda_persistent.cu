// A probe for the action heads' next form: one Euler step of GR00T N1.6's DiT (32 blocks, 51 rows,
// width 1536, feed-forward 6144, alternate blocks cross-attending) run two ways on the same weights,
// and timed in the same run:
//   chain       today's form: per block a LayerNorm adding the k parts, the q|k|v (or cross q)
//               projection on the warpgroup GEMM, a stand-in for the attention, the out projection
//               in k parts, a LayerNorm adding them, ff1 with GELU, ff2 in k parts; 224 launches a
//               step, chained (programmatic dependent launch, weight stages copied before the wait),
//               captured in one CUDA graph;
//   persistent  the same operations as tasks of one kernel of one block a multiprocessor: a producer
//               thread streams every weight tile the block will multiply through a deep ring, in task
//               order and without waiting for any activation (weights are constants), so the stream
//               runs ahead across operations; a second producer copies each tile's activations once
//               the operation it reads has finished (a counter each task increments, release /
//               acquire at device scope); the consumer warpgroup multiplies, and also runs the
//               LayerNorm and stand-in rows. `w_waits` makes the weight producer wait as the
//               activations' does: what the running ahead is worth.
// The attention is a stand-in in both (its rows copied from q: one hand-over, no work) because the
// question is what the hand-overs and the weight stream cost; the attention's own work would be
// the same in both. Outputs: the residual stream after the step from both forms, compared (a race
// in the persistent form's hand-overs would show there), and µs a step, alternated, with the
// weights' read floor (bytes at the copy rate measured here).
//
//   edgevla_bench_cuda_persistent [--repeat 20] [--rounds 2]
//
// Only compute capability 9.0 runs it (sm_90a code: warpgroup multiplies, bulk tensor copies).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "bench/cuda_bench_util.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

using namespace edgevla;
using namespace edgevla::backends::cuda;
using namespace edgevla::bench;

namespace {

using wgmma::kATile;
using wgmma::kBk;
using wgmma::kBm;
using wgmma::kBn;
using wgmma::kWTile;
using bf16 = __nv_bfloat16;

enum Kind : int { kGemm = 0, kRows = 1 };
enum Out : int { kOutBf16 = 0, kOutGelu = 1, kOutParts = 2 };

// One operation of the step. Every operation waits for the one before it (dep) to have been
// finished by all its tasks (dep_count of them) in this launch (epoch: counters only grow).
struct Op {
  int kind = kGemm;
  int dep = -1, dep_count = 0;
  // kGemm: D = A · Wᵀ over the tiled weight [n, k]; A through tensor map `map`; k in `parts`
  // parts (task index = feature block · parts + part); out: bf16 (+ GELU) or f32 parts.
  const bf16* w = nullptr;
  int map = 0, out = kOutBf16, n = 0, k = 0, parts = 1;
  void* d = nullptr;
  int ldd = 0;
  long long part_stride = 0;
  // kRows (a task a chunk of `rows` rows, `width` wide): v = x (when ln) + Σ in parts (f32, in_count
  // of them, or bf16 `in_bf16` when in_count is 0); ln: x = v written back, y = LayerNorm(v)·w + b;
  // otherwise y = v (the attention's stand-in).
  int ln = 0, rows = 1, width = 0;
  const float* in = nullptr;
  int in_count = 0, in_ld = 0;
  long long in_stride = 0;
  const bf16* in_bf16 = nullptr;
  float* x = nullptr;
  const float* ln_w = nullptr;
  const float* ln_b = nullptr;
  bf16* y = nullptr;
  int ldy = 0;
};
struct Task {
  int op, index;
};

constexpr int kThreads = 192;  // the consumer warpgroup, the weights' producer warp, A's producer warp

constexpr int smem_bytes(int sw, int sa) { return 2048 + sw * kWTile * 2 + sa * kATile * 2; }

// Probe switches (the `flags` argument), to find what a hand-over costs.
enum Flag : int {
  kNoWriterProxyFence = 1,  // no fence.proxy.async.global before a task's count
  kNoReaderProxyFence = 2,  // none after the activations' producer has seen its count
  kReleaseAdd = 4,          // the count as one red.release.gpu instead of __threadfence + atomicAdd
  kRelaxedPoll = 8,         // poll with relaxed loads, one acquire fence once the count is reached
  kNoWeights = 16,          // no weight copies at all (wrong results): the hand-overs' chain alone
  kParamMaps = 32,          // the activations' tensor maps from the kernel's parameters, not global memory
  kRedNoReturn = 64,        // the count as red.release.gpu (no value returned; no completion stamps)
  kEpilogueByRef = 128,     // the GEMM epilogue reading the operation's fields through its reference
  kRotateK = 256,           // each tile walks its k blocks from (feature block mod count), wrapping, so
                            // that an operation's tiles do not all read the same activation box at once
};
// The three activation tensor maps as a kernel parameter (kParamMaps).
struct Maps {
  CUtensorMap m[3];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }


__device__ __forceinline__ void wait_count(const unsigned* c, unsigned target, int flags) {
  if (flags & kRelaxedPoll) {
    unsigned v;
    do {
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(c) : "memory");
    } while (v < target);
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    return;
  }
  while (ptx::ld_acquire(c) < target) __nanosleep(20);
}

// This task's results are written (by all 128 consumer threads): count it; the task that
// completes the operation stamps the time (times: one per operation, or null).
__device__ __forceinline__ unsigned long long now_ns();
// split (profiled GEMM tasks): the longest wait at the consumers' barrier and the longest count.
__device__ __forceinline__ void signal(unsigned* done, int tid, int flags, unsigned target,
                                       unsigned long long* stamp, unsigned long long* split = nullptr) {
  const unsigned long long t0 = split != nullptr && tid == 0 ? now_ns() : 0;
  consumers_sync();
  if (tid == 0) {
    const unsigned long long t1 = split != nullptr ? now_ns() : 0;
    if (!(flags & kNoWriterProxyFence)) asm volatile("fence.proxy.async.global;\n" ::: "memory");
    unsigned old = 0;
    if (flags & kRedNoReturn) {
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(done) : "memory");
    } else if (flags & kReleaseAdd) {
      asm volatile("atom.add.release.gpu.global.u32 %0, [%1], 1;\n" : "=r"(old) : "l"(done) : "memory");
    } else {
      __threadfence();
      old = atomicAdd(done, 1u);
    }
    if (stamp != nullptr && !(flags & kRedNoReturn) && old + 1 == target) *stamp = now_ns();
    if (split != nullptr) {
      atomicMax(split, t1 - t0);
      atomicMax(split + 1, now_ns() - t1);
    }
  }
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// The earliest time any task of an operation saw its dependency met (times[n_ops + op]).
__device__ __forceinline__ void stamp_seen(unsigned long long* seen) {
  if (seen == nullptr) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  atomicMin(seen, t);
}

__device__ __forceinline__ float consumers_sum(float v, float* red, int tid) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (tid % 32 == 0) red[tid / 32] = v;
  consumers_sync();
  const float s = red[0] + red[1] + red[2] + red[3];
  consumers_sync();
  return s;
}

// A rows task: rows [index · rows, + rows) of the op. Each part's loads are issued together (one
// L2 round trip a part, not one a part and element).
__device__ void rows_task(const Op& op_ref, int index, int m, float* red, int tid) {
  constexpr int kMaxPer = 16;  // width ≤ 2048
  const Op op = op_ref;
  const int r0 = index * op.rows, r1 = min(m, r0 + op.rows);
  for (int r = r0; r < r1; ++r) {
    float v[kMaxPer];
    const float* xr = op.x + static_cast<long long>(r) * op.width;
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      const int c = tid + i * 128;
      v[i] = op.ln && c < op.width ? xr[c] : 0.0f;
    }
    // Up to 8 parts, every load in flight at once.
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      if (p >= op.in_count) break;
      const float* in = op.in + p * op.in_stride + static_cast<long long>(r) * op.in_ld;
#pragma unroll
      for (int i = 0; i < kMaxPer; ++i) {
        const int c = tid + i * 128;
        if (c < op.width) v[i] += in[c];
      }
    }
    if (op.in_count == 0 && op.in_bf16 != nullptr) {
#pragma unroll
      for (int i = 0; i < kMaxPer; ++i) {
        const int c = tid + i * 128;
        if (c < op.width) v[i] += __bfloat162float(op.in_bf16[static_cast<long long>(r) * op.in_ld + c]);
      }
    }
    bf16* yr = op.y + static_cast<long long>(r) * op.ldy;
    if (!op.ln) {
#pragma unroll
      for (int i = 0; i < kMaxPer; ++i) {
        const int c = tid + i * 128;
        if (c < op.width) yr[c] = __float2bfloat16_rn(v[i]);
      }
      continue;
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) sum += v[i];
    const float mean = consumers_sum(sum, red, tid) / static_cast<float>(op.width);
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      const int c = tid + i * 128;
      if (c < op.width) sq += (v[i] - mean) * (v[i] - mean);
    }
    const float rstd = rsqrtf(consumers_sum(sq, red, tid) / static_cast<float>(op.width) + 1e-6f);
    float* xw = op.x + static_cast<long long>(r) * op.width;
#pragma unroll
    for (int i = 0; i < kMaxPer; ++i) {
      const int c = tid + i * 128;
      if (c >= op.width) continue;
      xw[c] = v[i];
      yr[c] = __float2bfloat16_rn((v[i] - mean) * rstd * op.ln_w[c] + op.ln_b[c]);
    }
  }
}

// The operation's output fields are taken by value: read through a reference after each store,
// they are loaded again (a store through d may alias them), one round trip a store.
__device__ __forceinline__ void gemm_epilogue(void* d, int out, int ldd, long long part_stride, const float (&acc)[28],
                                              int nt, int part, int m, int warp, int lane) {
  const int f = nt * kBm + warp * 16 + lane / 4;
  float* df = static_cast<float*>(d) + part * part_stride;
  bf16* db = static_cast<bf16*>(d);
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 8 * j + 2 * (lane % 4) + (e & 1);
      const int col = f + (e >= 2 ? 8 : 0);
      if (row >= m) continue;
      if (out == kOutParts) {
        df[static_cast<long long>(row) * ldd + col] = acc[4 * j + e];
      } else {
        float v = acc[4 * j + e];
        if (out == kOutGelu) {
          const float u = 0.7978845608f * (v + 0.044715f * v * v * v);
          v = 0.5f * v * (1.0f + tanhf(u));
        }
        db[static_cast<long long>(row) * ldd + col] = __float2bfloat16_rn(v);
      }
    }
  }
}

// Call 1-7's form: the fields read through the reference.
__device__ __forceinline__ void gemm_epilogue_ref(const Op& op, const float (&acc)[28], int nt, int part, int m,
                                                  int warp, int lane) {
  const int f = nt * kBm + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < kBn / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 8 * j + 2 * (lane % 4) + (e & 1);
      const int col = f + (e >= 2 ? 8 : 0);
      if (row >= m) continue;
      if (op.out == kOutParts) {
        static_cast<float*>(op.d)[part * op.part_stride + static_cast<long long>(row) * op.ldd + col] = acc[4 * j + e];
      } else {
        float v = acc[4 * j + e];
        if (op.out == kOutGelu) {
          const float u = 0.7978845608f * (v + 0.044715f * v * v * v);
          v = 0.5f * v * (1.0f + tanhf(u));
        }
        static_cast<bf16*>(op.d)[static_cast<long long>(row) * op.ldd + col] = __float2bfloat16_rn(v);
      }
    }
  }
}

__device__ __forceinline__ void k_range(const Op& op, int index, int& nt, int& part, int& kb0, int& count) {
  nt = index / op.parts;
  part = index % op.parts;
  const int kbs = op.k / kBk;
  kb0 = part * kbs / op.parts;
  count = (part + 1) * kbs / op.parts - kb0;
}
#endif

template <int SW, int SA>
__global__ void __launch_bounds__(kThreads, 1)
    persistent_step(const Op* ops, const Task* tasks, const int* begin, const CUtensorMap* maps, unsigned* done,
                    unsigned epoch, int m, int w_waits, int flags, unsigned long long* times, int n_ops,
                    const __grid_constant__ Maps pmaps) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char smem[];
  auto* full_w = reinterpret_cast<unsigned long long*>(smem);
  auto* empty_w = full_w + SW;
  auto* full_a = empty_w + SW;
  auto* empty_a = full_a + SA;
  auto* red = reinterpret_cast<float*>(empty_a + SA);
  const unsigned pad = (1024 - (ptx::smem_addr(smem) + 1024) % 1024) % 1024;
  bf16* s_w = reinterpret_cast<bf16*>(smem + 1024 + pad);
  bf16* s_a = s_w + SW * kWTile;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int t0 = begin[blockIdx.x], t1 = begin[blockIdx.x + 1];
  if (tid == 0) {
    for (int s = 0; s < SW; ++s) ptx::mbar_init(&full_w[s], 1), ptx::mbar_init(&empty_w[s], 4);
    for (int s = 0; s < SA; ++s) ptx::mbar_init(&full_a[s], 1), ptx::mbar_init(&empty_a[s], 4);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == 4) {
    // The weights: every tile of every GEMM task of this block, in task order.
    if (lane != 0 || (flags & kNoWeights)) return;
    const unsigned long long policy = ptx::l2_evict_first_policy();
    int ws = 0;
    for (int t = t0; t < t1; ++t) {
      const Op& op = ops[tasks[t].op];
      if (op.kind != kGemm) continue;
      if (w_waits && op.dep >= 0) wait_count(done + op.dep, epoch * static_cast<unsigned>(op.dep_count), flags);
      int nt, part, kb0, count;
      k_range(op, tasks[t].index, nt, part, kb0, count);
      const bf16* w = op.w + (static_cast<long long>(nt) * (op.k / kBk) + kb0) * kWTile;
      const int rot = (flags & kRotateK) ? nt % count : 0;
      for (int i = 0; i < count; ++i, ++ws) {
        const int s = ws % SW;
        const int kb = i + rot < count ? i + rot : i + rot - count;
        if (ws >= SW) ptx::mbar_wait(&empty_w[s], ((ws / SW) - 1) & 1);
        ptx::mbar_expect_tx(&full_w[s], kWTile * 2);
        ptx::bulk_copy_hint(s_w + s * kWTile, w + static_cast<long long>(kb) * kWTile, kWTile * 2, &full_w[s], policy);
      }
    }
    return;
  }
  if (warp == 5) {
    // The activations: each GEMM task's boxes once the operation it reads has finished.
    if (lane != 0) return;
    int as = 0, waited = -1;
    for (int t = t0; t < t1; ++t) {
      const Op& op = ops[tasks[t].op];
      if (op.kind != kGemm) continue;
      if (op.dep >= 0 && op.dep != waited) {
        wait_count(done + op.dep, epoch * static_cast<unsigned>(op.dep_count), flags);
        stamp_seen(times != nullptr ? times + n_ops + tasks[t].op : nullptr);
        if (!(flags & kNoReaderProxyFence)) asm volatile("fence.proxy.async.global;\n" ::: "memory");
        waited = op.dep;
      }
      int nt, part, kb0, count;
      k_range(op, tasks[t].index, nt, part, kb0, count);
      const int rot = (flags & kRotateK) ? nt % count : 0;
      for (int i = 0; i < count; ++i, ++as) {
        const int s = as % SA;
        const int kb = i + rot < count ? i + rot : i + rot - count;
        if (as >= SA) ptx::mbar_wait(&empty_a[s], ((as / SA) - 1) & 1);
        ptx::mbar_expect_tx(&full_a[s], kATile * 2);
        const CUtensorMap* map = (flags & kParamMaps) ? &pmaps.m[op.map] : &maps[op.map];
        ptx::tma_load_2d(s_a + s * kATile, map, (kb0 + kb) * kBk, 0, &full_a[s]);
      }
    }
    return;
  }

  // The consumer warpgroup: every task in order.
  int ws = 0, as = 0;
  for (int t = t0; t < t1; ++t) {
    const int oi = tasks[t].op;
    const Op& op = ops[oi];
    if (op.kind == kRows) {
      if (op.dep >= 0) {
        if (tid == 0) {
          wait_count(done + op.dep, epoch * static_cast<unsigned>(op.dep_count), flags);
          stamp_seen(times != nullptr ? times + n_ops + oi : nullptr);
        }
        consumers_sync();
      }
      rows_task(op, tasks[t].index, m, red, tid);
      signal(done + oi, tid, flags, epoch * static_cast<unsigned>((m + op.rows - 1) / op.rows),
             times != nullptr ? times + oi : nullptr);
      continue;
    }
    int nt, part, kb0, count;
    k_range(op, tasks[t].index, nt, part, kb0, count);
    float acc[28];
#pragma unroll
    for (int i = 0; i < 28; ++i) acc[i] = 0.0f;
    // Profiled launches: per operation, the latest first arrival of a tile's activations, the
    // earliest, the longest k loop and the longest epilogue + count (times[2 n_ops + 4 op ..]).
    unsigned long long* prof = times != nullptr ? times + 2 * n_ops + 6 * oi : nullptr;
    unsigned long long t_first = 0, t_loop = 0;
    for (int i = 0; i < count; ++i, ++ws, ++as) {
      const int sw = ws % SW, sa = as % SA;
      if (!(flags & kNoWeights)) ptx::mbar_wait(&full_w[sw], (ws / SW) & 1);
      ptx::mbar_wait(&full_a[sa], (as / SA) & 1);
      if (i == 0 && prof != nullptr) t_first = now_ns();
      ptx::wg_fence();
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk) {
        wgmma::wgmma_m64n56(acc, wgmma::weight_descriptor(s_w + sw * kWTile + kk * 128),
                            wgmma::swizzled_descriptor(s_a + sa * kATile + kk * 16));
      }
      ptx::wg_commit();
      ptx::wg_wait<1>();
      if (i > 0 && lane == 0) {
        if (!(flags & kNoWeights)) ptx::mbar_arrive(&empty_w[(ws - 1) % SW]);
        ptx::mbar_arrive(&empty_a[(as - 1) % SA]);
      }
    }
    ptx::wg_wait<0>();
    if (lane == 0) {
      if (!(flags & kNoWeights)) ptx::mbar_arrive(&empty_w[(ws - 1) % SW]);
      ptx::mbar_arrive(&empty_a[(as - 1) % SA]);
    }
    if (prof != nullptr) t_loop = now_ns();
    if (flags & kEpilogueByRef) {
      gemm_epilogue_ref(op, acc, nt, part, m, warp, lane);
    } else {
      gemm_epilogue(op.d, op.out, op.ldd, op.part_stride, acc, nt, part, m, warp, lane);
    }
    if (prof != nullptr && tid == 0) {
      atomicMax(prof + 0, t_first);
      atomicMin(prof + 1, t_first);
      atomicMax(prof + 2, t_loop - t_first);
      atomicMax(prof + 3, now_ns() - t_loop);
    }
    signal(done + oi, tid, flags, epoch * static_cast<unsigned>(op.n / kBm * op.parts),
           times != nullptr ? times + oi : nullptr, prof != nullptr ? prof + 4 : nullptr);
  }
#endif
}

// The chain's stand-in for the attention: rows of q copied to the out projection's input.
__global__ void stand_in_kernel(const bf16* q, int ldq, bf16* out, int m, int width) {
  chain_enter();
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < m * width;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    out[i] = q[(i / width) * ldq + i % width];
  }
}

__global__ void fill_kernel(bf16* p, long long n, unsigned seed, float scale) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    p[i] = __float2bfloat16_rn(scale * (static_cast<float>(h & 0xffff) / 32768.0f - 1.0f));
  }
}

struct Block {
  bool cross;
  bf16 *qkv, *o, *ff1, *ff2;  // tiled weights
  int n_qkv;
};

template <int SW, int SA>
void launch_persistent(cudaStream_t s, int grid, const Op* ops, const Task* tasks, const int* begin,
                       const CUtensorMap* maps, unsigned* done, unsigned epoch, int m, int w_waits, int flags,
                       unsigned long long* times, int n_ops, const Maps& pmaps) {
  constexpr int smem = smem_bytes(SW, SA);
  CHECK_CUDA(cudaFuncSetAttribute(persistent_step<SW, SA>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = s;
  config.attrs = &attr;
  config.numAttrs = 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, persistent_step<SW, SA>, ops, tasks, begin, maps, done, epoch, m, w_waits,
                                flags, times, n_ops, pmaps));
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 20, rounds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(3, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  if (!wgmma_gemm_available()) {
    std::fprintf(stderr, "edgevla_bench_cuda_persistent: needs the warpgroup GEMM (compute capability 9.0, sm_90a build)\n");
    return 77;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // GR00T N1.6's DiT at one view: 51 rows (state + 50 actions), 32 blocks, cross on even blocks.
  const int m = 51, E = 1536, F = 6144, B = 32, kMaxParts = 8;
  std::vector<Block> blocks(B);
  std::size_t weight_bytes = 0;
  for (int i = 0; i < B; ++i) {
    Block& b = blocks[static_cast<std::size_t>(i)];
    b.cross = i % 2 == 0;
    b.n_qkv = b.cross ? E : 3 * E;
    const long long sizes[4] = {static_cast<long long>(b.n_qkv) * E, 1LL * E * E, 1LL * F * E, 1LL * E * F};
    bf16** ptrs[4] = {&b.qkv, &b.o, &b.ff1, &b.ff2};
    for (int j = 0; j < 4; ++j) {
      CHECK_CUDA(cudaMalloc(ptrs[j], static_cast<std::size_t>(sizes[j]) * 2));
      fill_kernel<<<1024, 256, 0, s>>>(*ptrs[j], sizes[j], 977u * static_cast<unsigned>(4 * i + j) + 1u,
                                       1.0f / std::sqrt(static_cast<float>(j == 3 ? F : E)));
      weight_bytes += static_cast<std::size_t>(sizes[j]) * 2;
    }
  }
  // Activations (both forms use their own copies of each).
  auto alloc = [&](std::size_t bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    CHECK_CUDA(cudaMemset(p, 0, bytes));
    return p;
  };
  auto* x0 = static_cast<bf16*>(alloc(static_cast<std::size_t>(m) * E * 2));
  fill_kernel<<<64, 256, 0, s>>>(x0, 1LL * m * E, 12345u, 1.0f);
  std::vector<float> hx0(static_cast<std::size_t>(m) * E);
  {
    std::vector<std::uint16_t> h(hx0.size());
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(h.data(), x0, h.size() * 2, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < h.size(); ++i) hx0[i] = bfloat16_to_float(h[i]);
  }
  std::vector<float> ln_w_h(E), ln_b_h(E);
  for (int c = 0; c < E; ++c) ln_w_h[c] = 1.0f + 0.1f * std::sin(0.37f * c), ln_b_h[c] = 0.05f * std::cos(0.11f * c);
  auto* ln_w = static_cast<float*>(alloc(E * 4));
  auto* ln_b = static_cast<float*>(alloc(E * 4));
  CHECK_CUDA(cudaMemcpy(ln_w, ln_w_h.data(), E * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(ln_b, ln_b_h.data(), E * 4, cudaMemcpyHostToDevice));
  const std::size_t parts_bytes = static_cast<std::size_t>(kMaxParts) * m * 3 * E * 4;
  struct Acts {
    float *x, *parts;
    bf16 *h, *qkv, *att, *ff;
  };
  auto make_acts = [&] {
    Acts a{};
    a.x = static_cast<float*>(alloc(static_cast<std::size_t>(m) * E * 4));
    a.parts = static_cast<float*>(alloc(parts_bytes));
    a.h = static_cast<bf16*>(alloc(static_cast<std::size_t>(m) * E * 2));
    a.qkv = static_cast<bf16*>(alloc(static_cast<std::size_t>(m) * 3 * E * 2));
    a.att = static_cast<bf16*>(alloc(static_cast<std::size_t>(m) * E * 2));
    a.ff = static_cast<bf16*>(alloc(static_cast<std::size_t>(m) * F * 2));
    return a;
  };
  const Acts ca = make_acts(), pa = make_acts();
  auto reset_x = [&](const Acts& a) {
    CHECK_CUDA(cudaMemcpyAsync(a.x, hx0.data(), hx0.size() * 4, cudaMemcpyHostToDevice, s));
  };

  // --- The chain (today's form). ---
  const int o_parts = wgmma_k_parts(E, E, kMaxParts, sms), ff2_parts = wgmma_k_parts(E, F, kMaxParts, sms);
  auto chain_step = [&](const Acts& a) {
    const DependentLaunchScope chained(true);
    ResidualParts prev{0, 0, nullptr};
    auto gemm = [&](const void* in, int k, const bf16* w, int n, WgmmaEpilogue epi, void* d, int ldd, int parts,
                    int split) {
      WgmmaGemmArgs g;
      g.a = in, g.m = m, g.k = k, g.lda = k, g.w_tiled = w, g.n = n, g.epilogue = epi, g.d = d, g.ldd = ldd;
      g.k_parts = parts, g.part_stride = static_cast<long long>(m) * E, g.k_split = split;
      CHECK_OK(wgmma_gemm(s, g));
    };
    for (int i = 0; i < B; ++i) {
      const Block& b = blocks[static_cast<std::size_t>(i)];
      if (prev.count > 0) {
        CHECK_OK(add_layer_norm(s, a.x, a.parts, m, E, ln_w, ln_b, 1e-6f, a.h, DType::kBF16, prev));
      } else {
        CHECK_OK(layer_norm(s, a.x, m, E, ln_w, ln_b, 1e-6f, a.h, DType::kBF16));
      }
      gemm(a.h, E, b.qkv, b.n_qkv, WgmmaEpilogue::kNone, a.qkv, b.n_qkv, 1,
           wgmma_k_split(b.n_qkv, E, kWgmmaMaxSplit, sms));
      launch(stand_in_kernel, dim3(17), dim3(256), 0, s, a.qkv, b.n_qkv, a.att, m, E);
      gemm(a.att, E, b.o, E, WgmmaEpilogue::kF32Parts, a.parts, E, o_parts, 1);
      CHECK_OK(add_layer_norm(s, a.x, a.parts, m, E, ln_w, ln_b, 1e-6f, a.h, DType::kBF16,
                              ResidualParts{o_parts, static_cast<long long>(m) * E, nullptr}));
      gemm(a.h, E, b.ff1, F, WgmmaEpilogue::kGelu, a.ff, F, 1, 1);
      gemm(a.ff, F, b.ff2, E, WgmmaEpilogue::kF32Parts, a.parts, E, ff2_parts, 1);
      prev = ResidualParts{ff2_parts, static_cast<long long>(m) * E, nullptr};
    }
    CHECK_OK(add_layer_norm(s, a.x, a.parts, m, E, ln_w, ln_b, 1e-6f, a.h, DType::kBF16, prev));
    CHECK_OK(last_launch_status("chain step"));
  };

  // --- The persistent form: operations, tasks, tensor maps. ---
  std::vector<CUtensorMap> maps_h(3);
  Maps pmaps{};
  if (!encode_bf16_boxes(maps_h[0], pa.h, E, m, E, kBn) || !encode_bf16_boxes(maps_h[1], pa.att, E, m, E, kBn) ||
      !encode_bf16_boxes(maps_h[2], pa.ff, F, m, F, kBn)) {
    std::fprintf(stderr, "edgevla_bench_cuda_persistent: tensor maps refused\n");
    return 1;
  }
  std::vector<Op> ops;
  auto tiles = [&](const Op& op) { return op.kind == kGemm ? op.n / kBm * op.parts : (m + op.rows - 1) / op.rows; };
  auto add = [&](Op op) {
    if (!ops.empty()) op.dep = static_cast<int>(ops.size()) - 1, op.dep_count = tiles(ops.back());
    ops.push_back(op);
  };
  auto rows_op = [&](int ln, int rows, const float* in, int count, int in_ld, const bf16* in_bf16, bf16* y) {
    Op op;
    op.kind = kRows, op.ln = ln, op.rows = rows, op.width = E, op.in = in, op.in_count = count, op.in_ld = in_ld;
    op.in_stride = static_cast<long long>(m) * in_ld, op.in_bf16 = in_bf16, op.x = pa.x;
    op.ln_w = ln_w, op.ln_b = ln_b, op.y = y, op.ldy = E;
    return op;
  };
  auto gemm_op = [&](const bf16* w, int map, int out, int n, int k, int parts, void* d, int ldd) {
    Op op;
    op.kind = kGemm, op.w = w, op.map = map, op.out = out, op.n = n, op.k = k, op.parts = parts, op.d = d, op.ldd = ldd;
    op.part_stride = static_cast<long long>(m) * ldd;
    return op;
  };
  int prev_parts = 0;
  for (int i = 0; i < B; ++i) {
    const Block& b = blocks[static_cast<std::size_t>(i)];
    add(rows_op(1, 1, pa.parts, prev_parts, E, nullptr, pa.h));
    const int q_parts = wgmma_k_parts(b.n_qkv, E, kMaxParts, sms);
    add(gemm_op(b.qkv, 0, kOutParts, b.n_qkv, E, q_parts, pa.parts, b.n_qkv));
    add(rows_op(0, 1, pa.parts, q_parts, b.n_qkv, nullptr, pa.att));
    add(gemm_op(b.o, 1, kOutParts, E, E, o_parts, pa.parts, E));
    add(rows_op(1, 1, pa.parts, o_parts, E, nullptr, pa.h));
    add(gemm_op(b.ff1, 0, kOutGelu, F, E, 1, pa.ff, F));
    add(gemm_op(b.ff2, 2, kOutParts, E, F, ff2_parts, pa.parts, E));
    prev_parts = ff2_parts;
  }
  add(rows_op(1, 1, pa.parts, prev_parts, E, nullptr, pa.h));
  // Tasks: each operation's tasks go to the blocks with the least work so far (k blocks for GEMM
  // tiles, a few for rows), so an operation spreads over distinct multiprocessors.
  std::vector<std::vector<Task>> per(static_cast<std::size_t>(sms));
  std::vector<long long> load(static_cast<std::size_t>(sms), 0);
  std::vector<int> order(static_cast<std::size_t>(sms));
  for (int oi = 0; oi < static_cast<int>(ops.size()); ++oi) {
    const Op& op = ops[static_cast<std::size_t>(oi)];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return load[x] < load[y]; });
    const int n = tiles(op);
    const long long cost = op.kind == kGemm ? op.k / kBk / op.parts : 2;
    for (int t = 0; t < n; ++t) {
      const int blk = order[static_cast<std::size_t>(t % sms)];
      per[static_cast<std::size_t>(blk)].push_back(Task{oi, t});
      load[static_cast<std::size_t>(blk)] += cost;
    }
  }
  std::vector<Task> tasks_h;
  std::vector<int> begin_h;
  for (const auto& v : per) {
    begin_h.push_back(static_cast<int>(tasks_h.size()));
    tasks_h.insert(tasks_h.end(), v.begin(), v.end());
  }
  begin_h.push_back(static_cast<int>(tasks_h.size()));
  for (int i = 0; i < 3; ++i) pmaps.m[i] = maps_h[static_cast<std::size_t>(i)];
  auto* ops_d = static_cast<Op*>(alloc(ops.size() * sizeof(Op)));
  auto* tasks_d = static_cast<Task*>(alloc(tasks_h.size() * sizeof(Task)));
  auto* begin_d = static_cast<int*>(alloc(begin_h.size() * sizeof(int)));
  auto* maps_d = static_cast<CUtensorMap*>(alloc(maps_h.size() * sizeof(CUtensorMap)));
  auto* done = static_cast<unsigned*>(alloc(ops.size() * sizeof(unsigned)));
  CHECK_CUDA(cudaMemcpy(ops_d, ops.data(), ops.size() * sizeof(Op), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(tasks_d, tasks_h.data(), tasks_h.size() * sizeof(Task), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(begin_d, begin_h.data(), begin_h.size() * sizeof(int), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(maps_d, maps_h.data(), maps_h.size() * sizeof(CUtensorMap), cudaMemcpyHostToDevice));
  const long long max_load = *std::max_element(load.begin(), load.end());
  const long long min_load = *std::min_element(load.begin(), load.end());
  unsigned epoch = 0;
  struct Form {
    const char* name;
    int sw, sa, w_waits, flags;
  };
  const std::vector<Form> forms = {
      {"w12_a12_all", 12, 12, 0, kNoWriterProxyFence | kNoReaderProxyFence | kReleaseAdd | kRelaxedPoll},
      {"w12_a12_all_rotate_k", 12, 12, 0,
       kNoWriterProxyFence | kNoReaderProxyFence | kReleaseAdd | kRelaxedPoll | kRotateK},
      {"w12_a12_all_rotate_k_no_weights", 12, 12, 0,
       kNoWriterProxyFence | kNoReaderProxyFence | kReleaseAdd | kRelaxedPoll | kRotateK | kNoWeights},
  };
  auto* times = static_cast<unsigned long long*>(alloc(8 * ops.size() * sizeof(unsigned long long)));
  auto persistent = [&](const Form& f, unsigned long long* stamps) {
    ++epoch;
    if (f.sw == 12) {
      launch_persistent<12, 12>(s, sms, ops_d, tasks_d, begin_d, maps_d, done, epoch, m, f.w_waits, f.flags, stamps,
                                static_cast<int>(ops.size()), pmaps);
    } else {
      launch_persistent<20, 6>(s, sms, ops_d, tasks_d, begin_d, maps_d, done, epoch, m, f.w_waits, f.flags, stamps,
                                static_cast<int>(ops.size()), pmaps);
    }
  };
  // Where a step's time goes: the gap between an operation's completion and the one before it,
  // averaged per kind of operation (one stamped launch).
  const char* kinds[] = {"norm", "qkv", "stand_in", "out", "norm", "ff1", "ff2"};
  auto gaps = [&](const Form& f) {
    {
      std::vector<unsigned long long> init(8 * ops.size(), 0);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        init[ops.size() + i] = ~0ull;               // seen: a minimum
        init[2 * ops.size() + 6 * i + 1] = ~0ull;   // earliest first arrival: a minimum
      }
      CHECK_CUDA(cudaMemcpy(times, init.data(), init.size() * 8, cudaMemcpyHostToDevice));
    }
    persistent(f, times);
    std::vector<unsigned long long> t(8 * ops.size());
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(t.data(), times, t.size() * 8, cudaMemcpyDeviceToHost));
    // gap = (first task saw its dependency − the dependency's completion) + (completion − that).
    double sum[7] = {}, seen[7] = {}, n[7] = {}, first_late[7] = {}, first_early[7] = {}, kloop[7] = {}, epi[7] = {},
           bar[7] = {}, cnt[7] = {};
    const std::size_t no = ops.size();
    for (std::size_t i = 1; i + 1 < no; ++i) {
      sum[i % 7] += static_cast<double>(t[i] - t[i - 1]) / 1e3;
      seen[i % 7] += static_cast<double>(t[no + i] - t[i - 1]) / 1e3;
      n[i % 7] += 1;
      if (ops[i].kind == kGemm) {
        const unsigned long long* pr = &t[2 * no + 6 * i];
        first_late[i % 7] += static_cast<double>(pr[0] - t[no + i]) / 1e3;
        first_early[i % 7] += static_cast<double>(pr[1] - t[no + i]) / 1e3;
        kloop[i % 7] += static_cast<double>(pr[2]) / 1e3;
        epi[i % 7] += static_cast<double>(pr[3]) / 1e3;
        bar[i % 7] += static_cast<double>(pr[4]) / 1e3;
        cnt[i % 7] += static_cast<double>(pr[5]) / 1e3;
      }
    }
    std::string out = std::string("{\"gaps_us\": \"") + f.name + "\"";
    for (int k = 0; k < 7; ++k) {
      out += ", \"" + std::to_string(k) + "_" + kinds[k] + "\": [" + std::to_string(sum[k] / n[k]) + ", " +
             std::to_string(seen[k] / n[k]) + "]";
    }
 for (int k = 0; k < 7; ++k) {
      if (kloop[k] == 0) continue;
      out += ", \"" + std::to_string(k) + "_" + kinds[k] + "_first_a_late_early_kloop_epi_bar_count\": [" +
             std::to_string(first_late[k] / n[k]) + ", " + std::to_string(first_early[k] / n[k]) + ", " +
             std::to_string(kloop[k] / n[k]) + ", " + std::to_string(epi[k] / n[k]) + ", " +
             std::to_string(bar[k] / n[k]) + ", " + std::to_string(cnt[k] / n[k]) + "]";
    }
    out += ", \"step_us\": " + std::to_string(static_cast<double>(t[no - 1] - t[0]) / 1e3) + "}";
    std::printf("%s\n", out.c_str());
  };

  // --- Same results? ---
  auto read_x = [&](const Acts& a) {
    std::vector<float> v(static_cast<std::size_t>(m) * E);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(v.data(), a.x, v.size() * 4, cudaMemcpyDeviceToHost));
    return v;
  };
  auto rel_l2 = [](const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0.0, den = 0.0;
    bool finite = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
      finite = finite && std::isfinite(a[i]) && std::isfinite(b[i]);
      num += (a[i] - b[i]) * (a[i] - b[i]);
      den += static_cast<double>(b[i]) * b[i];
    }
    return finite ? std::sqrt(num / std::max(den, 1e-30)) : -1.0;
  };
  reset_x(ca);
  chain_step(ca);
  const std::vector<float> x_chain = read_x(ca);
  double worst = 0.0;
  for (const Form& f : forms) {
    reset_x(pa);
    persistent(f, nullptr);
    CHECK_CUDA(cudaGetLastError());
    const double d = rel_l2(read_x(pa), x_chain);
    if (!(f.flags & kNoWeights)) worst = d < 0 ? 1e30 : std::max(worst, d);
    std::printf("{\"check\": \"%s\", \"x_rel_l2_vs_chain\": %.3e}\n", f.name, d);
    std::fflush(stdout);
  }
  for (const Form& f : forms) gaps(f);
  std::vector<float> x_in(hx0.begin(), hx0.end());
  std::printf("{\"check\": \"chain\", \"x_rel_l2_vs_input\": %.3e}\n", rel_l2(x_chain, x_in));

  // --- Timing: the chain as one graph, the persistent kernel as one launch; alternated. ---
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  chain_step(ca);
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t ea, eb;
  CHECK_CUDA(cudaEventCreate(&ea));
  CHECK_CUDA(cudaEventCreate(&eb));
  auto time_us = [&](const std::function<void()>& fn) {
    for (int w = 0; w < 3; ++w) fn();
    std::vector<double> us;
    for (int r = 0; r < repeat; ++r) {
      CHECK_CUDA(cudaEventRecord(ea, s));
      fn();
      CHECK_CUDA(cudaEventRecord(eb, s));
      CHECK_CUDA(cudaEventSynchronize(eb));
      float ms = 0.0f;
      CHECK_CUDA(cudaEventElapsedTime(&ms, ea, eb));
      us.push_back(1000.0 * ms);
    }
    return median(us);
  };
  // The weights' read floor: every weight byte copied once at the device's copy rate.
  void* copy_dst = alloc(weight_bytes / 4);
  const double copy_us = time_us([&] {
    for (int i = 0; i < B; ++i) {
      const Block& b = blocks[static_cast<std::size_t>(i)];
      CHECK_CUDA(cudaMemcpyAsync(copy_dst, b.ff1, 1LL * F * E * 2, cudaMemcpyDeviceToDevice, s));
    }
  });
  const double read_gbps = 2.0 * B * F * E * 2 / (copy_us * 1e3);  // read + write bytes per ns
  const double floor_us = static_cast<double>(weight_bytes) / (read_gbps * 1e3);
  for (int round = 0; round < rounds; ++round) {
    const double chain_us = time_us([&] { CHECK_CUDA(cudaGraphLaunch(exec, s)); });
    std::printf("{\"bench\": \"persistent_probe\", \"device\": \"%s\", \"round\": %d, \"form\": \"chain\", "
                "\"us_per_step\": %.1f, \"launches\": %d, \"weight_mb\": %.1f, \"floor_us\": %.1f, \"copy_gbps\": %.0f}\n",
                prop.name, round, chain_us, 7 * B + 1, weight_bytes / 1e6, floor_us, read_gbps);
    for (const Form& f : forms) {
      const double us = time_us([&] { persistent(f, nullptr); });
      std::printf("{\"bench\": \"persistent_probe\", \"device\": \"%s\", \"round\": %d, \"form\": \"%s\", "
                  "\"us_per_step\": %.1f, \"vs_chain\": %.3f, \"vs_floor\": %.2f, \"ops\": %zu, \"tasks\": %zu, "
                  "\"block_load_min_max\": [%lld, %lld], \"worst_rel_l2\": %.2e}\n",
                  prop.name, round, f.name, us, chain_us / us, us / floor_us, ops.size(), tasks_h.size(),
                  min_load, max_load, worst);
    }
    std::fflush(stdout);
  }
  return worst < 2e-2 ? 0 : 2;
}
