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
#include <filesystem>
#include <map>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/fence.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends {
namespace {

namespace fs = std::filesystem;
using model::ModelType;

using test::all_finite;
using test::cosine;
using test::rel_l2;

struct Pair {
  std::shared_ptr<const model::pi0::Pi0Model> model;
  std::unique_ptr<Engine> backbone, head;
};

const std::string& checkpoint(const std::string& preset, ModelType type) {
  static std::map<std::string, std::string> dirs;
  const std::string key = preset + std::string(model::model_type_name(type));
  if (auto it = dirs.find(key); it != dirs.end()) return it->second;
  const std::string dir = (fs::temp_directory_path() / ("edgevla-gpu-" + std::to_string(::getpid()) + "-" + key)).string();
  fs::remove_all(dir);
  model::GenerateOptions g;
  g.config = *model::preset_config(preset, type);
  g.seed = 21;
  g.dtype = DType::kBF16;  // bf16 weights: both backends compute with the same stored values
  EXPECT_OK(model::generate_checkpoint(g, dir));
  return dirs.emplace(key, dir).first->second;
}

Expected<Pair> open(const std::string& dir, std::string_view backend, Precision precision, std::int64_t budget = 0) {
  Pair p;
  EDGEVLA_ASSIGN_OR_RETURN(model::Checkpoint ck, model::Checkpoint::open(dir));
  p.model = std::make_shared<const model::pi0::Pi0Model>(std::move(ck));
  EDGEVLA_ASSIGN_OR_RETURN(auto b, make_backend(backend));
  EngineOptions o;
  o.threads = 2;
  o.device = backend == "cpu" ? "cpu" : "cuda:0";
  o.precision = precision;
  o.memory_budget_bytes = budget;
  EDGEVLA_ASSIGN_OR_RETURN(p.backbone, b->create(*p.model, model::kBackbone, o));
  EDGEVLA_ASSIGN_OR_RETURN(p.head, b->create(*p.model, model::kActionHead, o));
  return p;
}

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
const std::string& full_layer_checkpoint(ModelType type = ModelType::kPi05) {
  static std::map<ModelType, std::string> dirs;
  std::string& dir = dirs[type];
  if (!dir.empty()) return dir;
  dir = (fs::temp_directory_path() / ("edgevla-gpu-" + std::to_string(::getpid()) + "-fulllayer-" +
                                      std::string(model::model_type_name(type))))
            .string();
  fs::remove_all(dir);
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
  return dir;
}

// A bf16 cuda pair opened with environment variables set (then unset): engines read them when made.
Expected<Pair> open_with(const std::string& dir, std::initializer_list<std::pair<const char*, const char*>> vars) {
  for (const auto& [var, value] : vars) ::setenv(var, value, 1);
  auto p = open(dir, "cuda", Precision::kBF16);
  for (const auto& [var, value] : vars) ::unsetenv(var);
  return p;
}
Expected<Pair> open_with(const std::string& dir, const char* var, const char* value) {
  return open_with(dir, {{var, value}});
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
  const std::string dir =
      (fs::temp_directory_path() / ("edgevla-gpu-" + std::to_string(::getpid()) + "-towerpad")).string();
  fs::remove_all(dir);
  model::GenerateOptions g;
  g.config = *model::preset_config("tiny", ModelType::kPi05);
  g.config.vision.mlp_dim = 100;
  g.seed = 9;
  g.dtype = DType::kBF16;
  ASSERT_OK(model::generate_checkpoint(g, dir));
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
  fs::remove_all(dir);
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
// (EDGEVLA_CUDA_ATTN_ROPE=1) agree with the rope kernel. Engines
// opened apart time their cuBLASLt picks apart (the backbone's too), so all share one plan file,
// and the chained engine runs every case first: the others then reuse its picks.
// EDGEVLA_CUDA_LAYER_FENCES=1: the backbone hands its own cache out while its stream still runs,
// with an event per layer, and the head's first step waits for layer l's event before it reads
// layer l. Against the same engines waiting for the whole cache (same GEMM picks, from one plan
// file), the actions are the same: a head that read a layer before it was written would read the
// previous run's cache (each run here has other inputs, so its actions would differ).
TEST(CudaPi0Layered, TheHeadFollowingTheBackboneLayerByLayerGivesTheSameActions) {
  REQUIRE_GPU();
  for (ModelType type : {ModelType::kPi05, ModelType::kPi0}) {
    const std::string dir = checkpoint("small", type);
    const std::string plans = dir + "-layered-plans.txt";
    fs::remove(plans);
    auto layered = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "1"}});
    ASSERT_TRUE(layered) << layered.status().to_string();
    const model::ModelConfig& c = layered->model->config();
    const std::vector<std::pair<int, int>> cases = {{5, 10}, {40, 10}, {17, 4}, {5, 10}, {40, 1}};
    std::vector<model::ForwardInputs> ins;
    std::vector<Tensor> first;  // the layered engines' first runs (eager, then captured), planning every GEMM
    for (std::size_t run = 0; run < cases.size(); ++run) {
      auto in = model::random_inputs(c, 300 + run, {}, std::min(cases[run].first, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = cases[run].second;
      auto a = model::run_forward(*layered->backbone, *layered->head, c, *in, false);
      ASSERT_TRUE(a) << a.status().to_string();
      // The layered backbone returned before its device work was done.
      ASSERT_FALSE(a->parts.empty());
      EXPECT_EQ(a->parts.front().first, "backbone_enqueue");
      first.push_back(a->actions);
      ins.push_back(*in);
    }
    // Opened after: the same GEMM picks, from the plan file.
    auto whole = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "0"}});
    ASSERT_TRUE(whole) << whole.status().to_string();
    for (std::size_t run = 0; run < cases.size(); ++run) {
      auto a = model::run_forward(*layered->backbone, *layered->head, c, ins[run], false);  // graphs replayed
      auto b = model::run_forward(*whole->backbone, *whole->head, c, ins[run], false);
      ASSERT_TRUE(a && b) << (a ? b.status().to_string() : a.status().to_string());
      ASSERT_FALSE(b->parts.empty());
      EXPECT_EQ(b->parts.front().first, "backbone_gpu");  // finished before it returned
      ASSERT_TRUE(all_finite(a->actions) && all_finite(first[run]));
      const std::int64_t n = b->actions.numel();
      const double e = rel_l2(a->actions.data<float>(), b->actions.data<float>(), n);
      const double e0 = rel_l2(first[run].data<float>(), b->actions.data<float>(), n);
      std::printf("[small %s] run %zu (%d tokens, %d steps): layered vs whole actions rel-L2 %.2e (first run %.2e)\n",
                  std::string(model::model_type_name(type)).c_str(), run, cases[run].first, cases[run].second, e, e0);
      EXPECT_LE(e, 1e-6) << "run " << run;
      EXPECT_LE(e0, 1e-6) << "run " << run;
    }
  }
}

