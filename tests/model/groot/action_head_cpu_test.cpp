// The groot action head on the CPU backend against tests/reference/groot/groot_numpy.py (f64):
// the same backbone features, masks, normalised state, embodiment and noise go through both;
// normalized actions and every step's velocity agree to rel-L2 <= 1e-4 on the tiny and small
// configs (f32 checkpoints written by edgevla's generator), for several embodiments with 1, 2
// and 3 views (backbone feature lengths differ), and on a bf16 checkpoint (converted at load).
// Padding rows are ignored; bad inputs are errors naming the tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "runtime/backends/backend.hpp"
#include "runtime/model/groot/generator.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/stage_inputs.hpp"
#include "runtime/model/safetensors.hpp"
#include "tests/model/preprocess_test_util.hpp"
#include "tests/support/allocation_counter.hpp"


namespace edgevla::backends {
namespace {

using model::SafetensorsFile;
using model::test::ScratchDir;

std::string reference_dir() { return edgevla::testing::source_dir() + "/tests/reference/groot"; }

// A reference run: checkpoint, embodiment, views, image size, seed.
struct Case {
  std::string name, checkpoint, embodiment;
  int views;
  std::string image_size;
  int seed;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"tiny_gr1", "tiny", "gr1", 1, "256x256", 1},
      {"tiny_droid", "tiny", "oxe_droid", 3, "256x256", 2},
      {"tiny_libero", "tiny", "libero_panda", 2, "480x640", 3},
      {"small_gr1", "small", "gr1", 1, "480x640", 4},
      {"small_droid", "small", "oxe_droid", 3, "256x256", 5},
      {"small_g1", "small", "unitree_g1", 1, "256x256", 6},
      {"tiny_bf16_libero", "tiny_bf16", "libero_panda", 2, "256x256", 7},
  };
  return c;
}

std::vector<double> as_f64(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kF64:
        out[static_cast<std::size_t>(i)] = t.data<double>()[i];
        break;
      case DType::kF32:
        out[static_cast<std::size_t>(i)] = t.data<float>()[i];
        break;
      case DType::kU8:
        out[static_cast<std::size_t>(i)] = t.data<std::uint8_t>()[i];
        break;
      case DType::kI32:
        out[static_cast<std::size_t>(i)] = t.data<std::int32_t>()[i];
        break;
      default:
        ADD_FAILURE() << "unexpected dtype " << dtype_name(t.dtype());
        return out;
    }
  }
  return out;
}

double rel_l2(const float* got, const std::vector<double>& want, std::size_t offset,
              std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - want[offset + i];
    num += d * d;
    den += want[offset + i] * want[offset + i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// The action head's inputs of one reference run, as host tensors.
struct Inputs {
  Tensor features, attention_mask, image_mask, state, embodiment_id, noise;
  std::vector<double> velocity, actions;  // the reference's outputs
  std::int64_t steps = 0;
};

Expected<Tensor> from_f64(const std::vector<double>& v, const Shape& shape, DType dtype) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(dtype, shape));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF32) t.data<float>()[i] = static_cast<float>(v[i]);
    if (dtype == DType::kBool) t.data<bool>()[i] = v[i] != 0;
    if (dtype == DType::kI32) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(v[i]);
  }
  return t;
}

Inputs read_inputs(const std::string& path) {
  Inputs in;
  auto f = SafetensorsFile::open(path);
  EXPECT_TRUE(f.has_value()) << f.status().to_string();
  if (!f) return in;
  auto get = [&](const char* name, DType dtype) {
    auto t = f->tensor(name);
    EXPECT_TRUE(t.has_value()) << name;
    auto out = from_f64(as_f64(*t), t->shape(), dtype);
    EXPECT_TRUE(out.has_value());
    return *out;
  };
  in.features = get("backbone_features", DType::kF32);
  in.attention_mask = get("attention_mask", DType::kBool);
  in.image_mask = get("image_mask", DType::kBool);
  in.state = get("state", DType::kF32);
  in.embodiment_id = get("embodiment_id", DType::kI32);
  in.noise = get("noise", DType::kF32);
  in.velocity = as_f64(*f->tensor("velocity"));
  in.actions = as_f64(*f->tensor("actions_normalized"));
  in.steps = f->tensor("velocity")->shape()[0];
  return in;
}

class GrootActionHeadCpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = std::make_unique<ScratchDir>("groot_action_head_cpu"); }

  // The checkpoint `name` (tiny, small, tiny_bf16), generated on first use.
  static std::string checkpoint(const std::string& name) {
    const std::string path = *dir_ / name;
    if (!made_.insert(path).second) return path;
    static const std::map<std::string, std::tuple<const char*, DType, int>> kinds = {
        {"tiny", {"tiny", DType::kF32, 11}},
        {"small", {"small", DType::kF32, 12}},
        {"tiny_bf16", {"tiny", DType::kBF16, 13}}};
    const auto it = kinds.find(name);
    EXPECT_NE(it, kinds.end()) << "no checkpoint kind " << name;
    if (it == kinds.end()) return path;
    model::groot::GenerateOptions o;
    o.preset = std::get<0>(it->second);
    o.dtype = std::get<1>(it->second);
    o.seed = static_cast<std::uint64_t>(std::get<2>(it->second));
    const Status s = model::groot::generate_checkpoint(o, path);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return path;
  }

  // Case `name`'s reference run (groot_numpy.py in f64), made on first use: each test process
  // (ctest runs every test in its own) makes only the runs its test reads.
  static std::string reference(const std::string& name) {
    const std::string file = *dir_ / (name + ".safetensors");
    if (!made_.insert(file).second) return file;
    const auto c = std::find_if(cases().begin(), cases().end(), [&](const Case& k) { return k.name == name; });
    EXPECT_NE(c, cases().end()) << "no reference case " << name;
    if (c == cases().end()) return file;
    const std::string log = *dir_ / "setup.log";
    const std::string cmd = std::string(model::test::kPython) + " " + reference_dir() + "/groot_numpy.py --checkpoint " +
                            checkpoint(c->checkpoint) + " --random-images " + std::to_string(c->views) +
                            " --image-size " + c->image_size + " --embodiment " + c->embodiment +
                            " --dtype f64 --seed " + std::to_string(c->seed) + " --out " + file;
    EXPECT_EQ(model::test::run_command(cmd, log), 0) << cmd << "\n" << model::test::read_file(log);
    // The reference writes tensors unaligned; keep the action head's, widest elements first,
    // so edgevla's reader (which checks alignment) maps them.
    const std::string keep =
        "import sys; sys.path.insert(0, sys.argv[1]); import safetensors_io as io; "
        "t = io.load(sys.argv[2]); names = ['backbone_features', 'velocity', "
        "'actions_normalized', 'state', "
        "'noise', 'embodiment_id', 'attention_mask', 'image_mask']; "
        "names.sort(key=lambda n: -t[n].dtype.itemsize); io.save(sys.argv[2], {n: t[n] for n in "
        "names})";
    const std::string resave = std::string(model::test::kPython) + " -c " + model::test::shell_quote(keep) + " " +
                               edgevla::testing::source_dir() + "/tests/reference " + file;
    EXPECT_EQ(model::test::run_command(resave, log), 0) << resave << "\n" << model::test::read_file(log);
    return file;
  }

  static void TearDownTestSuite() {
    models_.clear();
    made_.clear();
    dir_.reset();
  }

  static std::shared_ptr<const model::Model> open(const std::string& checkpoint) {
    auto& m = models_[checkpoint];
    if (m) return m;
    const std::string path = GrootActionHeadCpuTest::checkpoint(checkpoint);
    auto fam = model::find_family("groot", path);
    EXPECT_TRUE(fam.has_value()) << fam.status().to_string();
    if (!fam) return nullptr;
    auto opened = (*fam)->open(path, {});
    EXPECT_TRUE(opened.has_value()) << opened.status().to_string();
    if (opened) m = *opened;
    return m;
  }

  static std::unique_ptr<Engine> engine(const std::string& checkpoint, int threads = 2) {
    auto m = open(checkpoint);
    if (!m) return nullptr;
    auto backend = make_backend("cpu");
    EXPECT_TRUE(backend.has_value()) << backend.status().to_string();
    if (!backend) return nullptr;
    EngineOptions o;
    o.threads = threads;
    o.max_steps = 8;
    auto e = (*backend)->create(*m, model::kActionHead, o);
    EXPECT_TRUE(e.has_value()) << e.status().to_string();
    return e ? std::move(*e) : nullptr;
  }

  static Status bind_all(Engine& e, const Inputs& in) {
    EDGEVLA_RETURN_IF_ERROR(e.bind("backbone_features", in.features));
    EDGEVLA_RETURN_IF_ERROR(e.bind("attention_mask", in.attention_mask));
    EDGEVLA_RETURN_IF_ERROR(e.bind("image_mask", in.image_mask));
    EDGEVLA_RETURN_IF_ERROR(e.bind("state", in.state));
    EDGEVLA_RETURN_IF_ERROR(e.bind("embodiment_id", in.embodiment_id));
    return e.bind("noise", in.noise);
  }

  static std::unique_ptr<ScratchDir> dir_;
  static std::map<std::string, std::shared_ptr<const model::Model>> models_;
  static std::set<std::string> made_;  // checkpoints and reference runs made in this process
};
std::unique_ptr<ScratchDir> GrootActionHeadCpuTest::dir_;
std::map<std::string, std::shared_ptr<const model::Model>> GrootActionHeadCpuTest::models_;
std::set<std::string> GrootActionHeadCpuTest::made_;

