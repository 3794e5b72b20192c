// Flash-style attention of the cuda backend (contract in attention.hpp).
//
// Query rows are stacked per kv head: for kv head g the kernel sees M = rows · group query rows,
// stacked row m being query row m / group of head g · group + m % group, so one K/V tile load
// serves every query head of the group (Gemma's 8 heads share one kv head). A block takes a tile
// of stacked rows of one (sequence, kv head) and walks the key tiles of block a, then block b,
// with an online softmax in f32 (base-2 exponent, the scale folded in). With split keys, block z
// of the grid walks only its share of the key tiles and writes unnormalised partial output plus
// its running max and sum to the scratch; attn_combine merges the shares.
//
// bf16: 4 warps × 16 stacked rows, tensor cores (mma.sync m16n8k16, ldmatrix), K/V tiles double
// buffered in shared memory with cp.async; the head dim is padded to a compile-time HD (zeros).
// When the grid would leave multiprocessors idle (the action expert: 400 stacked rows, a few key
// tiles a share), a block has two such groups of 4 warps over the same 64 rows: group 0 walks
// the share's even tiles, group 1 its odd ones, each with its own buffers and barrier, and the
// two merge their softmax states through shared memory at the end. A share's walk is then half
// as long and each scheduler has two warps to issue from, with no more partials to combine.
// f32: 4 warps × 4 stacked rows, CUDA cores; lane j scores key j of a 32-key tile, then every
// lane accumulates its own output dims.
#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/attention_defaults.hpp"
#include "runtime/backends/cuda/kernels/attention_params.cuh"
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>

