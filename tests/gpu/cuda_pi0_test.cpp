// The cuda backend's pi0 / pi0.5 engines against the CPU backend in f32, on the tiny and small
// configs: `precision: f32` actions rel-L2 <= 1e-4; bf16 prefix K/V rel-L2 <= 1e-2, actions
// cosine >= 0.999, every element finite. Also: the cache handed over on the device equals the
// host path, graphs re-used across prompt lengths and re-captured for new step counts give the
// eager results, the fused expert kernel (pi0.5, bf16) agrees with the separate kernels on the
// small config and on an expert with pi0.5's full layer shape, and a memory budget refuses by
// name. Without a GPU every test skips itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "tests/gpu/cuda_pi0_pairs.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends {
namespace {

using model::ModelType;

using test::all_finite;
using test::checkpoint;
using test::cosine;
using test::GeneratedDirs;
using test::open;
using test::open_with;
using test::Pair;
using test::rel_l2;

struct Case {
  std::string preset;
  ModelType type;
};

class CudaPi0 : public ::testing::TestWithParam<Case> {};

TEST_P(CudaPi0, MatchesTheCpuBackend) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam().preset, GetParam().type);
  auto cpu = open(dir, "cpu", Precision::kF32);
  ASSERT_TRUE(cpu) << cpu.status().to_string();
  auto f32 = open(dir, "cuda", Precision::kF32);
  ASSERT_TRUE(f32) << f32.status().to_string();
  auto bf16 = open(dir, "cuda", Precision::kBF16);
  ASSERT_TRUE(bf16) << bf16.status().to_string();
  const model::ModelConfig& c = cpu->model->config();
  // One camera masked and a short prompt; then all cameras and a longer one.
  for (const auto& [masked, tokens] : {std::pair{std::vector<int>{1}, 9}, std::pair{std::vector<int>{}, 23}}) {
    auto in = model::random_inputs(c, 7 + static_cast<std::uint64_t>(tokens), masked, tokens);
    ASSERT_TRUE(in);
    auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, *in, true);
    ASSERT_TRUE(ref) << ref.status().to_string();
    auto a = model::run_forward(*f32->backbone, *f32->head, c, *in, true);
    ASSERT_TRUE(a) << a.status().to_string();
    auto b = model::run_forward(*bf16->backbone, *bf16->head, c, *in, true);
    ASSERT_TRUE(b) << b.status().to_string();
    const std::int64_t na = ref->actions.numel(), nk = ref->prefix_k.numel();
    const double f32_actions = rel_l2(a->actions.data<float>(), ref->actions.data<float>(), na);
    const double f32_k = rel_l2(a->prefix_k.data<float>(), ref->prefix_k.data<float>(), nk);
    const double bf16_k = rel_l2(b->prefix_k.data<float>(), ref->prefix_k.data<float>(), nk);
    const double bf16_v = rel_l2(b->prefix_v.data<float>(), ref->prefix_v.data<float>(), nk);
    const double bf16_cos = cosine(b->actions.data<float>(), ref->actions.data<float>(), na);
    std::printf("[%s %s, %d tokens] f32: actions rel-L2 %.2e, K rel-L2 %.2e | bf16: K %.2e, V %.2e, actions cosine %.6f\n",
                GetParam().preset.c_str(), std::string(model::model_type_name(GetParam().type)).c_str(), tokens,
                f32_actions, f32_k, bf16_k, bf16_v, bf16_cos);
    EXPECT_LE(f32_actions, 1e-4);
    EXPECT_LE(f32_k, 1e-4);
    EXPECT_LE(bf16_k, 1e-2);
    EXPECT_LE(bf16_v, 1e-2);
    EXPECT_GE(bf16_cos, 0.999);
    EXPECT_TRUE(all_finite(b->actions) && all_finite(b->prefix_k) && all_finite(b->prefix_v));
    // Where a difference starts: the vision tower, then each Euler step's velocity.
    std::printf("  vision f32 rel-L2 %.2e; velocity rel-L2 by step (f32):",
                rel_l2(a->vision_embeddings.data<float>(), ref->vision_embeddings.data<float>(),
                       ref->vision_embeddings.numel()));
    const std::int64_t per_step = ref->velocities.numel() / std::max<std::int64_t>(1, ref->velocities.shape()[0]);
    for (std::int64_t st = 0; st < ref->velocities.shape()[0]; ++st) {
      std::printf(" %.1e", rel_l2(a->velocities.data<float>() + st * per_step, ref->velocities.data<float>() + st * per_step,
                                  per_step));
    }
    std::printf("\n");
    // Velocities of every step agree as well (f32).
    EXPECT_LE(rel_l2(a->velocities.data<float>(), ref->velocities.data<float>(), ref->velocities.numel()), 1e-4);
  }
}