// One engine per checkpoint runs all of its cases in turn (embodiments switch between runs).
TEST_F(GrootActionHeadCpuTest, ActionsAndVelocitiesMatchTheReference) {
  std::map<std::string, std::unique_ptr<Engine>> engines;
  std::set<std::int64_t> lengths;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto& e = engines[c.checkpoint];
    if (!e) e = engine(c.checkpoint);
    ASSERT_NE(e, nullptr);
    const Inputs in = read_inputs(reference(c.name));
    ASSERT_EQ(in.steps, 4);
    lengths.insert(in.features.shape()[0]);
    ASSERT_TRUE(bind_all(*e, in).is_ok());
    auto vel = Tensor::empty(DType::kF32, Shape{8, 50, 128});
    ASSERT_TRUE(vel.has_value());
    ASSERT_TRUE(e->bind("velocities", *vel).is_ok());
    const Status s = e->run(RunOptions{4});
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    auto actions = e->output("actions");
    ASSERT_TRUE(actions.has_value());
    ASSERT_EQ(actions->shape(), (Shape{50, 128}));
    const double err = rel_l2(actions->data<float>(), in.actions, 0, in.actions.size());
    std::printf("[ groot ] %-18s tokens %4lld  actions rel-L2 %.3g", c.name.c_str(),
                static_cast<long long>(in.features.shape()[0]), err);
    EXPECT_LE(err, 1e-4);
    auto v = e->output("velocities");
    ASSERT_TRUE(v.has_value());
    ASSERT_EQ(v->shape(), (Shape{4, 50, 128}));
    for (int k = 0; k < 4; ++k) {
      const double ve = rel_l2(v->data<float>() + k * 50 * 128, in.velocity,
                               static_cast<std::size_t>(k) * 50 * 128, 50 * 128);
      std::printf("  v%d %.3g", k, ve);
      EXPECT_LE(ve, 1e-4) << "step " << k;
    }
    std::printf("  (%.1f ms)\n", e->last_timings().total_ms);
    e->clear_bindings();
  }
  // 1, 2 and 3 views give different backbone feature lengths.
  EXPECT_GE(lengths.size(), 3u);
}

