// The cuda backend's GR00T N1.6 engines against the CPU backend in f32 (itself within ~1e-6 of
// tests/reference/groot), on generated tiny and small checkpoints (bf16 weights: both backends
// compute with the same stored values): 1-3 views of different sizes, left-padded prompts, two
// embodiments. `precision: f32`: actions, every step's velocity and the backbone features (real
// tokens) rel-L2 <= 1e-4; bf16: actions cosine >= 0.999, everything finite. Then graphs re-used
// and re-captured across prompt lengths, step counts and embodiments give the eager results,
// the head reads the backbone's features as bf16, bad input (view sizes and order, image blocks,
// ids, padding, non-finite pixels and features, embodiment, noise, state, steps) is refused by
// name while the engines keep running, and a memory
// budget refuses by name. Every case prints its numbers; without a GPU every test skips itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/model/groot/generator.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/processor.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends {
namespace {

namespace fs = std::filesystem;
namespace mg = model::groot;

using test::all_finite;
using test::cosine;
using test::rel_l2;

const std::string& checkpoint(const std::string& preset) {
  static std::map<std::string, std::string> dirs;
  if (auto it = dirs.find(preset); it != dirs.end()) return it->second;
  const std::string dir = (fs::temp_directory_path() /
                           ("edgevla-gpu-groot-" + std::to_string(::getpid()) + "-" + preset))
                              .string();
  fs::remove_all(dir);
  mg::GenerateOptions g;
  g.preset = preset;
  g.seed = 21;
  g.dtype = DType::kBF16;
  const Status s = mg::generate_checkpoint(g, dir);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return dirs.emplace(preset, dir).first->second;
}

struct Engines {
  std::shared_ptr<const model::Model> model;
  std::unique_ptr<Engine> backbone, head;
};

Expected<Engines> open(const std::string& dir, std::string_view backend, Precision precision,
                       std::int64_t budget = 0) {
  Engines e;
  EDGEVLA_ASSIGN_OR_RETURN(const model::Family* fam, model::find_family("groot", dir));
  EDGEVLA_ASSIGN_OR_RETURN(e.model, fam->open(dir, {}));
  EDGEVLA_ASSIGN_OR_RETURN(auto b, make_backend(backend));
  EngineOptions o;
  o.threads = 2;
  o.max_steps = 8;
  o.device = backend == "cpu" ? "cpu" : "cuda:0";
  o.precision = precision;
  o.memory_budget_bytes = budget;
  EDGEVLA_ASSIGN_OR_RETURN(e.backbone, b->create(*e.model, model::kBackbone, o));
  EDGEVLA_ASSIGN_OR_RETURN(e.head, b->create(*e.model, model::kActionHead, o));
  return e;
}

const mg::GrootConfig& config_of(const Engines& e) {
  return mg::as_groot(*e.model).value()->config();
}

// One observation: views [3, h, w], a left-padded prompt with one <IMG_CONTEXT> run per view,
// state, embodiment, noise.
struct Inputs {
  std::vector<Tensor> images;
  Tensor ids, mask, state, embodiment, noise;
};

struct CaseSpec {
  std::vector<std::pair<int, int>> sizes;  // (h, w) per view, multiples of 28
  int pad = 0;                             // left padding tokens
  int text = 20;                           // instruction tokens
  int embodiment_index = 0;                // into the checkpoint's ids
  int steps = 4;
};

std::vector<int> embodiment_ids(const std::string& dir) {
  auto ids = mg::load_embodiment_ids((fs::path(dir) / "embodiment_id.json").string());
  EXPECT_TRUE(ids.has_value());
  std::vector<int> out;
  if (ids) {
    for (const auto& [tag, id] : *ids) {
      if (id < 32) out.push_back(id);
    }
  }
  return out;
}

Inputs make_inputs(const mg::GrootConfig& c, const CaseSpec& cs, int embodiment,
                   std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pix(-1.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> word(
      1, static_cast<std::int32_t>(c.text.vocab_size) - 1);
  auto text_id = [&] {
    std::int32_t id = word(rng);
    while (id == c.image_token_id) id = word(rng);
    return id;
  };
  Inputs in;
  const std::int64_t merge = std::int64_t{c.vision.patch_size} * c.unshuffle_factor;
  std::vector<std::int32_t> ids(static_cast<std::size_t>(cs.pad), 0);
  std::vector<bool> valid(static_cast<std::size_t>(cs.pad), false);
  auto push = [&](std::int32_t id) {
    ids.push_back(id);
    valid.push_back(true);
  };
  for (int i = 0; i < cs.text; ++i) push(text_id());
  for (const auto& [h, w] : cs.sizes) {
    Tensor t = *Tensor::empty(DType::kF32, Shape{3, h, w});
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = pix(rng);
    in.images.push_back(t);
    push(text_id());  // "<img>"
    for (std::int64_t k = 0; k < (h / merge) * (w / merge); ++k)
      push(static_cast<std::int32_t>(c.image_token_id));
    push(text_id());  // "</img>"
    push(text_id());
  }
  const auto L = static_cast<std::int64_t>(ids.size());
  in.ids = *Tensor::empty(DType::kI32, Shape{L});
  in.mask = *Tensor::empty(DType::kBool, Shape{L});
  for (std::int64_t i = 0; i < L; ++i) {
    in.ids.data<std::int32_t>()[i] = ids[static_cast<std::size_t>(i)];
    in.mask.data<bool>()[i] = valid[static_cast<std::size_t>(i)];
  }
  in.state = *Tensor::empty(DType::kF32, Shape{c.max_state_dim});
  for (std::int64_t i = 0; i < c.max_state_dim; ++i)
    in.state.data<float>()[i] = i < 24 ? 0.5f * normal(rng) : 0.0f;
  in.embodiment = *Tensor::empty(DType::kI32, Shape{1});
  *in.embodiment.data<std::int32_t>() = embodiment;
  in.noise = *Tensor::empty(DType::kF32, Shape{c.action_horizon, c.max_action_dim});
  for (std::int64_t i = 0; i < in.noise.numel(); ++i) in.noise.data<float>()[i] = normal(rng);
  return in;
}

struct Result {
  Tensor image_embeds, features, attention_mask, image_mask, actions, velocities;
  double backbone_ms = 0, head_ms = 0;
};

Status bind_backbone(Engine& b, const Inputs& in) {
  b.clear_bindings();
  for (std::size_t k = 0; k < in.images.size(); ++k) {
    EDGEVLA_RETURN_IF_ERROR(b.bind("image." + std::to_string(k), in.images[k]));
  }
  EDGEVLA_RETURN_IF_ERROR(b.bind("input_ids", in.ids));
  return b.bind("attention_mask", in.mask);
}

Status bind_head(Engine& h, const Inputs& in, const Tensor& features, const Tensor& mask,
                 const Tensor& image_mask) {
  h.clear_bindings();
  EDGEVLA_RETURN_IF_ERROR(h.bind("backbone_features", features));
  EDGEVLA_RETURN_IF_ERROR(h.bind("attention_mask", mask));
  EDGEVLA_RETURN_IF_ERROR(h.bind("image_mask", image_mask));
  EDGEVLA_RETURN_IF_ERROR(h.bind("state", in.state));
  EDGEVLA_RETURN_IF_ERROR(h.bind("embodiment_id", in.embodiment));
  return h.bind("noise", in.noise);
}

// Backbone then head; outputs copied out of the engines' buffers. `bf16_features`: the head
// reads the features converted to bf16.
Expected<Result> run(Engines& e, const Inputs& in, int steps, bool bf16_features = false) {
  Result r;
  const mg::GrootConfig& c = config_of(e);
  EDGEVLA_RETURN_IF_ERROR(bind_backbone(*e.backbone, in));
  std::int64_t n_img = 0;
  for (std::int64_t i = 0; i < in.ids.numel(); ++i)
    n_img += in.ids.data<std::int32_t>()[i] == c.image_token_id ? 1 : 0;
  EDGEVLA_ASSIGN_OR_RETURN(r.image_embeds,
                           Tensor::empty(DType::kF32, Shape{n_img, c.text.hidden_size}));
  EDGEVLA_RETURN_IF_ERROR(e.backbone->bind("image_embeds", r.image_embeds));
  EDGEVLA_RETURN_IF_ERROR(e.backbone->run({}));
  r.backbone_ms = e.backbone->last_timings().total_ms;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor f, e.backbone->output("backbone_features"));
  EDGEVLA_ASSIGN_OR_RETURN(r.features, f.clone());
  EDGEVLA_ASSIGN_OR_RETURN(Tensor m, e.backbone->output("attention_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(r.attention_mask, m.clone());
  EDGEVLA_ASSIGN_OR_RETURN(Tensor im, e.backbone->output("image_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(r.image_mask, im.clone());
  Tensor features = r.features;
  if (bf16_features) {
    EDGEVLA_ASSIGN_OR_RETURN(features, Tensor::empty(DType::kBF16, r.features.shape()));
    auto* dst = reinterpret_cast<std::uint16_t*>(features.raw_data());
    for (std::int64_t i = 0; i < r.features.numel(); ++i)
      dst[i] = float_to_bfloat16(r.features.data<float>()[i]);
  }
  EDGEVLA_RETURN_IF_ERROR(bind_head(*e.head, in, features, r.attention_mask, r.image_mask));
  EDGEVLA_ASSIGN_OR_RETURN(
      Tensor vel, Tensor::empty(DType::kF32, Shape{steps, c.action_horizon, c.max_action_dim}));
  EDGEVLA_RETURN_IF_ERROR(e.head->bind("velocities", vel));
  EDGEVLA_RETURN_IF_ERROR(e.head->run(RunOptions{steps}));
  r.head_ms = e.head->last_timings().total_ms;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor a, e.head->output("actions"));
  EDGEVLA_ASSIGN_OR_RETURN(r.actions, a.clone());
  r.velocities = vel;
  return r;
}

// rel-L2 and cosine of the backbone features over the real (attended) tokens only: padding
// rows carry no meaning.
std::pair<double, double> feature_errors(const Result& got, const Result& ref) {
  const std::int64_t L = ref.features.shape()[0], W = ref.features.shape()[1];
  std::vector<float> a, b;
  for (std::int64_t i = 0; i < L; ++i) {
    if (!ref.attention_mask.data<bool>()[i]) continue;
    a.insert(a.end(), got.features.data<float>() + i * W, got.features.data<float>() + (i + 1) * W);
    b.insert(b.end(), ref.features.data<float>() + i * W, ref.features.data<float>() + (i + 1) * W);
  }
  const auto n = static_cast<std::int64_t>(a.size());
  return {rel_l2(a.data(), b.data(), n), cosine(a.data(), b.data(), n)};
}

std::string describe(const CaseSpec& cs) {
  std::string s;
  for (const auto& [h, w] : cs.sizes)
    s += (s.empty() ? "" : ",") + std::to_string(h) + "x" + std::to_string(w);
  return std::to_string(cs.sizes.size()) + " view(s) " + s + ", pad " + std::to_string(cs.pad) +
         ", emb#" + std::to_string(cs.embodiment_index) + ", " + std::to_string(cs.steps) +
         " steps";
}

const std::vector<CaseSpec>& cases() {
  static const std::vector<CaseSpec> c = {
      {{{224, 224}}, 0, 20, 0, 4},
      {{{252, 336}, {224, 224}}, 5, 17, 1, 4},
      {{{196, 280}, {224, 224}, {168, 168}}, 3, 26, 0, 4},
      {{{252, 252}, {252, 252}, {196, 280}},
       0,
       35,
       1,
       4},  // views of one size: one batched attention
  };
  return c;
}

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
  const std::string plans = dir + "-wgmma-plans.txt";
  fs::remove(plans);
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
  fs::remove(plans);
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

void expect_invalid(const Status& s, const std::string& needle) {
  EXPECT_FALSE(s.is_ok()) << "expected an error naming '" << needle << "'";
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
  std::printf("  refused as expected: %s\n", s.to_string().c_str());
}

TEST_P(CudaGroot, BadInputIsRefusedByName) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam());
  auto gpu = open(dir, "cuda", Precision::kBF16);
  ASSERT_TRUE(gpu) << gpu.status().to_string();
  const std::vector<int> emb = embodiment_ids(dir);
  const mg::GrootConfig& c = config_of(*gpu);
  const Inputs in = make_inputs(c, cases()[1], emb[0], 3);
  Engine& b = *gpu->backbone;
  // A view whose size is not a multiple of patch x unshuffle.
  Inputs odd = in;
  odd.images[0] = *Tensor::empty(DType::kF32, Shape{3, 250, 336});
  ASSERT_TRUE(bind_backbone(b, odd).is_ok());
  expect_invalid(b.run({}), "image.0");
  // image.1 without image.0.
  b.clear_bindings();
  ASSERT_TRUE(b.bind("image.1", in.images[1]).is_ok());
  ASSERT_TRUE(b.bind("input_ids", in.ids).is_ok());
  ASSERT_TRUE(b.bind("attention_mask", in.mask).is_ok());
  expect_invalid(b.run({}), "image.0");
  // Fewer views than image blocks in the prompt.
  b.clear_bindings();
  ASSERT_TRUE(b.bind("image.0", in.images[0]).is_ok());
  ASSERT_TRUE(b.bind("input_ids", in.ids).is_ok());
  ASSERT_TRUE(b.bind("attention_mask", in.mask).is_ok());
  expect_invalid(b.run({}), "view");
  // A non-finite pixel.
  Inputs nan_pixel = in;
  nan_pixel.images[1] = *in.images[1].clone();
  nan_pixel.images[1].data<float>()[17] = std::nanf("");
  ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
  expect_invalid(b.run({}), "image.1");
  // An id outside the vocabulary; all padding.
  Inputs bad = in;
  bad.ids = *in.ids.clone();
  bad.ids.data<std::int32_t>()[bad.ids.numel() - 1] = static_cast<std::int32_t>(c.text.vocab_size);
  ASSERT_TRUE(bind_backbone(b, bad).is_ok());
  expect_invalid(b.run({}), "vocabulary");
  Inputs none = in;
  none.mask = *in.mask.clone();
  for (std::int64_t i = 0; i < none.mask.numel(); ++i) none.mask.data<bool>()[i] = false;
  ASSERT_TRUE(bind_backbone(b, none).is_ok());
  expect_invalid(b.run({}), "padding");
  // The engine still runs after refusing; with the pass replayed from its graph, the pixel count
  // read is this chunk's, not the last one's.
  ASSERT_TRUE(bind_backbone(b, in).is_ok());
  ASSERT_TRUE(b.run({}).is_ok());
  ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
  expect_invalid(b.run({}), "image.1");
  ASSERT_TRUE(bind_backbone(b, in).is_ok());
  ASSERT_TRUE(b.run({}).is_ok());
  const Tensor features = *b.output("backbone_features")->clone();
  const Tensor mask = *b.output("attention_mask")->clone();
  const Tensor image_mask = *b.output("image_mask")->clone();
  // Features bound on the device, as the backbone node loans them: they go out with a ready
  // fence while the stream still computes. The non-finite pixel check then reads its count once
  // the pass is queued behind it, still naming the view, and leaves the bound features as they
  // were; a host copy waits for the fence and holds the same features; the head's stream waits
  // for it on the device and makes the same actions.
  {
    const TensorSpec* spec = nullptr;
    for (const TensorSpec& s : b.outputs()) {
      if (s.name == "backbone_features") spec = &s;
    }
    ASSERT_NE(spec, nullptr);
    Tensor dev = *Tensor::empty(DType::kF32, spec->max_shape, Device::cuda(0));
    ASSERT_EQ(cudaMemset(dev.raw_data(), 0, dev.nbytes()), cudaSuccess);
    ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev).is_ok());
    expect_invalid(b.run({}), "image.1");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Tensor untouched = *dev.to(Device::cpu());
    for (std::int64_t i = 0; i < untouched.numel(); ++i) {
      ASSERT_EQ(untouched.data<float>()[i], 0.0f) << "the refused chunk wrote the bound features at " << i;
    }
    Tensor dev2 = *Tensor::empty(DType::kF32, spec->max_shape, Device::cuda(0));
    ASSERT_TRUE(bind_backbone(b, in).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev2).is_ok());
    ASSERT_TRUE(b.run({}).is_ok());
    EXPECT_NE(dev2.buffer()->ready(), nullptr) << "the features went out without a fence";
    const Tensor fenced = *b.output("backbone_features");
    const Tensor host = *fenced.to(Device::cpu());
    ASSERT_EQ(host.shape(), features.shape());
    EXPECT_EQ(std::memcmp(host.raw_data(), features.raw_data(), features.nbytes()), 0);
    Engine& h = *gpu->head;
    ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
    ASSERT_TRUE(h.run(RunOptions{4}).is_ok());
    const Tensor from_host = *h.output("actions")->clone();
    Tensor dev3 = *Tensor::empty(DType::kF32, spec->max_shape, Device::cuda(0));
    ASSERT_TRUE(bind_backbone(b, in).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev3).is_ok());
    ASSERT_TRUE(b.run({}).is_ok());
    ASSERT_TRUE(bind_head(h, in, *b.output("backbone_features"), mask, image_mask).is_ok());
    ASSERT_TRUE(h.run(RunOptions{4}).is_ok());  // right away: its stream waits on the device
    const Tensor from_fenced = *h.output("actions")->clone();
    ASSERT_EQ(from_fenced.shape(), from_host.shape());
    for (std::int64_t i = 0; i < from_host.numel(); ++i) {
      ASSERT_NEAR(from_fenced.data<float>()[i], from_host.data<float>()[i], 1e-5f) << i;
    }
    // A fenced chunk right after good ones, replayed from the same graph, is still refused.
    ASSERT_TRUE(bind_backbone(b, nan_pixel).is_ok());
    ASSERT_TRUE(b.bind("backbone_features", dev3).is_ok());
    expect_invalid(b.run({}), "image.1");
  }

  Engine& h = *gpu->head;
  // An embodiment the checkpoint lacks.
  Inputs other = in;
  other.embodiment = *in.embodiment.clone();
  int unknown = 0;
  while (std::find(emb.begin(), emb.end(), unknown) != emb.end()) ++unknown;
  *other.embodiment.data<std::int32_t>() = unknown;
  ASSERT_TRUE(bind_head(h, other, features, mask, image_mask).is_ok());
  expect_invalid(h.run(RunOptions{4}), "embodiment id");
  // Noise of the wrong shape; a state with a NaN; no image token attended; too many steps.
  ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
  ASSERT_TRUE(
      h.bind("noise", *Tensor::empty(DType::kF32, Shape{c.action_horizon - 1, c.max_action_dim}))
          .is_ok());
  expect_invalid(h.run(RunOptions{4}), "noise");
  Inputs nan = in;
  nan.state = *in.state.clone();
  nan.state.data<float>()[0] = std::nanf("");
  ASSERT_TRUE(bind_head(h, nan, features, mask, image_mask).is_ok());
  expect_invalid(h.run(RunOptions{4}), "state");
  Tensor nan_features = *features.clone();
  std::int64_t attended = 0;
  while (!mask.data<bool>()[attended]) ++attended;
  nan_features.data<float>()[attended * nan_features.shape()[1] + 3] = INFINITY;
  ASSERT_TRUE(bind_head(h, in, nan_features, mask, image_mask).is_ok());
  expect_invalid(h.run(RunOptions{4}), "backbone_features");
  Tensor no_images = *image_mask.clone();
  for (std::int64_t i = 0; i < no_images.numel(); ++i) no_images.data<bool>()[i] = false;
  ASSERT_TRUE(bind_head(h, in, features, mask, no_images).is_ok());
  expect_invalid(h.run(RunOptions{4}), "image");
  ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
  const Status many = h.run(RunOptions{9});
  EXPECT_FALSE(many.is_ok());
  EXPECT_NE(many.message().find("num_steps"), std::string::npos) << many.to_string();
  // And still runs.
  ASSERT_TRUE(bind_head(h, in, features, mask, image_mask).is_ok());
  const Status ok = h.run(RunOptions{4});
  ASSERT_TRUE(ok.is_ok()) << ok.to_string();
  EXPECT_TRUE(all_finite(*h.output("actions")));
}

TEST_P(CudaGroot, AMemoryBudgetRefusesByName) {
  REQUIRE_GPU();
  const std::string& dir = checkpoint(GetParam());
  auto small = open(dir, "cuda", Precision::kBF16, std::int64_t{1} << 20);
  ASSERT_FALSE(small);
  std::printf("  refused as expected: %s\n", small.status().to_string().c_str());
  EXPECT_NE(small.status().message().find("gpu_memory_budget_mb"), std::string::npos)
      << small.status().to_string();
  auto fits = open(dir, "cuda", Precision::kBF16, std::int64_t{8} << 30);
  ASSERT_TRUE(fits) << fits.status().to_string();
  std::printf("  [%s] device bytes: backbone %lld MiB, action head %lld MiB\n", GetParam().c_str(),
              static_cast<long long>(fits->backbone->device_bytes() >> 20),
              static_cast<long long>(fits->head->device_bytes() >> 20));
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaGroot, ::testing::Values("tiny", "small"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace edgevla::backends
