// The preprocess node in a NodeHost: Images, RobotState and Prompt in, Observation out, on a
// tiny checkpoint folder written here (config.json, norm stats, a trained tokenizer). The
// pieces it is built from are checked against PIL / Python in tests/model/.
#include "nodes/preprocess/preprocess_node.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>

#include "runtime/bus/bus.hpp"
#include "runtime/model/image_ops.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/pi0/tokenizer.hpp"
#include "runtime/node/host.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::nodes {
namespace {

using edgevla::testing::eventually;
using model::test::ScratchDir;

constexpr int kImageSize = 28;
constexpr int kActionDim = 8;
constexpr int kTokens = 48;

// State stats of 4 dims, exact in binary: q01 -1 / q99 3 on every dim, mean 1, std 0.5.
model::NormStats test_stats() {
  model::NormStats s;
  s.state = {{1, 1, 1, 1}, {0.5, 0.5, 0.5, 0.5}, {-1, -1, -1, -1}, {3, 3, 3, 3}};
  s.actions = {{0, 0}, {1, 1}, {-1, -1}, {1, 1}};
  return s;
}

// A checkpoint folder without weights: config.json (tiny custom sizes), norm stats, tokenizer.
struct Checkpoint {
  std::unique_ptr<ScratchDir> dir;
  std::string path() const { return dir->str(); }
};

std::string config_json(const std::string& model_type, int max_token_len) {
  std::string type_line = model_type.empty() ? "" : "\"model_type\": \"" + model_type + "\",";
  return "{" + type_line + R"(
  "action_dim": 8, "action_horizon": 4, "precision": "float32",
  "paligemma_variant": "custom", "action_expert_variant": "custom",
  "max_token_len": )" + std::to_string(max_token_len) + R"(,
  "vision": {"image_size": 28, "patch_size": 14, "width": 8, "depth": 1, "mlp_dim": 16, "num_heads": 2},
  "vlm": {"width": 16, "depth": 1, "mlp_dim": 32, "num_heads": 2, "num_kv_heads": 1, "head_dim": 8, "vocab_size": 1024},
  "expert": {"width": 8, "depth": 1, "mlp_dim": 16, "num_heads": 2, "num_kv_heads": 1, "head_dim": 8}
})";
}

const std::string& trained_tokenizer() {
  static ScratchDir dir("pre_tok");
  static const std::string path = [] {
    const std::string p = dir / "tokenizer.model";
    EXPECT_OK(model::train_tokenizer(model::generated_corpus(), 1000, p));
    return p;
  }();
  return path;
}

Checkpoint make_checkpoint(const std::string& model_type, int max_token_len = kTokens,
                           bool with_tokenizer = true) {
  Checkpoint c{std::make_unique<ScratchDir>("pre_ckpt")};
  model::test::write_file(*c.dir / "config.json", config_json(model_type, max_token_len));
  std::filesystem::create_directories(*c.dir / "assets/test");
  EXPECT_OK(model::write_norm_stats(test_stats(), *c.dir / "assets/test/norm_stats.json"));
  if (with_tokenizer) {
    std::filesystem::copy_file(trained_tokenizer(), *c.dir / "tokenizer.model");
  }
  return c;
}

// Publishes the node's inputs and collects its Observations.
class Harness final : public Node {
 public:
  explicit Harness(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_ASSIGN_OR_RETURN(base, spec.publisher<msgs::Image>("image/base_0_rgb"));
    EDGEVLA_ASSIGN_OR_RETURN(wrist, spec.publisher<msgs::Image>("image/left_wrist_0_rgb"));
    EDGEVLA_ASSIGN_OR_RETURN(state, spec.publisher<msgs::RobotState>("state"));
    EDGEVLA_ASSIGN_OR_RETURN(prompt, spec.publisher<msgs::Prompt>("prompt"));
    return spec.subscribe<msgs::Observation>("observation", QoS::keep_last(1000),
                                             [this](const msgs::Observation& m) {
                                               std::lock_guard lock(mu_);
                                               got_.push_back(m.ptr());
                                             });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }
  std::size_t count() const {
    std::lock_guard lock(mu_);
    return got_.size();
  }
  MessagePtr last() const {
    std::lock_guard lock(mu_);
    return got_.empty() ? nullptr : got_.back();
  }

