// The attention's other launch forms against the double-precision reference (ctest label gpu):
// head dim 256's wide blocks, narrow blocks, short key walks, the warpgroup kernel (attention_wg.cu) with one and
// two warpgroups a block, and rotated walks. Each is asked for explicitly (AttentionArgs), so these run whatever
// the process's defaults are. Without a CUDA device every test skips itself.
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "tests/gpu/cuda_attention_cases.hpp"

namespace edgevla::backends::cuda {
namespace {

// The plan takes the form `takes` reports for `c` in bf16, not once `off` takes the request
// back, and never in f32.
template <class Off>
void expect_form(const Case& c, bool (*takes)(const AttentionArgs&), Off off) {
  Problem p(c, DType::kBF16);
  ASSERT_TRUE(p.ready()) << c.name;
  EXPECT_TRUE(takes(p.args())) << c.name;
  AttentionArgs without = p.args();
  off(without);
  EXPECT_FALSE(takes(without)) << c.name;
  Problem f(c, DType::kF32);
  ASSERT_TRUE(f.ready()) << c.name;
  EXPECT_FALSE(takes(f.args())) << c.name;
}

// Head dim 256's wide blocks (128 stacked rows, 8 warps) asked for wherever they apply: Gemma's
// prefix at one and three views (split into shares, and with no scratch unsplit), a ragged last
// row tile, and block b beside a (not a shape that takes them by default).
TEST(CudaAttention, WideBlocksMatch) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases = {gemma_prefix(464, 456), gemma_prefix(968, 968), gemma_prefix(1200, 1100)};
  {
    Case c{.name = "h 256 rows 100 group 8 b limits", .rows = 100, .heads = 8, .kv_heads = 1, .h = 256};
    c.a_max = 300, c.a_len = 211, c.b_len = 100, c.b_limit = pi0_limits(100, 100);
    cases.push_back(c);
  }
  for (Case c : cases) {
    c.wide_from = 1;
    c.wg = 0;  // the warpgroup kernel comes first where it applies
    c.name += " wide";
    check_case(c, DType::kBF16);
    c.name += ", no scratch";
    check_case(c, DType::kBF16, false);
  }
}

// Narrow blocks (32 stacked rows, 2 warps a key group) asked for wherever they apply: the vision
// towers' head dim 72 at one and three views, GR00T's LLM (two query heads a kv head, a padded
// prefix) and DiT (head dim 48; its own keys, and the cross-attention over the LLM's), the action
// experts with pi0's limits and pi0.5's none, Gemma's prefix on attn_bf16, two sequences; in
// shares and unsplit without scratch, and a graph replayed at seven prefix lengths. The plan must
// take them for each of these in bf16 and never in f32.
TEST(CudaAttention, NarrowBlocksMatch) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases = {action_expert(51, 833, true), action_expert(50, 968, false),
                             action_expert(50, 456, false), action_expert(51, 37, true), gemma_prefix(464, 456)};
  for (int views : {1, 3}) cases.push_back(tower(views, 256));
  {
    Case c{.name = "groot llm", .rows = 144, .heads = 16, .kv_heads = 8, .h = 128};
    c.a_max = 144, c.a_len = 131;
    cases.push_back(c);
  }
  {
    Case c{.name = "groot dit self", .rows = 17, .heads = 32, .kv_heads = 32, .h = 48};
    c.a_max = 17, c.a_len = -1;
    cases.push_back(c);
    c.name = "groot dit cross", c.a_max = 144, c.a_len = 131;
    cases.push_back(c);
  }
  {
    Case c = action_expert(51, 300, true);
    c.batch = 2, c.batch_pad = 8, c.name += " batch 2";
    cases.push_back(c);
  }
  for (Case c : cases) {
    c.narrow = 1;
    c.wg = 0;  // attn_bf16 for the prefix, not the default warpgroup kernel
    c.wg_narrow = 0;  // nor, at head dims 72 and 128, the warpgroup kernel at head dim 128
    c.name += " narrow";
    expect_form(c, attention_takes_narrow_blocks, [](AttentionArgs& a) { a.narrow = 0; });
    check_case(c, DType::kBF16);
    c.name += ", no scratch";
    check_case(c, DType::kBF16, false);
  }
  Case c = action_expert(51, 833, true);
  c.narrow = 1, c.name += " narrow";
  check_replays(c, DType::kBF16, {968, 833, 300, 64, 65, 1, 0});
}

