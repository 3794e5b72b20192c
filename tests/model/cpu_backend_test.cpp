// The CPU backend: kernels against plain loops, the engines' binding contract, the num_steps
// param reaching the Euler loop, thread-count independence, reduced-precision weights, and no
// heap allocation per denoising step.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cpu/kernels.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/util/rng.hpp"
#include "tests/support/allocation_counter.hpp"
#include "tests/support/test_util.hpp"


namespace edgevla::backends {
namespace {

namespace fs = std::filesystem;
using model::ModelType;

std::vector<float> random_vec(std::size_t n, std::uint64_t seed) {
  Rng rng(seed, 0);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

double rel_l2(const float* a, const float* b, std::int64_t n) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

// Kernels ------------------------------------------------------------------------------------

// softmax(q·kᵀ·scale) · v per head, with each query row limited to its first key_limit keys.
std::vector<float> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, std::int64_t rows, std::int64_t keys,
                                   std::int64_t heads, std::int64_t kv_heads, std::int64_t h,
                                   const std::vector<std::int32_t>& limit, float scale) {
  std::vector<float> out(static_cast<std::size_t>(rows * heads * h));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < heads; ++j) {
      const std::int64_t g = j / (heads / kv_heads);
      const std::int64_t n = limit.empty() ? keys : limit[static_cast<std::size_t>(r)];
      std::vector<double> p(static_cast<std::size_t>(n));
      double mx = -1e300;
      for (std::int64_t t = 0; t < n; ++t) {
        double s = 0;
        for (std::int64_t c = 0; c < h; ++c) s += q[(r * heads + j) * h + c] * k[(t * kv_heads + g) * h + c];
        p[static_cast<std::size_t>(t)] = s * scale;
        mx = std::max(mx, s * scale);
      }
      double sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (std::int64_t c = 0; c < h; ++c) {
        double acc = 0;
        for (std::int64_t t = 0; t < n; ++t) acc += p[static_cast<std::size_t>(t)] / sum * v[(t * kv_heads + g) * h + c];
        out[static_cast<std::size_t>((r * heads + j) * h + c)] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

TEST(CpuKernels, AttentionMatchesPlainLoopsForEveryLayoutAndMask) {
  struct Case {
    std::int64_t rows, keys_a, keys_b, heads, kv, h;
    bool limited;
  };
  for (const Case& c : {Case{37, 50, 0, 8, 1, 16, false}, Case{11, 40, 11, 4, 1, 32, true},
                        Case{20, 20, 0, 4, 4, 8, false}, Case{9, 13, 9, 6, 2, 8, true}}) {
    for (int threads : {1, 3}) {
      cpu::KernelContext ctx(threads);
      const std::int64_t keys = c.keys_a + c.keys_b;
      auto q = random_vec(static_cast<std::size_t>(c.rows * c.heads * c.h), 1);
      auto k = random_vec(static_cast<std::size_t>(keys * c.kv * c.h), 2);
      auto v = random_vec(static_cast<std::size_t>(keys * c.kv * c.h), 3);
      std::vector<std::int32_t> limit;
      if (c.limited) {
        for (std::int64_t r = 0; r < c.rows; ++r) limit.push_back(static_cast<std::int32_t>(c.keys_a + (r == 0 ? 1 : c.keys_b)));
      }
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.h));
      const std::int64_t ld = c.kv * c.h;
      cpu::KeyBlock a{k.data(), v.data(), c.keys_a, ld};
      cpu::KeyBlock b{k.data() + c.keys_a * ld, v.data() + c.keys_a * ld, c.keys_b, ld};
      std::vector<float> out(static_cast<std::size_t>(c.rows * c.heads * c.h));
      cpu::AttentionScratch scratch;
      scratch.reserve(c.heads, c.rows, keys, threads);
      cpu::attention(ctx, q.data(), c.rows, c.heads * c.h, c.heads, c.kv, c.h, a, b,
                     limit.empty() ? nullptr : limit.data(), scale, out.data(), c.heads * c.h, scratch);
      const auto want = naive_attention(q, k, v, c.rows, keys, c.heads, c.kv, c.h, limit, scale);
      EXPECT_LT(rel_l2(out.data(), want.data(), static_cast<std::int64_t>(out.size())), 1e-6)
          << "rows " << c.rows << " heads " << c.heads << "/" << c.kv << " threads " << threads;
    }
  }
}

TEST(CpuKernels, ReducedPrecisionWeightsMultiplyLikeTheirF32Values) {
  cpu::KernelContext ctx(2);
  const std::int64_t m = 33, out = 300, in = 200;
  auto x = random_vec(static_cast<std::size_t>(m * in), 4);
  auto w = random_vec(static_cast<std::size_t>(out * in), 5);
  ctx.reserve_panels(in);
  for (DType dt : {DType::kBF16, DType::kF16}) {
    std::vector<std::uint16_t> packed(w.size());
    std::vector<float> exact(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      packed[i] = dt == DType::kBF16 ? float_to_bfloat16(w[i]) : float_to_half(w[i]);
      exact[i] = dt == DType::kBF16 ? bfloat16_to_float(packed[i]) : half_to_float(packed[i]);
    }
    cpu::Linear lp{packed.data(), dt, out, in, random_vec(static_cast<std::size_t>(out), 6)};
    cpu::Linear lf{exact.data(), DType::kF32, out, in, lp.bias};
    std::vector<float> yp(static_cast<std::size_t>(m * out)), yf(yp.size());
    cpu::linear(ctx, x.data(), m, in, lp, yp.data(), out);
    cpu::linear(ctx, x.data(), m, in, lf, yf.data(), out);
    EXPECT_LT(rel_l2(yp.data(), yf.data(), m * out), 1e-6) << dtype_name(dt);
    // Accumulating adds onto what is there (the fused residual).
    std::vector<float> acc = yf;
    cpu::linear(ctx, x.data(), m, in, lf, acc.data(), out, /*accumulate=*/true);
    for (std::size_t i = 0; i < acc.size(); i += 97) EXPECT_NEAR(acc[i], 2 * yf[i], 1e-3 + 1e-5 * std::abs(yf[i]));
  }
}

TEST(CpuKernels, NormsMatchTheirFormulas) {
  cpu::KernelContext ctx(2);
  const std::int64_t rows = 5, width = 48;
  auto x = random_vec(static_cast<std::size_t>(rows * width), 7);
  auto w = random_vec(static_cast<std::size_t>(width), 8);
  auto b = random_vec(static_cast<std::size_t>(width), 9);
  std::vector<float> y(x.size());
  cpu::rms_norm(ctx, x.data(), rows, width, w.data(), 1e-6f, y.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (std::int64_t i = 0; i < width; ++i) ss += x[r * width + i] * x[r * width + i];
    const double inv = 1 / std::sqrt(ss / width + 1e-6);
    for (std::int64_t i = 0; i < width; ++i) EXPECT_NEAR(y[r * width + i], x[r * width + i] * inv * (1 + w[i]), 1e-5);
  }
  cpu::layer_norm(ctx, x.data(), rows, width, w.data(), b.data(), 1e-6f, y.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < width; ++i) mean += x[r * width + i] / width;
    for (std::int64_t i = 0; i < width; ++i) var += (x[r * width + i] - mean) * (x[r * width + i] - mean) / width;
    for (std::int64_t i = 0; i < width; ++i) {
      EXPECT_NEAR(y[r * width + i], (x[r * width + i] - mean) / std::sqrt(var + 1e-6) * w[i] + b[i], 1e-4);
    }
  }
  std::vector<float> g = x, up = random_vec(x.size(), 10);
  cpu::geglu(ctx, g.data(), up.data(), rows, width);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double v = x[i];
    const double gelu = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(g[i], gelu * up[i], 1e-5 * (1 + std::abs(gelu * up[i])));
  }
}