namespace edgevla::backends::cuda {
namespace {

using bf16 = __nv_bfloat16;
using namespace attn_defaults;
using namespace ptx;

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kThreads = 128;          // 4 warps: the f32 block, one bf16 key group
constexpr int kBf16Rows = 64;          // stacked query rows per bf16 block (16 per warp)
constexpr int kF32Rows = 16;           // stacked query rows per f32 block (4 per warp)
constexpr int kF32Keys = 32;           // keys per f32 tile (one per lane)
// Shares of the keys at most, and key tiles a share at least: more, shorter shares cost more in
// partials written and merged than their shorter walks save. pi0.5's action expert in the chained
// head on an H200 was fastest with three 32-key tiles a share at both view counts (run 36 call 5:
// 6 shares at 1 view, 0.16 ms a head faster than 9; at 3 views 12 shares, of which the last held
// none, as fast as 16 and 0.25 ms faster than 6).
// Both are build constants so that a build can compare other values
// (-DEDGEVLA_ATTN_MAX_SPLITS=..., -DEDGEVLA_ATTN_MIN_TILES=...).
#ifndef EDGEVLA_ATTN_MAX_SPLITS
#define EDGEVLA_ATTN_MAX_SPLITS 12
#endif
#ifndef EDGEVLA_ATTN_MIN_TILES
#define EDGEVLA_ATTN_MIN_TILES 3
#endif
constexpr int kMaxSplits = EDGEVLA_ATTN_MAX_SPLITS;
// A share of fewer key tiles does not repay its Q load; the variable EDGEVLA_ATTN_MIN_TILES (1-64)
// overrides the build's value at run time, to compare.
int min_tiles_per_split();
constexpr int kNoSplitTiles = 4;  // walks of at most this many key tiles are never split
// Key groups a bf16 block may have (1 or 2); a build may set 1 to compare
// (-DEDGEVLA_ATTN_KEY_GROUPS=1: every block one group of 4 warps).
#ifndef EDGEVLA_ATTN_KEY_GROUPS
#define EDGEVLA_ATTN_KEY_GROUPS 2
#endif
constexpr int kMostKeyGroups = EDGEVLA_ATTN_KEY_GROUPS;
static_assert(kMostKeyGroups == 1 || kMostKeyGroups == 2, "EDGEVLA_ATTN_KEY_GROUPS is 1 or 2");
// Wide blocks at head dim 256: 8 warps over 128 stacked rows walking every key tile together (one
// key group), so that each K/V tile loaded serves twice the rows. With many row tiles (Gemma's
// prefix: 8 heads over one kv head, 58 blocks of 64 rows at one view, 122 at three) every block
// reads all of K and V, ~120 MB from L2 a call at three views. A build compares them with
// -DEDGEVLA_ATTN_WIDE_ROWS=N, or the variable of that name at run time: wide blocks wherever the
// 64-row plan has at least N blocks (0, the default: never; no faster on the H200, run 38).
#ifndef EDGEVLA_ATTN_WIDE_ROWS
#define EDGEVLA_ATTN_WIDE_ROWS 0
#endif
int wide_from_default() {
  static const int from = env_int("EDGEVLA_ATTN_WIDE_ROWS", EDGEVLA_ATTN_WIDE_ROWS, 0, 1 << 20);
  return from;
}
// Narrow blocks (AttentionArgs::narrow): 2 warps a key group, 32 stacked rows a block. Unasked,
// EDGEVLA_ATTN_NARROW picks them: 0 never, 1 wherever they apply, 2 (the default) where the
// 64-row blocks fill at most half of the multiprocessors. On the H200 (run 43 call 6, with 1):
// pi0.5's head 6.37, 6.39 against 6.50, 6.51 ms at one view, 6.57, 6.58 against 6.82, 6.91 at
// three; SigLIP 7.9 against 8.6 µs at one view (64 blocks) but 13.1 against 12.6 at three (192),
// which 2 leaves out. Run 44 call 1 (0 / 2 / 1 alternated twice): pi0.5's head 6.53, 6.49 /
// 6.34, 6.34 / 6.34, 6.34 ms at one view, 6.88, 6.81 / 6.53, 6.53 / 6.52, 6.53 at three; GR00T's
// within 0.01 ms either way; the GPU suite passes with 2.
constexpr int kNarrowWarps = 2;
int min_tiles_per_split() {
  static const int n = env_int("EDGEVLA_ATTN_MIN_TILES", EDGEVLA_ATTN_MIN_TILES, 1, 64);
  return n;
}
// EDGEVLA_ATTN_WG_SHARES=N (1-12): the warpgroup kernel's key shares fixed at N (where the scratch
// allows), to compare share counts; unset: the plan's rule.
int wg_shares_asked() {
  static const int n = env_int("EDGEVLA_ATTN_WG_SHARES", 0, 1, kMaxSplits);
  return n;
}
// EDGEVLA_ATTN_WG_SHARE_TILES=N (2-8, default 3): the warpgroup kernel's rule splits the keys only
// into shares of at least N 64-key tiles. At 2, GR00T's LLM at two views (224 keys, four tiles) ran
// in two shares plus the combine: 7.145, 7.180 ms E2E against 7.123, 7.124 unsplit (run 61 call 1).
int wg_share_tiles() {
  static const int n = env_int("EDGEVLA_ATTN_WG_SHARE_TILES", 3, 2, 8);
  return n;
}
constexpr int kWideWarps = 8;  // warps of a wide block (16 stacked rows each)

using attn::b_visible;
using attn::clamped_a_len;
using attn::o_offset;
using attn::Params;
using attn::part_row;
using attn::q_offset;
using attn::split_range;
using attn::walk_tile;

#include "runtime/backends/cuda/kernels/attention_bf16.cuh"

#include "runtime/backends/cuda/kernels/attention_f32.cuh"
#include "runtime/backends/cuda/kernels/attention_combine.cuh"

// Host side -------------------------------------------------------------------------------------


Status cuda_error(cudaError_t err, const char* what) {
  return internal_error(std::string("attention: ") + what + ": " + cudaGetErrorName(err) + " (" +
                        cudaGetErrorString(err) + ")");
}

// Keys per tile at head dim 256 (Gemma): 32 by default; a build may set 64 to compare
// (-DEDGEVLA_ATTN_HD256_KEYS=64: fewer, larger tiles; 169 KB of shared memory a block).
#ifndef EDGEVLA_ATTN_HD256_KEYS
#define EDGEVLA_ATTN_HD256_KEYS 32
#endif
constexpr int kHd256Keys = EDGEVLA_ATTN_HD256_KEYS;

// The bf16 kernel instantiation for a head dim (padded width, key tile, key groups): its key
// tile, entry point and shared memory.
struct Bf16Variant {
  int bk;
  const void* fn;
  int smem;
  int rows = kBf16Rows;     // stacked rows a block
  int threads = kThreads;   // a block's threads
};

// RW: warps a key group (4: 64 stacked rows a block; kNarrowWarps: 32).
template <int HD, int BK, int RW = 4>
Bf16Variant bf16_variant(int key_groups) {
  if (kMostKeyGroups > 1 && key_groups == 2) {
    using Tile = Bf16Tile<HD, BK, kMostKeyGroups, RW>;
    return {BK, reinterpret_cast<const void*>(&attn_bf16<HD, BK, kMostKeyGroups, RW>), Tile::kSmem, Tile::kRows,
            kMostKeyGroups * Tile::kGroupThreads};
  }
  using Tile = Bf16Tile<HD, BK, 1, RW>;
  return {BK, reinterpret_cast<const void*>(&attn_bf16<HD, BK, 1, RW>), Tile::kSmem, Tile::kRows, Tile::kGroupThreads};
}

// Head dim 256's wide block (kWideWarps warps over 128 rows, one key group).
Bf16Variant wide_variant() {
  using Tile = Bf16Tile<256, kHd256Keys, 1, kWideWarps>;
  return {kHd256Keys, reinterpret_cast<const void*>(&attn_bf16<256, kHd256Keys, 1, kWideWarps>), Tile::kSmem,
          Tile::kRows, Tile::kGroupThreads};
}

// small_tiles: head dim 256 in 16-key tiles (68 KB a block with one key group instead of
// 101 KB), for devices that give a block less shared memory (Ampere and Ada parts: 99 KB).
// short_keys: Plan::short_keys (head dims up to 48 only).
Bf16Variant pick_bf16(std::int64_t h, int key_groups, bool small_tiles = false, bool short_keys = false) {
  if (short_keys && h <= 48) return bf16_variant<48, 32>(key_groups);
  if (h <= 48 && hd48_on()) return bf16_variant<48, 64>(key_groups);
  if (h <= 64) return bf16_variant<64, 64>(key_groups);
  if (h <= 80) return bf16_variant<80, 64>(key_groups);
  if (h <= 96) return bf16_variant<96, 64>(key_groups);
  if (h <= 128) return bf16_variant<128, 64>(key_groups);
  if (h <= 160) return bf16_variant<160, 32>(key_groups);
  if (h <= 192) return bf16_variant<192, 32>(key_groups);
  if (small_tiles) return bf16_variant<256, 16>(key_groups);
  return bf16_variant<256, kHd256Keys>(key_groups);
}

// The narrow blocks of a head dim (AttentionArgs::narrow), built for the vision towers' 72 (80),
// GR00T's DiT (48) and LLM (128) and the Gemma experts' 256; fn is null for the others.
Bf16Variant pick_narrow(std::int64_t h, int key_groups, bool short_keys = false) {
  if (short_keys && h <= 48) return bf16_variant<48, 32, kNarrowWarps>(key_groups);
  if (h <= 48 && hd48_on()) return bf16_variant<48, 64, kNarrowWarps>(key_groups);
  if (h <= 64) return bf16_variant<64, 64, kNarrowWarps>(key_groups);
  if (h <= 80) return bf16_variant<80, 64, kNarrowWarps>(key_groups);
  if (h > 96 && h <= 128) return bf16_variant<128, 64, kNarrowWarps>(key_groups);
  if (h > 192) return bf16_variant<256, kHd256Keys, kNarrowWarps>(key_groups);
  return Bf16Variant{0, nullptr, 0};
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Launch shape of one call.
struct Plan {
  std::int64_t m_rows = 0;     // stacked rows per kv head
  std::int64_t row_tiles = 0;  // blocks along x
  bool wide = false;           // bf16 head dim 256: wide_variant()'s 128-row blocks
  bool narrow = false;         // bf16: pick_narrow()'s 32-row blocks
  bool wg = false;             // bf16 head dim 256: attention_wg.cu's kernel
  int wg_groups = 0;           // its warpgroups a block
  bool wg_tma = false;         // its K and V by bulk tensor copies
  int wg_roles = 0;            // its copies from a producer warp (kRoles); head dim 128: 2 also turns (kPing)
  bool wg_qk_trim = false;     // ... with q·kᵀ over 80 dims where the head has at most 80
  int wg_keys = 64;            // ... in walk tiles of this many keys (128: one warpgroup, one share)
  int key_tile = 0;
  int splits = 1;
  int key_groups = 1;           // bf16: groups of 4 warps a block
  bool small_tiles = false;     // bf16: pick_bf16's small_tiles
  bool short_keys = false;      // bf16: a walk of at most 32 keys in 32-key tiles (short_keys_on)
  bool cluster = false;         // bf16 with shares: the shares merge in a cluster (no attn_combine)
  std::size_t split_bytes = 0;  // scratch per split
};

// What the plan needs of the device: its multiprocessors and the shared memory a block may have.
struct DeviceLimits {
  int sms = 0;
  int smem_per_block = 0;  // opt-in maximum, bytes
  int major = 0, minor = 0;  // compute capability
};

Plan make_plan(const AttentionArgs& a, const DeviceLimits& dev, std::size_t scratch_bytes) {
  const int sms = dev.sms;
  Plan pl;
  pl.m_rows = a.rows * (a.heads / a.kv_heads);
  const bool bf = a.act == DType::kBF16;
  pl.row_tiles = ceil_div(pl.m_rows, bf ? kBf16Rows : kF32Rows);
  pl.small_tiles = bf && pick_bf16(a.h, 1).smem > dev.smem_per_block;
  const bool short_asked = a.short_keys >= 0 ? a.short_keys > 0 : short_keys_on();
  pl.short_keys = short_asked && bf && !pl.small_tiles && a.h <= 48 && a.a_max + a.b_len <= 32;
  pl.key_tile = bf ? pick_bf16(a.h, 1, pl.small_tiles, pl.short_keys).bk : kF32Keys;
  pl.split_bytes = static_cast<std::size_t>(a.batch * a.kv_heads * pl.m_rows * (a.h + 2)) * sizeof(float);
  const std::int64_t blocks64 = pl.row_tiles * a.batch * a.kv_heads;  // at 64 rows a block
  std::int64_t blocks = blocks64;
  const std::int64_t tiles = ceil_div(a.a_max, pl.key_tile) + ceil_div(a.b_len, pl.key_tile);
  const std::int64_t most = static_cast<std::int64_t>(scratch_bytes / pl.split_bytes);
  // Narrow blocks (AttentionArgs::narrow): the same rules over blocks of 32 rows.
  const bool narrow_asked = a.narrow >= 0 ? a.narrow > 0
                                          : narrow_mode() == 1 || (narrow_mode() == 2 && 2 * blocks64 <= sms);
  const Bf16Variant narrow = narrow_asked && bf && !pl.small_tiles ? pick_narrow(a.h, 1, pl.short_keys) : Bf16Variant{};
  if (narrow.fn != nullptr && narrow.smem <= dev.smem_per_block) {
    pl.narrow = true;
    pl.row_tiles = ceil_div(pl.m_rows, narrow.rows);
    blocks = pl.row_tiles * a.batch * a.kv_heads;
  }
  // Two key groups a block fit the device (Orin's 163 KB is less than head dim 256 needs with two).
  const bool two_fit = bf && kMostKeyGroups == 2 &&
                       (pl.narrow ? pick_narrow(a.h, 2, pl.short_keys) : pick_bf16(a.h, 2, pl.small_tiles, pl.short_keys))
                               .smem <= dev.smem_per_block;
  std::int64_t want = 1;
  if (two_fit && blocks <= sms) {
    // One wave of two-group blocks (a multiprocessor holds one): as many shares as keep the
    // blocks within one wave. A walk of a few tiles is not split: the combine costs more than
    // the shorter shares save (GR00T's LLM and cross-attention, 3 tiles: 8.9 against 9.5 µs,
    // 6.1 against 6.5). Against two one-group blocks a multiprocessor, this was faster wherever
    // the two differ (pi0.5's prefix: 21.9 against 23.8 µs at 1 view, 48.5 against 51.7 at 3;
    // run 29).
    if (tiles > kNoSplitTiles) {
      want = std::min<std::int64_t>({sms / blocks, ceil_div(tiles, min_tiles_per_split()), kMaxSplits});
    }
  } else if (blocks < 2 * static_cast<std::int64_t>(sms)) {
    // Aim at one wave of two blocks per multiprocessor (both kernels fit two per multiprocessor):
    // with one, a lone warp per scheduler leaves every latency exposed.
    want = std::min<std::int64_t>({2 * static_cast<std::int64_t>(sms) / blocks, ceil_div(tiles, min_tiles_per_split()),
                                   kMaxSplits});
  }
  if (a.shares > 0) want = std::min<std::int64_t>(a.shares, kMaxSplits);
  pl.splits = static_cast<int>(std::max<std::int64_t>(1, std::min(want, most)));
  // Two key groups a block when the blocks fit one wave and a share has a tile for each. The
  // shares stay as they are: making them an even number of tiles (fewer, longer shares) was
  // slower (pi0.5's expert at 3 views, run 28). Two key groups at two blocks a multiprocessor
  // (GR00T's tower at two views: 192 blocks of 64 rows) were no faster than one (run 54 call 2),
  // nor were 128-row blocks with two row tiles a warp (half the K/V fragment loads a row; 16.8
  // against 15.9 µs, run 54 call 3).
  if (two_fit && blocks * pl.splits <= sms && ceil_div(tiles, pl.splits) >= 2) pl.key_groups = 2;
  if (a.key_groups > 0) pl.key_groups = a.key_groups == 2 && two_fit && ceil_div(tiles, pl.splits) >= 2 ? 2 : 1;
  // The warpgroup kernel (AttentionArgs::wg): 64 rows a warpgroup, one or two a block, 64-key
  // tiles; the shares fill one wave of one block a multiprocessor, none shorter than two tiles.
  // Unasked, it runs with one warpgroup a block and K/V by bulk tensor copies wherever the K/V
  // strides allow those copies (run 39: 33.5 against attn_bf16's 48.5 µs for pi0.5's 3-view
  // prefix, 17.5 against 22.2 at one view); its cp.async form is slower than attn_bf16 and runs
  // only when asked for. Calls with block b (the action experts) take it only in the bulk-copy
  // form, and unasked only with EDGEVLA_ATTN_WG_EXPERT=1.
  const bool wg_tma = a.wg_tma >= 0 ? a.wg_tma > 0 : wg_tma_default();
  const auto copyable = [&](const KvBlock& kv) { return kv.ld % 8 == 0 && (a.batch == 1 || kv.batch % 8 == 0); };
  const bool tma_ok = wg_tma && copyable(a.a) && (a.b_len == 0 || copyable(a.b));
  const int wg_asked = a.wg >= 0 ? a.wg : wg_env();
  const bool wg_auto = tma_ok && (a.b_len == 0 || wg_expert_default());
  // Head dims 65-128 (AttentionArgs::wg_narrow): at head dim 128 (the dims past h zero), in the
  // bulk-copy form; with block b only where asked (AttentionArgs::wg_narrow_b), block a then
  // possibly empty (GR00T's LLM).
  const int wg128_asked = a.wg_narrow >= 0 ? a.wg_narrow : wg128_env();
  const std::int64_t one_wg_blocks = ceil_div(pl.m_rows, attn::wg_rows(1)) * a.batch * a.kv_heads;
  const int wg128_groups = wg128_asked == 3 ? (one_wg_blocks <= sms ? 1 : 2) : std::clamp(wg128_asked, 0, 2);
  const bool wg128_b = a.wg_narrow_b >= 0 ? a.wg_narrow_b > 0 : wg128_b_env();
  const bool hd128 = attn::wg_head_dim(a.h) == 128 && wg128_groups > 0 && (a.b_len == 0 || wg128_b) && tma_ok;
  // With block b (GR00T's LLM: 144-224 rows) one warpgroup a block unless asked otherwise: 9.5-9.6
  // against 10.6-10.8 µs with two at two views (run 57 calls 3-4, the producer warp's form).
  const int wg128_b_groups = a.b_len > 0 && a.wg_narrow < 0 ? std::min(wg128_groups, 1) : wg128_groups;
  const int wg_groups =
      hd128 ? wg128_b_groups : std::clamp(wg_asked >= 0 ? wg_asked : (wg_auto ? 1 : 0), 0, 2);
  const bool wg_form_tma = hd128 || wg_tma;
  if (wg_groups > 0 && a.rope == nullptr && bf && (hd128 || (a.h == 256 && (a.b_len == 0 || tma_ok))) &&
      (a.a_max > 0 || (hd128 && a.b_len > 0)) &&
      dev.major == 9 && dev.minor == 0 && attn::wg_built() &&
      attn::wg_smem_bytes(wg_groups, wg_form_tma, attn::wg_head_dim(a.h)) <= dev.smem_per_block) {
    pl.wg = true;
    pl.narrow = false;
    pl.wg_groups = wg_groups;
    pl.wg_tma = wg_form_tma;
    if (hd128) {
      pl.wg_roles = std::clamp(a.wg_roles >= 0 ? a.wg_roles : wg_roles_env(), 0, 2);
      pl.wg_qk_trim = a.h <= 80 && a.b_len == 0 && (a.wg_qk_trim >= 0 ? a.wg_qk_trim > 0 : qk_trim_env());
      pl.wg_keys = a.wg_keys >= 0 ? a.wg_keys : wg_keys_env();
    } else if (wg_form_tma && wg_groups == 1) {
      pl.wg_roles = std::clamp(a.wg_roles >= 0 ? a.wg_roles : (wg256_roles_env() ? 1 : 0), 0, 1);
    }
    pl.key_groups = 1;
    pl.key_tile = attn::kWgKeys;
    pl.row_tiles = ceil_div(pl.m_rows, attn::wg_rows(pl.wg_groups));
    const std::int64_t wg_blocks = pl.row_tiles * a.batch * a.kv_heads;
    const std::int64_t wg_tiles = ceil_div(a.a_max, attn::kWgKeys) + ceil_div(a.b_len, attn::kWgKeys);
    std::int64_t shares = 1;
    const std::int64_t share_tiles = wg_share_tiles();
    if (wg_blocks < sms && wg_tiles >= 2 * share_tiles) {
      shares = std::min<std::int64_t>({sms / wg_blocks, wg_tiles / share_tiles, kMaxSplits});
    }
    if (const int asked = wg_shares_asked(); asked > 0) shares = std::min<std::int64_t>({asked, wg_tiles, kMaxSplits});
    pl.splits = static_cast<int>(std::max<std::int64_t>(1, std::min(shares, most)));
    return pl;
  }
  // Wide blocks (AttentionArgs::wide_from): 128 rows a block in one key group, the shares again
  // filling one wave.
  const int wide_from = a.wide_from >= 0 ? a.wide_from : wide_from_default();
  const Bf16Variant wide = wide_variant();
  if (wide_from > 0 && bf && a.h > 192 && !pl.small_tiles && blocks64 >= wide_from && wide.smem <= dev.smem_per_block) {
    pl.wide = true;
    pl.narrow = false;
    pl.key_groups = 1;
    pl.row_tiles = ceil_div(pl.m_rows, wide.rows);
    const std::int64_t wide_blocks = pl.row_tiles * a.batch * a.kv_heads;
    std::int64_t shares = 1;
    if (wide_blocks <= sms && tiles > kNoSplitTiles) {
      shares = std::min<std::int64_t>({sms / wide_blocks, ceil_div(tiles, min_tiles_per_split()), kMaxSplits});
    }
    pl.splits = static_cast<int>(std::max<std::int64_t>(1, std::min(shares, most)));
  }
  // The bf16 shares of a row tile as one cluster that merges them itself (AttentionArgs::cluster;
  // compute capability 9.0+, at most 16 shares); attention() still checks that the device holds
  // every cluster of the call at once, else it writes partials for attn_combine.
  const bool cluster_asked = a.cluster >= 0 ? a.cluster > 0 : cluster_default();
  pl.cluster = cluster_asked && bf && pl.splits > 1 && pl.splits <= kClusterMostShares && dev.major >= 9;
  return pl;
}

// The bf16 kernel a plan launches.
Bf16Variant variant_of(const Plan& pl, std::int64_t h) {
  if (pl.wide) return wide_variant();
  if (pl.narrow) return pick_narrow(h, pl.key_groups, pl.short_keys);
  return pick_bf16(h, pl.key_groups, pl.small_tiles, pl.short_keys);
}

// The bf16 kernel v launched on `grid` with each (row tile, sequence · kv head)'s shares as one
// cluster along z (chained as launch_untyped is).
cudaError_t launch_clustered(const Bf16Variant& v, dim3 grid, cudaStream_t stream, void** args) {
  cudaLaunchAttribute attributes[2]{};
  cudaLaunchConfig_t config =
      chain_config(grid, dim3(static_cast<unsigned>(v.threads)), static_cast<std::size_t>(v.smem), stream, &attributes[0]);
  add_cluster(config, attributes, dim3(1, 1, grid.z));
  return cudaLaunchKernelExC(&config, v.fn, args);
}

// Shares as clusters only where the device holds every cluster of the call at once (a second
// wave of them would cost more than attn_combine saves).
bool clusters_ready(const Bf16Variant& v, dim3 grid, const DeviceLimits& dev) {
  return v.fn != nullptr && v.smem <= dev.smem_per_block &&
         clusters_resident(v.fn, static_cast<unsigned>(v.threads), v.smem, dim3(1, 1, grid.z)) >=
             static_cast<int>(grid.x * grid.y);
}

Status device_limits(DeviceLimits& limits) {
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return cuda_error(err, "cudaGetDevice");
  err = cudaDeviceGetAttribute(&limits.sms, cudaDevAttrMultiProcessorCount, dev);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&limits.smem_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  }
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&limits.major, cudaDevAttrComputeCapabilityMajor, dev);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&limits.minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (err != cudaSuccess) return cuda_error(err, "cudaDeviceGetAttribute");
  return Status::ok();
}

Status validate(const AttentionArgs& a) {
  if (!is_activation_dtype(a.act)) return invalid_argument("attention: act must be f32 or bf16");
  if (a.batch < 0 || a.rows < 0 || a.heads <= 0 || a.kv_heads <= 0 || a.heads % a.kv_heads != 0) {
    return invalid_argument("attention: bad batch/rows/heads/kv_heads (heads must be a multiple of kv_heads)");
  }
  if (a.h < 8 || a.h > 256 || a.h % 8 != 0) return invalid_argument("attention: h must be a multiple of 8 in [8, 256]");
  if (a.a_max < 0 || a.b_len < 0 || a.a_max > (1 << 30) || a.b_len > (1 << 30)) {
    return invalid_argument("attention: bad a_max/b_len");
  }
  if (a.q == nullptr || a.out == nullptr) return invalid_argument("attention: q and out are required");
  if (a.wg_keys != -1 && a.wg_keys != 64 && a.wg_keys != 128) {
    return invalid_argument("attention: wg_keys is " + std::to_string(a.wg_keys) +
                            "; give 64, 128 or -1 (the process's choice)");
  }
  if (a.rope != nullptr && (a.act != DType::kBF16 || a.h % 2 != 0)) {
    return invalid_argument("attention: RoPE inside the call needs bf16 activations; rotate q and k with rope() first");
  }
  if (a.a_max > 0 && (a.a.k == nullptr || a.a.v == nullptr)) return invalid_argument("attention: block a needs k and v");
  if (a.b_len > 0 && (a.b.k == nullptr || a.b.v == nullptr)) return invalid_argument("attention: block b needs k and v");
  if (a.ldq < a.heads * a.h || a.ldo < a.heads * a.h || (a.a_max > 0 && a.a.ld < a.kv_heads * a.h) ||
      (a.b_len > 0 && a.b.ld < a.kv_heads * a.h)) {
    return invalid_argument("attention: a row stride is shorter than its row");
  }
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  auto stride_ok = [](std::int64_t s) { return s >= 0 && s % 8 == 0; };
  if (!aligned(a.q) || !aligned(a.out) || !aligned(a.a.k) || !aligned(a.a.v) || !aligned(a.b.k) || !aligned(a.b.v) ||
      !aligned(a.scratch) || !aligned(a.rope)) {
    return invalid_argument("attention: q, out, k, v, scratch and the RoPE table must be 16-byte aligned");
  }
  if (!stride_ok(a.ldq) || !stride_ok(a.q_batch) || !stride_ok(a.ldo) || !stride_ok(a.o_batch) ||
      !stride_ok(a.a.ld) || !stride_ok(a.a.batch) || !stride_ok(a.b.ld) || !stride_ok(a.b.batch)) {
    return invalid_argument("attention: strides must be non-negative multiples of 8 elements");
  }
  return Status::ok();
}

}  // namespace

