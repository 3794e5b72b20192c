// Head dim 256's attention on Hopper's warpgroup multiply (wgmma, sm_90a), for Gemma's prefix
// (and, at head dim 128 with the dims past h zero, head dims 65-128 when asked: see attn_wg):
// many stacked rows (8 query heads over one kv head) and a long walk (456-968 keys), where
// attn_bf16 issues ~8 instructions a tensor-core multiply and reaches 80-160 TFLOP/s; in the
// bulk-copy form also for the action experts (the cached prefix as block a, the action rows' own
// keys as block b with their per-row limits).
//
// A block is one or two warpgroups (WG), each over 64 stacked rows, sharing every K/V tile. Q
// (64 · WG × 256) stays in shared memory; K and V come in 64-key tiles through two rings of two
// stages, filled by cp.async or (kTma) by bulk tensor copies. Per tile each warpgroup issues
// q·kᵀ of the next tile (16 m64n64k16, both operands from shared memory) and p·v of this one
// (4 m64n256k16, p from registers, v from shared memory as the MN-major operand), then runs the
// next tile's softmax while p·v is still in flight, and rescales o only once p·v has landed.
// K's next-but-one tile is copied as soon as this tile's q·kᵀ has been read, V's once p·v has.
//
// Tiles ([rows][256], rows = query rows or keys) are stored as 8 × 8 core matrices (8 rows of 16
// contiguous bytes, no swizzle): core matrix (row group g, 16-byte chunk c) at g · 4608 + c · 144
// bytes. The 144-byte chunk spacing (not 128) puts the 8 chunks of one global 128-byte line in 8
// different bank groups, so the copies of a warp (one row's 512 bytes) write shared memory
// without conflicts; with 128 every chunk of a line fell on the same banks and the copies ran at
// an eighth of their rate (run 38, call 3: 32 shared wavefronts an instruction instead of 4).
// The descriptors carry the spacing: q and k (K-major) step 144 bytes along k and 4608 along the
// rows; v (MN-major, keys along k) steps 4608 along k and 144 along n. Shared memory: 36 KB of q a
// warpgroup + 4 × 36 KB of K/V = 180 or 216 KB.
// The bulk-copy form (kTma; EDGEVLA_ATTN_WG_TMA, AttentionArgs::wg_tma) keeps q so but takes each
// K and V tile as four boxes of 64 keys × 64 dims with the 128-byte swizzle (8 KB each, 32 KB a
// tile), issued by one thread and counted on one mbarrier a stage; k is the K-major operand
// (8-key groups 1024 bytes apart, 32 bytes a 16-dim step inside a box), v the MN-major one
// (64-dim boxes 8 KB apart, 8-key groups 1024 bytes apart). The copies read rows up to a_max, not
// *a_len, so V's rows past *a_len in the last tile are zeroed before p·v (0 · whatever a stale
// row holds must stay 0); K's are masked by the softmax. Run 39's ablation (call 2) had the
// cp.async copies setting the pace: without them the 3-view prefix took 35-39 µs instead of 54-80.
// With bulk copies and one warpgroup it took 33.5 µs against attn_bf16's 48.5 (17.5 against 22.2
// at one view), so that form is attention.cu's default for block a alone on compute capability
// 9.0; the cp.async form (79.7 µs, run 38) and block b (not yet measured) run when asked for
// (AttentionArgs::wg / wg_tma, EDGEVLA_ATTN_WG, EDGEVLA_ATTN_WG_TMA, EDGEVLA_ATTN_WG_EXPERT).
// The key shares and their partials are attn_bf16's (split_range, part_o / part_ml), so
// attention.cu's combine merges them.
#include "runtime/backends/cuda/kernels/attention_params.cuh"
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"
#include "runtime/backends/cuda/kernels/tensor_map.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