// Left padding (rows with attention_mask false, even non-finite ones) changes nothing, and the
// velocities output stays optional.
TEST_F(GrootActionHeadCpuTest, PaddingRowsAreIgnored) {
  auto e = engine("tiny", 1);
  ASSERT_NE(e, nullptr);
  const Inputs in = read_inputs(reference("tiny_droid"));
  const std::int64_t n = in.features.shape()[0], W = in.features.shape()[1], pad = 5;
  Inputs padded = in;
  padded.features = *Tensor::empty(DType::kF32, Shape{n + pad, W});
  padded.attention_mask = *Tensor::empty(DType::kBool, Shape{n + pad});
  padded.image_mask = *Tensor::empty(DType::kBool, Shape{n + pad});
  for (std::int64_t i = 0; i < pad; ++i) {
    padded.attention_mask.data<bool>()[i] = false;
    padded.image_mask.data<bool>()[i] = i % 2 == 0;
    for (std::int64_t j = 0; j < W; ++j) {
      padded.features.data<float>()[i * W + j] =
          j == 0 ? std::numeric_limits<float>::quiet_NaN() : 1e3f;
    }
  }
  std::copy(in.features.data<float>(), in.features.data<float>() + n * W,
            padded.features.data<float>() + pad * W);
  std::copy(in.attention_mask.data<bool>(), in.attention_mask.data<bool>() + n,
            padded.attention_mask.data<bool>() + pad);
  std::copy(in.image_mask.data<bool>(), in.image_mask.data<bool>() + n,
            padded.image_mask.data<bool>() + pad);
  ASSERT_TRUE(bind_all(*e, padded).is_ok());
  const Status s = e->run(RunOptions{4});
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  const double err = rel_l2(e->output("actions")->data<float>(), in.actions, 0, in.actions.size());
  EXPECT_LE(err, 1e-4);
  EXPECT_FALSE(e->output("velocities").has_value());  // not bound: not produced
}

// Another step count than the checkpoint's (its time conditioning is computed per run): step 0
// is at bucket 0 whatever the count, so its velocity is the reference's first one.
TEST_F(GrootActionHeadCpuTest, OtherStepCounts) {
  auto e = engine("small");
  ASSERT_NE(e, nullptr);
  const Inputs in = read_inputs(reference("small_gr1"));
  ASSERT_TRUE(bind_all(*e, in).is_ok());
  auto vel = Tensor::empty(DType::kF32, Shape{8, 50, 128});
  ASSERT_TRUE(e->bind("velocities", *vel).is_ok());
  ASSERT_TRUE(e->run(RunOptions{3}).is_ok());
  auto v = e->output("velocities");
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->shape(), (Shape{3, 50, 128}));
  EXPECT_LE(rel_l2(v->data<float>(), in.velocity, 0, 50 * 128), 1e-4);
  // Different steps, different actions; all finite.
  const float* a = e->output("actions")->data<float>();
  for (int i = 0; i < 50 * 128; ++i) ASSERT_TRUE(std::isfinite(a[i]));
  EXPECT_GT(rel_l2(a, in.actions, 0, in.actions.size()), 1e-3);
  EXPECT_FALSE(e->run(RunOptions{0}).is_ok());
  EXPECT_FALSE(e->run(RunOptions{9}).is_ok());  // beyond max_steps
}

// Backbone features may come in bf16 (a CUDA backbone's): rounded inputs, nearly the same actions.
TEST_F(GrootActionHeadCpuTest, Bf16FeaturesAreAccepted) {
  auto e = engine("small");
  ASSERT_NE(e, nullptr);
  Inputs in = read_inputs(reference("small_droid"));
  Tensor bf = *Tensor::empty(DType::kBF16, in.features.shape());
  auto* bits = bf.data<std::uint16_t>();
  for (std::int64_t i = 0; i < bf.numel(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, in.features.data<float>() + i, sizeof u);
    bits[i] = static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >>
                                         16);  // round to nearest even
  }
  in.features = bf;
  ASSERT_TRUE(bind_all(*e, in).is_ok());
  ASSERT_TRUE(e->run(RunOptions{4}).is_ok());
  const double err = rel_l2(e->output("actions")->data<float>(), in.actions, 0, in.actions.size());
  EXPECT_GT(err, 1e-7);  // the rounding shows
  EXPECT_LE(err, 5e-3);
}