namespace {
// The scratch a call of `args` takes on a device of these limits (0 where it never splits or is
// invalid).
std::size_t scratch_on(const AttentionArgs& args, const DeviceLimits& dev) {
  if (args.heads <= 0 || args.kv_heads <= 0 || args.heads % args.kv_heads != 0 || args.rows <= 0 || args.batch <= 0 ||
      args.h < 8 || args.h > 256 || args.h % 8 != 0 || !is_activation_dtype(args.act)) {
    return 0;
  }
  const Plan pl = make_plan(args, dev, static_cast<std::size_t>(-1));
  return pl.splits > 1 ? pl.split_bytes * static_cast<std::size_t>(pl.splits) : 0;
}
}  // namespace

std::size_t attention_scratch_bytes(const AttentionArgs& args) {
  DeviceLimits dev;
  if (!device_limits(dev).is_ok()) return 0;
  return scratch_on(args, dev);
}

std::size_t attention_scratch_bytes_upto(const AttentionArgs& args, std::int64_t step) {
  DeviceLimits dev;  // asked once for the whole family
  if (step < 1 || args.rows <= 0 || args.batch <= 0 || !device_limits(dev).is_ok()) return 0;
  std::size_t most = 0;
  for (std::int64_t b = 1; b <= args.batch; ++b) {
    for (std::int64_t r = std::min(step, args.rows);; r = std::min(r + step, args.rows)) {
      AttentionArgs a = args;
      a.batch = b;
      a.rows = r;
      if (args.a_max == args.rows) a.a_max = r;
      if (args.b_len == args.rows) a.b_len = r;
      most = std::max(most, scratch_on(a, dev));
      if (r == args.rows) break;
    }
  }
  return most;
}

