// The preprocess node on a GR00T N1.6 checkpoint (a tiny one generated here): the node only
// collects frames, state and prompt; the family's preprocessor behind the seam makes the
// tensors. Its Observation must equal what that preprocessor makes from the same inputs (the
// preprocessor itself is checked against the reference in tests/model/groot/), and bad inputs
// are one counted error each with the node running on.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <random>

#include "nodes/preprocess/preprocess_node.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/model/groot/generator.hpp"
#include "runtime/node/host.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::nodes {
namespace {

using edgevla::testing::eventually;
using model::test::ScratchDir;

// libero_panda: views image and wrist_image; state x, y, z, roll, pitch, yaw (1 each), gripper (2).
constexpr const char* kEmbodiment = "libero_panda";

const std::string& checkpoint() {
  static ScratchDir dir("groot_pre");
  static const std::string path = [] {
    model::groot::GenerateOptions o;
    o.preset = "tiny";
    o.seed = 5;
    o.dtype = DType::kF32;
    const std::string p = dir / "tiny";
    EXPECT_OK(model::groot::generate_checkpoint(o, p));
    return p;
  }();
  return path;
}

class Harness final : public Node {
 public:
  explicit Harness(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_ASSIGN_OR_RETURN(front, spec.publisher<msgs::Image>("image/image"));
    EDGEVLA_ASSIGN_OR_RETURN(wrist, spec.publisher<msgs::Image>("image/wrist_image"));
    EDGEVLA_ASSIGN_OR_RETURN(state, spec.publisher<msgs::RobotState>("state"));
    return spec.subscribe<msgs::Observation>("observation", QoS::keep_last(1000), [this](const msgs::Observation& m) {
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
  Publisher<msgs::Image> front, wrist;
  Publisher<msgs::RobotState> state;

 private:
  mutable std::mutex mu_;
  std::vector<MessagePtr> got_;
};

ParamOverride yaml(const std::string& text) { return {YAML::Load(text), "test"}; }

struct Graph {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  Harness* harness = nullptr;
  Status added;
  Status activated;
};

Graph start(const std::string& tag, ParamOverrides params) {
  Graph g;
  BusOptions bo;
  bo.domain = edgevla::testing::unique_domain(tag);
  g.bus = std::move(*Bus::create(bo));
  g.host = std::make_unique<NodeHost>(*g.bus);
  const std::map<std::string, std::string> remaps = {{"image/image", "/g/front"},
                                                     {"image/wrist_image", "/g/wrist"},
                                                     {"state", "/g/state"},
                                                     {"observation", "/g/observation"}};
  NodeOptions o{.name = "pre", .type = "preprocess", .remaps = remaps};
  params.emplace("checkpoint", yaml(checkpoint()));
  params.emplace("prompt", yaml("Put the bowl on the plate!"));
  o.params = std::move(params);
  auto added = g.host->add(o);
  g.added = added.status();
  if (!added) return g;
  NodeOptions h{.name = "harness", .type = "test_harness", .remaps = remaps};
  g.harness = static_cast<Harness*>(*g.host->add(std::make_unique<Harness>(h)));
  g.activated = g.host->activate_all();
  return g;
}

Tensor noise_image(int w, int h, int channels, std::uint32_t seed) {
  auto t = Tensor::empty(DType::kU8, Shape{h, w, channels});
  std::mt19937 rng(seed);
  for (std::int64_t i = 0; i < t->numel(); ++i) t->data<std::uint8_t>()[i] = static_cast<std::uint8_t>(rng() & 0xff);
  return std::move(*t);
}

void publish_and_wait(Graph& g, const auto& publisher, Message m) {
  const std::uint64_t before = g.host->subscription_callbacks("pre");
  ASSERT_OK(publisher.publish(std::move(m)));
  ASSERT_TRUE(eventually([&] { return g.host->subscription_callbacks("pre") > before; }));
}

Message image_msg(const Tensor& px, const std::string& encoding, std::int64_t stamp) {
  auto m = msgs::Image::make(px, encoding, "cam");
  m->header().source_stamp_ns = stamp;
  return std::move(*m);
}

Message state_msg(const std::vector<double>& values, std::int64_t stamp) {
  auto t = Tensor::from_values(std::span<const double>(values), Shape{static_cast<std::int64_t>(values.size())});
  auto m = msgs::RobotState::make(std::move(*t));
  m->header().source_stamp_ns = stamp;
  return std::move(*m);
}

const std::vector<double> kState = {0.1, -0.2, 0.3, 0.05, -0.05, 0.4, 0.01, -0.01};

TEST(GrootPreprocessNode, ObservationIsTheFamilyPreprocessorsOutput) {
  // The node resizes on three threads, the seam below on one: the same bytes.
  Graph g = start("groot_pre_ok", {{"embodiment", yaml(kEmbodiment)}, {"pad_to", yaml("300")}, {"threads", yaml("3")}});
  ASSERT_OK(g.added);
  ASSERT_OK(g.activated);
  const Tensor front = noise_image(64, 48, 3, 1);  // rgb8, landscape
  const Tensor wrist = noise_image(40, 40, 3, 2);  // bgr8
  const std::int64_t stamp = wall_now_ns();
  publish_and_wait(g, g.harness->state, state_msg(kState, stamp));
  publish_and_wait(g, g.harness->wrist, image_msg(wrist, "bgr8", stamp));
  publish_and_wait(g, g.harness->front, image_msg(front, "rgb8", stamp));  // the first view triggers
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  EXPECT_EQ(g.host->bad_inputs("pre"), 0u);

  // The same inputs straight through the family seam.
  auto family = model::find_family("auto", checkpoint());
  ASSERT_TRUE(family.has_value());
  auto pre = (*family)->make_preprocessor(checkpoint(), {kEmbodiment, 300});
  ASSERT_TRUE(pre.has_value()) << pre.status().to_string();
  std::vector<std::uint8_t> wrist_rgb(static_cast<std::size_t>(wrist.numel()));
  for (std::int64_t i = 0; i < 40 * 40; ++i) {
    for (int c = 0; c < 3; ++c) wrist_rgb[static_cast<std::size_t>(3 * i + c)] = wrist.data<std::uint8_t>()[3 * i + 2 - c];
  }
  model::PreprocessInput in;
  in.cameras = {{"image", 48, 64, {front.data<std::uint8_t>(), static_cast<std::size_t>(front.numel())}},
                {"wrist_image", 40, 40, wrist_rgb}};
  in.prompt = "Put the bowl on the plate!";
  in.state = {{"x", {0.1f}}, {"y", {-0.2f}}, {"z", {0.3f}}, {"roll", {0.05f}}, {"pitch", {-0.05f}},
              {"yaw", {0.4f}}, {"gripper", {0.01f, -0.01f}}};
  ASSERT_OK((*pre)->load());
  auto want = (*pre)->run(in);
  ASSERT_TRUE(want.has_value()) << want.status().to_string();

  const MessagePtr got = g.harness->last();
  int compared = 0;
  for (const auto& [name, t] : want->tensors) {
    const Tensor* o = got->tensor(name);
    ASSERT_NE(o, nullptr) << name;
    ASSERT_EQ(o->dtype(), t.dtype()) << name;
    ASSERT_EQ(o->shape(), t.shape()) << name;
    EXPECT_EQ(std::memcmp(o->raw_data(), t.raw_data(), t.nbytes()), 0) << name;
    ++compared;
  }
  // image.0, image.1, input_ids, attention_mask, state, embodiment_id, 7 raw_state groups.
  EXPECT_EQ(compared, 13);
  EXPECT_EQ(got->tensor("input_ids")->shape(), Shape{300});
  EXPECT_EQ(got->tensor("embodiment_id")->data<std::int32_t>()[0], 2);  // libero_panda's id
  ASSERT_TRUE(got->string_field("prompt").has_value());
  EXPECT_EQ(*got->string_field("prompt"), "Put the bowl on the plate!");
  ASSERT_TRUE(got->int_field("source_stamp_ns.wrist_image").has_value());
  EXPECT_EQ(*got->int_field("source_stamp_ns.wrist_image"), stamp);
}

TEST(GrootPreprocessNode, BadStateAndFramesAreCountedAndTheNodeRunsOn) {
  Graph g = start("groot_pre_bad", {{"embodiment", yaml(kEmbodiment)}});
  ASSERT_OK(g.added);
  ASSERT_OK(g.activated);
  const Tensor front = noise_image(32, 32, 3, 3), wrist = noise_image(32, 32, 3, 4);
  const std::int64_t stamp = wall_now_ns();
  // 7 values where the groups need 8; then a NaN: both refused, counted, nothing published.
  publish_and_wait(g, g.harness->state, state_msg({0, 0, 0, 0, 0, 0, 0}, stamp));
  publish_and_wait(g, g.harness->state, state_msg({0, 0, 0, 0, 0, 0, 0, std::nan("")}, stamp));
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("pre") == 2; }));
  // rgba8 frames are taken (converted to RGB).
  auto rgba = msgs::Image::make(noise_image(32, 32, 4, 5), "rgba8", "cam");
  ASSERT_TRUE(rgba.has_value());
  rgba->header().source_stamp_ns = stamp;
  publish_and_wait(g, g.harness->wrist, std::move(*rgba));
  publish_and_wait(g, g.harness->state, state_msg(kState, stamp));
  publish_and_wait(g, g.harness->front, image_msg(front, "rgb8", stamp));
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 1; }));
  EXPECT_EQ(g.host->bad_inputs("pre"), 2u);
  publish_and_wait(g, g.harness->wrist, image_msg(wrist, "rgb8", stamp));
  publish_and_wait(g, g.harness->front, image_msg(front, "rgb8", stamp));
  ASSERT_TRUE(eventually([&] { return g.harness->count() == 2; }));
}