TEST_P(CudaPi0, TheDeviceCacheHandOverAndTheGraphsGiveTheEagerResult) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam().preset, GetParam().type);
  auto cpu = open(dir, "cpu", Precision::kF32);
  auto gpu = open(dir, "cuda", Precision::kF32);
  ASSERT_TRUE(cpu && gpu) << gpu.status().to_string();
  const model::ModelConfig& c = cpu->model->config();
  // Without diagnostics the cache stays on the device (read in place by the head); runs 2 and
  // 3 replay captured graphs, the prompt length changes within and across buckets, and the
  // step count changes (a new head graph).
  int run = 0;
  for (const auto& [tokens, steps] : {std::pair{5, 10}, std::pair{6, 10}, std::pair{40, 10}, std::pair{40, 4}, std::pair{5, 10}}) {
    auto in = model::random_inputs(c, 100 + static_cast<std::uint64_t>(run), {}, std::min(tokens, c.token_len()));
    ASSERT_TRUE(in);
    in->num_steps = steps;
    auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, *in, false);
    auto dev = model::run_forward(*gpu->backbone, *gpu->head, c, *in, false);
    ASSERT_TRUE(ref && dev) << dev.status().to_string();
    const double e = rel_l2(dev->actions.data<float>(), ref->actions.data<float>(), ref->actions.numel());
    EXPECT_LE(e, 1e-4) << "run " << run << ": " << tokens << " tokens, " << steps << " steps";
    ++run;
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaPi0,
                         ::testing::Values(Case{"tiny", ModelType::kPi0}, Case{"tiny", ModelType::kPi05},
                                           Case{"small", ModelType::kPi0}, Case{"small", ModelType::kPi05}),
                         [](const auto& info) {
                           return info.param.preset + "_" + std::string(model::model_type_name(info.param.type));
                         });

// pi0.5's (or pi0's) expert layer at full size (width 1024, 8 heads of 256 over one kv head, mlp
// 4096), two layers deep, with a small vision tower and VLM of the same head layout.
// Removed when the process exits, as checkpoint()'s.
const std::string& full_layer_checkpoint(ModelType type = ModelType::kPi05) {
  static GeneratedDirs generated;
  return generated.get("fulllayer-" + std::string(model::model_type_name(type)), [&](const std::string& dir) {
    model::GenerateOptions g;
    g.config = *model::preset_config("small", type);
    g.config.vlm.depth = 2;
    g.config.vlm.head_dim = 256;
    g.config.expert = g.config.vlm;
    g.config.expert.width = 1024;
    g.config.expert.mlp_dim = 4096;
    g.config.expert.vocab_size = 0;
    g.seed = 5;
    g.dtype = DType::kBF16;
    EXPECT_OK(model::generate_checkpoint(g, dir));
  });
}

// Engines opened with the fused expert switched on or off (EDGEVLA_CUDA_FUSED_EXPERT).
Expected<Pair> open_fused(const std::string& dir, bool fused) {
  return open_with(dir, "EDGEVLA_CUDA_FUSED_EXPERT", fused ? "1" : "0");
}