namespace {
// The plan a call of `args` gets on this device (with the scratch it names), for the queries
// below; false where the call is invalid, empty or no device answers.
bool plan_of(const AttentionArgs& args, Plan& pl, DeviceLimits& dev) {
  if (!validate(args).is_ok() || args.batch == 0 || args.rows == 0) return false;
  if (!device_limits(dev).is_ok()) return false;
  pl = make_plan(args, dev, args.scratch == nullptr ? 0 : args.scratch_bytes);
  return true;
}
}  // namespace

bool attention_takes_warpgroup_kernel(const AttentionArgs& args) {
  Plan pl;
  DeviceLimits dev;
  return plan_of(args, pl, dev) && pl.wg;
}

bool attention_takes_narrow_blocks(const AttentionArgs& args) {
  Plan pl;
  DeviceLimits dev;
  return plan_of(args, pl, dev) && pl.narrow;
}

AttentionShape attention_launch_shape(const AttentionArgs& args) {
  Plan pl;
  DeviceLimits dev;
  if (!plan_of(args, pl, dev)) return {};
  return {pl.key_groups, pl.splits};
}

bool attention_takes_short_keys(const AttentionArgs& args) {
  Plan pl;
  DeviceLimits dev;
  return plan_of(args, pl, dev) && pl.short_keys;
}

