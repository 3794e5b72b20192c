// The persistent-step probe's kernel (bench/cuda_persistent.cu): one GR00T DiT step's operations
// as tasks of one kernel of one block a multiprocessor. Warp 4's lane 0 streams every weight tile
// of the block's GEMM tasks through a ring in task order, never waiting for activations; warp 5's
// lane 0 copies each GEMM task's activation boxes (bulk tensor copies) once the operation it reads
// has been counted done; warps 0-3 (one warpgroup) multiply (wgmma m64n56k16, the warpgroup GEMM's
// tile layout: wgmma_tiles.cuh), write the epilogue, and run the rows tasks (a LayerNorm adding k
// parts, the attention's stand-in); every task then adds one to its operation's counter. Counters
// only grow (a launch waits for epoch × count), so nothing is reset between launches. All blocks
// must be resident at once (a cooperative launch, one block a multiprocessor).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"  // gelu_tanh, as the engines
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/wgmma_tiles.cuh"

namespace edgevla::bench::persistent {

namespace ptx = edgevla::backends::cuda::ptx;
namespace wgmma = edgevla::backends::cuda::wgmma;
namespace ew = edgevla::backends::cuda::ew;
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
static_assert(sizeof(Op) % 8 == 0 && sizeof(Task) == 8, "copied to shared memory in 8-byte words");

constexpr int kThreads = 192;  // the consumer warpgroup, the weights' producer warp, A's producer warp

constexpr int smem_bytes(int sw, int sa) { return 2048 + sw * kWTile * 2 + sa * kATile * 2; }

// Probe switches (the `flags` argument). Run 52 also measured, and dropped: acquire polls with
// __nanosleep (+40 % a step against relaxed polls), no async-proxy fences, a returning add or a
// red.release for the count, tensor maps as parameters, 56-row maps, each tile's k walk rotated,
// the weight producer waiting for the activations, a 20 + 6 stage ring (no difference or slower);
// and a k loop without multiplies (call 10: the activation copies alone take ~0.17 µs a k step).
enum Flag : int {
  kNoWeights = 16,   // no weight copies at all (wrong results): the operations' chain alone
  kSmemOps = 1024,   // the operations and the block's tasks read from shared memory (copied at start)
  kL2Weights = 4096, // host side: every GEMM reads one L2-resident weight (timing only)
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }

// Until the counter reaches target: relaxed polls, then one acquire fence (what the counting
// tasks wrote before their release is visible after it).
__device__ __forceinline__ void wait_count(const unsigned* c, unsigned target) {
  unsigned v;
  do {
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(c) : "memory");
  } while (v < target);
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
}

__device__ __forceinline__ unsigned long long now_ns();
// This task's results are written (by all 128 consumer threads): count it with a release add
// (after an async-proxy fence, as the readers copy them with bulk tensor copies); the task that
// completes the operation stamps the time (stamp: null unless profiled). split (profiled GEMM
// tasks): the longest wait at the consumers' barrier and the longest count.
__device__ __forceinline__ void signal(unsigned* done, int tid, unsigned target, unsigned long long* stamp,
                                       unsigned long long* split = nullptr) {
  const unsigned long long t0 = split != nullptr && tid == 0 ? now_ns() : 0;
  consumers_sync();
  if (tid == 0) {
    const unsigned long long t1 = split != nullptr ? now_ns() : 0;
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
    unsigned old;
    asm volatile("atom.add.release.gpu.global.u32 %0, [%1], 1;\n" : "=r"(old) : "l"(done) : "memory");
    if (stamp != nullptr && old + 1 == target) *stamp = now_ns();
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
  atomicMin(seen, now_ns());
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
          v = ew::gelu_tanh(v);  // the engines' GELU (run 52 measured the probe with tanhf)
        }
        db[static_cast<long long>(row) * ldd + col] = __float2bfloat16_rn(v);
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
                    unsigned epoch, int m, int flags, unsigned long long* times, int n_ops) {
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
  if (flags & kSmemOps) {
    // Past the rings: the operations, then this block's tasks (re-based so that tasks[t] holds).
    auto* s_ops = reinterpret_cast<Op*>(s_a + SA * kATile);
    auto* s_tasks = reinterpret_cast<Task*>(s_ops + n_ops);
    const auto* src = reinterpret_cast<const unsigned long long*>(ops);
    auto* dst = reinterpret_cast<unsigned long long*>(s_ops);
    const int words = n_ops * static_cast<int>(sizeof(Op) / 8);
    for (int i = tid; i < words; i += kThreads) dst[i] = src[i];
    for (int i = t0 + tid; i < t1; i += kThreads) s_tasks[i - t0] = tasks[i];
    ops = s_ops;
    tasks = s_tasks - t0;
  }
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
      int nt, part, kb0, count;
      k_range(op, tasks[t].index, nt, part, kb0, count);
      const bf16* w = op.w + (static_cast<long long>(nt) * (op.k / kBk) + kb0) * kWTile;
      for (int i = 0; i < count; ++i, ++ws) {
        const int s = ws % SW;
        if (ws >= SW) ptx::mbar_wait(&empty_w[s], ((ws / SW) - 1) & 1);
        ptx::mbar_expect_tx(&full_w[s], kWTile * 2);
        ptx::bulk_copy_hint(s_w + s * kWTile, w + static_cast<long long>(i) * kWTile, kWTile * 2, &full_w[s], policy);
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
        wait_count(done + op.dep, epoch * static_cast<unsigned>(op.dep_count));
        stamp_seen(times != nullptr ? times + n_ops + tasks[t].op : nullptr);
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
        waited = op.dep;
      }
      int nt, part, kb0, count;
      k_range(op, tasks[t].index, nt, part, kb0, count);
      for (int i = 0; i < count; ++i, ++as) {
        const int s = as % SA;
        if (as >= SA) ptx::mbar_wait(&empty_a[s], ((as / SA) - 1) & 1);
        ptx::mbar_expect_tx(&full_a[s], kATile * 2);
        ptx::tma_load_2d(s_a + s * kATile, &maps[op.map], (kb0 + i) * kBk, 0, &full_a[s]);
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
          wait_count(done + op.dep, epoch * static_cast<unsigned>(op.dep_count));
          stamp_seen(times != nullptr ? times + n_ops + oi : nullptr);
        }
        consumers_sync();
      }
      rows_task(op, tasks[t].index, m, red, tid);
      signal(done + oi, tid, epoch * static_cast<unsigned>((m + op.rows - 1) / op.rows),
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
    gemm_epilogue(op.d, op.out, op.ldd, op.part_stride, acc, nt, part, m, warp, lane);
    if (prof != nullptr && tid == 0) {
      atomicMax(prof + 0, t_first);
      atomicMin(prof + 1, t_first);
      atomicMax(prof + 2, t_loop - t_first);
      atomicMax(prof + 3, now_ns() - t_loop);
    }
    signal(done + oi, tid, epoch * static_cast<unsigned>(op.n / kBm * op.parts),
           times != nullptr ? times + oi : nullptr, prof != nullptr ? prof + 4 : nullptr);
  }
#endif
}


}  // namespace edgevla::bench::persistent