// Walks of at most 32 keys at head dims up to 48 in one 32-key tile, asked for: GR00T's DiT
// self-attention (17 keys), head dim 16 with block b beside a (10 + 20 keys, pi0's limits), a
// ragged a_len, two sequences; 64- and 32-row blocks; with and without scratch; a graph
// replayed at several prefix lengths. The plan must take it for each of these in bf16, never
// in f32, never over 32 keys and never at head dim 64.
TEST(CudaAttention, ShortKeyWalksMatch) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases;
  {
    Case c{.name = "groot dit self", .rows = 17, .heads = 32, .kv_heads = 32, .h = 48};
    c.a_max = 17, c.a_len = -1;
    cases.push_back(c);
  }
  {
    Case c{.name = "h 16 a 10 b 20 limits", .rows = 20, .heads = 4, .kv_heads = 2, .h = 16};
    c.a_max = 10, c.a_len = 7, c.b_len = 20, c.b_limit = pi0_limits(20, 20);
    cases.push_back(c);
  }
  {
    Case c{.name = "h 48 batch 2", .batch = 2, .rows = 30, .heads = 8, .kv_heads = 8, .h = 48};
    c.a_max = 32, c.a_len = 29, c.batch_pad = 8;
    cases.push_back(c);
  }
  for (Case c : cases) {
    c.short_keys = 1;
    c.name += " short keys";
    for (int narrow : {0, 1}) {
      Case n = c;
      n.narrow = narrow;
      n.name += narrow ? ", narrow" : ", 64 rows";
      expect_form(n, attention_takes_short_keys, [](AttentionArgs& a) { a.short_keys = 0; });
      check_case(n, DType::kBF16);
      n.name += ", no scratch";
      check_case(n, DType::kBF16, false);
    }
  }
  {
    Case longer{.name = "h 48 33 keys", .rows = 17, .heads = 4, .kv_heads = 4, .h = 48};
    longer.a_max = 33, longer.a_len = -1, longer.short_keys = 1;
    Problem p(longer, DType::kBF16);
    ASSERT_TRUE(p.ready());
    EXPECT_FALSE(attention_takes_short_keys(p.args())) << "33 keys take two tiles";
    Case wider{.name = "h 64 17 keys", .rows = 17, .heads = 4, .kv_heads = 4, .h = 64};
    wider.a_max = 17, wider.a_len = -1, wider.short_keys = 1;
    Problem q(wider, DType::kBF16);
    ASSERT_TRUE(q.ready());
    EXPECT_FALSE(attention_takes_short_keys(q.args())) << "head dim 64 has no short-key instance";
  }
  Case c = cases[1];
  c.short_keys = 1, c.name += " short keys";
  check_replays(c, DType::kBF16, {10, 7, 1, 0});
}

// Head dim 256's warpgroup kernel (attention_wg.cu) asked for wherever it applies: Gemma's prefix
// at one and three views (in shares, and unsplit without scratch), ragged last key and row tiles,
// a prefix shorter than one key tile, two sequences, two kv heads, q, k and v side by side in one
// row, and a peaky softmax; one and two warpgroups a block, K and V by cp.async and by bulk
// tensor copies, and (one warpgroup) by bulk copies from a producer warp (wg_roles). Where the
// warpgroup GEMM runs (compute capability 9.0, sm_90a build) the plan must take it. Two tests, so
// that each stays well inside ctest's limit (the host's reference for the long prefixes dominates).
namespace {
void check_wg256_forms(const std::vector<Case>& cases) {
  for (const Case& base : cases) {
    for (int form : {1, 2, 11, 12, 21}) {  // warpgroups, + 10: bulk tensor copies, + 20: from a producer warp
      Case c = base;
      c.wg = form % 10;
      c.wg_tma = form > 10 ? 1 : 0;
      c.wg_roles = form > 20 ? 1 : 0;
      c.name += " wg" + std::to_string(c.wg) + (form > 20 ? " producer warp" : form > 10 ? " tma" : "");
      {
        Problem p(c, DType::kBF16);
        ASSERT_TRUE(p.ready()) << c.name;
        if (wgmma_gemm_available()) {
          EXPECT_TRUE(attention_takes_warpgroup_kernel(p.args())) << c.name;
        }
        AttentionArgs off = p.args();
        off.wg = 0;
        EXPECT_FALSE(attention_takes_warpgroup_kernel(off)) << c.name;
      }
      check_case(c, DType::kBF16);
      c.name += ", no scratch";
      check_case(c, DType::kBF16, false);
    }
  }
}
}  // namespace