// After a first run (the embodiment's slices converted), a run allocates the same whatever its
// step count: nothing inside the step loop.
TEST_F(GrootActionHeadCpuTest, StepsAllocateNothing) {
  auto e = engine("tiny_bf16");
  ASSERT_NE(e, nullptr);
  const Inputs in = read_inputs(reference("tiny_bf16_libero"));
  ASSERT_TRUE(bind_all(*e, in).is_ok());
  ASSERT_TRUE(e->run(RunOptions{4}).is_ok());
  edgevla::testing::count_allocations(true);
  ::operator delete(::operator new(16));  // the counter itself works (a call, not elidable)
  edgevla::testing::count_allocations(false);
  ASSERT_EQ(edgevla::testing::allocations(), 1);
  std::vector<long> counts;
  for (int steps : {2, 4, 8}) {
    edgevla::testing::count_allocations(true);
    const Status s = e->run(RunOptions{steps});
    edgevla::testing::count_allocations(false);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    counts.push_back(edgevla::testing::allocations());
  }
  EXPECT_EQ(counts[0], counts[1]);
  EXPECT_EQ(counts[0], counts[2]) << "allocations grow with the number of steps";
  EXPECT_LE(counts[0], 4);  // the run's timing entries, nothing per chunk either
}

// `t` (f32) in bf16 or f16.
Tensor as_half_dtype(const Tensor& t, DType dt) {
  Tensor out = *Tensor::empty(dt, t.shape());
  auto* o = reinterpret_cast<std::uint16_t*>(out.raw_data());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    o[i] = dt == DType::kBF16 ? float_to_bfloat16(t.data<float>()[i]) : float_to_half(t.data<float>()[i]);
  }
  return out;
}

// Every backend's action head calls the family's input check (stage_inputs.hpp): it refuses a
// non-finite value in bf16 and f16 state or noise as in f32, a step count out of range and an
// embodiment outside the checkpoint's, and passes the good inputs through with their row count.
TEST_F(GrootActionHeadCpuTest, TheFamilysInputCheckTakesEveryFloatDtype) {
  auto cfg = model::groot::load_config(checkpoint("tiny"));
  ASSERT_TRUE(cfg.has_value()) << cfg.status().to_string();
  const Inputs good = read_inputs(reference("tiny_gr1"));
  const std::int64_t id = *good.embodiment_id.data<std::int32_t>();
  const std::set<std::int64_t> known{id};
  const std::int64_t slots = cfg->max_num_embodiments;
  auto check = [&](const Tensor& state, const Tensor& noise, int steps = 4) {
    return model::groot::check_action_head_inputs(
        {&good.features, &good.attention_mask, &good.image_mask, &state, &good.embodiment_id, &noise}, *cfg, steps, 8,
        slots, known);
  };
  auto ok = check(good.state, good.noise);
  ASSERT_TRUE(ok.has_value()) << ok.status().to_string();
  EXPECT_EQ(ok->rows, good.features.shape()[0]);
  EXPECT_EQ(ok->embodiment, id);
  for (const DType dt : {DType::kBF16, DType::kF16}) {
    Tensor st = as_half_dtype(good.state, dt);
    Tensor nz = as_half_dtype(good.noise, dt);
    ASSERT_TRUE(check(st, nz).has_value()) << dtype_name(dt);
    const std::uint16_t nan_bits = dt == DType::kBF16 ? 0x7fc0 : 0x7e00;
    reinterpret_cast<std::uint16_t*>(st.raw_data())[2] = nan_bits;
    auto bad = check(st, nz);
    ASSERT_FALSE(bad.has_value()) << dtype_name(dt);
    EXPECT_NE(bad.status().message().find("'state' holds a non-finite value"), std::string::npos)
        << bad.status().to_string();
    reinterpret_cast<std::uint16_t*>(nz.raw_data())[5] = nan_bits;
    EXPECT_FALSE(check(as_half_dtype(good.state, dt), nz).has_value()) << dtype_name(dt);
  }
  auto steps = check(good.state, good.noise, 9);
  ASSERT_FALSE(steps.has_value());
  EXPECT_NE(steps.status().message().find("num_steps 9"), std::string::npos) << steps.status().to_string();
  auto unknown = model::groot::check_action_head_inputs(
      {&good.features, &good.attention_mask, &good.image_mask, &good.state, &good.embodiment_id, &good.noise}, *cfg,
      4, 8, slots, std::set<std::int64_t>{id + 1});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.status().message().find("embodiment id " + std::to_string(id)), std::string::npos)
      << unknown.status().to_string();
}