  Publisher<msgs::Image> base, wrist;
  Publisher<msgs::RobotState> state;
  Publisher<msgs::Prompt> prompt;

 private:
  mutable std::mutex mu_;
  std::vector<MessagePtr> got_;
};

ParamOverride yaml(const std::string& text) { return {YAML::Load(text), "test"}; }

const std::map<std::string, std::string> kRemaps = {
    {"image/base_0_rgb", "/t/image/base"}, {"image/left_wrist_0_rgb", "/t/image/wrist"},
    {"state", "/t/state"},                 {"prompt", "/t/prompt"},
    {"observation", "/t/observation"}};

struct Graph {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  Harness* harness = nullptr;
  Status added;
  Status activated;
};

Graph start(const std::string& tag, const Checkpoint& ckpt, ParamOverrides params) {
  Graph g;
  BusOptions bo;
  bo.domain = edgevla::testing::unique_domain(tag);
  g.bus = std::move(*Bus::create(bo));
  g.host = std::make_unique<NodeHost>(*g.bus);
  NodeOptions o;
  o.name = "pre";
  o.type = "preprocess";
  o.remaps = kRemaps;
  params.emplace("checkpoint", yaml(ckpt.path()));
  params.emplace("cameras", yaml("[base_0_rgb, left_wrist_0_rgb]"));
  params.emplace("prompt", yaml("pick up the red cup"));
  o.params = std::move(params);
  auto added = g.host->add(o);
  g.added = added.status();
  if (!added) return g;
  NodeOptions h;
  h.name = "harness";
  h.type = "test_harness";
  h.remaps = kRemaps;
  g.harness = static_cast<Harness*>(*g.host->add(std::make_unique<Harness>(h)));
  g.activated = g.host->activate_all();
  return g;
}

// A u8 image of `encoding` with seeded noise, or one constant colour (per channel) when given.
Tensor image(int w, int h, int channels, std::uint32_t seed, std::vector<int> colour = {}) {
  auto t = Tensor::empty(DType::kU8, Shape{h, w, channels});
  std::mt19937 rng(seed);
  auto* p = t->data<std::uint8_t>();
  for (std::int64_t i = 0; i < t->numel(); ++i) {
    p[i] = colour.empty() ? static_cast<std::uint8_t>(rng() & 0xff)
                          : static_cast<std::uint8_t>(colour[static_cast<std::size_t>(i % channels)]);
  }
  return std::move(*t);
}

Message image_msg(const Tensor& px, const std::string& encoding, std::int64_t stamp, std::int64_t frame) {
  auto m = msgs::Image::make(px, encoding, "cam");
  EXPECT_TRUE(m.has_value()) << m.status().to_string();
  m->header().source_stamp_ns = stamp;
  m->set_field("frame", frame);
  return std::move(*m);
}

Message state_msg(std::vector<double> values, std::int64_t stamp) {
  auto t = Tensor::from_values(std::span<const double>(values), Shape{static_cast<std::int64_t>(values.size())});
  auto m = msgs::RobotState::make(std::move(*t));
  m->header().source_stamp_ns = stamp;
  return std::move(*m);
}

std::vector<float> floats(const Tensor& t) {
  const float* p = t.data<float>();
  return {p, p + t.numel()};
}

// Base image 40x30 (landscape, padded top/bottom on the 28 canvas), wrist 30x30 constant bgr8.
struct Inputs {
  Tensor base = image(40, 30, 3, 11);
  Tensor wrist = image(30, 30, 3, 0, {10, 20, 30});
};

// Publishes one message and waits until the node has handled it: subscriptions are separate
// queues, so without the wait the trigger frame could be handled before the other inputs
// (and keep_latest queues would drop back-to-back messages).
void publish_and_wait(Graph& g, const auto& publisher, Message m) {
  const std::uint64_t before = g.host->subscription_callbacks("pre");
  ASSERT_OK(publisher.publish(std::move(m)));
  ASSERT_TRUE(eventually([&] { return g.host->subscription_callbacks("pre") > before; }));
}