TEST(CudaAttention, WarpgroupKernelMatches) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  check_wg256_forms({gemma_prefix(464, 456), gemma_prefix(976, 968)});
}

TEST(CudaAttention, WarpgroupKernelMatchesOtherShapes) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases = {gemma_prefix(1200, 1100), gemma_prefix(100, 37)};
  {
    Case c = gemma_prefix(300, 250);
    c.batch = 2, c.batch_pad = 8, c.name += " batch 2";
    cases.push_back(c);
  }
  {
    Case c{.name = "h 256 heads 4 kv heads 2", .rows = 200, .heads = 4, .kv_heads = 2, .h = 256};
    c.a_max = 200, c.a_len = 190;
    cases.push_back(c);
  }
  {
    Case c = gemma_prefix(464, 464);
    c.fused = true, c.pad = 8, c.a_len = -1, c.name += " fused";
    cases.push_back(c);
  }
  {
    Case c = gemma_prefix(464, 456);
    c.q_range = 8.0f, c.name += " peaky";
    cases.push_back(c);
  }
  check_wg256_forms(cases);
}

// The warpgroup kernel at head dim 128 for head dims 65-128 (AttentionArgs::wg_narrow), asked for
// with one and two warpgroups a block: the vision towers' 72 (GR00T's 324 patches at one and two
// views, pi0.5's 256 at three, a ragged 200 rows), q, k and v side by side in one row with padding,
// GR00T's LLM (head dim 128, two query heads a kv head, a padded prefix) at one and two views, head
// dim 80 with a prefix shorter than one key tile; in shares and unsplit, and a graph replayed at
// several prefix lengths. Where the warpgroup GEMM runs the plan must take it in bf16, never in f32,
// never with block b, and never once wg_narrow is 0. Each in both forms: thread 0 copying between
// block barriers, a producer warp copying with the warpgroups unsynchronised (wg_roles), the
// warpgroups taking turns, and those two with q·kᵀ over 80 dims (wg_qk_trim; head dims ≤ 80), the
// one-warpgroup trimmed form also in 128-key walk tiles (wg_keys; where the call has one share).
TEST(CudaAttention, WarpgroupKernelTakesNarrowHeadDims) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases;
  for (const auto& [views, patches] : std::vector<std::pair<int, int>>{{1, 324}, {2, 324}, {3, 256}, {3, 200}}) {
    cases.push_back(tower(views, patches));
  }
  {
    Case c{.name = "tower fused", .rows = 256, .heads = 16, .kv_heads = 16, .h = 72};
    c.a_max = 256, c.a_len = -1, c.fused = true, c.pad = 8;
    cases.push_back(c);
  }
  for (const auto& [rows, len] : std::vector<std::pair<int, int>>{{144, 131}, {224, 212}}) {
    Case c{.name = "groot llm " + std::to_string(len), .rows = rows, .heads = 16, .kv_heads = 8, .h = 128};
    c.a_max = rows, c.a_len = len;
    cases.push_back(c);
  }
  {
    Case c{.name = "h 80 short prefix", .rows = 40, .heads = 2, .kv_heads = 2, .h = 80};
    c.a_max = 100, c.a_len = 37;
    cases.push_back(c);
  }
  for (const Case& base : cases) {
    for (int form = 0; form < 8; ++form) {  // 0-3: 1 / 2 warpgroups, + 2 producer warp; 4 turns; 5-7 trimmed
      const int groups = form == 4 || form == 5 ? 2 : form == 7 ? 1 : 1 + form % 2;
      Case c = base;
      c.wg_narrow = groups, c.wg_roles = form == 4 || form == 5 ? 2 : form >= 6 ? 1 : form / 2;
      c.wg_qk_trim = form >= 5 ? 1 : 0;
      c.wg_keys = form == 7 ? 128 : 64;
      c.name += " wg128 " + std::to_string(groups) + (c.wg_roles == 2 ? " turns" : c.wg_roles ? " producer warp" : "") +
                (form >= 5 ? " q·k over 80 dims" : "") + (form == 7 ? " 128-key tiles" : "");
      {
        Problem p(c, DType::kBF16);
        ASSERT_TRUE(p.ready()) << c.name;
        if (wgmma_gemm_available()) {
          EXPECT_TRUE(attention_takes_warpgroup_kernel(p.args())) << c.name;
        }
        AttentionArgs off = p.args();
        off.wg_narrow = 0;
        EXPECT_FALSE(attention_takes_warpgroup_kernel(off)) << c.name;
        Problem f(c, DType::kF32);
        ASSERT_TRUE(f.ready()) << c.name;
        EXPECT_FALSE(attention_takes_warpgroup_kernel(f.args())) << c.name;
      }
      check_case(c, DType::kBF16);
      c.name += ", no scratch";
      check_case(c, DType::kBF16, false);
    }
  }
  {
    Case c = action_expert(51, 300, true);
    c.h = 128, c.wg_narrow = 2, c.name += " h 128 with block b";
    Problem p(c, DType::kBF16);
    ASSERT_TRUE(p.ready()) << c.name;
    AttentionArgs off = p.args();
    off.wg_narrow_b = 0;  // block b's calls stay on attn_bf16 when not asked
    EXPECT_FALSE(attention_takes_warpgroup_kernel(off)) << c.name;
  }
  {
    // 128-key walk tiles across prefix lengths at and around their edges (two views of 324 keys:
    // 192 blocks of one warpgroup, so one share); at 320 keys the last tile's second half starts
    // at the block's end (not copied, its V zeroed).
    for (const int patches : {324, 320}) {
      Case c = tower(2, patches);
      c.a_len = patches, c.wg_narrow = 1, c.wg_roles = 1, c.wg_qk_trim = 1, c.wg_keys = 128;
      c.name += " wg128 1 128-key tiles";
      check_replays(c, DType::kBF16, {patches, 300, 257, 256, 129, 128, 127, 65, 1, 0});
    }
  }
  for (int roles : {0, 1, 2}) {
    Case c = cases[6];  // GR00T's LLM at two views
    c.wg_narrow = 2, c.wg_roles = roles, c.nan_tail = false;
    c.name += " wg128 2 form " + std::to_string(roles);
    check_replays(c, DType::kBF16, {224, 212, 131, 64, 65, 1, 0});
  }
}