namespace edgevla::backends::cuda::attn {
namespace {

using bf16 = __nv_bfloat16;
using namespace ptx;

#include "runtime/backends/cuda/kernels/attention_steps.cuh"

constexpr int kStages = 2;                         // of K and of V each
// Profiling builds only (-DEDGEVLA_ATTN_WG_ABLATE=mask; outputs wrong, timings only): 1 leaves out
// the copies of K and V after the first two tiles, 2 the softmax, 4 p·v, 8 q·kᵀ after the first
// tile. Each part's cost is the time it takes off; 0 (the default) leaves everything in.
#ifndef EDGEVLA_ATTN_WG_ABLATE
#define EDGEVLA_ATTN_WG_ABLATE 0
#endif
constexpr int kChunkBytes = 144;                   // core matrix to core matrix along a row
// At head dim HD (256, or 128 for head dims 65-128): one row group of 8 rows (4608 bytes at 256),
// and a tile of 64 rows.
template <int HD>
constexpr int group_bytes() { return (HD / 8) * kChunkBytes; }
template <int HD>
constexpr int tile_bytes() { return (kWgKeys / 8) * group_bytes<HD>(); }
// Shared memory of the WG-warpgroup kernel: q (64 · WG rows), then the K and V rings.
template <int HD>
constexpr int smem_bytes(int wg) { return 8 * wg * group_bytes<HD>() + 2 * kStages * tile_bytes<HD>(); }
// The bulk-copy form: 1 KB of slack to align the tiles to the swizzle's 1024 bytes, q, the rings
// of tiles of HD / 64 boxes (32 KB at 256), then four mbarriers (K's two stages, V's two).
constexpr int kBoxBytes = kWgKeys * 128;  // 64 keys × 64 dims
template <int HD>
constexpr int tma_tile_bytes() { return (HD / 64) * kBoxBytes; }
// KS: 64-key sub-tiles a walk tile (attn_wg's KS).
template <int HD>
constexpr int smem_bytes_tma(int wg, int ks = 1) {
  return 1024 + 8 * wg * group_bytes<HD>() + 2 * kStages * ks * tma_tile_bytes<HD>() + 64;
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kAblate = EDGEVLA_ATTN_WG_ABLATE;
constexpr int kChunkElems = kChunkBytes / 2;

// Element offset of row r, 16-byte chunk c in a tile at head dim HD.
template <int HD>
__device__ __forceinline__ int tile_offset(int r, int c) {
  return (r / 8) * (group_bytes<HD>() / 2) + c * kChunkElems + (r % 8) * 8;
}

#include "runtime/backends/cuda/kernels/attention_wg_mma.cuh"
#endif

// kB: the call has block b (bulk-copy form only), a separate instance so that the prefix's form
// keeps the code and registers it was measured with. HD 128 (head dims 65-128, the vision towers'
// 72 and GR00T's LLM): bulk-copy form; K and V by 4-d maps whose inner dimension is the head dim,
// so the copies fill dims h-127 with zeros, as q's copies do. With block b (GR00T's LLM: causal
// over packed keys, block a empty) the same maps over block b's rows.
//
// kRoles (bulk-copy form; head dim 128: EDGEVLA_ATTN_WG_ROLES, head dim 256 with one warpgroup:
// EDGEVLA_ATTN_WG256_ROLES; AttentionArgs::wg_roles): a 32-thread
// producer warp after the warpgroups issues every K / V copy and waits, before refilling a
// stage, on that stage's "free" mbarrier, which each consumer warp arrives on once its
// multiplies reading the stage have landed. The warpgroups then share no barrier inside the walk
// (the default form syncs the block twice a tile so that thread 0 may refill), so one
// warpgroup's softmax may run under the other's multiplies. Run 57 call 2's ablation at GR00T's
// two-view tower: the softmax 2.8 of 14.3 µs, q·kᵀ 1.4, p·v 1.2, with both warpgroups in step.
// kPing (kRoles with two warpgroups; EDGEVLA_ATTN_WG_ROLES=2): the two warpgroups take turns at
// issuing a tile's multiplies (barriers 4 and 5: each waits for the other's arrival, issues, then
// lets the other go), so that one's softmax runs while the other's multiplies do.
// kQk: q·kᵀ's 16-dim steps; fewer than HD / 16 where the head's dims end sooner (the vision towers'
// 72 in 5 of 8: dims past h are zeros in q and in K's copies, so the product is the same).
// KS: 64-key sub-tiles a walk tile (EDGEVLA_ATTN_WG_KEYS=128: 2, the producer warp's form at head
// dim 128 with block a alone): the waits, barriers, turns and softmax rescales come once a KS · 64
// keys, each stage holding KS sub-tiles of the 64-key layout (their copies, q·kᵀ and p·v
// multiplies as before, KS times).
template <int HD, int WG, bool kTma, bool kB, bool kRoles = false, bool kPing = false, int kQk = HD / 16,
          int KS = 1>
__global__ void __launch_bounds__(128 * WG + (kRoles ? 32 : 0), 1)
    attn_wg(const Params p, const __grid_constant__ CUtensorMap k_map, const __grid_constant__ CUtensorMap v_map,
            const __grid_constant__ CUtensorMap kb_map, const __grid_constant__ CUtensorMap vb_map) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char smem[];
  static_assert(HD == 256 || (HD == 128 && kTma), "head dim 128 in the bulk-copy form only");
  static_assert(!kRoles || kTma, "the producer warp issues bulk copies");
  static_assert(!kPing || (kRoles && WG == 2), "turns between two warpgroups of the producer warp's form");
  static_assert(kQk > 0 && kQk <= HD / 16, "q·kᵀ's steps within the head dim");
  static_assert(KS == 1 || (KS == 2 && HD == 128 && kRoles && !kB), "two sub-tiles a walk tile: head dim 128, "
                "the producer warp's form, block a alone");
  constexpr int kKeys = kWgKeys * KS;  // keys a walk tile
  // kThreads: the warpgroups' threads (the producer warp, kRoles, comes after them).
  constexpr int kRows = 64 * WG, kThreads = 128 * WG, kWarps = 4 * WG;
  constexpr int kIssuer = kRoles ? kThreads : 0;  // the thread that issues the bulk copies
  constexpr int kChunks = HD / 8;  // 16-byte chunks a row
  constexpr int kGroupElems = group_bytes<HD>() / 2, kGroupBytes = group_bytes<HD>();
  constexpr int kTmaTileBytes = tma_tile_bytes<HD>();
  constexpr int kBoxes = HD / 64;  // 64-dim boxes a K or V tile
  constexpr int kStageElems = (kTma ? KS * kTmaTileBytes : tile_bytes<HD>()) / 2;
  unsigned char* base = smem;
  if constexpr (kTma) base += (1024 - (smem_addr(smem) & 1023)) & 1023;
  bf16* s_q = reinterpret_cast<bf16*>(base);  // q
  bf16* s_k = s_q + 8 * WG * kGroupElems;     // [kStages] K tiles
  bf16* s_v = s_k + kStages * kStageElems;    // [kStages] V tiles
  // kTma: K, K, V, V filled; kRoles also K, K, V, V free (smem_bytes_tma leaves room for 8).
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(s_v + kStages * kStageElems);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int bg = static_cast<int>(blockIdx.y);
  const int b = bg / p.kv_heads, g = bg % p.kv_heads;
  const int m0 = static_cast<int>(blockIdx.x) * kRows;

  if constexpr (kTma) {
    if (tid == 0) {
      for (int i = 0; i < 2 * kStages; ++i) mbar_init(&bars[i], 1);  // the copying thread's arrival
      if constexpr (kRoles) {
        for (int i = 2 * kStages; i < 4 * kStages; ++i) mbar_init(&bars[i], kWarps);  // each consumer warp's
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
  }
  chain_release();
  if (!p.a_constant) chain_wait();  // *a_len and block a may come from the kernel before
  const int a_len = clamped_a_len(p);
  // Key tiles: block a's na (with *a_len), then block b's (kTma only; b_len is fixed).
  const int na = (a_len + kKeys - 1) / kKeys;
  static_assert(kTma || !kB, "block b only in the bulk-copy form");
  const int nb = kB ? (p.b_len + kKeys - 1) / kKeys : 0;
  int t_begin = 0, t_end = 0;
  split_range(na + nb, p.splits, t_begin, t_end);

  const int my_m[2] = {m0 + warp * 16 + lane / 4, m0 + warp * 16 + lane / 4 + 8};
  int lim_b[2] = {0, 0};
  if constexpr (kB) lim_b[0] = b_visible(p, my_m[0]), lim_b[1] = b_visible(p, my_m[1]);
  float o[HD / 8][4];
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float(&o_flat)[HD / 2] = *reinterpret_cast<float(*)[HD / 2]>(&o[0][0]);
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};

  // A warp copies one row's 32 chunks (512 contiguous bytes) a step.
  const bf16* ak = static_cast<const bf16*>(p.ak);
  const bf16* av = static_cast<const bf16*>(p.av);
  const long long kv_base = b * p.a_batch + static_cast<long long>(g) * p.h;
  // Thread (warp w, lane l) copies chunk l of rows w, w + kWarps, ... of a tile: its source steps
  // kWarps rows and its destination a fixed offset per row, so a copy is a few instructions.
  const long long step = kWarps * p.a_ld;
  const long long thread_src = kv_base + static_cast<long long>(warp) * p.a_ld + lane * 8;
  const int thread_dst = tile_offset<HD>(warp, lane);
  auto load = [&](const bf16* src, bf16* dst, int w) {  // the tile at walk position w
    const int t = walk_tile(p, w, t_begin, t_end);
    const int rows = a_len - t * kWgKeys - warp;  // this thread's rows below it are keys
    const bf16* from = src + thread_src + static_cast<long long>(t) * kWgKeys * p.a_ld;
    bf16* to = dst + thread_dst;
#pragma unroll
    for (int j = 0; j < kWgKeys / kWarps; ++j) {
      const bool ok = kWarps * j < rows;
      cp_async16(to + tile_offset<HD>(kWarps * j, 0), ok ? from : src, ok);
      from += step;
    }
  };
  // kTma: thread 0 copies the tile at walk position w as HD / 64 boxes of 64 dims, from block a's
  // map or block b's (whose rows end at b_len, so the copy fills the rest of its last tile with
  // zeros); at HD 128 from a 4-d map (dims, kv heads, rows, sequences).
  auto copy = [&](bool k, bf16* dst, unsigned long long* bar, int w) {
    if (tid != kIssuer) return;
    const int t = walk_tile(p, w, t_begin, t_end);
    const bool in_a = !kB || t < na;
    const CUtensorMap* map = in_a ? (k ? &k_map : &v_map) : (k ? &kb_map : &vb_map);
    const int row0 = (in_a ? t : t - na) * kKeys;
    // KS > 1: a sub-tile that would start past the map's rows is not copied (wait_v zeroes its V).
    int subs = KS;
    if constexpr (KS > 1) subs = min(KS, (p.a_max - row0 + kWgKeys - 1) / kWgKeys);
    mbar_expect_tx(bar, subs * kTmaTileBytes);
#pragma unroll
    for (int sub = 0; sub < KS; ++sub) {
      if (KS > 1 && sub >= subs) break;
      bf16* to = dst + sub * (kTmaTileBytes / 2);
#pragma unroll
      for (int j = 0; j < kBoxes; ++j) {
        if constexpr (HD == 256) {
          tma_load_3d(to + j * (kBoxBytes / 2), map, g * p.h + 64 * j, row0 + sub * kWgKeys, b, bar);
        } else {
          tma_load_4d(to + j * (kBoxBytes / 2), map, 64 * j, g, row0 + sub * kWgKeys, b, bar);
        }
      }
    }
  };
  auto load_k = [&](int t) {
    const int s = (t - t_begin) % kStages;
    if constexpr (kTma) {
      copy(true, s_k + s * kStageElems, &bars[s], t);
    } else {
      load(ak, s_k + s * kStageElems, t);
    }
  };
  auto load_v = [&](int t) {
    const int s = (t - t_begin) % kStages;
    if constexpr (kTma) {
      copy(false, s_v + s * kStageElems, &bars[kStages + s], t);
    } else {
      load(av, s_v + s * kStageElems, t);
    }
  };
  // Whether walk position w's tile is in block a (which the chain's kernels do not write when
  // p.a_constant, so it may be copied before the chain's wait).
  auto early = [&](int w) { return w < t_end && (!kB || walk_tile(p, w, t_begin, t_end) < na); };
  // kTma: wait for K / V of walk position w (each stage's barrier completes once a use).
  auto wait_k = [&](int w) { mbar_wait(&bars[(w - t_begin) % kStages], ((w - t_begin) / kStages) & 1); };
  auto wait_v = [&](int w) {
    mbar_wait(&bars[kStages + (w - t_begin) % kStages], ((w - t_begin) / kStages) & 1);
    // The copies read rows up to a_max: V's rows past *a_len become 0 (whole 128-byte rows of
    // each box, so the swizzle does not matter).
    const int t = walk_tile(p, w, t_begin, t_end);
    const int r0 = a_len - t * kKeys;
    // Row r of the tile (sub-tile r / 64), 16-byte chunk c of its 64-dim box `box`.
    auto v_chunk = [](bf16* v, int r, int box, int c) {
      return reinterpret_cast<uint4*>(v + (r / kWgKeys) * (kTmaTileBytes / 2) + box * (kBoxBytes / 2) +
                                      (r % kWgKeys) * 64 + c * 8);
    };
    if constexpr (kRoles) {
      // Only rows below a_max can hold stale values (the copies read rows past it as zeros), and
      // (KS > 1) those of a sub-tile not copied, which starts at or past a_max. Each warpgroup
      // zeroes them itself, then waits for its own threads only: the other may be reading the
      // tile already (the same zeros, written twice).
      const int rows_in = p.a_max - t * kKeys;
      const int r1 = KS > 1 && rows_in <= kKeys - kWgKeys ? kKeys : min(kKeys, rows_in);
      if ((!kB || t < na) && r0 < r1) {
        bf16* v = s_v + ((w - t_begin) % kStages) * kStageElems;
        for (int i = tid % 128; i < (r1 - r0) * 8 * kBoxes; i += 128) {
          const int r = r0 + i / (8 * kBoxes), box = (i % (8 * kBoxes)) / 8, c = i % 8;
          *v_chunk(v, r, box, c) = make_uint4(0, 0, 0, 0);
        }
        fence_proxy_async();
        if (tid < 128) {
          named_barrier<2, 128>();
        } else {
          named_barrier<3, 128>();
        }
      }
    } else if ((!kB || t < na) && r0 < kKeys) {
      bf16* v = s_v + ((w - t_begin) % kStages) * kStageElems;
      for (int i = tid; i < (kKeys - r0) * 8 * kBoxes; i += kThreads) {
        const int r = r0 + i / (8 * kBoxes), box = (i % (8 * kBoxes)) / 8, c = i % 8;
        *v_chunk(v, r, box, c) = make_uint4(0, 0, 0, 0);
      }
      fence_proxy_async();
    }
  };
  // kRoles: this warp is done with K / V of walk position w (its multiplies reading it landed).
  auto free_k = [&](int w) {
    if constexpr (kRoles) {
      if (lane == 0) mbar_arrive(&bars[2 * kStages + (w - t_begin) % kStages]);
    }
  };
  auto free_v = [&](int w) {
    if constexpr (kRoles) {
      if (lane == 0) mbar_arrive(&bars[3 * kStages + (w - t_begin) % kStages]);
    }
  };

  if constexpr (kRoles) {
    if (tid >= kThreads) {  // the producer warp: every copy, each stage refilled once it is free
      if (tid == kIssuer && t_begin < t_end) {
        bool issued[2] = {false, false};
        if (p.a_constant) {
          for (int i = 0; i < 2; ++i) {
            if (early(t_begin + i)) {
              load_k(t_begin + i);
              load_v(t_begin + i);
              issued[i] = true;
            }
          }
        }
        chain_wait();
        for (int i = 0; i < 2; ++i) {
          if (!issued[i] && t_begin + i < t_end) {
            load_k(t_begin + i);
            load_v(t_begin + i);
          }
        }
        for (int w = t_begin + 2; w < t_end; ++w) {
          const int s = (w - t_begin) % kStages;
          const unsigned parity = static_cast<unsigned>((w - t_begin) / kStages - 1) & 1u;
          mbar_wait(&bars[2 * kStages + s], parity);
          load_k(w);
          mbar_wait(&bars[3 * kStages + s], parity);
          load_v(w);
        }
      }
      return;
    }
  }

  if (t_begin < t_end) {  // the same for the whole block
    bool issued[2] = {false, false};  // kTma: walk positions t_begin and t_begin + 1
    if (p.a_constant && !kRoles) {
      if constexpr (kTma) {
        for (int i = 0; i < 2; ++i) {
          if (early(t_begin + i)) {
            load_k(t_begin + i);
            load_v(t_begin + i);
            issued[i] = true;
          }
        }
      } else {
        load_k(t_begin);
        load_v(t_begin);
      }
    }
    chain_wait();
    const bf16* q = static_cast<const bf16*>(p.q);
    for (int i = tid; i < kRows * kChunks; i += kThreads) {
      const int r = i / kChunks, c = i % kChunks;
      const int m = m0 + r;
      const bool ok = m < p.m_rows && c * 8 < p.h;  // dims from h on (HD 128) are zeros
      const long long off = ok ? q_offset(p, b, g, m) + c * 8 : 0;
      cp_async16(s_q + tile_offset<HD>(r, c), q + off, ok);
    }
    if constexpr (kTma && !kRoles) {
      for (int i = 0; i < 2; ++i) {
        if (!issued[i] && t_begin + i < t_end) {
          load_k(t_begin + i);
          load_v(t_begin + i);
        }
      }
    } else if (!kTma && !p.a_constant) {
      load_k(t_begin);
      load_v(t_begin);
    }
    cp_async_commit();  // q and (cp.async) the first tile
    if constexpr (kTma) {
      cp_async_wait<0>();
      fence_proxy_async();
      wait_k(t_begin);
    } else {
      if (t_begin + 1 < t_end) load_k(t_begin + 1);
      cp_async_commit();
      if (t_begin + 1 < t_end) load_v(t_begin + 1);
      cp_async_commit();
      cp_async_wait<2>();
      fence_proxy_async();
    }
    if constexpr (kRoles) {
      named_barrier<1, kThreads>();  // the warpgroups only: the producer warp is in its own loop
    } else {
      __syncthreads();
    }

    float s[kKeys / 8][4];
    float(&s_flat)[kKeys / 2] = *reinterpret_cast<float(*)[kKeys / 2]>(&s[0][0]);
    unsigned pf[kKeys / 16][4];
    float alpha[2];
    // Descriptors of the tiles' starts; a step along k adds its byte offset / 16 to the address
    // field (no carry out of it: shared addresses stay below 256 KB).
    // This warpgroup's 64 rows of q.
    // kTma: k's descriptor has the swizzled K-major layout (the leading offset unused), v's the
    // swizzled MN-major one.
    const unsigned long long desc_q = wg_descriptor(s_q + (warp / 4) * 8 * kGroupElems, kChunkBytes, kGroupBytes);
    const unsigned long long desc_k0 =
        kTma ? wg_descriptor_sw128(s_k, 16, 1024) : wg_descriptor(s_k, kChunkBytes, kGroupBytes);
    const unsigned long long desc_v0 =
        kTma ? wg_descriptor_sw128(s_v, kBoxBytes, 1024) : wg_descriptor(s_v, kGroupBytes, kChunkBytes);
    constexpr unsigned long long kQStep = 2 * kChunkBytes / 16, kStageStep = 2 * kStageElems / 16;
    constexpr unsigned long long kVStep = kTma ? 16 * 128 / 16 : 2 * kGroupBytes / 16;  // 16 keys
    // The descriptor step of k's 16-dim slice kk.
    auto k_step = [](int kk) -> unsigned long long {
      if constexpr (kTma) {
        return (kk / 4) * (kBoxBytes / 16) + (kk % 4) * (32 / 16);
      } else {
        return kk * kQStep;
      }
    };
    // Sub-tile j's 64 keys into s[8j .. 8j + 7] (scores of keys 64j.. of the walk tile).
    auto qk = [&](int t) {
      const unsigned long long desc_k = desc_k0 + ((t - t_begin) % kStages) * kStageStep;
#pragma unroll
      for (int j = 0; j < KS; ++j) {
        float(&s_sub)[kWgKeys / 2] = *reinterpret_cast<float(*)[kWgKeys / 2]>(&s[j * (kWgKeys / 8)][0]);
#pragma unroll
        for (int kk = 0; kk < kQk; ++kk) {
          ss_m64n64(s_sub, desc_q + kk * kQStep, desc_k + j * (kTmaTileBytes / 16) + k_step(kk), kk > 0 ? 1 : 0);
        }
      }
    };
    wg_fence();
    qk(t_begin);
    wg_commit();
    wg_wait<0>();
    pin(s_flat);
    free_k(t_begin);
    // Scores to probabilities for walk position w: block a's keys below *a_len, block b's below
    // each row's limit.
    auto probs = [&](int w) {
      const int t = walk_tile(p, w, t_begin, t_end);
      const bool in_a = !kB || t < na;
      const int lim[2] = {in_a ? a_len : lim_b[0], in_a ? a_len : lim_b[1]};
      scores_to_probs<kKeys>(p, s, row_max, row_sum, alpha, (in_a ? t : t - na) * kKeys, lim, lane);
    };
    probs(t_begin);
    pack_probs<kKeys>(s, pf);

    // kPing: the first turn is warpgroup 0's.
    if constexpr (kPing) {
      if (tid >= 128) named_arrive<4, 256>();
    }
    // Every tile but the last: q·kᵀ of the next tile and p·v of this one in flight together, the
    // next softmax under p·v. Straight-line code, so that the compiler keeps the multiplies
    // asynchronous (a branch around them makes it serialise them). In flight at the top of tile
    // t: V of t (copied after tile t - 2's p·v), K of t + 1 (after tile t - 1's q·kᵀ), V of t + 1.
    for (int t = t_begin; t + 1 < t_end; ++t) {
      if constexpr (kTma) {
        wait_k(t + 1);
        wait_v(t);
      } else {
        cp_async_wait<1>();  // K of t + 1 and V of t are in
        fence_proxy_async();
      }
      if constexpr (!kRoles) {
        __syncthreads();  // ... for every thread; and every warp is done with K of t
        if ((kTma || !(kAblate & 1)) && t + 2 < t_end) load_k(t + 2);
        if constexpr (!kTma) cp_async_commit();
      }
      if constexpr (kPing) {  // this warpgroup's turn
        if (tid < 128) {
          named_barrier<4, 256>();
        } else {
          named_barrier<5, 256>();
        }
      }
      wg_fence();
      if constexpr (!(kAblate & 8)) qk(t + 1);
      wg_commit();
      if constexpr (!(kAblate & 4)) {
        pv<HD, kVStep, kKeys, kTmaTileBytes / 16>(o_flat, pf, desc_v0 + ((t - t_begin) % kStages) * kStageStep);
      }
      wg_commit();
      if constexpr (kPing) {  // the other's turn
        if (tid < 128) {
          named_arrive<5, 256>();
        } else {
          named_arrive<4, 256>();
        }
      }
      wg_wait<1>();  // q·kᵀ of tile t + 1 has landed; p·v of tile t may still run
      pin(s_flat);
      free_k(t + 1);
      if constexpr (!(kAblate & 2)) {
        probs(t + 1);
      } else {
        alpha[0] = alpha[1] = 1.0f;
      }
      wg_wait<0>();
      pin(o_flat);
      pin(pf);
      free_v(t);
#pragma unroll
      for (int d = 0; d < HD / 8; ++d) {
        o[d][0] *= alpha[0];
        o[d][1] *= alpha[0];
        o[d][2] *= alpha[1];
        o[d][3] *= alpha[1];
      }
      pack_probs<kKeys>(s, pf);
      if constexpr (!kRoles) {
        __syncthreads();  // every warp is done with V of t
        if ((kTma || !(kAblate & 1)) && t + 2 < t_end) load_v(t + 2);
        if constexpr (!kTma) cp_async_commit();
      }
    }
    if constexpr (kTma) {
      wait_v(t_end - 1);
    } else {
      cp_async_wait<0>();  // V of the last tile
      fence_proxy_async();
    }
    if constexpr (!kRoles) __syncthreads();
    // kPing: warpgroup 1's last arrival (or, with one tile, its first) met, so no barrier is left
    // half-arrived at exit.
    if constexpr (kPing) {
      if (tid < 128) named_barrier<4, 256>();
    }
    wg_fence();
    pv<HD, kVStep, kKeys, kTmaTileBytes / 16>(o_flat, pf,
                                               desc_v0 + ((t_end - 1 - t_begin) % kStages) * kStageStep);
    wg_commit();
    wg_wait<0>();
    pin(o_flat);
    pin(pf);
  }

  finish_rows<HD, 1, kThreads>(p, o, row_max, row_sum, nullptr, 0, b, g, bg, my_m, lane);
#else
  (void)p;
  (void)k_map;
  (void)v_map;
  (void)kb_map;
  (void)vb_map;
  __trap();  // the host launches this kernel only on a 9.0 device from an sm_90a build
#endif
}

}  // namespace

bool wg_built() {
#if defined(EDGEVLA_CUDA_SM90A)
  return true;
#else
  return false;
#endif
}

int wg_smem_bytes(int groups, bool tma, int hd, int keys) {
  if (hd == 128) return tma ? smem_bytes_tma<128>(groups, keys / kWgKeys) : 0x7fffffff;  // no cp.async form at 128
  return tma ? smem_bytes_tma<256>(groups) : smem_bytes<256>(groups);
}

namespace {
// A block's K or V (rows of stride ld elements, `batch_stride` apart a sequence, `rows` of them) as
// a tensor map of bf16 boxes of 64 dims × 64 keys with the 128-byte swizzle; rows past `rows`
// read as zeros. heads = 0 (head dim 256): 3-d (the whole row, rows, sequences), a box's dims
// found by its column. heads > 0 (head dims 65-128): 4-d (h dims, heads, rows, sequences), so
// that dims h-127 of a box read as zeros too. False where the layout does not allow bulk tensor
// copies.
// What such a map needs of the block: a 16-byte aligned base and strides, and some rows.
bool kv_copyable(const void* base, long long ld, long long batch_stride, int rows, int batch) {
  return reinterpret_cast<std::uintptr_t>(base) % 16 == 0 && ld % 8 == 0 && (batch == 1 || batch_stride % 8 == 0) &&
         rows > 0;
}
bool encode_kv_map(CUtensorMap& map, const void* base, long long ld, long long batch_stride, int rows, int batch,
                   int h = 0, int heads = 0) {
  const PFN_cuTensorMapEncodeTiled_v12000 fn = tensor_map_encoder();
  if (fn == nullptr || h % 8 != 0 || !kv_copyable(base, ld, batch_stride, rows, batch)) return false;
  const auto u64 = [](long long v) { return static_cast<cuuint64_t>(v); };
  const cuuint64_t seq_stride = u64(batch > 1 ? batch_stride : ld * rows) * 2;
  const cuuint32_t keys = static_cast<cuuint32_t>(kWgKeys);
  const bool by_head = heads > 0;
  const cuuint64_t dims[4] = {u64(by_head ? h : ld), u64(by_head ? heads : rows), u64(by_head ? rows : batch),
                              u64(batch)};
  const cuuint64_t strides[3] = {u64(by_head ? h : ld) * 2, by_head ? u64(ld) * 2 : seq_stride, seq_stride};
  const cuuint32_t box[4] = {64, by_head ? 1 : keys, by_head ? keys : 1, 1};
  const cuuint32_t elem[4] = {1, 1, 1, 1};
  return fn(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, by_head ? 4 : 3, const_cast<void*>(base), dims, strides, box,
            elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
// The call's four maps (block b's only where it has keys; at head dim 128 block a's only where it
// has some, the kernel never reading an empty block's); false where one cannot be made.
bool encode_maps(const Params& p, CUtensorMap (&maps)[4]) {
  if (wg_head_dim(p.h) == 128) {
    const bool a_ok = p.a_max == 0 ||
                      (encode_kv_map(maps[0], p.ak, p.a_ld, p.a_batch, p.a_max, p.batch, p.h, p.kv_heads) &&
                       encode_kv_map(maps[1], p.av, p.a_ld, p.a_batch, p.a_max, p.batch, p.h, p.kv_heads));
    const bool b_ok = p.b_len == 0 ||
                      (encode_kv_map(maps[2], p.bk, p.b_ld, p.b_batch, p.b_len, p.batch, p.h, p.kv_heads) &&
                       encode_kv_map(maps[3], p.bv, p.b_ld, p.b_batch, p.b_len, p.batch, p.h, p.kv_heads));
    return (p.a_max > 0 || p.b_len > 0) && a_ok && b_ok;
  }
  if (p.h != 256 || !encode_kv_map(maps[0], p.ak, p.a_ld, p.a_batch, p.a_max, p.batch) ||
      !encode_kv_map(maps[1], p.av, p.a_ld, p.a_batch, p.a_max, p.batch)) {
    return false;
  }
  return p.b_len == 0 || (encode_kv_map(maps[2], p.bk, p.b_ld, p.b_batch, p.b_len, p.batch) &&
                          encode_kv_map(maps[3], p.bv, p.b_ld, p.b_batch, p.b_len, p.batch));
}
}  // namespace

bool wg_tma_ready(const Params& p) {
  // The checks encode_maps makes before the driver's, without encoding (launch_wg does that once).
  const bool a_empty_ok = wg_head_dim(p.h) == 128 && p.a_max == 0 && p.b_len > 0;
  return tensor_map_encoder() != nullptr && wg_head_dim(p.h) > 0 &&
         (a_empty_ok ||
          (kv_copyable(p.ak, p.a_ld, p.a_batch, p.a_max, p.batch) && kv_copyable(p.av, p.a_ld, p.a_batch, p.a_max, p.batch))) &&
         (p.b_len == 0 || (kv_copyable(p.bk, p.b_ld, p.b_batch, p.b_len, p.batch) &&
                           kv_copyable(p.bv, p.b_ld, p.b_batch, p.b_len, p.batch)));
}

namespace {
// attn_wg's instance with `groups` warpgroups a block.
template <int HD, bool kTma, bool kB, bool kRoles = false>
const void* instance(int groups, bool ping = false) {
  if constexpr (kRoles) {
    if (groups == 2 && ping) return reinterpret_cast<const void*>(&attn_wg<HD, 2, kTma, kB, true, true>);
  }
  return groups == 2 ? reinterpret_cast<const void*>(&attn_wg<HD, 2, kTma, kB, kRoles>)
                     : reinterpret_cast<const void*>(&attn_wg<HD, 1, kTma, kB, kRoles>);
}

// The producer warp's form at head dim 128, block a alone, with q·kᵀ over 80 dims (head dims 65-80);
// with one warpgroup also in 128-key walk tiles (keys). Two warpgroups and the producer warp get 168
// registers a thread, which 128-key tiles' scores, probabilities and output (160) overrun: ptxas
// spills and serialises the multiplies there, so that pairing is not built.
const void* trimmed_instance(int groups, int roles, int keys) {
  if (groups == 2) {
    return roles == 2 ? reinterpret_cast<const void*>(&attn_wg<128, 2, true, false, true, true, 5>)
                      : reinterpret_cast<const void*>(&attn_wg<128, 2, true, false, true, false, 5>);
  }
  return keys == 2 * kWgKeys ? reinterpret_cast<const void*>(&attn_wg<128, 1, true, false, true, false, 5, 2>)
                             : reinterpret_cast<const void*>(&attn_wg<128, 1, true, false, true, false, 5>);
}

// attn_wg's instance for a launch (roles, trim and keys already fitted to the head dim and copies).
const void* pick_instance(int hd, int groups, bool tma, bool with_b, int roles, bool trim, int keys) {
  if (trim) return trimmed_instance(groups, roles, keys);
  if (hd == 128) {  // bulk copies only
    if (roles > 0) {
      return with_b ? instance<128, true, true, true>(groups, roles == 2)
                    : instance<128, true, false, true>(groups, roles == 2);
    }
    return with_b ? instance<128, true, true>(groups) : instance<128, true, false>(groups);
  }
  if (roles > 0) {  // head dim 256, one warpgroup
    return with_b ? reinterpret_cast<const void*>(&attn_wg<256, 1, true, true, true>)
                  : reinterpret_cast<const void*>(&attn_wg<256, 1, true, false, true>);
  }
  if (!tma) return instance<256, false, false>(groups);
  return with_b ? instance<256, true, true>(groups) : instance<256, true, false>(groups);
}
}  // namespace

cudaError_t launch_wg(const Params& p, dim3 grid, cudaStream_t stream, int groups, bool tma, int roles, bool qk_trim,
                      int keys) {
  CUtensorMap maps[4] = {};
  tma = tma && encode_maps(p, maps);  // else the cp.async form, which has no block b
  const int hd = wg_head_dim(p.h);
  if (!tma && (p.b_len > 0 || hd != 256)) return cudaErrorNotSupported;
  const bool with_b = p.b_len > 0;
  // The producer warp's form: at head dim 128 (turns with two warpgroups), and at 256 with one
  // warpgroup (two warpgroups and the producer warp would not fit the registers).
  if (!tma || (hd == 256 && groups != 1)) roles = 0;
  if (hd == 256) roles = std::min(roles, 1);
  const bool trim = qk_trim && hd == 128 && roles > 0 && !with_b && p.h <= 80;
  // 128-key walk tiles: the trimmed form with one warpgroup and one share (more shares than tiles
  // would leave some empty).
  keys = trim && groups == 1 && keys == 2 * kWgKeys && p.splits == 1 ? keys : kWgKeys;
  const void* fn = pick_instance(hd, groups, tma, with_b, roles, trim, keys);
  const int smem = wg_smem_bytes(groups, tma, hd, keys);
  cudaError_t err = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  Params copy = p;
  void* args[] = {&copy, &maps[0], &maps[1], &maps[2], &maps[3]};
  return launch_untyped(fn, grid, dim3(128 * groups + (roles > 0 ? 32 : 0)), static_cast<std::size_t>(smem), stream, args);
}

}  // namespace edgevla::backends::cuda::attn
