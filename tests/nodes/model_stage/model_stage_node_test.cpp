// The backbone and action_head nodes in a NodeHost on generated tiny checkpoints: an
// Observation in, a BackboneOutput between them, an ActionChunk out. Checks that the chunk equals
// the library's forward pass on the same inputs, that num_steps reaches the Euler loop (also
// when changed at run time), that bad inputs are counted while the nodes keep running, and
// that a checkpoint of the other variant is refused at configure.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>

#include "runtime/backends/backend.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/node/host.hpp"
#include "runtime/util/rng.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
using testing::eventually;

ParamOverride yaml(const std::string& v) { return {YAML::Load(v), "test"}; }

// One generated tiny checkpoint per variant, shared by the tests of this binary.
const std::string& checkpoint(model::ModelType type) {
  static std::map<model::ModelType, std::string> dirs;
  static std::mutex mu;
  std::lock_guard lock(mu);
  auto it = dirs.find(type);
  if (it != dirs.end()) return it->second;
  const std::string dir = (fs::path(::testing::TempDir()) /
                           testing::unique_domain(std::string("stage_ckpt_") + std::string(model::model_type_name(type))))
                              .string();
  model::GenerateOptions g;
  g.config = *model::preset_config("tiny", type);
  g.seed = 11;
  EXPECT_OK(model::generate_checkpoint(g, dir));
  testing::remove_at_exit(dir);
  return dirs.emplace(type, dir).first->second;
}

// Publishes Observations and BackboneOutputs; collects BackboneOutputs and ActionChunks.
class Harness final : public Node {
 public:
  explicit Harness(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_ASSIGN_OR_RETURN(observation, spec.publisher<msgs::Observation>("observation"));
    EDGEVLA_ASSIGN_OR_RETURN(prefix_out, spec.publisher<msgs::BackboneOutput>("prefix_in"));
    EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::BackboneOutput>("prefix", QoS::keep_last(100), [this](const msgs::BackboneOutput& m) {
      std::lock_guard lock(mu);
      prefixes.push_back(m.ptr());
    }));
    return spec.subscribe<msgs::ActionChunk>("actions", QoS::keep_last(100), [this](const msgs::ActionChunk& m) {
      std::lock_guard lock(mu);
      chunks.push_back(m.ptr());
    });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }
  std::size_t chunk_count() {
    std::lock_guard lock(mu);
    return chunks.size();
  }
  MessagePtr last_chunk() {
    std::lock_guard lock(mu);
    return chunks.empty() ? nullptr : chunks.back();
  }
  MessagePtr last_prefix() {
    std::lock_guard lock(mu);
    return prefixes.empty() ? nullptr : prefixes.back();
  }

  Publisher<msgs::Observation> observation;
  Publisher<msgs::BackboneOutput> prefix_out;
  std::mutex mu;
  std::vector<MessagePtr> prefixes, chunks;
};

struct Graph {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  Harness* harness = nullptr;
  Status added_backbone, added_head;
};

// backbone (observation -> /t/prefix) and action_head (/t/prefix -> /t/actions) + harness.
Graph start(const std::string& tag, const std::string& ckpt, ParamOverrides head_params = {},
            ParamOverrides backbone_params = {}) {
  Graph g;
  BusOptions bo;
  bo.domain = testing::unique_domain(tag);
  g.bus = std::move(*Bus::create(bo));
  NodeHostOptions ho;
  ho.status_period = std::chrono::milliseconds(0);
  g.host = std::make_unique<NodeHost>(*g.bus, ho);
  NodeOptions b{"backbone", "backbone"};
  b.params = std::move(backbone_params);
  b.params.emplace("checkpoint", yaml(ckpt));
  b.params.emplace("threads", yaml("1"));
  b.remaps = {{"observation", "/t/observation"}, {"prefix", "/t/prefix"}};
  auto ab = g.host->add(b);
  g.added_backbone = ab ? Status::ok() : ab.status();
  NodeOptions h{"action_head", "action_head"};
  h.params = std::move(head_params);
  h.params.emplace("checkpoint", yaml(ckpt));
  h.params.emplace("threads", yaml("1"));
  h.params.emplace("seed", yaml("5"));
  h.remaps = {{"prefix", "/t/prefix"}, {"actions", "/t/actions"}};
  auto ah = g.host->add(h);
  g.added_head = ah ? Status::ok() : ah.status();
  NodeOptions x{"harness", "stage_test_harness"};
  x.remaps = {{"observation", "/t/observation"}, {"prefix", "/t/prefix"}, {"actions", "/t/actions"},
              {"prefix_in", "/t/prefix"}};
  g.harness = static_cast<Harness*>(*g.host->add(std::make_unique<Harness>(x)));
  return g;
}