// Engines ------------------------------------------------------------------------------------

struct Model {
  std::string dir;
  std::shared_ptr<const model::pi0::Pi0Model> ck;
  std::unique_ptr<Engine> backbone, head;
};

Model open_tiny(ModelType type, const std::string& tag, int threads = 2, DType dtype = DType::kF32) {
  Model m;
  m.dir = (fs::temp_directory_path() / ("edgevla-cpu-" + std::to_string(::getpid()) + "-" + tag)).string();
  fs::remove_all(m.dir);
  edgevla::testing::remove_at_exit(m.dir);
  model::GenerateOptions o;
  o.config = *model::preset_config("tiny", type);
  o.seed = 11;
  o.dtype = dtype;
  EXPECT_OK(model::generate_checkpoint(o, m.dir));
  auto ck = model::Checkpoint::open(m.dir);
  EXPECT_TRUE(ck) << ck.status().to_string();
  m.ck = std::make_shared<const model::pi0::Pi0Model>(std::move(*ck));
  auto backend = make_backend("cpu");
  EXPECT_TRUE(backend) << backend.status().to_string();
  EngineOptions eo;
  eo.threads = threads;
  auto bb = (*backend)->create(*m.ck, model::kBackbone, eo);
  auto hd = (*backend)->create(*m.ck, model::kActionHead, eo);
  EXPECT_TRUE(bb && hd);
  m.backbone = std::move(*bb);
  m.head = std::move(*hd);
  return m;
}

