// The cuda backend's GR00T N1.6 engines against the CPU backend in f32 (itself within ~1e-6 of
// tests/reference/groot), on generated tiny and small checkpoints (bf16 weights: both backends
// compute with the same stored values): 1-3 views of different sizes, left-padded prompts, two
// embodiments. `precision: f32`: actions, every step's velocity and the backbone features (real
// tokens) rel-L2 <= 1e-4; bf16: actions cosine >= 0.999, everything finite. Then graphs re-used
// and re-captured across prompt lengths, step counts and embodiments give the eager results,
// and the head reads the backbone's features as bf16 (bad input and the memory budget:
// cuda_groot_refusals_test.cpp). Every case prints its numbers; without a GPU every test skips
// itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "tests/gpu/cuda_groot_cases.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends {
namespace {

using namespace groot_test;  // NOLINT: the shared cases of cuda_groot_cases.hpp

class CudaGroot : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaGroot, MatchesTheCpuBackend) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam());
  auto cpu = open(dir, "cpu", Precision::kF32);
  ASSERT_TRUE(cpu) << cpu.status().to_string();
  auto f32 = open(dir, "cuda", Precision::kF32);
  ASSERT_TRUE(f32) << f32.status().to_string();
  auto bf16 = open(dir, "cuda", Precision::kBF16);
  ASSERT_TRUE(bf16) << bf16.status().to_string();
  std::printf("[%s] engines: %s | %s | %s\n", GetParam().c_str(), cpu->head->describe().c_str(),
              f32->head->describe().c_str(), bf16->head->describe().c_str());
  const std::vector<int> emb = embodiment_ids(dir);
  ASSERT_GE(emb.size(), 2u);
  const mg::GrootConfig& c = config_of(*cpu);
  std::uint32_t seed = 40;
  for (const CaseSpec& cs : cases()) {
    SCOPED_TRACE(describe(cs));
    const Inputs in =
        make_inputs(c, cs, emb[static_cast<std::size_t>(cs.embodiment_index)], seed++);
    auto ref = run(*cpu, in, cs.steps);
    ASSERT_TRUE(ref) << ref.status().to_string();
    auto a = run(*f32, in, cs.steps);
    ASSERT_TRUE(a) << a.status().to_string();
    auto b = run(*bf16, in, cs.steps);
    ASSERT_TRUE(b) << b.status().to_string();
    const std::int64_t na = ref->actions.numel();
    const auto [f32_feat, f32_feat_cos] = feature_errors(*a, *ref);
    const auto [bf16_feat, bf16_feat_cos] = feature_errors(*b, *ref);
    const std::int64_t ne = ref->image_embeds.numel();
    const double f32_img =
        rel_l2(a->image_embeds.data<float>(), ref->image_embeds.data<float>(), ne);
    const double bf16_img =
        rel_l2(b->image_embeds.data<float>(), ref->image_embeds.data<float>(), ne);
    const double f32_act = rel_l2(a->actions.data<float>(), ref->actions.data<float>(), na);
    const double bf16_act = rel_l2(b->actions.data<float>(), ref->actions.data<float>(), na);
    const double bf16_cos = cosine(b->actions.data<float>(), ref->actions.data<float>(), na);
    std::printf(
        "[%s %s, %lld tokens] f32: image_embeds rel-L2 %.2e, features %.2e, actions %.2e | bf16: "
        "image_embeds %.2e, features %.2e (cosine %.6f), actions %.2e (cosine %.6f) | ms cpu "
        "%.1f+%.1f, "
        "cuda f32 %.2f+%.2f, bf16 %.2f+%.2f\n",
        GetParam().c_str(), describe(cs).c_str(), static_cast<long long>(in.ids.numel()), f32_img,
        f32_feat, f32_act, bf16_img, bf16_feat, bf16_feat_cos, bf16_act, bf16_cos, ref->backbone_ms,
        ref->head_ms, a->backbone_ms, a->head_ms, b->backbone_ms, b->head_ms);
    std::printf("  velocity rel-L2 by step, f32:");
    const std::int64_t per_step = ref->velocities.numel() / cs.steps;
    double worst_v = 0;
    for (int k = 0; k < cs.steps; ++k) {
      const double v = rel_l2(a->velocities.data<float>() + k * per_step,
                              ref->velocities.data<float>() + k * per_step, per_step);
      worst_v = std::max(worst_v, v);
      std::printf(" %.1e", v);
    }
    std::printf("  bf16:");
    for (int k = 0; k < cs.steps; ++k) {
      std::printf(" %.1e", rel_l2(b->velocities.data<float>() + k * per_step,
                                  ref->velocities.data<float>() + k * per_step, per_step));
    }
    std::printf("\n");
    EXPECT_LE(f32_img, 1e-4);
    EXPECT_LE(f32_feat, 1e-4);
    EXPECT_LE(f32_act, 1e-4);
    EXPECT_LE(worst_v, 1e-4);
    EXPECT_GE(bf16_cos, 0.999);
    EXPECT_TRUE(all_finite(b->actions) && all_finite(b->features) && all_finite(b->velocities));
    // The masks are the CPU engine's.
    for (std::int64_t i = 0; i < ref->image_mask.numel(); ++i) {
      ASSERT_EQ(a->image_mask.data<bool>()[i], ref->image_mask.data<bool>()[i])
          << "image_mask[" << i << "]";
      ASSERT_EQ(a->attention_mask.data<bool>()[i], ref->attention_mask.data<bool>()[i])
          << "attention_mask[" << i << "]";
    }
  }
}