void publish_all(Graph& g, const Inputs& in, std::vector<double> state, std::int64_t stamp,
                 std::int64_t frame = 1) {
  publish_and_wait(g, g.harness->state, state_msg(std::move(state), stamp));
  publish_and_wait(g, g.harness->wrist, image_msg(in.wrist, "bgr8", stamp, frame));
  publish_and_wait(g, g.harness->base, image_msg(in.base, "rgb8", stamp, frame));  // the trigger
}

TEST(PreprocessNode, Pi05ObservationCarriesImagesNormalizedStateAndTokens) {
  const Checkpoint ckpt = make_checkpoint("pi05");
  Graph g = start("pi05", ckpt, {});
  ASSERT_OK(g.added);
  ASSERT_OK(g.activated);
  Inputs in;
  const std::int64_t stamp = wall_now_ns();
  // Quantile with q01 -1, q99 3: normalized = (x + 1) / (4 + 1e-6) * 2 - 1.
  const std::vector<double> raw = {1.0, -1.0, 3.0, 5.0};
  publish_all(g, in, raw, stamp, 42);
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  const MessagePtr m = g.harness->last();
  const msgs::Observation obs(m);

  // Images: the wrist's constant bgr colour as RGB in [-1, 1], the base's padding at -1, and
  // the whole tensor equal to the library's resize + conversion.
  const Tensor* wrist = obs.image("left_wrist_0_rgb");
  ASSERT_NE(wrist, nullptr);
  ASSERT_EQ(wrist->shape(), (Shape{3, kImageSize, kImageSize}));
  const std::vector<float> w = floats(*wrist);
  const int plane = kImageSize * kImageSize;
  EXPECT_EQ(w[0], 30.0f / 255.0f * 2.0f - 1.0f);              // R <- bgr's third byte
  EXPECT_EQ(w[plane + 100], 20.0f / 255.0f * 2.0f - 1.0f);    // G
  EXPECT_EQ(w[2 * plane + 783], 10.0f / 255.0f * 2.0f - 1.0f);  // B
  const Tensor* base = obs.image("base_0_rgb");
  ASSERT_NE(base, nullptr);
  const std::vector<float> b = floats(*base);
  EXPECT_EQ(b[0], -1.0f);                        // 40x30 -> 28x21, top padding 3 rows
  EXPECT_EQ(b[2 * plane + 27 * kImageSize + 27], -1.0f);  // bottom padding
  auto want = model::to_model_input(*model::resize_with_pad(in.base, kImageSize, "rgb8"));
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ(std::memcmp(base->raw_data(), want->raw_data(), want->nbytes()), 0);
  EXPECT_EQ(obs.image("right_wrist_0_rgb"), nullptr);  // not listed: absent

  // State: normalized, padded with zeros to action_dim; the raw one alongside.
  ASSERT_EQ(obs.state().shape(), (Shape{kActionDim}));
  std::vector<double> norm;
  for (double x : raw) norm.push_back((x + 1.0) / (4.0 + 1e-6) * 2.0 - 1.0);
  const std::vector<float> s = floats(obs.state());
  for (int i = 0; i < kActionDim; ++i) {
    EXPECT_EQ(s[static_cast<std::size_t>(i)], i < 4 ? static_cast<float>(norm[static_cast<std::size_t>(i)]) : 0.0f) << i;
  }
  EXPECT_EQ(floats(*m->tensor("state_raw")), (std::vector<float>{1, -1, 3, 5}));

  // Tokens: pi0.5's prompt with the state bins (0.0 -> 128, -1 -> 0, ~1 -> 255, ~2 -> 255).
  auto tok = model::Tokenizer::load(ckpt.path() + "/tokenizer.model");
  ASSERT_TRUE(tok.has_value());
  auto bins = model::Tokenizer::discretize_state(norm);
  EXPECT_EQ(*bins, (std::vector<int>{127, 0, 255, 255}));  // 2/(4+1e-6)*2-1 is just below 0
  auto text = tok->encode_text(model::Tokenizer::pi05_prompt("pick up the red cup", *bins));
  std::vector<std::int32_t> expect = {tok->bos_id()};
  expect.insert(expect.end(), text->begin(), text->end());
  const Tensor* tokens = m->tensor("tokens");
  const Tensor* mask = m->tensor("token_mask");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->shape(), (Shape{kTokens}));
  const auto* t = tokens->data<std::int32_t>();
  const auto* k = mask->data<bool>();
  for (int i = 0; i < kTokens; ++i) {
    const bool real = i < static_cast<int>(expect.size());
    EXPECT_EQ(t[i], real ? expect[static_cast<std::size_t>(i)] : 0) << i;
    EXPECT_EQ(k[i], real) << i;
  }
  EXPECT_EQ(*m->string_field("prompt"), "pick up the red cup");

  // Header: the base frame's capture stamp and trace (harness, then this node).
  EXPECT_EQ(m->header().source_stamp_ns, stamp);
  ASSERT_EQ(m->header().trace.size(), 2u);
  EXPECT_EQ(m->header().trace[0].node, "harness");
  EXPECT_EQ(m->header().trace[1].node, "pre");
  EXPECT_EQ(*m->int_field("frame"), 42);
  EXPECT_EQ(*m->int_field("source_stamp_ns.state"), stamp);
  EXPECT_EQ(g.host->bad_inputs("pre"), 0u);
}