// An Observation from the library's seeded random inputs (base and left wrist; right masked).
Message observation_of(const model::ForwardInputs& in, const model::ModelConfig& c) {
  auto m = msgs::Observation::make(in.state);
  for (std::size_t i = 0; i < c.cameras.size(); ++i) {
    if (in.images[i].defined()) m->set_tensor("image." + c.cameras[i], in.images[i]);
  }
  m->set_tensor("tokens", in.tokens);
  m->set_tensor("token_mask", in.token_mask);
  m->header().source_stamp_ns = wall_now_ns();
  return std::move(*m);
}

std::vector<float> values(const Tensor& t) {
  auto c = t.contiguous();
  return {c->data<float>(), c->data<float>() + c->numel()};
}

// A node's chunk against the library's normalized actions un-normalized as the node does it:
// the shape [H, robot dims] and every element equal.
::testing::AssertionResult unnormalized_equal(const Tensor& chunk, const Tensor& normalized_actions,
                                              const model::ModelConfig& c, const model::NormStats& stats) {
  const auto D = static_cast<std::int64_t>(stats.actions.size());
  if (!(chunk.shape() == Shape{c.action_horizon, D})) {
    return ::testing::AssertionFailure() << "chunk shape " << chunk.shape().to_string();
  }
  const std::vector<float> got = values(chunk);
  const std::vector<float> normalized = values(normalized_actions);
  std::vector<float> row(static_cast<std::size_t>(c.action_dim));
  for (std::int64_t r = 0; r < c.action_horizon; ++r) {
    const Status s = model::unnormalize(std::span<const float>(normalized.data() + r * c.action_dim,
                                                               static_cast<std::size_t>(c.action_dim)),
                                        stats.actions, model::norm_kind_for(c.type), row);
    if (!s.is_ok()) return ::testing::AssertionFailure() << s.to_string();
    for (std::int64_t d = 0; d < D; ++d) {
      const float want = row[static_cast<std::size_t>(d)], have = got[static_cast<std::size_t>(r * D + d)];
      if (have != want) return ::testing::AssertionFailure() << "element " << r << "," << d << ": " << have << " vs " << want;
    }
  }
  return ::testing::AssertionSuccess();
}

class ModelStages : public ::testing::TestWithParam<model::ModelType> {};