// The warpgroup kernel at head dim 128 with block b, asked for (AttentionArgs::wg_narrow_b):
// GR00T's LLM (block b alone, causal over packed keys: padding rows see nothing, the others their
// rank, holes between), the same without limits, and a head-dim-128 expert (a prefix as block a,
// pi0's limits on block b); one and two warpgroups, with and without scratch, and a replayed
// graph; both forms (wg_roles). Unasked (wg_narrow_b 0) the plan keeps such calls on attn_bf16.
TEST(CudaAttention, WarpgroupKernelTakesHeadDim128BlockB) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  const auto llm = [](int rows, int real, bool causal) {
    Case c{.name = "groot llm block b " + std::to_string(rows) + "/" + std::to_string(real) +
                   (causal ? " causal" : " no limits"),
           .rows = rows, .heads = 16, .kv_heads = 8, .h = 128};
    c.b_len = rows;
    if (causal) {
      c.b_limit.assign(static_cast<std::size_t>(rows), 0);
      int rank = 0;
      for (int r = rows - real; r < rows; ++r) {
        if (r % 37 == 5) continue;  // a hole: a padding row among the real ones
        c.b_limit[static_cast<std::size_t>(r)] = ++rank;
      }
    }
    return c;
  };
  std::vector<Case> cases = {llm(144, 131, true), llm(224, 212, true), llm(224, 224, false), llm(64, 20, true)};
  {
    Case c = action_expert(51, 300, true);
    c.h = 128, c.name += " h 128";
    cases.push_back(c);
  }
  for (const Case& base : cases) {
    for (int form = 0; form < 5; ++form) {
      const int groups = form == 4 ? 2 : 1 + form % 2;
      Case c = base;
      c.wg_narrow = groups, c.wg_narrow_b = 1, c.wg_roles = form == 4 ? 2 : form / 2;
      c.name += " wg128 " + std::to_string(groups) + (c.wg_roles == 2 ? " turns" : c.wg_roles ? " producer warp" : "");
      {
        Problem p(c, DType::kBF16);
        ASSERT_TRUE(p.ready()) << c.name;
        if (wgmma_gemm_available()) {
          EXPECT_TRUE(attention_takes_warpgroup_kernel(p.args())) << c.name;
        }
        AttentionArgs off = p.args();
        off.wg_narrow_b = 0;
        EXPECT_FALSE(attention_takes_warpgroup_kernel(off)) << c.name;
      }
      check_case(c, DType::kBF16);
      c.name += ", no scratch";
      check_case(c, DType::kBF16, false);
    }
  }
  for (int roles : {0, 1, 2}) {
    Case c = cases[1];
    c.wg_narrow = 2, c.wg_narrow_b = 1, c.wg_roles = roles;
    c.name += " wg128 2 replayed, form " + std::to_string(roles);
    check_replays(c, DType::kBF16, {0});
  }
}