TEST(PreprocessNode, Pi0UsesZScoresAndThePromptTopicOverridesTheParam) {
  const Checkpoint ckpt = make_checkpoint("pi0");
  Graph g = start("pi0", ckpt, {});
  ASSERT_OK(g.added);
  ASSERT_OK(g.activated);
  Inputs in;
  publish_all(g, in, {1.5, 0.0, 1.0, 2.0}, wall_now_ns());
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  auto tok = model::Tokenizer::load(ckpt.path() + "/tokenizer.model");
  auto check = [&](const MessagePtr& m, const std::string& prompt) {
    // z-score: (x - 1) / (0.5 + 1e-6).
    const std::vector<float> s = floats(*m->tensor("state"));
    EXPECT_EQ(s[0], static_cast<float>(0.5 / (0.5 + 1e-6)));
    EXPECT_EQ(s[1], static_cast<float>(-1.0 / (0.5 + 1e-6)));
    EXPECT_EQ(s[2], 0.0f);
    EXPECT_EQ(s[4], 0.0f);
    auto want = tok->encode(prompt, std::nullopt, kTokens);  // [BOS] + text + "\n"
    const auto* t = m->tensor("tokens")->data<std::int32_t>();
    EXPECT_EQ(std::vector<std::int32_t>(t, t + kTokens), want->tokens);
    EXPECT_EQ(*m->string_field("prompt"), prompt);
  };
  check(g.harness->last(), "pick up the red cup");

  publish_and_wait(g, g.harness->prompt, *msgs::Prompt::make("open the drawer"));
  publish_all(g, in, {1.5, 0.0, 1.0, 2.0}, wall_now_ns(), 2);
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 2; }));
  check(g.harness->last(), "open the drawer");

  // Changing the param afterwards makes it the prompt again.
  // (applied on the node's thread before the callbacks of the inputs published next)
  ASSERT_OK(g.host->set_param("pre", "prompt", "close the door"));
  publish_all(g, in, {1.5, 0.0, 1.0, 2.0}, wall_now_ns(), 3);
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 3; }));
  check(g.harness->last(), "close the door");
}

TEST(PreprocessNode, StaleInputsAreDroppedAndCounted) {
  const Checkpoint ckpt = make_checkpoint("pi05");
  Graph g = start("stale", ckpt, {{"max_age_s", yaml("0.5")}});
  ASSERT_OK(g.activated);
  Inputs in;
  const std::int64_t now = wall_now_ns();
  publish_and_wait(g, g.harness->state, state_msg({0, 0, 0, 0}, now - 2'000'000'000));  // 2 s old
  publish_and_wait(g, g.harness->wrist, image_msg(in.wrist, "bgr8", now, 1));
  publish_and_wait(g, g.harness->base, image_msg(in.base, "rgb8", now, 1));
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("pre") == 1; }));
  EXPECT_EQ(g.harness->count(), 0u);
  // A fresh state: the next frame makes an observation.
  publish_all(g, in, {0, 0, 0, 0}, now + 10'000'000, 2);
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  EXPECT_EQ(g.host->bad_inputs("pre"), 1u);
}