TEST_P(ModelStages, ChunkEqualsTheForwardPassOnTheSameInputs) {
  const std::string& ckpt = checkpoint(GetParam());
  Graph g = start("same", ckpt);
  ASSERT_OK(g.added_backbone);
  ASSERT_OK(g.added_head);
  ASSERT_OK(g.host->activate_all());

  auto opened = model::Checkpoint::open(ckpt);
  ASSERT_TRUE(opened.has_value()) << opened.status().to_string();
  const model::ModelConfig c = opened->config();
  auto in = model::random_inputs(c, 3, {2}, 7);
  ASSERT_TRUE(in.has_value());
  ASSERT_OK(g.harness->observation.publish(observation_of(*in, c)));
  ASSERT_TRUE(eventually([&] { return g.harness->chunk_count() == 1; }));
  const MessagePtr chunk = g.harness->last_chunk();

  // The same pass through the library: noise as the node draws it (seed 5, first draw).
  Rng rng(5, 0);
  rng.fill_normal({in->noise.data<float>(), static_cast<std::size_t>(in->noise.numel())});
  auto backend = backends::make_backend("cpu");
  ASSERT_TRUE(backend.has_value());
  backends::EngineOptions eo;
  eo.threads = 1;  // as the nodes: the same work split, so the same bits
  const model::pi0::Pi0Model pm(std::move(*opened));
  auto bb = (*backend)->create(pm, model::kBackbone, eo);
  auto hd = (*backend)->create(pm, model::kActionHead, eo);
  ASSERT_TRUE(bb.has_value() && hd.has_value());
  in->num_steps = c.num_steps;
  auto out = model::run_forward(**bb, **hd, c, *in, false);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  auto stats = model::load_norm_stats(*model::find_norm_stats(ckpt, c.asset_id));
  ASSERT_TRUE(stats.has_value());
  EXPECT_TRUE(unnormalized_equal(*chunk->tensor("actions"), out->actions, c, *stats));
  EXPECT_EQ(*chunk->int_field("num_steps"), c.num_steps);
  EXPECT_GT(*chunk->number_field("backbone_ms"), 0.0);
  EXPECT_GT(*chunk->number_field("action_head_ms"), 0.0);
  // Trace: backbone then action_head; the capture stamp is the observation's.
  ASSERT_GE(chunk->header().trace.size(), 2u);
  EXPECT_EQ(chunk->header().trace.back().node, "action_head");
  EXPECT_EQ(chunk->header().trace[chunk->header().trace.size() - 2].node, "backbone");
  ASSERT_OK(g.host->deactivate_all());
}

// The node draws the next chunk's noise after publishing a chunk; the k-th chunk must still
// use exactly the generator's k-th draw, and its header the generator state before that draw.
TEST_P(ModelStages, EachChunkUsesTheGeneratorsNextDrawAlsoWhenDrawnAhead) {
  const std::string& ckpt = checkpoint(GetParam());
  Graph g = start("ahead", ckpt);
  ASSERT_OK(g.host->activate_all());
  auto opened = model::Checkpoint::open(ckpt);
  ASSERT_TRUE(opened.has_value()) << opened.status().to_string();
  const model::ModelConfig c = opened->config();
  auto in = model::random_inputs(c, 3, {}, 9);
  ASSERT_TRUE(in.has_value());
  ASSERT_OK(g.harness->observation.publish(observation_of(*in, c)));
  ASSERT_TRUE(eventually([&] { return g.harness->chunk_count() == 1; }));
  ASSERT_TRUE(eventually([&] { return g.harness->last_prefix() != nullptr; }));
  const MessagePtr prefix = g.harness->last_prefix();
  for (std::size_t k = 2; k <= 3; ++k) {
    Message again = *prefix;
    ASSERT_OK(g.harness->prefix_out.publish(std::move(again)));
    ASSERT_TRUE(eventually([&] { return g.harness->chunk_count() == k; }));
  }
  std::vector<MessagePtr> chunks;
  {
    std::lock_guard lock(g.harness->mu);
    chunks = g.harness->chunks;
  }
  ASSERT_EQ(chunks.size(), 3u);

  auto backend = backends::make_backend("cpu");
  ASSERT_TRUE(backend.has_value());
  backends::EngineOptions eo;
  eo.threads = 1;
  const model::pi0::Pi0Model pm(std::move(*opened));
  auto bb = (*backend)->create(pm, model::kBackbone, eo);
  auto hd = (*backend)->create(pm, model::kActionHead, eo);
  ASSERT_TRUE(bb.has_value() && hd.has_value());
  auto stats = model::load_norm_stats(*model::find_norm_stats(ckpt, c.asset_id));
  ASSERT_TRUE(stats.has_value());
  in->num_steps = c.num_steps;
  Rng rng(5, 0);  // the node's seed
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    ASSERT_TRUE(chunks[k]->header().rng.has_value());
    EXPECT_EQ(*chunks[k]->header().rng, rng.state()) << "chunk " << k;
    rng.fill_normal({in->noise.data<float>(), static_cast<std::size_t>(in->noise.numel())});
    auto out = model::run_forward(**bb, **hd, c, *in, false);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_TRUE(unnormalized_equal(*chunks[k]->tensor("actions"), out->actions, c, *stats)) << "chunk " << k;
  }
  ASSERT_OK(g.host->deactivate_all());
}