// The DiT's projections on the warpgroup GEMM (the default on compute capability 9.0: q|k|v, out
// and ff2 in f32 k parts, ff1 with bias and GELU, each step's encoder and decoder), the blocks as
// one chain of launches, against the same kernels launched plainly (EDGEVLA_CUDA_WGMMA_CHAIN=0:
// bit for bit) and cuBLASLt (EDGEVLA_CUDA_WGMMA=0); both agree with the CPU. The backbone LLM's
// projections on it (opt-in, EDGEVLA_CUDA_WGMMA_BACKBONE=1) against its default, cuBLASLt; the MLP
// halves as one kernel (opt-in, EDGEVLA_CUDA_WGMMA_MLP=1) and the DiT on int8 weights (opt-in,
// EDGEVLA_CUDA_WGMMA_W8=1) against the GEMMs; the once-a-chunk work without the side stream
// (EDGEVLA_CUDA_GROOT_OVERLAP=0), or with the state token on the main one (=1), and the backbone's
// own kernels chained behind its GEMMs (EDGEVLA_CUDA_BACKBONE_CHAIN=1), bit for bit.
// Engines opened apart time their cuBLASLt picks apart, so all share one plan file and the chained
// engine runs every case first: the others reuse its picks.
TEST_P(CudaGroot, TheWarpgroupGemmsAgreeWithBlas) {
  REQUIRE_GPU();
  if (!backends::cuda::wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 only";
  const std::string& dir = checkpoint(GetParam());
  auto opened = [&](std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [var, value] : vars) ::setenv(var, value, 1);
    auto e = open(dir, "cuda", Precision::kBF16);
    for (const auto& [var, value] : vars) ::unsetenv(var);
    return e;
  };
  const test::TempPlanFile plans(dir + "-wgmma-plans.txt");
  ::setenv("EDGEVLA_GEMM_PLAN_FILE", plans.c_str(), 1);
  auto cpu = open(dir, "cpu", Precision::kF32);
  auto chained = opened({});
  ASSERT_TRUE(cpu && chained) << chained.status().to_string();
  const std::vector<int> emb = embodiment_ids(dir);
  const mg::GrootConfig& c = config_of(*cpu);
  std::vector<Inputs> ins;
  std::vector<Result> first;
  std::uint32_t seed = 70;
  for (const CaseSpec& cs : cases()) {
    ins.push_back(make_inputs(c, cs, emb[static_cast<std::size_t>(cs.embodiment_index)], seed++));
    auto x = run(*chained, ins.back(), cs.steps);
    ASSERT_TRUE(x) << x.status().to_string();
    first.push_back(std::move(*x));
  }
  auto plain = opened({{"EDGEVLA_CUDA_WGMMA_CHAIN", "0"}});
  auto blas = opened({{"EDGEVLA_CUDA_WGMMA", "0"}});
  auto llm_wg = opened({{"EDGEVLA_CUDA_WGMMA_BACKBONE", "1"}});
  auto mlp = opened({{"EDGEVLA_CUDA_WGMMA_MLP", "1"}});
  auto w8 = opened({{"EDGEVLA_CUDA_WGMMA_W8", "1"}});
  auto heads = opened({{"EDGEVLA_CUDA_WGMMA_HEADS", "0"}});
  // The once-a-chunk work in turn on one stream.
  auto serial = opened({{"EDGEVLA_CUDA_GROOT_OVERLAP", "0"}});
  // ... and with the state token and τ product after the image blocks' on the main stream.
  auto state_main = opened({{"EDGEVLA_CUDA_GROOT_OVERLAP", "1"}});
  auto bb_chain = opened({{"EDGEVLA_CUDA_BACKBONE_CHAIN", "1"}});
  ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
  ASSERT_TRUE(serial) << serial.status().to_string();
  ASSERT_TRUE(bb_chain) << bb_chain.status().to_string();
  ASSERT_TRUE(state_main) << state_main.status().to_string();
  ASSERT_TRUE(plain && blas && llm_wg && mlp && w8 && heads)
      << plain.status().to_string() << blas.status().to_string() << llm_wg.status().to_string()
      << mlp.status().to_string() << w8.status().to_string() << heads.status().to_string();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const CaseSpec& cs = cases()[i];
    SCOPED_TRACE(describe(cs));
    auto ref = run(*cpu, ins[i], cs.steps);
    auto p = run(*plain, ins[i], cs.steps);
    auto y = run(*blas, ins[i], cs.steps);
    auto z = run(*llm_wg, ins[i], cs.steps);
    auto f = run(*mlp, ins[i], cs.steps);
    auto q = run(*w8, ins[i], cs.steps);
    auto hk = run(*heads, ins[i], cs.steps);
    ASSERT_TRUE(ref && p && y && z && f && q && hk) << p.status().to_string() << y.status().to_string()
                                                    << z.status().to_string() << f.status().to_string()
                                                    << (q ? "" : q.status().to_string())
                                                    << (hk ? "" : hk.status().to_string());
    const Result& x = first[i];
    const std::int64_t na = ref->actions.numel();
    const double xy = rel_l2(x.actions.data<float>(), y->actions.data<float>(), na);
    const double xp = rel_l2(x.actions.data<float>(), p->actions.data<float>(), na);
    const double x_cos = cosine(x.actions.data<float>(), ref->actions.data<float>(), na);
    std::printf("[%s %s] warpgroup vs blas rel-L2 %.2e, chained vs plain %.2e; cosine vs cpu f32: warpgroup %.6f, "
                "blas %.6f\n",
                GetParam().c_str(), describe(cs).c_str(), xy, xp, x_cos,
                cosine(y->actions.data<float>(), ref->actions.data<float>(), na));
    EXPECT_EQ(xp, 0.0) << "chained launches changed the actions";
    // Which stream makes which keys|values changes no product: the same bits (the picks are shared).
    {
      auto o = run(*serial, ins[i], cs.steps);
      ASSERT_TRUE(o) << o.status().to_string();
      EXPECT_EQ(rel_l2(x.actions.data<float>(), o->actions.data<float>(), na), 0.0)
          << "EDGEVLA_CUDA_GROOT_OVERLAP=0 changed the actions";
      auto m = run(*state_main, ins[i], cs.steps);
      ASSERT_TRUE(m) << m.status().to_string();
      EXPECT_EQ(rel_l2(x.actions.data<float>(), m->actions.data<float>(), na), 0.0)
          << "EDGEVLA_CUDA_GROOT_OVERLAP=1 changed the actions";
      auto bc = run(*bb_chain, ins[i], cs.steps);
      ASSERT_TRUE(bc) << bc.status().to_string();
      EXPECT_EQ(rel_l2(x.actions.data<float>(), bc->actions.data<float>(), na), 0.0)
          << "EDGEVLA_CUDA_BACKBONE_CHAIN=1 changed the actions";
      EXPECT_EQ(rel_l2(x.features.data<float>(), bc->features.data<float>(), x.features.numel()), 0.0)
          << "EDGEVLA_CUDA_BACKBONE_CHAIN=1 changed the features";
    }
    // The MLP halves as one kernel each (EDGEVLA_CUDA_WGMMA_MLP=1; where the config's shapes take it:
    // small, not tiny): ff2's sum in other k parts, so close to the chained GEMMs, not equal.
    const double xf = rel_l2(x.actions.data<float>(), f->actions.data<float>(), na);
    const double f_cos = cosine(f->actions.data<float>(), ref->actions.data<float>(), na);
    std::printf("[%s %s] MLP halves as one kernel vs the GEMMs rel-L2 %.2e, cosine vs cpu f32 %.6f\n",
                GetParam().c_str(), describe(cs).c_str(), xf, f_cos);
    EXPECT_LE(xf, 2e-2);
    EXPECT_GE(f_cos, 0.999);
    EXPECT_TRUE(all_finite(f->actions));
    // The DiT's projections on int8 weights (EDGEVLA_CUDA_WGMMA_W8=1; where the shapes take the
    // warpgroup GEMM): near the bf16 weights' actions and within the bar against the CPU.
    const double xq = rel_l2(x.actions.data<float>(), q->actions.data<float>(), na);
    const double q_cos = cosine(q->actions.data<float>(), ref->actions.data<float>(), na);
    std::printf("[%s %s] int8 weights vs bf16 rel-L2 %.2e, cosine vs cpu f32 %.6f\n", GetParam().c_str(),
                describe(cs).c_str(), xq, q_cos);
    EXPECT_LE(xq, 5e-2);
    EXPECT_GE(q_cos, 0.999);
    EXPECT_TRUE(all_finite(q->actions));
    // Each attention block's projection and attention as one kernel (the default where the shapes
    // take it: small, not tiny) against the GEMM and the attention kernel (EDGEVLA_CUDA_WGMMA_HEADS=0):
    // the same products, the softmax in other tiles.
    const double xh = rel_l2(x.actions.data<float>(), hk->actions.data<float>(), na);
    const double h_cos = cosine(hk->actions.data<float>(), ref->actions.data<float>(), na);
    std::printf("[%s %s] heads kernel vs the GEMM + attention kernel rel-L2 %.2e, cosine vs cpu f32 %.6f\n", GetParam().c_str(),
                describe(cs).c_str(), xh, h_cos);
    EXPECT_LE(xh, 2e-2);
    EXPECT_GE(h_cos, 0.999);
    EXPECT_TRUE(all_finite(hk->actions));
    // The backbone's features with the LLM on the warpgroup GEMM against cuBLASLt, and the CPU.
    // Both are bf16 against the CPU's f32: the warpgroup path no further from it than cuBLASLt's
    // (within half again), and the two no further apart than their two errors.
    const auto [llm_feat, llm_cos] = feature_errors(*z, x);
    const double wg_err = feature_errors(*z, *ref).first, blas_err = feature_errors(x, *ref).first;
    std::printf("[%s %s] features: LLM on the warpgroup GEMM vs cuBLASLt rel-L2 %.2e (cosine %.6f); vs cpu f32 "
                "%.2e, cuBLASLt's %.2e\n",
                GetParam().c_str(), describe(cs).c_str(), llm_feat, llm_cos, wg_err, blas_err);
    EXPECT_LE(wg_err, 1.5 * blas_err + 1e-3);
    EXPECT_LE(llm_feat, 2.0 * blas_err + 1e-3);
    EXPECT_EQ(feature_errors(x, *p).first, 0.0) << "chained launches changed the features";
    EXPECT_LE(xy, 2e-2);
    EXPECT_GE(x_cos, 0.999);
    EXPECT_TRUE(all_finite(x.actions));
  }
}