TEST(PreprocessNode, NanStateIsRejectedAndTheNodeKeepsRunning) {
  const Checkpoint ckpt = make_checkpoint("pi05");
  Graph g = start("nan", ckpt, {});
  ASSERT_OK(g.activated);
  Inputs in;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  publish_all(g, in, {0, nan, 0, 0}, wall_now_ns());
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("pre") == 1; }));
  // No state accepted yet: nothing published.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(g.harness->count(), 0u);
  // Too long a state (5 > the stats' 4 dims) and an infinite one are rejected too.
  publish_and_wait(g, g.harness->state, state_msg({0, 0, 0, 0, 0}, wall_now_ns()));
  publish_and_wait(g, g.harness->state,
                   state_msg({0, 0, std::numeric_limits<double>::infinity(), 0}, wall_now_ns()));
  EXPECT_EQ(g.host->bad_inputs("pre"), 3u);
  publish_all(g, in, {3, 3, 3, 3}, wall_now_ns(), 2);
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  EXPECT_EQ(floats(*g.harness->last()->tensor("state_raw")), (std::vector<float>{3, 3, 3, 3}));
}

TEST(PreprocessNode, BadImagesAreCountedAndThePreviousFrameStays) {
  const Checkpoint ckpt = make_checkpoint("pi05");
  Graph g = start("badimg", ckpt, {});
  ASSERT_OK(g.activated);
  Inputs in;
  publish_all(g, in, {0, 0, 0, 0}, wall_now_ns());
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  const Tensor first_wrist = *g.harness->last()->tensor("image.left_wrist_0_rgb");
  // mono16 is not a policy encoding; an extreme aspect ratio cannot be resized.
  auto mono16 = Tensor::empty(DType::kU16, Shape{10, 10, 1});
  auto m = msgs::Image::make(*mono16, "mono16", "cam");
  publish_and_wait(g, g.harness->wrist, std::move(*m));
  publish_and_wait(g, g.harness->wrist, image_msg(image(1, 500, 3, 5), "rgb8", wall_now_ns(), 2));
  EXPECT_EQ(g.host->bad_inputs("pre"), 2u);
  publish_and_wait(g, g.harness->base, image_msg(in.base, "rgb8", wall_now_ns(), 3));
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 2; }));
  const Tensor* wrist = g.harness->last()->tensor("image.left_wrist_0_rgb");
  EXPECT_EQ(std::memcmp(wrist->raw_data(), first_wrist.raw_data(), first_wrist.nbytes()), 0);
}

TEST(PreprocessNode, LongPromptsAreAnErrorUnlessTruncationIsAllowed) {
  const Checkpoint ckpt = make_checkpoint("pi05", /*max_token_len=*/12);
  Inputs in;
  {
    Graph g = start("long_err", ckpt, {});
    ASSERT_OK(g.activated);
    publish_all(g, in, {0, 0, 0, 0}, wall_now_ns());
    ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("pre") == 1; }));
    EXPECT_EQ(g.harness->count(), 0u);
  }
  Graph g = start("long_cut", ckpt, {{"on_long_prompt", yaml("truncate")}});
  ASSERT_OK(g.activated);
  publish_all(g, in, {0, 0, 0, 0}, wall_now_ns());
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  const auto* mask = g.harness->last()->tensor("token_mask")->data<bool>();
  EXPECT_TRUE(std::all_of(mask, mask + 12, [](bool b) { return b; }));
  EXPECT_EQ(g.host->bad_inputs("pre"), 0u);
}