TEST_P(ModelStages, NumStepsReachesTheModelAlsoAtRunTime) {
  const std::string& ckpt = checkpoint(GetParam());
  Graph g = start("steps", ckpt, {{"num_steps", yaml("1")}});
  ASSERT_OK(g.host->activate_all());
  auto c = model::load_config(ckpt + "/config.json");
  auto in = model::random_inputs(*c, 3, {}, 5);
  ASSERT_OK(g.harness->observation.publish(observation_of(*in, *c)));
  ASSERT_TRUE(eventually([&] { return g.harness->chunk_count() == 1; }));
  const MessagePtr one = g.harness->last_chunk();
  EXPECT_EQ(*one->int_field("num_steps"), 1);

  ASSERT_OK(g.host->set_param("action_head", "num_steps", "4"));
  ASSERT_TRUE(eventually([&] { return g.host->params_yaml("action_head")->find("num_steps: 4") != std::string::npos; }));
  // Same prefix and the same noise (generator reset), other step count: other actions.
  // (The harness takes the prefix on its own thread: it may see it after the chunk.)
  ASSERT_TRUE(eventually([&] { return g.harness->last_prefix() != nullptr; }));
  const MessagePtr prefix = g.harness->last_prefix();
  ASSERT_OK(g.host->set_rng_state("action_head", *one->header().rng));
  Message again = *prefix;
  ASSERT_OK(g.harness->prefix_out.publish(std::move(again)));
  ASSERT_TRUE(eventually([&] { return g.harness->chunk_count() == 2; }));
  const MessagePtr four = g.harness->last_chunk();
  EXPECT_EQ(*four->int_field("num_steps"), 4);
  EXPECT_NE(values(*four->tensor("actions")), values(*one->tensor("actions")));

  // Back to 1 step with the same noise: exactly the first chunk again.
  ASSERT_OK(g.host->set_param("action_head", "num_steps", "1"));
  ASSERT_TRUE(eventually([&] { return g.host->params_yaml("action_head")->find("num_steps: 1") != std::string::npos; }));
  ASSERT_OK(g.host->set_rng_state("action_head", *one->header().rng));
  Message third = *prefix;
  ASSERT_OK(g.harness->prefix_out.publish(std::move(third)));
  ASSERT_TRUE(eventually([&] { return g.harness->chunk_count() == 3; }));
  EXPECT_EQ(values(*g.harness->last_chunk()->tensor("actions")), values(*one->tensor("actions")));
  ASSERT_OK(g.host->deactivate_all());
}