TEST(CpuEngines, OptionsTheCpuCannotHonourAreRefusedByName) {
  Model m = open_tiny(ModelType::kPi05, "opts");
  auto backend = make_backend("cpu");
  ASSERT_TRUE(backend);
  EngineOptions cuda;
  cuda.device = "cuda:0";
  auto a = (*backend)->create(*m.ck, model::kBackbone, cuda);
  ASSERT_FALSE(a);
  EXPECT_NE(a.status().message().find("not 'cuda:0'"), std::string::npos) << a.status().message();
  EngineOptions bf16;
  bf16.precision = Precision::kBF16;
  auto b = (*backend)->create(*m.ck, model::kActionHead, bf16);
  ASSERT_FALSE(b);
  EXPECT_NE(b.status().message().find("f32 only"), std::string::npos) << b.status().message();
  EngineOptions tight;
  tight.memory_budget_bytes = 1024;
  auto c = (*backend)->create(*m.ck, model::kBackbone, tight);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("memory budget"), std::string::npos) << c.status().message();
  EngineOptions f32;
  f32.precision = Precision::kF32;
  EXPECT_TRUE((*backend)->create(*m.ck, model::kBackbone, f32));
  // A stage the family does not have.
  auto d = (*backend)->create(*m.ck, "planner", {});
  ASSERT_FALSE(d);
  EXPECT_NE(d.status().message().find("pi0/action_head"), std::string::npos) << d.status().message();
}

TEST(CpuEngines, TheFamilyIsRecognizedFromTheCheckpoint) {
  Model m = open_tiny(ModelType::kPi0, "family");
  auto fam = model::find_family("auto", m.dir);
  ASSERT_TRUE(fam) << fam.status().to_string();
  EXPECT_EQ((*fam)->name(), "pi0");
  auto opened = (*fam)->open(m.dir, {});
  ASSERT_TRUE(opened) << opened.status().to_string();
  EXPECT_EQ((*opened)->variant(), "pi0");
  auto stage = (*opened)->stage(model::kActionHead);
  ASSERT_TRUE(stage);
  EXPECT_GT((*stage)->weight_bytes, 0);
  auto unknown = model::find_family("auto", m.dir + "-nothing");
  EXPECT_FALSE(unknown);
  auto named = model::find_family("gr00t", m.dir);
  ASSERT_FALSE(named);
  EXPECT_NE(named.status().message().find("pi0"), std::string::npos) << named.status().message();
}

TEST(CpuEngines, BindingsAreCheckedByNameDtypeAndShape) {
  Model m = open_tiny(ModelType::kPi05, "bind");
  auto unknown = m.backbone->bind("image.top_camera", Tensor());
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("image.base_0_rgb"), std::string::npos) << unknown.message();

  auto u8 = Tensor::empty(DType::kU8, Shape{3, 224, 224});
  auto wrong_dtype = m.backbone->bind("image.base_0_rgb", *u8);
  EXPECT_NE(wrong_dtype.message().find("must be f32"), std::string::npos) << wrong_dtype.message();

  auto big = Tensor::empty(DType::kI32, Shape{49});
  auto too_long = m.backbone->bind("tokens", *big);
  EXPECT_NE(too_long.message().find("exceeds"), std::string::npos) << too_long.message();

  auto in = model::random_inputs(m.ck->config(), 3, {}, 10);
  ASSERT_TRUE(in);
  auto small = Tensor::empty(DType::kF32, Shape{3, 112, 224});
  ASSERT_OK(m.backbone->bind("image.base_0_rgb", *small));
  ASSERT_OK(m.backbone->bind("tokens", in->tokens));
  ASSERT_OK(m.backbone->bind("token_mask", in->token_mask));
  auto run = m.backbone->run({});
  EXPECT_NE(run.message().find("resize with padding"), std::string::npos) << run.message();

  // The action head without noise, with too many steps.
  m.head->clear_bindings();
  EXPECT_FALSE(m.head->run({}).is_ok());
  RunOptions too_many;
  too_many.num_steps = 100000;
  EXPECT_EQ(m.head->run(too_many).code(), StatusCode::kOutOfRange);
}