// Runs 2.. replay captured graphs; the prompt length changes within and across buckets, views
// change size, the step count changes (new graphs, new modulations) and the embodiment switches
// (a new slot transposed); each run agrees with the CPU in f32. The head also reads the
// backbone's features as bf16.
TEST_P(CudaGroot, GraphsAndEmbodimentSwitchesGiveTheEagerResult) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam());
  auto cpu = open(dir, "cpu", Precision::kF32);
  auto gpu = open(dir, "cuda", Precision::kF32);
  ASSERT_TRUE(cpu) << cpu.status().to_string();
  ASSERT_TRUE(gpu) << gpu.status().to_string();
  const std::vector<int> emb = embodiment_ids(dir);
  ASSERT_GE(emb.size(), 2u);
  const mg::GrootConfig& c = config_of(*cpu);
  const std::vector<CaseSpec> runs = {
      {{{224, 224}}, 0, 20, 0, 4},
      {{{224, 224}}, 2, 21, 0, 4},
      {{{224, 224}}, 0, 40, 1, 4},
      {{{224, 224}}, 0, 40, 1, 8},
      {{{280, 224}, {224, 224}}, 1, 12, 0, 4},
      {{{224, 224}}, 0, 20, 0, 4},
  };
  std::uint32_t seed = 90;
  for (const CaseSpec& cs : runs) {
    SCOPED_TRACE(describe(cs));
    const Inputs in =
        make_inputs(c, cs, emb[static_cast<std::size_t>(cs.embodiment_index)], seed++);
    auto ref = run(*cpu, in, cs.steps);
    auto dev = run(*gpu, in, cs.steps);
    ASSERT_TRUE(ref) << ref.status().to_string();
    ASSERT_TRUE(dev) << dev.status().to_string();
    const double e =
        rel_l2(dev->actions.data<float>(), ref->actions.data<float>(), ref->actions.numel());
    std::printf("[%s graphs] %s: actions rel-L2 %.2e\n", GetParam().c_str(), describe(cs).c_str(),
                e);
    EXPECT_LE(e, 1e-4);
  }
  // bf16 features into the head (its input accepts f32, bf16 and f16): against the CPU head on
  // the same bf16 features.
  const Inputs in = make_inputs(c, cases()[1], emb[1], 7);
  auto ref = run(*cpu, in, 4, true);
  auto dev = run(*gpu, in, 4, true);
  ASSERT_TRUE(ref) << ref.status().to_string();
  ASSERT_TRUE(dev) << dev.status().to_string();
  const double e =
      rel_l2(dev->actions.data<float>(), ref->actions.data<float>(), ref->actions.numel());
  std::printf("[%s bf16 features] actions rel-L2 %.2e\n", GetParam().c_str(), e);
  EXPECT_LE(e, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaGroot, ::testing::Values("tiny", "small"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace edgevla::backends