TEST_F(GrootActionHeadCpuTest, BadInputsAreClearErrors) {
  auto e = engine("tiny", 1);
  ASSERT_NE(e, nullptr);
  const Inputs good = read_inputs(reference("tiny_gr1"));
  const std::int64_t n = good.features.shape()[0], W = good.features.shape()[1];
  auto expect_error = [&](const Inputs& in, const std::string& names) {
    e->clear_bindings();
    const Status bound = bind_all(*e, in);
    const Status s = bound.is_ok() ? e->run(RunOptions{4}) : bound;
    EXPECT_FALSE(s.is_ok()) << names;
    EXPECT_NE(s.to_string().find(names), std::string::npos) << s.to_string();
  };
  auto copy = [](const Tensor& t) {
    Tensor c = *Tensor::empty(t.dtype(), t.shape());
    std::memcpy(c.raw_data(), t.raw_data(), t.nbytes());
    return c;
  };
  {
    Inputs in = good;  // unknown embodiment: a free slot, and one beyond the table
    in.embodiment_id = *Tensor::from_values<std::int32_t>(std::vector<std::int32_t>{31}, Shape{1});
    expect_error(in, "embodiment id 31");
    in.embodiment_id = *Tensor::from_values<std::int32_t>(std::vector<std::int32_t>{40}, Shape{1});
    expect_error(in, "embodiment id 40");
  }
  {
    Inputs in = good;
    in.noise = *Tensor::empty(DType::kF32, Shape{16, 128});
    expect_error(in, "'noise'");
    in = good;
    in.state = *Tensor::empty(DType::kF32, Shape{64});
    expect_error(in, "'state'");
    in = good;
    in.attention_mask = *Tensor::empty(DType::kBool, Shape{n - 1});
    expect_error(in, "'attention_mask'");
    in = good;
    in.features = *Tensor::empty(DType::kF32, Shape{n, W / 2});
    expect_error(in, "'backbone_features'");
  }
  {
    Inputs in = good;  // non-finite values
    in.state = copy(good.state);
    in.state.data<float>()[3] = std::numeric_limits<float>::infinity();
    expect_error(in, "'state'");
    in = good;
    in.noise = copy(good.noise);
    in.noise.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
    expect_error(in, "'noise'");
    in = good;
    in.features = copy(good.features);
    in.features.data<float>()[(n - 1) * W] = std::numeric_limits<float>::quiet_NaN();
    expect_error(in, "'backbone_features'");
  }
  {
    Inputs in = good;  // no image token
    in.image_mask = copy(good.image_mask);
    std::fill(in.image_mask.data<bool>(), in.image_mask.data<bool>() + n, false);
    expect_error(in, "image token");
  }
  {
    Inputs in = good;  // a missing input
    e->clear_bindings();
    ASSERT_TRUE(e->bind("backbone_features", in.features).is_ok());
    const Status s = e->run(RunOptions{4});
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.to_string().find("'attention_mask'"), std::string::npos) << s.to_string();
  }
  // The engine still works after all of that.
  e->clear_bindings();
  ASSERT_TRUE(bind_all(*e, good).is_ok());
  ASSERT_TRUE(e->run(RunOptions{4}).is_ok());
  EXPECT_LE(rel_l2(e->output("actions")->data<float>(), good.actions, 0, good.actions.size()),
            1e-4);
}

}  // namespace
}  // namespace edgevla::backends
