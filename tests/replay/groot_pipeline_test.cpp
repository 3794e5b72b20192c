// The GR00T N1.6 pipeline as users run it: launch/groot_n16.yaml (the same five nodes as
// pi0.5's graph, only params differ) on a generated tiny checkpoint, recording on, then
//   - `edgevla bag report` on the recording has every stage, the chunks have the embodiment's
//     shape (16 actions of gr1's 29 values), and nothing was refused as a bad input,
//   - per-node replay of preprocess, backbone and action_head reproduces the recorded outputs
//     bit for bit, and fails when the action head's num_steps changes,
//   - launch/groot_n16_multiprocess.yaml runs the heavy stages in processes of their own.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/model/groot/generator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/replay.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string exe() { return testing::bin_dir() + "/edgevla"; }

class GrootPipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(::testing::TempDir()) / testing::unique_domain("groot_pipeline"));
    fs::create_directories(*dir_);
    model::groot::GenerateOptions g;
    g.preset = "tiny";
    g.seed = 3;
    g.dtype = DType::kF32;
    ASSERT_OK(model::groot::generate_checkpoint(g, checkpoint()));
    auto r = testing::run(launch_args("groot_n16.yaml"), env(), (*dir_ / "launch").string(),
                          std::chrono::seconds(120 + 60 * static_cast<int>(testing::time_scale())));
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_TRUE(fs::exists(bag()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  // 4 s of the graph (stretched where instrumented code runs slower, as in the pi0.5 test).
  static std::vector<std::string> launch_args(const std::string& file) {
    const double k = testing::time_scale();
    std::vector<std::string> a = {exe(), "launch", testing::source_dir() + "/launch/" + file, "--duration",
                                  std::to_string(4 * k)};
    if (k > 1) {
      for (const std::string& s : {"action_head.action_dt_s=" + std::to_string(0.05 * k),
                                   "actuation.watchdog_timeout_s=" + std::to_string(2 * k),
                                   "preprocess.chunk_timeout_s=" + std::to_string(3 * k)}) {
        a.push_back("--set");
        a.push_back(s);
      }
    }
    return a;
  }
  static std::vector<std::string> env() {
    return {"EDGEVLA_DOMAIN=" + testing::unique_domain("groot"), "EDGEVLA_CHECKPOINT=" + checkpoint(),
            "EDGEVLA_RUN_DIR=" + dir_->string()};
  }
  static json report(const std::string& mcap, const std::string& name) {
    const std::string out = (*dir_ / (name + ".json")).string();
    auto r = testing::run({exe(), "bag", "report", mcap, "--json", out, "--checkpoint", checkpoint()}, env(),
                          (*dir_ / (name + "_report")).string());
    EXPECT_EQ(r.code, 0) << r.err;
    std::ifstream f(out);
    return json::parse(f, nullptr, false);
  }
  static std::string checkpoint() { return (*dir_ / "tiny_groot").string(); }
  static std::string bag() { return (*dir_ / "groot_n16.mcap").string(); }
  static bag::ReplayOptions replay(const std::string& node) {
    bag::ReplayOptions o;
    o.bag = bag();
    o.node = node;
    o.tolerance.rel_l2 = 0;
    o.tolerance.max_abs = 0;
    return o;
  }
  static fs::path* dir_;
};
fs::path* GrootPipeline::dir_ = nullptr;

TEST_F(GrootPipeline, ReportHasEveryStageAndChunksHaveTheEmbodimentsShape) {
  json j = report(bag(), "report");  // not const: a missing key reads as null and fails the check
  EXPECT_GE(j["messages"]["Observation"].get<int>(), 3);
  EXPECT_GE(j["messages"]["ActionChunk"].get<int>(), 3);
  for (const char* stage : {"camera", "preprocess", "backbone", "action_head"}) {
    EXPECT_GE(j["stages_ms"][stage]["n"].get<int>(), 3) << stage;
    EXPECT_GT(j["stages_ms"][stage]["p50"].get<double>(), 0.0) << stage;
  }
  EXPECT_GE(j["latency_ms"]["camera_to_actuation"]["n"].get<int>(), 3);
  EXPECT_GE(j["latency_ms"]["framework_overhead"]["p50"].get<double>(), 0.0);
  for (const char* n : {"preprocess", "backbone", "action_head"}) {
    ASSERT_TRUE(j["nodes"].contains(n)) << n;
    EXPECT_EQ(j["nodes"][n]["bad_inputs"].get<int>(), 0) << n;
  }
  EXPECT_GT(j["checkpoint_bytes"].get<std::int64_t>(), 0);
  EXPECT_GE(j["actuation"]["chunks_received"].get<int>(), 3);
  EXPECT_EQ(j["actuation"]["watchdog_faults"].get<int>(), 0);

  // Every recorded chunk: gr1's horizon and action dims, finite values.
  auto reader = mcap::McapReader::open(bag());
  ASSERT_TRUE(reader.has_value()) << reader.status().to_string();
  int chunks = 0;
  ASSERT_OK((*reader)->for_each_message([&](const mcap::MessageView& v) -> Status {
    if (v.channel->topic != "/policy/actions") return Status::ok();
    EDGEVLA_ASSIGN_OR_RETURN(Message m, bag::decode_record(v));
    const Tensor* a = m.tensor("actions");
    if (a == nullptr || !(a->shape() == Shape{16, 29})) {
      return invalid_argument("chunk " + std::to_string(chunks) + " is " + (a ? a->describe() : "missing"));
    }
    for (std::int64_t i = 0; i < a->numel(); ++i) {
      if (!std::isfinite(a->data<float>()[i])) return invalid_argument("a non-finite action");
    }
    ++chunks;
    return Status::ok();
  }));
  EXPECT_GE(chunks, 3);
}

// Each replay compares at least three outputs (a stage that published nothing would pass
// vacuously).
void expect_replays(const bag::ReplayOptions& o, const std::string& topic) {
  auto r = bag::replay_node(o);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_TRUE(r->passed()) << r->table();
  ASSERT_TRUE(r->outputs.contains(topic)) << r->table();
  EXPECT_GE(r->outputs.at(topic).first, 3u) << r->table();
}

TEST_F(GrootPipeline, PreprocessReplaysBitForBit) { expect_replays(replay("preprocess"), "/policy/observation"); }

TEST_F(GrootPipeline, BackboneReplaysBitForBit) { expect_replays(replay("backbone"), "/policy/prefix"); }

TEST_F(GrootPipeline, ActionHeadReplaysBitForBit) { expect_replays(replay("action_head"), "/policy/actions"); }

TEST_F(GrootPipeline, ChangingNumStepsFailsTheActionHeadReplay) {
  auto o = replay("action_head");
  o.sets = {"num_steps=3"};
  EXPECT_REPLAY_FAILS(o);
}

TEST_F(GrootPipeline, MultiprocessLaunchRunsAcrossProcesses) {
  auto r = testing::run(launch_args("groot_n16_multiprocess.yaml"), env(), (*dir_ / "multiprocess").string(),
                        std::chrono::seconds(120 + 60 * static_cast<int>(testing::time_scale())));
  ASSERT_EQ(r.code, 0) << r.err;
  json j = report((*dir_ / "groot_n16_multiprocess.mcap").string(), "multiprocess");
  EXPECT_GE(j["actuation"]["chunks_received"].get<int>(), 2);
  EXPECT_NE(j["nodes"]["backbone"]["pid"], j["nodes"]["action_head"]["pid"]);
  EXPECT_NE(j["nodes"]["backbone"]["pid"], j["nodes"]["preprocess"]["pid"]);
}

}  // namespace
}  // namespace edgevla