TEST(CpuEngines, NumStepsReachesTheEulerLoop) {
  Model m = open_tiny(ModelType::kPi05, "steps");
  auto in = model::random_inputs(m.ck->config(), 5, {2}, 12);
  ASSERT_TRUE(in);
  std::vector<std::vector<float>> results;
  for (int steps : {10, 3, 10}) {
    in->num_steps = steps;
    auto out = model::run_forward(*m.backbone, *m.head, m.ck->config(), *in, true);
    ASSERT_TRUE(out) << out.status().to_string();
    EXPECT_EQ(out->velocities.shape()[0], steps);
    // Euler: x1 = noise + sum_k dt·v_k.
    const std::int64_t n = out->actions.numel();
    const float dt = -1.0f / static_cast<float>(steps);
    for (std::int64_t i = 0; i < n; i += 7) {
      float x = in->noise.data<float>()[i];
      for (int s = 0; s < steps; ++s) x += dt * out->velocities.data<float>()[s * n + i];
      EXPECT_FLOAT_EQ(out->actions.data<float>()[i], x);
    }
    results.emplace_back(out->actions.data<float>(), out->actions.data<float>() + n);
  }
  EXPECT_EQ(results[0], results[2]) << "same inputs, same steps: same actions";
  EXPECT_GT(rel_l2(results[1].data(), results[0].data(), static_cast<std::int64_t>(results[0].size())), 1e-3)
      << "3 steps must not give the 10-step chunk";
}

TEST(CpuEngines, ThreadCountDoesNotChangeResults) {
  for (ModelType type : {ModelType::kPi0, ModelType::kPi05}) {
    Model one = open_tiny(type, "t1", 1);
    Model three = open_tiny(type, "t3", 3);
    auto in = model::random_inputs(one.ck->config(), 8, {1}, 20);
    ASSERT_TRUE(in);
    auto a = model::run_forward(*one.backbone, *one.head, one.ck->config(), *in, false);
    auto b = model::run_forward(*three.backbone, *three.head, three.ck->config(), *in, false);
    ASSERT_TRUE(a && b);
    EXPECT_LT(rel_l2(b->actions.data<float>(), a->actions.data<float>(), a->actions.numel()), 1e-5);
  }
}

TEST(CpuEngines, AFullLengthCacheWithAMaskGivesTheCompactResult) {
  // Another backend may hand over the cache at full prefix length with invalid rows; the
  // action head must drop them itself.
  Model m = open_tiny(ModelType::kPi0, "mask");
  const auto& c = m.ck->config();
  auto in = model::random_inputs(c, 9, {0}, 15);
  ASSERT_TRUE(in);
  auto compact = model::run_forward(*m.backbone, *m.head, c, *in, true);
  ASSERT_TRUE(compact) << compact.status().to_string();
  const std::int64_t L = c.expert.depth, P = compact->prefix_mask.numel();
  const std::int64_t row = std::int64_t{c.vlm.num_kv_heads} * c.vlm.head_dim;
  m.head->clear_bindings();
  auto kv = Tensor::empty(DType::kF32, Shape{L, 2, P, c.vlm.num_kv_heads, c.vlm.head_dim});
  ASSERT_TRUE(kv);
  for (std::int64_t l = 0; l < L; ++l) {
    for (int j = 0; j < 2; ++j) {
      const Tensor* full = j == 0 ? &compact->prefix_k : &compact->prefix_v;
      float* dst = kv->data<float>() + (2 * l + j) * P * row;
      std::copy(full->data<float>() + l * P * row, full->data<float>() + (l + 1) * P * row, dst);
      for (std::int64_t p = 0; p < P; ++p) {
        if (!compact->prefix_mask.data<std::uint8_t>()[p]) dst[p * row] = NAN;  // never read
      }
    }
  }
  ASSERT_OK(m.head->bind("kv", *kv));
  auto mask = Tensor::empty(DType::kBool, Shape{P});
  for (std::int64_t p = 0; p < P; ++p) mask->data<bool>()[p] = compact->prefix_mask.data<std::uint8_t>()[p] != 0;
  ASSERT_OK(m.head->bind("mask", *mask));
  ASSERT_OK(m.head->bind("state", in->state));
  ASSERT_OK(m.head->bind("noise", in->noise));
  ASSERT_OK(m.head->run({}));
  auto actions = m.head->output("actions");
  ASSERT_TRUE(actions);
  EXPECT_LT(rel_l2(actions->data<float>(), compact->actions.data<float>(), actions->numel()), 1e-6);
}