// The vision towers' MLP padded with zeros to a multiple of 64 (VisionTower::mlp_width): a tiny
// pi0.5 whose SigLIP MLP is 100 wide (padded to 128 on the device) gives the CPU backend's vision
// embeddings and actions in f32, and the unpadded tower's (EDGEVLA_CUDA_TOWER_MLP_PAD=0) in bf16.
TEST(CudaPi0Tower, AnMlpPaddedWithZerosGivesTheSameResults) {
  REQUIRE_GPU();
  GeneratedDirs generated;  // removed when the test ends, however it ends
  const std::string dir = generated.get("towerpad", [](const std::string& to) {
    model::GenerateOptions g;
    g.config = *model::preset_config("tiny", ModelType::kPi05);
    g.config.vision.mlp_dim = 100;
    g.seed = 9;
    g.dtype = DType::kBF16;
    EXPECT_OK(model::generate_checkpoint(g, to));
  });
  ASSERT_FALSE(::testing::Test::HasFailure()) << "the padded-MLP checkpoint was not generated";
  auto cpu = open(dir, "cpu", Precision::kF32);
  ASSERT_TRUE(cpu) << cpu.status().to_string();
  auto f32 = open(dir, "cuda", Precision::kF32);
  ASSERT_TRUE(f32) << f32.status().to_string();
  auto padded = open(dir, "cuda", Precision::kBF16);
  ASSERT_TRUE(padded) << padded.status().to_string();
  auto plain = open_with(dir, "EDGEVLA_CUDA_TOWER_MLP_PAD", "0");
  ASSERT_TRUE(plain) << plain.status().to_string();
  const model::ModelConfig& c = cpu->model->config();
  auto in = model::random_inputs(c, 31, {}, 12);
  ASSERT_TRUE(in);
  auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, *in, true);
  ASSERT_TRUE(ref) << ref.status().to_string();
  auto a = model::run_forward(*f32->backbone, *f32->head, c, *in, true);
  ASSERT_TRUE(a) << a.status().to_string();
  auto b = model::run_forward(*padded->backbone, *padded->head, c, *in, true);
  ASSERT_TRUE(b) << b.status().to_string();
  auto u = model::run_forward(*plain->backbone, *plain->head, c, *in, true);
  ASSERT_TRUE(u) << u.status().to_string();
  const std::int64_t nv = ref->vision_embeddings.numel(), na = ref->actions.numel();
  const double vision_f32 = rel_l2(a->vision_embeddings.data<float>(), ref->vision_embeddings.data<float>(), nv);
  const double actions_f32 = rel_l2(a->actions.data<float>(), ref->actions.data<float>(), na);
  const double vision_pad = rel_l2(b->vision_embeddings.data<float>(), u->vision_embeddings.data<float>(), nv);
  std::printf("tower MLP 100 -> 128: f32 vision rel-L2 %.2e, actions %.2e; bf16 padded vs unpadded vision %.2e\n",
              vision_f32, actions_f32, vision_pad);
  EXPECT_LE(vision_f32, 1e-4);
  EXPECT_LE(actions_f32, 1e-4);
  EXPECT_LE(vision_pad, 1e-2);  // the same products; only cuBLASLt's summation order may differ
  EXPECT_GE(cosine(b->actions.data<float>(), u->actions.data<float>(), na), 0.999);
}