TEST_P(ModelStages, BadInputsAreCountedAndTheNodesKeepRunning) {
  const std::string& ckpt = checkpoint(GetParam());
  Graph g = start("bad", ckpt);
  ASSERT_OK(g.host->activate_all());
  auto c = model::load_config(ckpt + "/config.json");
  auto in = model::random_inputs(*c, 4, {}, 5);

  // An image of the wrong size.
  auto small = Tensor::empty(DType::kF32, Shape{3, 100, 100});
  std::fill_n(small->data<float>(), small->numel(), 0.0f);
  Message wrong = observation_of(*in, *c);
  wrong.set_tensor("image." + c->cameras[0], *small);
  ASSERT_OK(g.harness->observation.publish(std::move(wrong)));
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("backbone") == 1; }));

  // u8 pixels straight from a camera (not preprocessed).
  auto raw = Tensor::empty(DType::kU8, Shape{224, 224, 3});
  Message unprocessed = observation_of(*in, *c);
  unprocessed.set_tensor("image." + c->cameras[0], *raw);
  ASSERT_OK(g.harness->observation.publish(std::move(unprocessed)));
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("backbone") == 2; }));

  // A camera the model has no slot for.
  Message extra = observation_of(*in, *c);
  extra.set_tensor("image.top_0_rgb", in->images[0]);
  ASSERT_OK(g.harness->observation.publish(std::move(extra)));
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("backbone") == 3; }));

  // NaN in the image: the cache is computed, the head refuses the non-finite chunk.
  Message nan = observation_of(*in, *c);
  auto poisoned = in->images[0].clone();
  poisoned->data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
  nan.set_tensor("image." + c->cameras[0], *poisoned);
  ASSERT_OK(g.harness->observation.publish(std::move(nan)));
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("action_head") == 1; }));
  EXPECT_EQ(g.harness->chunk_count(), 0u);

  // A backbone output of another model (one layer too few).
  ASSERT_TRUE(eventually([&] { return g.harness->last_prefix() != nullptr; }));
  Message cut = *g.harness->last_prefix();
  {
    const Tensor& kv = *cut.tensor("kv");
    auto fewer = kv.slice(0, 0, kv.shape()[0] - 1);
    ASSERT_TRUE(fewer.has_value());
    cut.set_tensor("kv", *fewer);
  }
  if (c->vlm.depth > 1) {
    ASSERT_OK(g.harness->prefix_out.publish(std::move(cut)));
    ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("action_head") == 2; }));
  }

  // After all that, a good observation still makes a chunk.
  ASSERT_OK(g.harness->observation.publish(observation_of(*in, *c)));
  ASSERT_TRUE(eventually([&] { return g.harness->chunk_count() == 1; }));
  for (float v : values(*g.harness->last_chunk()->tensor("actions"))) EXPECT_TRUE(std::isfinite(v));
  ASSERT_OK(g.host->deactivate_all());
}

TEST_P(ModelStages, TheOtherVariantIsRefusedAtConfigure) {
  const model::ModelType other = GetParam() == model::ModelType::kPi0 ? model::ModelType::kPi05 : model::ModelType::kPi0;
  const std::string want = GetParam() == model::ModelType::kPi0 ? "pi0" : "pi05";
  Graph g = start("variant", checkpoint(other), {{"model_type", yaml(want)}}, {{"model_type", yaml(want)}});
  ASSERT_FALSE(g.added_backbone.is_ok());
  ASSERT_FALSE(g.added_head.is_ok());
  for (const Status& s : {g.added_backbone, g.added_head}) {
    EXPECT_NE(s.message().find("model_type is " + want), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(other == model::ModelType::kPi0 ? "state_proj.weight" : "time_mlp_in.weight"),
              std::string::npos)
        << s.message();
  }
}

TEST(ModelStageNodes, DeclareTheirWeightsAsTheLoadToOrderActivation) {
  const std::string& ckpt = checkpoint(model::ModelType::kPi05);
  NodeOptions b{"backbone", "backbone"};
  b.params = {{"checkpoint", yaml(ckpt)}};
  NodeOptions h{"action_head", "action_head"};
  h.params = {{"checkpoint", yaml(ckpt)}};
  auto rb = dry_run(b);
  auto rh = dry_run(h);
  ASSERT_TRUE(rb.has_value() && rh.has_value());
  auto file = model::SafetensorsFile::open(ckpt + "/model.safetensors");
  std::int64_t total = 0;
  for (const auto& e : file->entries()) total += static_cast<std::int64_t>(e.end - e.begin);
  EXPECT_GT(rb->load_bytes, rh->load_bytes);  // the VLM and vision tower outweigh the expert
  EXPECT_GT(rh->load_bytes, 0);
  // Together they are the file, less the saved-but-unused expert output head.
  const auto* head = file->find(model::kExpertLmHead);
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(rb->load_bytes + rh->load_bytes, total - static_cast<std::int64_t>(head->end - head->begin));
}