TEST(CpuEngines, ABf16CacheFromAnotherBackendGivesCloseActions) {
  // The cuda backbone hands its cache over in bf16; the cpu action head converts it.
  Model m = open_tiny(ModelType::kPi05, "bf16kv");
  const auto& c = m.ck->config();
  auto in = model::random_inputs(c, 4, {}, 12);
  ASSERT_TRUE(in);
  auto ref = model::run_forward(*m.backbone, *m.head, c, *in, false);
  ASSERT_TRUE(ref) << ref.status().to_string();
  auto kv = m.backbone->output("kv");
  auto mask = m.backbone->output("mask");
  ASSERT_TRUE(kv && mask);
  auto kv16 = Tensor::empty(DType::kBF16, kv->shape());
  ASSERT_TRUE(kv16);
  auto* dst = kv16->data<std::uint16_t>();
  for (std::int64_t i = 0; i < kv->numel(); ++i) dst[i] = float_to_bfloat16(kv->data<float>()[i]);
  m.head->clear_bindings();
  ASSERT_OK(m.head->bind("kv", *kv16));
  ASSERT_OK(m.head->bind("mask", *mask));
  ASSERT_OK(m.head->bind("noise", in->noise));
  ASSERT_OK(m.head->run({}));
  auto actions = m.head->output("actions");
  ASSERT_TRUE(actions);
  const double e = rel_l2(actions->data<float>(), ref->actions.data<float>(), actions->numel());
  EXPECT_LT(e, 1e-2);
  EXPECT_GT(e, 0.0);  // the bf16 values were really used
}

TEST(CpuEngines, Bf16AndF16CheckpointsComputeWithTheirStoredValues) {
  // A reduced-precision file and an f32 file holding the same (rounded) values must agree:
  // the panel conversion is exact, only summation order may differ.
  for (DType dt : {DType::kBF16, DType::kF16}) {
    Model low = open_tiny(ModelType::kPi05, std::string("low") + std::string(dtype_name(dt)), 2, dt);
    const std::string f32_dir = low.dir + "-as-f32";
    fs::remove_all(f32_dir);
    edgevla::testing::remove_at_exit(f32_dir);
    fs::create_directories(f32_dir);
    for (const char* f : {"config.json", "tokenizer.model"}) fs::copy(low.dir + "/" + f, f32_dir + "/" + f);
    std::vector<model::WriteEntry> entries;
    for (const auto& e : low.ck->file().entries()) entries.push_back({e.name, DType::kF32, e.shape});
    ASSERT_OK(model::write_safetensors(f32_dir + "/model.safetensors", entries, {},
                                       [&](const model::WriteEntry& e, std::span<std::byte> out) {
                                         auto t = low.ck->file().tensor(e.name);
                                         cpu::to_f32(t->dtype(), t->raw_data(), reinterpret_cast<float*>(out.data()), t->numel());
                                         return Status::ok();
                                       }));
    auto opened = model::Checkpoint::open(f32_dir);
    ASSERT_TRUE(opened) << opened.status().to_string();
    auto ck32 = std::make_shared<const model::pi0::Pi0Model>(std::move(*opened));
    auto backend = make_backend("cpu");
    auto bb = (*backend)->create(*ck32, model::kBackbone, {});
    auto hd = (*backend)->create(*ck32, model::kActionHead, {});
    ASSERT_TRUE(bb && hd);
    auto in = model::random_inputs(low.ck->config(), 12, {}, 30);
    auto a = model::run_forward(*low.backbone, *low.head, low.ck->config(), *in, false);
    auto b = model::run_forward(**bb, **hd, ck32->config(), *in, false);
    ASSERT_TRUE(a && b);
    EXPECT_LT(rel_l2(a->actions.data<float>(), b->actions.data<float>(), a->actions.numel()), 1e-5) << dtype_name(dt);
  }
}

TEST(CpuEngines, DenoisingStepsAllocateNothing) {
  for (ModelType type : {ModelType::kPi0, ModelType::kPi05}) {
    Model m = open_tiny(type, "alloc");
    const auto& c = m.ck->config();
    auto in = model::random_inputs(c, 13, {1, 2}, 9);
    ASSERT_TRUE(in);
    auto warm = model::run_forward(*m.backbone, *m.head, c, *in, false);  // binds the cache
    ASSERT_TRUE(warm);
    edgevla::testing::count_allocations(true);
    ::operator delete(::operator new(16));  // the counter itself works (a call, not elidable)
    edgevla::testing::count_allocations(false);
    ASSERT_EQ(edgevla::testing::allocations(), 1);
    long counts[2];
    int i = 0;
    for (int steps : {2, 40}) {
      RunOptions ro;
      ro.num_steps = steps;
      edgevla::testing::count_allocations(true);
      Status s = m.head->run(ro);
      edgevla::testing::count_allocations(false);
      ASSERT_OK(s);
      counts[i++] = edgevla::testing::allocations();
    }
    EXPECT_EQ(counts[0], counts[1]) << "allocations grow with the number of steps";
  }
}

}  // namespace
}  // namespace edgevla::backends