TEST(CudaPi0Fused, TheFusedExpertAgreesWithTheSeparateKernels) {
  REQUIRE_GPU();
  for (const std::string& dir : {checkpoint("small", ModelType::kPi05), full_layer_checkpoint()}) {
    auto cpu = open(dir, "cpu", Precision::kF32);
    auto fused = open_fused(dir, true);
    auto separate = open_fused(dir, false);
    ASSERT_TRUE(cpu && fused && separate) << fused.status().to_string() << separate.status().to_string();
    const model::ModelConfig& c = cpu->model->config();
    // Prompts of several lengths (the prefix cache read in place, graphs replayed), two step counts.
    int run = 0;
    for (const auto& [tokens, steps] : {std::pair{5, 10}, std::pair{40, 10}, std::pair{17, 4}, std::pair{40, 10}}) {
      auto in = model::random_inputs(c, 300 + static_cast<std::uint64_t>(run), {}, std::min(tokens, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = steps;
      auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, *in, false);
      auto f = model::run_forward(*fused->backbone, *fused->head, c, *in, false);
      auto s = model::run_forward(*separate->backbone, *separate->head, c, *in, false);
      ASSERT_TRUE(ref && f && s) << f.status().to_string() << s.status().to_string();
      const std::int64_t na = ref->actions.numel();
      ASSERT_TRUE(all_finite(f->actions));
      const double fs_rel = rel_l2(f->actions.data<float>(), s->actions.data<float>(), na);
      const double f_cos = cosine(f->actions.data<float>(), ref->actions.data<float>(), na);
      const double s_cos = cosine(s->actions.data<float>(), ref->actions.data<float>(), na);
      std::printf("[%s run %d: %d tokens, %d steps] fused vs separate rel-L2 %.2e; cosine vs cpu f32: fused %.6f, "
                  "separate %.6f\n",
                  dir.c_str(), run, tokens, steps, fs_rel, f_cos, s_cos);
      EXPECT_LE(fs_rel, 2e-2) << "run " << run;
      EXPECT_GE(f_cos, 0.999) << "run " << run;
      ++run;
    }
  }
}

// The expert GEMMs on the warpgroup GEMM (EDGEVLA_CUDA_WGMMA, Hopper) against cuBLASLt and the
// geglu kernel (EDGEVLA_CUDA_WGMMA=0): gate|up with its GeGLU alone, all four GEMMs (o and down in
// f32 k parts) launched plainly, and all four with the layers as one chain of launches (the
// default: the GEMMs' first weight tiles load before they wait for the kernel ahead), whose
// actions must be those of the same kernels launched plainly, bit for bit; each agrees with the
// CPU; RoPE in q|k|v's epilogue (EDGEVLA_CUDA_WGMMA_ROPE=1) and inside the attention
// (EDGEVLA_CUDA_ATTN_ROPE=1) agree with the rope kernel; the backbone's own kernels chained
// behind its GEMMs (EDGEVLA_CUDA_BACKBONE_CHAIN=1; the head following it layer by layer) give the
// same actions bit for bit. Engines
// opened apart time their cuBLASLt picks apart (the backbone's too), so all share one plan file,
// and the chained engine runs every case first: the others then reuse its picks.
TEST(CudaPi0Wgmma, TheWarpgroupGemmsAgreeWithBlas) {
  REQUIRE_GPU();
  if (!backends::cuda::wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 only";
  const std::string& dir = full_layer_checkpoint();
  const test::TempPlanFile plans(dir + "-wgmma-plans.txt");
  ::setenv("EDGEVLA_GEMM_PLAN_FILE", plans.c_str(), 1);
  auto cpu = open(dir, "cpu", Precision::kF32);
  auto chained = open(dir, "cuda", Precision::kBF16);
  ASSERT_TRUE(cpu && chained) << chained.status().to_string();
  const model::ModelConfig& c = cpu->model->config();
  const std::vector<std::pair<int, int>> cases = {{5, 10}, {40, 10}, {17, 4}};
  std::vector<model::ForwardInputs> ins;
  std::vector<Tensor> first;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto in = model::random_inputs(c, 900 + i, {}, std::min(cases[i].first, c.token_len()));
    ASSERT_TRUE(in);
    in->num_steps = cases[i].second;
    auto zc = model::run_forward(*chained->backbone, *chained->head, c, *in, false);
    ASSERT_TRUE(zc) << zc.status().to_string();
    first.push_back(zc->actions);
    ins.push_back(*in);
  }
  auto gu = open_with(dir, {{"EDGEVLA_CUDA_WGMMA", "gate_up"}, {"EDGEVLA_CUDA_WGMMA_CHAIN", "0"}});
  auto all = open_with(dir, {{"EDGEVLA_CUDA_WGMMA", "all"}, {"EDGEVLA_CUDA_WGMMA_CHAIN", "0"}});
  auto blas = open_with(dir, "EDGEVLA_CUDA_WGMMA", "0");
  auto rope_in = open_with(dir, "EDGEVLA_CUDA_WGMMA_ROPE", "1");
  auto rope_att = open_with(dir, "EDGEVLA_CUDA_ATTN_ROPE", "1");
  auto backbone_chain = open_with(dir, "EDGEVLA_CUDA_BACKBONE_CHAIN", "1");
  ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
  ASSERT_TRUE(backbone_chain) << backbone_chain.status().to_string();
  ASSERT_TRUE(gu && all && blas && rope_in && rope_att)
      << gu.status().to_string() << all.status().to_string() << blas.status().to_string()
      << rope_in.status().to_string() << rope_att.status().to_string();
  for (std::size_t run = 0; run < ins.size(); ++run) {
    const model::ForwardInputs& in = ins[run];
    auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, in, false);
    auto x = model::run_forward(*gu->backbone, *gu->head, c, in, false);
    auto z = model::run_forward(*all->backbone, *all->head, c, in, false);
    auto y = model::run_forward(*blas->backbone, *blas->head, c, in, false);
    auto y2 = model::run_forward(*blas->backbone, *blas->head, c, in, false);
    auto ra = model::run_forward(*rope_in->backbone, *rope_in->head, c, in, false);
    auto rb = model::run_forward(*rope_att->backbone, *rope_att->head, c, in, false);
    ASSERT_TRUE(ref && x && y && z && y2 && ra && rb) << x.status().to_string() << z.status().to_string()
                                                      << (rb ? "" : rb.status().to_string());
    const std::int64_t na = ref->actions.numel();
    ASSERT_TRUE(all_finite(x->actions) && all_finite(z->actions) && all_finite(first[run]));
    const float* r = ref->actions.data<float>();
    const double xy = rel_l2(x->actions.data<float>(), y->actions.data<float>(), na);
    const double zy = rel_l2(z->actions.data<float>(), y->actions.data<float>(), na);
    const double yy = rel_l2(y2->actions.data<float>(), y->actions.data<float>(), na);
    const double cz = rel_l2(first[run].data<float>(), z->actions.data<float>(), na);
    auto tc = model::run_forward(*backbone_chain->backbone, *backbone_chain->head, c, in, false);
    ASSERT_TRUE(tc) << tc.status().to_string();
    EXPECT_EQ(rel_l2(first[run].data<float>(), tc->actions.data<float>(), na), 0.0)
        << "EDGEVLA_CUDA_BACKBONE_CHAIN=1 changed the actions (run " << run << ")";
    // q and k rotated in q|k|v's epilogue (EDGEVLA_CUDA_WGMMA_ROPE=1) against the rope kernel.
    const double cr = rel_l2(first[run].data<float>(), ra->actions.data<float>(), na);
    std::printf("[run %zu] RoPE in the epilogue vs its own kernel: rel-L2 %.2e\n", run, cr);
    EXPECT_LE(cr, 2e-2) << "run " << run;
    // q and k rotated inside the attention (EDGEVLA_CUDA_ATTN_ROPE=1) against the rope kernel.
    ASSERT_TRUE(all_finite(rb->actions));
    const double ca = rel_l2(first[run].data<float>(), rb->actions.data<float>(), na);
    std::printf("[run %zu] RoPE inside the attention vs its own kernel: rel-L2 %.2e\n", run, ca);
    EXPECT_LE(ca, 2e-2) << "run " << run;
    std::printf("[run %zu: %d tokens, %d steps] rel-L2 vs blas: gate|up %.2e, all four %.2e, blas again %.2e; chained "
                "vs plain %.2e; cosine vs cpu f32: gate|up %.6f, all four %.6f, chained %.6f, blas %.6f\n",
                run, cases[run].first, cases[run].second, xy, zy, yy, cz, cosine(x->actions.data<float>(), r, na),
                cosine(z->actions.data<float>(), r, na), cosine(first[run].data<float>(), r, na),
                cosine(y->actions.data<float>(), r, na));
    EXPECT_EQ(yy, 0.0) << "the default path is not deterministic, run " << run;
    EXPECT_EQ(cz, 0.0) << "chained launches changed the actions, run " << run;
    EXPECT_LE(xy, 2e-2) << "run " << run;
    EXPECT_LE(zy, 2e-2) << "run " << run;
    EXPECT_GE(cosine(x->actions.data<float>(), r, na), 0.999) << "run " << run;
    EXPECT_GE(cosine(z->actions.data<float>(), r, na), 0.999) << "run " << run;
  }
}

