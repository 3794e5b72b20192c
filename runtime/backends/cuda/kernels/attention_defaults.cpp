// The attention plan's environment defaults (attention_defaults.hpp).
#include "runtime/backends/cuda/kernels/attention_defaults.hpp"

#include <cstdio>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda::attn_defaults {

// Head dims up to 48 (GR00T's DiT) on their own 48-wide instance; EDGEVLA_ATTN_HD48=0 pads them
// to 64 as before run 44, to compare.
bool hd48_on() {
  static const bool on = env_int("EDGEVLA_ATTN_HD48", 1, 0, 1) == 1;
  return on;
}
// AttentionArgs::short_keys unasked: walks of at most 32 keys at head dims up to 48 (GR00T's DiT
// self-attention, 17 keys) in one 32-key tile instead of a 64-key one with 47 masked keys, with
// EDGEVLA_ATTN_SHORT_KEYS=1 (off until measured on a GPU).
bool short_keys_on() {
  static const bool on = env_int("EDGEVLA_ATTN_SHORT_KEYS", 0, 0, 1) == 1;
  return on;
}
// EDGEVLA_ATTN_NARROW (0, 1, 2 by default): the rule for unasked narrow blocks (attention.cu, at
// kNarrowWarps, says what each value does and what the H200 measured).
int narrow_mode() {
  static const int mode = env_int("EDGEVLA_ATTN_NARROW", 2, 0, 2);
  return mode;
}
// Head dims 65-128 on the warpgroup kernel (AttentionArgs::wg_narrow = -1): EDGEVLA_ATTN_WG128=1 or
// 2 (the default) warpgroups a block; 0 never. Against attn_bf16 in the engines (run 54 call 5,
// run 55 call 1, alternated twice): GR00T E2E 6.64 / 7.33 ms with 2 against 6.67-6.70 / 7.39-7.41
// (1 / 2 views), 6.64 / 7.37 with 1; pi0.5 10.52 / 14.63 against 10.63 / 14.75. The kernel bench
// alone (back to back in a graph) favours attn_bf16 at one view (GR00T's tower 10.9 against 11.5
// µs), the engines do not; the GPU suite passed with 2 (run 55 call 1).
// 3 (the default since run 61): one warpgroup a block where there are no more such blocks than
// multiprocessors, else two. The towers at one view (96 blocks GR00T, 64 pi0.5) ran 0.04 / 0.05 ms
// faster E2E on one (run 61 call 4); at two views (192 blocks) one ran no faster (call 1).
int wg128_env() {
  static const int groups = env_int("EDGEVLA_ATTN_WG128", 3, 0, 3);
  return groups;
}
// The same for calls with block b (AttentionArgs::wg_narrow_b = -1): EDGEVLA_ATTN_WG128_B=1 (the
// default since run 58), 0 for attn_bf16. GR00T's LLM at two views, one warpgroup a block with the
// producer warp: 9.61 against attn_bf16's 9.95 µs (run 58 call 1); GR00T E2E 6.579, 6.536 / 7.240,
// 7.188 ms against 6.597, 6.637 / 7.215, 7.291 with it off (alternated twice).
bool wg128_b_env() {
  static const bool on = env_int("EDGEVLA_ATTN_WG128_B", 1, 0, 1) == 1;
  return on;
}
// Head dims 65-128 on the warpgroup kernel with a producer warp issuing the copies and no block
// barrier inside the walk (AttentionArgs::wg_roles = -1): EDGEVLA_ATTN_WG_ROLES=1, and with the two
// warpgroups taking turns at issuing their multiplies =2 (the default); 0 thread 0 copying between
// block barriers. Run 57 call 3 (1 against 0): GR00T's two-view tower 13.37 against
// 14.30 µs, one view 10.99 against 11.51, pi0.5's three views 11.58 against 11.78; alternated twice
// in the engines, GR00T's backbone 3.206, 3.203 against 3.238, 3.274 ms at two views (one view and
// pi0.5 within the spread); both families' GPU tests pass with it. Call 4 (2 against 1): the
// tower 12.94 against 13.39 µs (two views), 11.19 against 11.45 (pi0.5's three), 10.85 against
// 11.07 (one); GR00T E2E 6.600, 6.605 / 7.247, 7.216 ms against 6.678, 6.678 / 7.300, 7.218,
// pi0.5 within the spread; both families' GPU tests pass with it. One warpgroup a block runs the
// form of 1 (turns need two; attention_wg.cu's kPing).
int wg_roles_env() {
  static const int mode = env_int("EDGEVLA_ATTN_WG_ROLES", 2, 0, 2);
  return mode;
}
// q·kᵀ over 80 of head dim 128's dims where the head has at most 80 (the towers' 72; the producer
// warp's form, block a alone; AttentionArgs::wg_qk_trim = -1): EDGEVLA_ATTN_QK_TRIM=1 (the default
// since run 58), 0 over all 128. The same products (the dims past h are zeros). Run 58 call 1: GR00T's
// two-view tower 12.58 against 12.84 µs, pi0.5's three views 11.07 against 11.31, GR00T's one view
// 10.79 against 10.93 (10.29 against 10.64 with one warpgroup); the engines within the spread.
bool qk_trim_env() {
  static const bool on = env_int("EDGEVLA_ATTN_QK_TRIM", 1, 0, 1) == 1;
  return on;
}
// The walk tile of that trimmed form with one warpgroup a block and one key share (the towers under
// EDGEVLA_ATTN_WG128=1; AttentionArgs::wg_keys = -1):
// EDGEVLA_ATTN_WG_KEYS=64 (the default) or 128, which halves the walk's hand-overs (waits, turns,
// softmax rescales: three tiles at 324 keys instead of six). Built in run 60, not yet measured.
int wg_keys_env() {
  static const int keys = [] {
    const int k = env_int("EDGEVLA_ATTN_WG_KEYS", 64, 64, 128);
    if (k == 64 || k == 128) return k;
    std::fprintf(stderr, "edgevla: EDGEVLA_ATTN_WG_KEYS is %d; give 64 or 128 (using 64)\n", k);
    return 64;
  }();
  return keys;
}
// The producer warp's form at head dim 256 (one warpgroup a block: Gemma's prefix, and the action
// expert's attention where EDGEVLA_ATTN_WG_EXPERT=1 puts it on this kernel; AttentionArgs::wg_roles
// = -1): EDGEVLA_ATTN_WG256_ROLES=1 (the default since run 58), 0 thread 0 copying between block
// barriers. Run 49's ablation had the prefix's copies, waits and barriers at 20.2 of its 33.6 µs
// (three views); run 58 call 1: the prefix 28.65 against 33.62 µs at three views, 16.36 against
// 17.34 at one; pi0.5 E2E 10.485, 10.567 / 14.414, 14.471 ms against 10.662, 10.514 / 14.724,
// 14.498 (alternated twice). With EDGEVLA_ATTN_WG_EXPERT=1 on top the head was slower at one view
// (10.746, 10.721 ms), so the experts stay on attn_bf16.
bool wg256_roles_env() {
  static const bool on = env_int("EDGEVLA_ATTN_WG256_ROLES", 1, 0, 1) == 1;
  return on;
}
// The warpgroup kernel asked for by the environment (AttentionArgs::wg = -1): EDGEVLA_ATTN_WG=0
// never, 1 or 2 with that many warpgroups a block; -1 when unset (the plan's default below).
int wg_env() {
  static const int groups = env_int("EDGEVLA_ATTN_WG", -1, 0, 2);
  return groups;
}
// AttentionArgs::wg_tma's default: on, unless EDGEVLA_ATTN_WG_TMA=0.
bool wg_tma_default() {
  static const bool on = env_int("EDGEVLA_ATTN_WG_TMA", 1, 0, 1) == 1;
  return on;
}
// EDGEVLA_ATTN_WG_EXPERT=1: the unasked warpgroup kernel also for calls with block b (the action
// experts' attention over the cached prefix and their own keys); off until measured.
bool wg_expert_default() {
  static const bool on = env_int("EDGEVLA_ATTN_WG_EXPERT", 0, 0, 1) == 1;
  return on;
}
// EDGEVLA_ATTN_ROTATE=1: AttentionArgs::rotate's default.
bool rotate_default() {
  static const bool on = env_int("EDGEVLA_ATTN_ROTATE", 0, 0, 1) == 1;
  return on;
}
// EDGEVLA_ATTN_CLUSTER=1: AttentionArgs::cluster's default on. Off otherwise: on the H200 the
// merge inside clusters was as fast as attn_combine at 11-12 shares and 0.26 ms a pi0.5 head
// slower at 6 (run 40 call 3).
bool cluster_default() {
  static const bool on = env_int("EDGEVLA_ATTN_CLUSTER", 0, 0, 1) == 1;
  return on;
}

}  // namespace edgevla::backends::cuda::attn_defaults