// One forward with the backbone's cache bound to `block` (a device [L, 2, P, K, h] tensor in the
// compute dtype, as a bus block in the node graphs) and the head reading it there.
Expected<Tensor> forward_into(Pair& p, const model::ModelConfig& c, const model::ForwardInputs& in, const Tensor& block) {
  p.backbone->clear_bindings();
  for (std::size_t s = 0; s < c.cameras.size(); ++s) {
    if (in.images[s].defined()) EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("image." + c.cameras[s], in.images[s]));
  }
  EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("tokens", in.tokens));
  EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("token_mask", in.token_mask));
  EDGEVLA_RETURN_IF_ERROR(p.backbone->bind("kv", block));
  EDGEVLA_RETURN_IF_ERROR(p.backbone->run({}));
  p.head->clear_bindings();
  EDGEVLA_ASSIGN_OR_RETURN(Tensor kv, p.backbone->output("kv"));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor mask, p.backbone->output("mask"));
  EDGEVLA_RETURN_IF_ERROR(p.head->bind("kv", kv));
  EDGEVLA_RETURN_IF_ERROR(p.head->bind("mask", mask));
  if (in.state.defined()) EDGEVLA_RETURN_IF_ERROR(p.head->bind("state", in.state));
  EDGEVLA_RETURN_IF_ERROR(p.head->bind("noise", in.noise));
  RunOptions ro;
  ro.num_steps = in.num_steps;
  EDGEVLA_RETURN_IF_ERROR(p.head->run(ro));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor actions, p.head->output("actions"));
  return actions.clone();
}