// The warpgroup kernel's bulk-copy form over blocks a and b (the action experts: the cached
// prefix, then the action rows' own keys with pi0's per-row limits or none), asked for: one and
// three views, a prefix of 0 and of 37 keys, two sequences; in shares and unsplit; one and two
// warpgroups, and one with its copies from a producer warp (wg_roles). Without bulk copies
// (wg_tma 0) the plan must not take it for block b.
TEST(CudaAttention, WarpgroupKernelTakesBlockB) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases = {action_expert(51, 833, true), action_expert(50, 968, false),
                             action_expert(50, 456, false), action_expert(51, 37, true)};
  {
    Case c = action_expert(50, 0, false);
    c.name += " (no prefix)";
    cases.push_back(c);
  }
  {
    Case c = action_expert(51, 300, true);
    c.batch = 2, c.batch_pad = 8, c.name += " batch 2";
    cases.push_back(c);
  }
  for (const Case& base : cases) {
    for (int form : {1, 2, 21}) {  // warpgroups; 21: one, its copies from a producer warp
      const int groups = form % 10;
      Case c = base;
      c.wg = groups;
      c.wg_tma = 1;
      c.wg_roles = form > 20 ? 1 : 0;
      c.name += " wg" + std::to_string(groups) + (form > 20 ? " producer warp" : " tma");
      {
        Problem p(c, DType::kBF16);
        ASSERT_TRUE(p.ready()) << c.name;
        if (wgmma_gemm_available()) {
          EXPECT_TRUE(attention_takes_warpgroup_kernel(p.args())) << c.name;
        }
        AttentionArgs no_tma = p.args();
        no_tma.wg_tma = 0;
        EXPECT_FALSE(attention_takes_warpgroup_kernel(no_tma)) << c.name;
      }
      check_case(c, DType::kBF16);
      c.name += ", no scratch";
      check_case(c, DType::kBF16, false);
    }
  }
  for (int roles : {0, 1}) {
    Case c = action_expert(51, 833, true);
    c.wg = 1, c.wg_tma = 1, c.wg_roles = roles, c.name += roles ? " wg1 producer warp" : " wg1 tma";
    check_replays(c, DType::kBF16, {968, 833, 300, 64, 65, 1, 0});
  }
}