bool attention_merges_in_clusters(const AttentionArgs& args) {
  Plan pl;
  DeviceLimits dev;
  if (!plan_of(args, pl, dev) || !pl.cluster || pl.wg || args.act != DType::kBF16) return false;
  const Bf16Variant v = variant_of(pl, args.h);
  const dim3 grid(static_cast<unsigned>(pl.row_tiles), static_cast<unsigned>(args.batch * args.kv_heads),
                  static_cast<unsigned>(pl.splits));
  return clusters_ready(v, grid, dev);
}

Status attention(cudaStream_t stream, const AttentionArgs& args) {
  EDGEVLA_RETURN_IF_ERROR(validate(args));
  if (args.batch == 0 || args.rows == 0) return Status::ok();
  DeviceLimits dev;
  EDGEVLA_RETURN_IF_ERROR(device_limits(dev));
  const std::size_t scratch_bytes = args.scratch == nullptr ? 0 : args.scratch_bytes;
  Plan pl = make_plan(args, dev, scratch_bytes);
  if (pl.row_tiles > 0x7fffffff || args.batch * args.kv_heads > 65535) {
    return invalid_argument("attention: too many rows or sequences × kv heads for one launch");
  }

  Params p{};
  p.q = args.q;
  p.out = args.out;
  p.ldq = args.ldq;
  p.q_batch = args.q_batch;
  p.ldo = args.ldo;
  p.o_batch = args.o_batch;
  p.ak = args.a.k;
  p.av = args.a.v;
  p.a_ld = args.a.ld;
  p.a_batch = args.a.batch;
  p.bk = args.b.k;
  p.bv = args.b.v;
  p.b_ld = args.b.ld;
  p.b_batch = args.b.batch;
  p.a_len = args.a_max > 0 ? args.a_len : nullptr;
  p.b_limit = args.b_len > 0 ? args.b_limit : nullptr;
  p.a_max = static_cast<int>(args.a_max);
  p.b_len = static_cast<int>(args.b_len);
  p.rows = static_cast<int>(args.rows);
  p.kv_heads = static_cast<int>(args.kv_heads);
  p.group = static_cast<int>(args.heads / args.kv_heads);
  p.h = static_cast<int>(args.h);
  p.m_rows = static_cast<int>(pl.m_rows);
  p.batch = static_cast<int>(args.batch);
  p.scale_log2 = args.scale * kLog2e;
  p.a_constant = args.a_constant;
  p.rotate = args.rotate >= 0 ? args.rotate > 0 : rotate_default();
  p.rope = reinterpret_cast<const float2*>(args.rope);
  // The warpgroup kernel's bulk copies need 16-byte aligned bases, which the plan (made from the
  // shapes alone) cannot see: where they are not, a call with block b or an unasked one runs on
  // attn_bf16 (re-planned within the same scratch), an asked one on the cp.async form.
  if (pl.wg && pl.wg_tma && !attn::wg_tma_ready(p) &&
      (args.b_len > 0 || args.h != 256 || (args.wg < 0 && wg_env() < 0))) {
    AttentionArgs plain = args;
    plain.wg = 0;
    plain.wg_narrow = 0;
    pl = make_plan(plain, dev, scratch_bytes);
  }
  p.splits = pl.splits;
  if (pl.splits > 1) {
    p.part_o = static_cast<float*>(args.scratch);
    p.part_ml = p.part_o + static_cast<std::size_t>(pl.splits) * args.batch * args.kv_heads * pl.m_rows * args.h;
  }

  const dim3 grid(static_cast<unsigned>(pl.row_tiles), static_cast<unsigned>(args.batch * args.kv_heads),
                  static_cast<unsigned>(pl.splits));
  void* kargs[] = {&p};
  const Bf16Variant variant = args.act == DType::kBF16 && !pl.wg ? variant_of(pl, args.h) : Bf16Variant{};
  if (pl.cluster) {
    pl.cluster = clusters_ready(variant, grid, dev);
  }
  p.cluster = pl.cluster;
  if (pl.wg) {
    const cudaError_t err =
        attn::launch_wg(p, grid, stream, pl.wg_groups, pl.wg_tma, pl.wg_roles, pl.wg_qk_trim, pl.wg_keys);
    if (err != cudaSuccess) return cuda_error(err, "launch attn_wg");
  } else if (args.act == DType::kBF16) {
    const Bf16Variant& v = variant;
    if (v.smem > dev.smem_per_block) {
      return failed_precondition("attention: head dim " + std::to_string(args.h) + " needs " +
                                 std::to_string(v.smem / 1024) + " KB of shared memory a block and this device gives " +
                                 std::to_string(dev.smem_per_block / 1024) +
                                 " KB; run the stage on another backend (backend: [cuda, cpu])");
    }
    cudaError_t err = cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem);
    if (err != cudaSuccess) return cuda_error(err, "cudaFuncSetAttribute(attn_bf16)");
    err = pl.cluster ? launch_clustered(v, grid, stream, kargs)
                     : launch_untyped(v.fn, grid, dim3(static_cast<unsigned>(v.threads)),
                                      static_cast<std::size_t>(v.smem), stream, kargs);
    if (err != cudaSuccess) return cuda_error(err, "launch attn_bf16");
  } else {
    const int smem = f32_smem_floats(p.h) * static_cast<int>(sizeof(float));
    cudaError_t err = cudaFuncSetAttribute(reinterpret_cast<const void*>(&attn_f32),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (err != cudaSuccess) return cuda_error(err, "cudaFuncSetAttribute(attn_f32)");
    launch(&attn_f32, grid, dim3(kThreads), static_cast<std::size_t>(smem), stream, p);
    err = cudaGetLastError();
    if (err != cudaSuccess) return cuda_error(err, "launch attn_f32");
  }
  if (pl.splits > 1 && !pl.cluster) {
    const long long total = static_cast<long long>(args.batch) * args.kv_heads * pl.m_rows * (args.h / 4);
    const unsigned blocks = static_cast<unsigned>(ceil_div(total, kCombineThreads));
    if (args.act == DType::kBF16) {
      launch_combine<bf16>(pl.splits, blocks, stream, p);
    } else {
      launch_combine<float>(pl.splits, blocks, stream, p);
    }
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return cuda_error(err, "launch attn_combine");
  }
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