TEST(ModelStageNodes, MissingNormStatsOrTokenizerFailActivationNamingTheFile) {
  // A copy of the checkpoint without its assets and tokenizer.
  const fs::path bare = fs::path(::testing::TempDir()) / testing::unique_domain("bare_ckpt");
  fs::create_directories(bare);
  const fs::path src = checkpoint(model::ModelType::kPi05);
  fs::copy_file(src / "config.json", bare / "config.json");
  fs::create_symlink(src / "model.safetensors", bare / "model.safetensors");

  BusOptions bo;
  bo.domain = testing::unique_domain("bare");
  auto bus = std::move(*Bus::create(bo));
  NodeHostOptions ho;
  ho.status_period = std::chrono::milliseconds(0);
  for (const char* type : {"action_head", "preprocess"}) {
    NodeHost host(*bus, ho);
    NodeOptions n{std::string(type), type};
    n.params = {{"checkpoint", yaml(bare.string())}};
    auto added = host.add(n);
    ASSERT_TRUE(added.has_value()) << added.status().to_string();
    const Status s = host.activate_all();
    ASSERT_FALSE(s.is_ok()) << type;
    EXPECT_NE(s.message().find("norm_stats.json"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(bare.string()), std::string::npos) << s.message();
  }
  // With the norm stats back, preprocess asks for the tokenizer next, by its path.
  fs::copy(src / "assets", bare / "assets", fs::copy_options::recursive);
  NodeHost host(*bus, ho);
  NodeOptions n{"preprocess", "preprocess"};
  n.params = {{"checkpoint", yaml(bare.string())}};
  ASSERT_TRUE(host.add(n).has_value());
  const Status s = host.activate_all();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find((bare / "tokenizer.model").string()), std::string::npos) << s.message();
  fs::remove_all(bare);
}

TEST(ModelStageBackends, AFallbackChainRunsOnTheFirstBackendThatActivates) {
  // "nothere" has no plugin: the chain falls through to cpu, and node info says which runs.
  const std::string& ckpt = checkpoint(model::ModelType::kPi05);
  Graph g = start("chain", ckpt, {{"backend", yaml("[nothere, cpu]")}}, {{"backend", yaml("[nothere, cpu]")}});
  ASSERT_OK(g.added_backbone);
  ASSERT_OK(g.added_head);
  ASSERT_OK(g.host->activate_all());
  const std::string info = g.host->nodes_yaml();
  EXPECT_NE(info.find("engine: cpu f32 (1 threads)"), std::string::npos) << info;
  ASSERT_OK(g.host->deactivate_all());
}

TEST(ModelStageBackends, AChainWhereNothingActivatesNamesEveryCause) {
  const std::string& ckpt = checkpoint(model::ModelType::kPi05);
  // cpu refuses bf16 compute; "nothere" does not exist: activate fails naming both, by backend.
  Graph g = start("none", ckpt, {}, {{"backend", yaml("[nothere, cpu]")}, {"precision", yaml("bf16")}});
  ASSERT_OK(g.added_backbone);
  const Status s = g.host->activate_all();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("nothere: backend 'nothere' is not available"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cpu: backbone (cpu): the cpu backend computes in f32 only"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("[cuda, cpu]"), std::string::npos) << s.message();
}

TEST(ModelStageBackends, ASingleBackendNameIsAListOfOne) {
  const std::string& ckpt = checkpoint(model::ModelType::kPi05);
  Graph g = start("one", ckpt, {{"backend", yaml("cpu")}}, {{"backend", yaml("cpu")}});
  ASSERT_OK(g.added_backbone);
  ASSERT_OK(g.added_head);
  ASSERT_OK(g.host->activate_all());
  ASSERT_OK(g.host->deactivate_all());
}

INSTANTIATE_TEST_SUITE_P(Variants, ModelStages, ::testing::Values(model::ModelType::kPi0, model::ModelType::kPi05),
                         [](const auto& info) { return std::string(model::model_type_name(info.param)); });

}  // namespace
}  // namespace edgevla