// The warpgroup kernel in a graph captured once, replayed with other prefix lengths; with bulk
// tensor copies the rows past *a_len that the copies bring in are stale keys from the longer
// prefix before (the replays run longest first), which V's zeroed tail must keep out of the output.
TEST(CudaAttention, WarpgroupKernelFollowsALen) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  for (int tma : {0, 1, 2}) {  // 2: bulk copies from a producer warp, one warpgroup
    for (int rows : {464, 976}) {
      Case c = gemma_prefix(rows, rows - 8);
      c.wg = rows == 464 || tma == 2 ? 1 : 2;
      c.wg_tma = tma > 0 ? 1 : 0;
      c.wg_roles = tma == 2 ? 1 : 0;
      c.name += " wg" + std::to_string(c.wg) + (tma == 2 ? " producer warp" : tma ? " tma" : "");
      check_replays(c, DType::kBF16, {rows, 300, 64, 65, 1, 0});
    }
  }
}

// Rotated walks (each row tile's block starts its share at a different key tile): Gemma's prefix
// at one and three views, the action experts (shares that hold tiles of both blocks, pi0's
// limits), and the warpgroup kernel, each in shares and unsplit.
TEST(CudaAttention, RotatedWalksMatch) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases = {gemma_prefix(464, 456), gemma_prefix(976, 968), action_expert(51, 833, true),
                             action_expert(50, 968, false)};
  {
    Case c = gemma_prefix(976, 968);
    c.wg = 2, c.name += " wg2";
    cases.push_back(c);
    c.wg_tma = 1, c.name += " tma";
    cases.push_back(c);
  }
  for (Case c : cases) {
    c.rotate = 1;
    if (c.wg < 0) c.wg = 0;  // attn_bf16 for the prefix, not the default warpgroup kernel
    c.name += " rotated";
    check_case(c, DType::kBF16);
    c.name += ", no scratch";
    check_case(c, DType::kBF16, false);
  }
}

// One or two key groups a block at one to three key shares, asked for (AttentionArgs::key_groups,
// ::shares): GR00T's vision tower at one and two views (324 patches, head dim 72), its LLM (two
// query heads a kv head, a padded prefix) at two views, the action expert with pi0's limits, two
// sequences. The plan must take each shape as asked (two groups only where a share has two
// tiles) and every form must match the reference.
TEST(CudaAttention, KeyGroupsAndSharesAsAskedMatch) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases = {action_expert(51, 833, true)};
  for (int views : {1, 2}) cases.push_back(tower(views, 324));
  {
    Case c{.name = "groot llm 2 views", .rows = 224, .heads = 16, .kv_heads = 8, .h = 128};
    c.a_max = 224, c.a_len = 212;
    cases.push_back(c);
  }
  for (const Case& base : cases) {
    for (int groups : {1, 2}) {
      for (int shares : {1, 2, 3}) {
        Case c = base;
        c.key_groups = groups, c.shares = shares, c.narrow = 0, c.wg = 0, c.wg_narrow = 0;
        c.name += " g" + std::to_string(groups) + "s" + std::to_string(shares);
        Problem p(c, DType::kBF16);
        ASSERT_TRUE(p.ready()) << c.name;
        const AttentionShape got = attention_launch_shape(p.args());
        EXPECT_EQ(got.shares, shares) << c.name;
        const int bk = c.h > 128 ? 32 : 64;  // attn_bf16's key tile
        const int tiles = (c.a_max + bk - 1) / bk + (c.b_len + bk - 1) / bk;
        EXPECT_EQ(got.key_groups, (tiles + shares - 1) / shares >= 2 ? groups : 1) << c.name;
        check_case(c, DType::kBF16);
      }
    }
  }
}