// EDGEVLA_CUDA_LAYER_FENCES=2: a cache bound on the device (a bus block) is written layer by layer
// inside the backbone's pass and handed out with the layer events. Two blocks alternate (a graph
// per block); against engines that copy the cache after the pass (0): the same actions, and the
// same bytes in the block (the valid rows, and zeros past them).
TEST(CudaPi0Layered, ACacheBoundOnTheDeviceIsWrittenLayerByLayerToo) {
  REQUIRE_GPU();
  for (ModelType type : {ModelType::kPi05, ModelType::kPi0}) {
    const std::string dir = checkpoint("small", type);
    const std::string plans = dir + "-bound-plans.txt";
    fs::remove(plans);
    auto layered = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "2"}});
    ASSERT_TRUE(layered) << layered.status().to_string();
    const model::ModelConfig& c = layered->model->config();
    const Shape kv_shape{c.vlm.depth, 2, c.prefix_len(), c.vlm.num_kv_heads, c.vlm.head_dim};
    std::vector<Tensor> blocks;
    for (int b = 0; b < 2; ++b) {
      auto t = Tensor::empty(DType::kBF16, kv_shape, Device::cuda(0));
      ASSERT_TRUE(t) << t.status().to_string();
      blocks.push_back(*t);
    }
    const std::vector<std::pair<int, int>> cases = {{5, 10}, {40, 10}, {17, 4}, {5, 10}};
    std::vector<model::ForwardInputs> ins;
    std::vector<Tensor> first;
    for (std::size_t run = 0; run < cases.size(); ++run) {
      auto in = model::random_inputs(c, 500 + run, {}, std::min(cases[run].first, c.token_len()));
      ASSERT_TRUE(in);
      in->num_steps = cases[run].second;
      auto a = forward_into(*layered, c, *in, blocks[run % 2]);
      ASSERT_TRUE(a) << a.status().to_string();
      // The block went out with the backbone's layer events.
      EXPECT_NE(backends::cuda::layer_events_of(blocks[run % 2], 0), nullptr);
      first.push_back(*a);
      ins.push_back(*in);
    }
    auto whole = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}, {"EDGEVLA_CUDA_LAYER_FENCES", "0"}});
    ASSERT_TRUE(whole) << whole.status().to_string();
    const std::size_t bytes = blocks[0].nbytes();
    std::vector<std::byte> ka(bytes), kb(bytes);
    for (std::size_t run = 0; run < cases.size(); ++run) {
      // Each block written by the other block's run first, so stale rows would show.
      auto a = forward_into(*layered, c, ins[run], blocks[(run + 1) % 2]);
      ASSERT_TRUE(a) << a.status().to_string();
      // The head waited for the layers only; the zeroing after the pass is the block's fence's.
      ASSERT_OK(blocks[(run + 1) % 2].buffer()->wait_ready());
      ASSERT_EQ(cudaMemcpy(ka.data(), blocks[(run + 1) % 2].raw_data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      auto b = forward_into(*whole, c, ins[run], blocks[run % 2]);
      ASSERT_TRUE(b) << b.status().to_string();
      EXPECT_EQ(backends::cuda::layer_events_of(blocks[run % 2], 0), nullptr);
      ASSERT_OK(blocks[run % 2].buffer()->wait_ready());
      ASSERT_EQ(cudaMemcpy(kb.data(), blocks[run % 2].raw_data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      const std::int64_t n = b->numel();
      const double e = rel_l2(a->data<float>(), b->data<float>(), n);
      const double e0 = rel_l2(first[run].data<float>(), b->data<float>(), n);
      std::printf("[small %s] run %zu (%d tokens, %d steps): bound layered vs whole actions rel-L2 %.2e (first run "
                  "%.2e), cache bytes %s\n",
                  std::string(model::model_type_name(type)).c_str(), run, cases[run].first, cases[run].second, e, e0,
                  ka == kb ? "equal" : "DIFFER");
      EXPECT_LE(e, 1e-6) << "run " << run;
      EXPECT_LE(e0, 1e-6) << "run " << run;
      EXPECT_TRUE(ka == kb) << "run " << run;
    }
  }
}

// A backbone writes at most kMaxLayeredBlocks bound blocks inside its pass (a graph each); the
// blocks after them get the cache copied after the pass and no layer events, with the same actions
// and bytes, and the first blocks keep the layered form. The head's timings keep the backbone's
// part apart.
TEST(CudaPi0Layered, BlocksPastTheLayeredOnesTakeTheCopy) {
  REQUIRE_GPU();
  const std::string dir = checkpoint("small", ModelType::kPi05);
  const std::string plans = dir + "-many-blocks-plans.txt";
  fs::remove(plans);
  auto p = open_with(dir, {{"EDGEVLA_GEMM_PLAN_FILE", plans.c_str()}});  // the default: layer fences 2
  ASSERT_TRUE(p) << p.status().to_string();
  const model::ModelConfig& c = p->model->config();
  const Shape kv_shape{c.vlm.depth, 2, c.prefix_len(), c.vlm.num_kv_heads, c.vlm.head_dim};
  auto in = model::random_inputs(c, 700, {}, std::min(9, c.token_len()));
  ASSERT_TRUE(in);
  in->num_steps = 3;
  const std::size_t count = backends::cuda::kMaxLayeredBlocks + 2;
  std::vector<Tensor> blocks;
  std::vector<std::vector<std::byte>> bytes;
  Tensor first;
  for (std::size_t b = 0; b <= count; ++b) {
    if (b < count) {
      auto t = Tensor::empty(DType::kBF16, kv_shape, Device::cuda(0));
      ASSERT_TRUE(t) << t.status().to_string();
      ASSERT_EQ(cudaMemset(t->raw_data(), 0xff, t->nbytes()), cudaSuccess);  // stale rows would show
      blocks.push_back(*t);
    }
    const Tensor& block = blocks[b % count];  // the last run: the first block again
    auto a = forward_into(*p, c, *in, block);
    ASSERT_TRUE(a) << a.status().to_string();
    const bool layered = b % count < backends::cuda::kMaxLayeredBlocks;
    EXPECT_EQ(backends::cuda::layer_events_of(block, 0) != nullptr, layered) << "block " << b;
    ASSERT_OK(block.buffer()->wait_ready());
    std::vector<std::byte> kb(block.nbytes());
    ASSERT_EQ(cudaMemcpy(kb.data(), block.raw_data(), kb.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    if (b == 0) {
      first = *a;
    } else {
      const double e = rel_l2(first.data<float>(), a->data<float>(), first.numel());
      EXPECT_LE(e, 1e-6) << "block " << b;
      EXPECT_TRUE(kb == bytes[0]) << "block " << b << ": its cache bytes differ from the first block's";
    }
    bytes.push_back(std::move(kb));
  }
  // Replays on a layered block: the head's time up to the backbone's end is counted as its wait for
  // the backbone (input_wait_ms, which the nodes report as the backbone's), not as the head's own.
  int timed = 0;
  for (int r = 0; r < 4; ++r) {
    auto a = forward_into(*p, c, *in, blocks[0]);
    ASSERT_TRUE(a) << a.status().to_string();
    const backends::RunTimings& t = p->head->last_timings();
    std::printf("layered replay %d: head %.3f ms, of it waiting for the backbone %.3f ms\n", r, t.total_ms,
                t.input_wait_ms);
    EXPECT_GE(t.input_wait_ms, 0.0);
    EXPECT_LE(t.input_wait_ms, t.total_ms);
    if (t.input_wait_ms > 0) ++timed;
  }
  EXPECT_GT(timed, 0) << "no replay timed the backbone's part of the head's run";
}

TEST(CudaPi0Wgmma, TheWarpgroupGemmsAgreeWithBlas) {
  REQUIRE_GPU();
  if (!backends::cuda::wgmma_gemm_available()) GTEST_SKIP() << "the warpgroup GEMM runs on compute capability 9.0 only";
  const std::string& dir = full_layer_checkpoint();
  const std::string plans = dir + "-wgmma-plans.txt";
  fs::remove(plans);
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
  ::unsetenv("EDGEVLA_GEMM_PLAN_FILE");
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
  fs::remove(plans);
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
    const std::string plans = dir + "-norm-plans.txt";
    fs::remove(plans);
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
    fs::remove(plans);
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
    const std::string plans = dir + "-w8-plans.txt";
    fs::remove(plans);
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
    fs::remove(plans);
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