// The residual add and the norm after o and down in their GEMMs (EDGEVLA_CUDA_GEMM_NORM=1, the
// kNorm epilogue) against k parts and the norm kernels, for pi0.5 (gated adaptive norms, the final
// norm in the last down) and pi0 (RMSNorm, the final norm still a kernel): the actions agree with
// the default path's and the CPU's, and a second run replays the same actions bit for bit.
TEST(CudaPi0Wgmma, TheNormsInTheGemmsAgree) {
  REQUIRE_GPU();
  if (!backends::cuda::wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 only";
  for (const ModelType type : {ModelType::kPi05, ModelType::kPi0}) {
    const std::string& dir = full_layer_checkpoint(type);
    const test::TempPlanFile plans(dir + "-norm-plans.txt");
    ::setenv("EDGEVLA_GEMM_PLAN_FILE", plans.c_str(), 1);
    auto cpu = open(dir, "cpu", Precision::kF32);
    auto plain = open(dir, "cuda", Precision::kBF16);
    auto normed = open_with(dir, "EDGEVLA_CUDA_GEMM_NORM", "1");
    auto clustered = open_with(dir, "EDGEVLA_CUDA_GEMM_NORM", "cluster");
    ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
    ASSERT_TRUE(cpu && plain && normed && clustered) << plain.status().to_string() << normed.status().to_string()
                                                     << clustered.status().to_string();
    const model::ModelConfig& c = cpu->model->config();
    int run = 0;
    for (const auto& [tokens, steps] : {std::pair{5, 10}, std::pair{40, 10}, std::pair{17, 4}}) {
      auto in = model::random_inputs(c, 950 + static_cast<std::uint64_t>(run), {}, std::min(tokens, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = steps;
      auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, *in, false);
      auto p = model::run_forward(*plain->backbone, *plain->head, c, *in, false);
      auto n1 = model::run_forward(*normed->backbone, *normed->head, c, *in, false);
      auto n2 = model::run_forward(*normed->backbone, *normed->head, c, *in, false);
      auto k1 = model::run_forward(*clustered->backbone, *clustered->head, c, *in, false);
      ASSERT_TRUE(ref && p && n1 && n2 && k1) << (n1 ? "" : n1.status().to_string()) << (k1 ? "" : k1.status().to_string());
      const std::int64_t na = ref->actions.numel();
      ASSERT_TRUE(all_finite(n1->actions));
      const double np = rel_l2(n1->actions.data<float>(), p->actions.data<float>(), na);
      const double nn = rel_l2(n2->actions.data<float>(), n1->actions.data<float>(), na);
      const double cn = cosine(n1->actions.data<float>(), ref->actions.data<float>(), na);
      const double kp = rel_l2(k1->actions.data<float>(), p->actions.data<float>(), na);
      std::printf("[%s run %d: %d tokens, %d steps] norms in the GEMMs vs kernels rel-L2 %.2e, again %.2e, in "
                  "clusters %.2e; cosine vs cpu f32 %.6f\n",
                  std::string(model::model_type_name(type)).c_str(), run, tokens, steps, np, nn, kp, cn);
      EXPECT_LE(kp, 2e-2) << "run " << run;
      EXPECT_LE(np, 2e-2) << "run " << run;
      EXPECT_EQ(nn, 0.0) << "run " << run;
      EXPECT_GE(cn, 0.999) << "run " << run;
      ++run;
    }
  }
}

// The four projections on int8 weights (EDGEVLA_CUDA_WGMMA_W8=1, wgmma_w8.hpp) for pi0.5 and pi0:
// the actions stay within the bar against the CPU in f32 (cosine ≥ 0.999), near the bf16
// weights' actions, finite, and a second run replays them bit for bit.
TEST(CudaPi0Wgmma, TheInt8WeightsAgree) {
  REQUIRE_GPU();
  if (!backends::cuda::wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 only";
  for (const ModelType type : {ModelType::kPi05, ModelType::kPi0}) {
    const std::string& dir = full_layer_checkpoint(type);
    const test::TempPlanFile plans(dir + "-w8-plans.txt");
    ::setenv("EDGEVLA_GEMM_PLAN_FILE", plans.c_str(), 1);
    auto cpu = open(dir, "cpu", Precision::kF32);
    auto plain = open(dir, "cuda", Precision::kBF16);
    auto w8 = open_with(dir, "EDGEVLA_CUDA_WGMMA_W8", "1");
    ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
    ASSERT_TRUE(cpu && plain && w8) << plain.status().to_string() << w8.status().to_string();
    const model::ModelConfig& c = cpu->model->config();
    int run = 0;
    for (const auto& [tokens, steps] : {std::pair{5, 10}, std::pair{40, 10}, std::pair{17, 4}}) {
      auto in = model::random_inputs(c, 970 + static_cast<std::uint64_t>(run), {}, std::min(tokens, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = steps;
      auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, *in, false);
      auto p = model::run_forward(*plain->backbone, *plain->head, c, *in, false);
      auto q1 = model::run_forward(*w8->backbone, *w8->head, c, *in, false);
      auto q2 = model::run_forward(*w8->backbone, *w8->head, c, *in, false);
      ASSERT_TRUE(ref && p && q1 && q2) << (q1 ? "" : q1.status().to_string());
      const std::int64_t na = ref->actions.numel();
      ASSERT_TRUE(all_finite(q1->actions));
      const double qp = rel_l2(q1->actions.data<float>(), p->actions.data<float>(), na);
      const double qq = rel_l2(q2->actions.data<float>(), q1->actions.data<float>(), na);
      const double cq = cosine(q1->actions.data<float>(), ref->actions.data<float>(), na);
      const double cp = cosine(p->actions.data<float>(), ref->actions.data<float>(), na);
      std::printf("[%s run %d: %d tokens, %d steps] int8 weights vs bf16 rel-L2 %.2e, again %.2e; cosine vs cpu "
                  "f32: int8 %.6f, bf16 %.6f\n",
                  std::string(model::model_type_name(type)).c_str(), run, tokens, steps, qp, qq, cq, cp);
      EXPECT_LE(qp, 5e-2) << "run " << run;
      EXPECT_EQ(qq, 0.0) << "run " << run;
      EXPECT_GE(cq, 0.999) << "run " << run;
      ++run;
    }
  }
}

Expected<Pair> open_chained(const std::string& dir, bool chained) {
  return open_with(dir, "EDGEVLA_CUDA_CHAIN_GEMM", chained ? "all" : "0");
}

// The expert layers as one chain of launches with chain_gemm against the same layers on Blas:
// the full-size layer shape takes the chained path on Hopper (its results then differ from
// Blas' in rounding only), and both agree with the CPU.
TEST(CudaPi0Chain, TheChainedExpertAgreesWithBlasGemms) {
  REQUIRE_GPU();
  for (const std::string& dir : {checkpoint("small", ModelType::kPi05), full_layer_checkpoint()}) {
    auto cpu = open(dir, "cpu", Precision::kF32);
    auto chained = open_chained(dir, true);
    auto blas = open_chained(dir, false);
    ASSERT_TRUE(cpu && chained && blas) << chained.status().to_string() << blas.status().to_string();
    const model::ModelConfig& c = cpu->model->config();
    int run = 0;
    for (const auto& [tokens, steps] : {std::pair{5, 10}, std::pair{40, 10}, std::pair{17, 4}, std::pair{40, 10}}) {
      auto in = model::random_inputs(c, 700 + static_cast<std::uint64_t>(run), {}, std::min(tokens, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = steps;
      auto ref = model::run_forward(*cpu->backbone, *cpu->head, c, *in, false);
      auto x = model::run_forward(*chained->backbone, *chained->head, c, *in, false);
      auto y = model::run_forward(*blas->backbone, *blas->head, c, *in, false);
      ASSERT_TRUE(ref && x && y) << x.status().to_string() << y.status().to_string();
      const std::int64_t na = ref->actions.numel();
      ASSERT_TRUE(all_finite(x->actions));
      const double xy_rel = rel_l2(x->actions.data<float>(), y->actions.data<float>(), na);
      const double x_cos = cosine(x->actions.data<float>(), ref->actions.data<float>(), na);
      const double y_cos = cosine(y->actions.data<float>(), ref->actions.data<float>(), na);
      std::printf("[%s run %d: %d tokens, %d steps] chained vs blas rel-L2 %.2e; cosine vs cpu f32: chained %.6f, "
                  "blas %.6f\n",
                  dir.c_str(), run, tokens, steps, xy_rel, x_cos, y_cos);
      EXPECT_LE(xy_rel, 2e-2) << "run " << run;
      EXPECT_GE(x_cos, 0.999) << "run " << run;
      if (dir == full_layer_checkpoint()) {
        EXPECT_GT(xy_rel, 0.0) << "the chained path did not run";
      }
      ++run;
    }
  }
}

TEST(CudaPi0Errors, AMemoryBudgetRefusesTheStageByName) {
  REQUIRE_GPU();
  auto p = open(checkpoint("tiny", ModelType::kPi05), "cuda", Precision::kBF16, 1 << 10);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(p.status().message().find("backbone (cuda, pi05) needs"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("gpu_memory_budget_mb"), std::string::npos) << p.status().message();
}

TEST(CudaPi0Errors, ANonFiniteInputGivesANonFiniteChunkTheDecoderRefuses) {
  REQUIRE_GPU();
  auto p = open(checkpoint("tiny", ModelType::kPi05), "cuda", Precision::kBF16);
  ASSERT_TRUE(p) << p.status().to_string();
  const model::ModelConfig& c = p->model->config();
  auto in = model::random_inputs(c, 3, {}, 8);
  ASSERT_TRUE(in);
  in->noise.data<float>()[0] = NAN;
  auto out = model::run_forward(*p->backbone, *p->head, c, *in, false);
  ASSERT_TRUE(out) << out.status().to_string();
  auto decoder = p->model->make_action_decoder({});
  ASSERT_TRUE(decoder) << decoder.status().to_string();
  auto actions = Tensor::empty(DType::kF32, Shape{c.action_horizon, (*decoder)->out_dim()});
  const Status s = (*decoder)->decode(out->actions, {}, *actions);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
}

}  // namespace
}  // namespace edgevla::backends