// Key shares merged inside a cluster (AttentionArgs::cluster) against partials in scratch merged
// by attn_combine: the same arithmetic in the same share order, so the outputs must agree bit
// for bit, and each against the reference. The action experts (pi0's limits and pi0.5's none,
// prefixes of 37 to 968 keys, two sequences), Gemma's prefix on attn_bf16 (one and two key
// groups), the wide blocks, other head dims and two kv heads. On compute capability 9.0+ the
// expert shapes must take the cluster form; a graph replayed at seven prefix lengths as well.
TEST(CudaAttention, ClusterSharesMatchTheCombine) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  int major = 0, dev = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  std::vector<Case> cases = {action_expert(51, 833, true), action_expert(50, 968, false),
                             action_expert(50, 456, false), action_expert(51, 37, true), gemma_prefix(464, 456),
                             gemma_prefix(976, 968)};
  {
    Case c = action_expert(51, 300, true);
    c.batch = 2, c.batch_pad = 8, c.name += " batch 2";
    cases.push_back(c);
  }
  {
    Case c = gemma_prefix(976, 968);
    c.wide_from = 1, c.name += " wide";
    cases.push_back(c);
  }
  {
    Case c{.name = "h 64 rows 20 heads 4 kv heads 2", .rows = 20, .heads = 4, .kv_heads = 2, .h = 64};
    c.a_max = 2000, c.a_len = 1900, c.b_len = 20;
    cases.push_back(c);
  }
  {
    Case c{.name = "h 128 rows 9 heads 16 kv heads 8", .rows = 9, .heads = 16, .kv_heads = 8, .h = 128};
    c.a_max = 1500, c.a_len = 1499;
    cases.push_back(c);
  }
  for (Case c : cases) {
    if (c.wg < 0) c.wg = 0;  // attn_bf16, not the prefix's default warpgroup kernel
    if (c.wg_narrow < 0) c.wg_narrow = 0;  // nor head dim 128's
    // 64-row blocks: the narrow ones' shares (twice the blocks) may not all fit as clusters at
    // once, and then rightly fall back to the combine.
    if (c.narrow < 0) c.narrow = 0;
    Case in_scratch = c;
    in_scratch.cluster = 0;
    c.cluster = 1;
    c.name += " clusters";
    Problem clustered(c, DType::kBF16), combined(in_scratch, DType::kBF16);
    ASSERT_TRUE(clustered.ready() && combined.ready()) << c.name;
    EXPECT_FALSE(attention_merges_in_clusters(combined.args())) << c.name;
    const bool merges = attention_merges_in_clusters(clustered.args());
    if (major >= 9 && c.b_len > 0 && c.batch == 1) {
      EXPECT_TRUE(merges) << c.name;
    }
    std::printf("  %-52s merges in clusters: %s\n", c.name.c_str(), merges ? "yes" : "no");
    ASSERT_TRUE(attention(nullptr, clustered.args()).is_ok()) << c.name;
    ASSERT_TRUE(attention(nullptr, combined.args()).is_ok()) << c.name;
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.name;
    expect_close(clustered.compare(c.a_len), DType::kBF16, c.name);
    expect_close(combined.compare(c.a_len), DType::kBF16, in_scratch.name);
    const std::vector<float> a = clustered.output(), b = combined.output();
    ASSERT_EQ(a.size(), b.size()) << c.name;
    ASSERT_FALSE(a.empty()) << c.name;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << c.name << ": elements that differ from the combine kernel's";
  }
  Case c = action_expert(51, 833, true);
  c.cluster = 1, c.name += " clusters";
  check_replays(c, DType::kBF16, {968, 833, 300, 64, 65, 1, 0});
}