TEST(PreprocessNode, DefaultStateAndTimerPublishWithoutARobot) {
  const Checkpoint ckpt = make_checkpoint("pi05");
  Graph g = start("timer", ckpt, {{"rate_hz", yaml("50")}, {"default_state", yaml("[1, 1, 1, 1]")}});
  ASSERT_OK(g.activated);
  Inputs in;
  publish_and_wait(g, g.harness->wrist, image_msg(in.wrist, "bgr8", wall_now_ns(), 1));
  publish_and_wait(g, g.harness->base, image_msg(in.base, "rgb8", wall_now_ns(), 1));
  ASSERT_TRUE(eventually([&] { return g.harness->count() >= 1; }));
  const MessagePtr m = g.harness->last();
  EXPECT_EQ(floats(*m->tensor("state_raw")), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(m->field("source_stamp_ns.state"), nullptr);
  // Nothing new: no further observation however many ticks pass.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(g.harness->count(), 1u);
}

// Which inputs trigger work (and are spun for upstream, upstream_spin_us) and which are held,
// as `node info` lists them: without a rate only the first camera's frame makes an
// observation; with one, the timer does and every input is held.
TEST(PreprocessNode, OnlyTheTriggeringCameraIsSpunFor) {
  const Checkpoint ckpt = make_checkpoint("pi05");
  const auto held_inputs = [](Graph& g) {
    std::map<std::string, bool> held;
    for (const auto& n : YAML::Load(g.host->nodes_yaml())["nodes"]) {
      if (n["name"].as<std::string>() != "pre") continue;
      for (const auto& sub : n["subscriptions"]) held[sub["name"].as<std::string>()] = sub["held"].as<bool>(false);
    }
    return held;
  };
  Graph g = start("held", ckpt, {{"wait_for_chunk", yaml("true")}});
  ASSERT_OK(g.activated);
  const std::map<std::string, bool> untimed = {{"image/base_0_rgb", false}, {"image/left_wrist_0_rgb", true},
                                               {"state", true}, {"prompt", true}, {"actions", true}};
  EXPECT_EQ(held_inputs(g), untimed);
  Graph timed = start("held_timer", ckpt, {{"rate_hz", yaml("50")}});
  ASSERT_OK(timed.activated);
  std::map<std::string, bool> every = untimed;
  every["image/base_0_rgb"] = true;
  every.erase("actions");  // wait_for_chunk is off by default
  EXPECT_EQ(held_inputs(timed), every);
}

TEST(PreprocessNode, ConfigurationErrorsAreClear) {
  const Checkpoint ckpt = make_checkpoint("pi05");
  Graph unknown = start("slot", ckpt, {{"cameras", yaml("[base_0_rgb, top_cam]")}});
  ASSERT_FALSE(unknown.added.is_ok());
  EXPECT_NE(unknown.added.message().find("'top_cam'"), std::string::npos) << unknown.added.message();
  EXPECT_NE(unknown.added.message().find("base_0_rgb, left_wrist_0_rgb, right_wrist_0_rgb"),
            std::string::npos);

  Graph no_ckpt = start("nockpt", Checkpoint{std::make_unique<ScratchDir>("empty")}, {});
  ASSERT_FALSE(no_ckpt.added.is_ok());
  EXPECT_NE(no_ckpt.added.message().find("config.json"), std::string::npos);

  const Checkpoint no_tok = make_checkpoint("pi05", kTokens, /*with_tokenizer=*/false);
  Graph missing = start("notok", no_tok, {});
  ASSERT_OK(missing.added);
  ASSERT_FALSE(missing.activated.is_ok());
  EXPECT_NE(missing.activated.message().find(no_tok.path() + "/tokenizer.model"), std::string::npos)
      << missing.activated.message();

  // No model_type in config.json and no weights to tell: activate says how to fix it ...
  const Checkpoint untyped = make_checkpoint("");
  Graph u = start("untyped", untyped, {});
  ASSERT_FALSE(u.activated.is_ok());
  EXPECT_NE(u.activated.message().find("model_type"), std::string::npos) << u.activated.message();
  // ... and the param settles it.
  Graph typed = start("typed", untyped, {{"model_type", yaml("pi0")}});
  EXPECT_OK(typed.activated);
}

}  // namespace
}  // namespace edgevla::nodes