TEST(GrootPreprocessNode, ConfigurationMistakesAreRefusedNamingTheFix) {
  struct Case {
    ParamOverrides params;
    std::string says;
  };
  std::vector<Case> cases;
  cases.push_back({{{"embodiment", yaml("no_such_robot")}}, "no_such_robot"});
  cases.push_back({{{"embodiment", yaml(kEmbodiment)}, {"cameras", yaml("[image]")}}, "every view"});
  cases.push_back({{{"embodiment", yaml(kEmbodiment)}, {"tokenizer", yaml("/x/tokenizer.model")}}, "remove them"});
  cases.push_back({{{"embodiment", yaml(kEmbodiment)}, {"state_dim", yaml("7")}}, "hold 8 values"});
  cases.push_back({{{"embodiment", yaml(kEmbodiment)}, {"on_long_prompt", yaml("truncate")}}, "never cut"});
  cases.push_back({{}, "embodiment"});  // the checkpoint has several robots: one must be named
  cases.push_back({{{"embodiment", yaml(kEmbodiment)}, {"threads", yaml("-1")}}, "threads"});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Graph g = start("groot_pre_cfg" + std::to_string(i), cases[i].params);
    const Status s = !g.added.is_ok() ? g.added : g.activated;
    EXPECT_FALSE(s.is_ok()) << i;
    EXPECT_NE(s.message().find(cases[i].says), std::string::npos) << i << ": " << s.to_string();
  }
}

}  // namespace
}  // namespace edgevla::nodes