// RoPE inside the attention (AttentionArgs::rope, the action experts' form) against rope() on q
// and block b's keys followed by the plain call: the action experts with pi0's limits and pi0.5's
// none, prefixes of 0 to 968 keys (shares that hold only block b), in shares, unsplit and merged
// in clusters, and two kv heads. The two must agree to bf16 rounding; f32 refuses it.
TEST(CudaAttention, RopeInsideMatchesTheRopeKernel) {
  EDGEVLA_SKIP_WITHOUT_DEVICE();
  std::vector<Case> cases = {action_expert(51, 833, true), action_expert(50, 968, false),
                             action_expert(50, 456, false), action_expert(51, 37, true), action_expert(50, 0, false)};
  {
    Case c{.name = "h 128 rows 40 heads 4 kv heads 2", .rows = 40, .heads = 4, .kv_heads = 2, .h = 128};
    c.a_max = 700, c.a_len = 650, c.b_len = 40;
    cases.push_back(c);
  }
  for (const Case& base : cases) {
    const std::int64_t half = base.h / 2, table_rows = std::max(base.rows, base.b_len);
    std::vector<float> inv_freq(static_cast<std::size_t>(half));
    for (std::int64_t k = 0; k < half; ++k) {
      inv_freq[static_cast<std::size_t>(k)] = static_cast<float>(std::pow(10000.0, -2.0 * k / base.h));
    }
    DeviceBuffer freq(inv_freq.size() * 4), table(static_cast<std::size_t>(table_rows * half) * 8), first(4);
    const std::int32_t first_pos = std::max(base.a_len, 0);
    ASSERT_EQ(cudaMemcpy(freq.get(), inv_freq.data(), inv_freq.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(first.get(), &first_pos, 4, cudaMemcpyHostToDevice), cudaSuccess);
    const auto* first_dev = static_cast<const std::int32_t*>(first.get());
    const auto* freq_dev = static_cast<const float*>(freq.get());
    ASSERT_TRUE(rope_table(nullptr, table_rows, half, first_dev, freq_dev, static_cast<float*>(table.get())).is_ok());
    for (int form = 0; form < 3; ++form) {  // shares with the combine, unsplit, shares in clusters
      Case c = base;
      c.wg = 0;
      c.wg_narrow = 0;  // RoPE inside is attn_bf16's: the reference call stays on it too
      c.cluster = form == 2 ? 1 : 0;
      c.name += form == 0 ? " shares" : form == 1 ? " unsplit" : " clusters";
      Problem inside(c, DType::kBF16, form != 1), outside(c, DType::kBF16, form != 1);
      ASSERT_TRUE(inside.ready() && outside.ready()) << c.name;
      // The reference path: rope() rotates q and block b's keys in memory, then the plain call.
      const AttentionArgs& o = outside.args();
      ASSERT_TRUE(rope(nullptr, const_cast<void*>(o.q), DType::kBF16, c.rows, c.heads, c.h, o.ldq, first_dev, freq_dev).is_ok());
      ASSERT_TRUE(rope(nullptr, const_cast<void*>(o.b.k), DType::kBF16, c.b_len, c.kv_heads, c.h, o.b.ld, first_dev,
                       freq_dev)
                      .is_ok());
      ASSERT_TRUE(attention(nullptr, o).is_ok()) << c.name;
      AttentionArgs in = inside.args();
      in.rope = static_cast<const float*>(table.get());
      const Status st = attention(nullptr, in);
      ASSERT_TRUE(st.is_ok()) << c.name << ": " << st.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.name;
      const std::vector<float> a = inside.output(), b = outside.output();
      ASSERT_EQ(a.size(), b.size()) << c.name;
      ASSERT_FALSE(a.empty()) << c.name;
      double err2 = 0.0, ref2 = 0.0;
      std::size_t differ = 0, non_finite = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
        non_finite += !std::isfinite(a[i]);
        err2 += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        ref2 += static_cast<double>(b[i]) * b[i];
      }
      const double rel = ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
      std::printf("  %-52s differing %zu of %zu, rel-L2 %.2e\n", c.name.c_str(), differ, a.size(), rel);
      EXPECT_EQ(non_finite, 0u) << c.name;
      EXPECT_LE(rel, 1e-3) << c.name;
      // The angles' products may round differently from rope_kernel's (fused multiply-adds), so a
      // few elements differ by a bf16 step; a rotation that missed q or the keys would change most.
      EXPECT_LE(differ, a.size() / 100) << c.name << ": more than 1 % of the elements differ from rope() + attention";
    }
  }
  Case c = action_expert(50, 456, false);
  Problem f32(c, DType::kF32);
  ASSERT_TRUE(f32.ready());
  AttentionArgs args = f32.args();
  DeviceBuffer table(static_cast<std::size_t>(c.rows * c.h / 2) * 8);
  args.rope = static_cast<const float*>(table.get());
  const Status st = attention(nullptr, args);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("RoPE"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace edgevla::backends::cuda
