// The pi0.5 pipeline as users run it: launch/pi05_demo.yaml (all five stages in one process,
// recording on) on a generated tiny checkpoint, then
//   - `edgevla bag report` on the recording has every number (stage latency, camera->actuation,
//     overhead, drops, memory),
//   - per-node replay of preprocess, backbone, action_head and actuation reproduces the recorded
//     outputs bit for bit, and fails when action_head's num_steps is changed,
//   - launch/pi05_multiprocess.yaml starts the heaviest group first and runs across processes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/launch/launch_file.hpp"
#include "runtime/launch/launcher.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/replay.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string exe() { return testing::bin_dir() + "/edgevla"; }
std::string launch_file(const std::string& name) { return testing::source_dir() + "/launch/" + name; }

class Pi05Pipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(::testing::TempDir()) / testing::unique_domain("pi05_pipeline"));
    fs::create_directories(*dir_);
    model::GenerateOptions g;
    g.config = *model::preset_config("tiny", model::ModelType::kPi05);
    g.seed = 3;
    ASSERT_OK(model::generate_checkpoint(g, checkpoint()));
    // The launch files take the checkpoint and output folder from the environment.
    ::setenv("EDGEVLA_CHECKPOINT", checkpoint().c_str(), 1);
    ::setenv("EDGEVLA_RUN_DIR", dir_->c_str(), 1);
    // Tiny's horizon is 10 actions: a stride of 5.
    auto r = testing::run(launch_args("pi05_demo.yaml"), env(), (*dir_ / "launch").string(),
                          std::chrono::seconds(120 + 60 * static_cast<int>(testing::time_scale())));
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_TRUE(fs::exists(bag()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  // 4 s of the graph with a stride of 5 (tiny's horizon is 10 actions). Where instrumented
  // code runs slower (EDGEVLA_TEST_TIME_SCALE), everything time-bound stretches with it: the
  // run, the actions' time step (a chunk must not be stale by the time it arrives), the
  // watchdog and the preprocess node's wait for a chunk.
  static std::vector<std::string> launch_args(const std::string& file) {
    const double k = testing::time_scale();
    std::vector<std::string> a = {exe(), "launch", launch_file(file), "--duration", std::to_string(4 * k),
                                  "--set", "actuation.execute_steps=5"};
    if (k > 1) {
      for (const std::string& s : {"action_head.action_dt_s=" + std::to_string(0.02 * k),
                                   "actuation.watchdog_timeout_s=" + std::to_string(2 * k),
                                   "preprocess.chunk_timeout_s=" + std::to_string(3 * k)}) {
        a.push_back("--set");
        a.push_back(s);
      }
    }
    return a;
  }
  static std::vector<std::string> env() {
    return {"EDGEVLA_DOMAIN=" + testing::unique_domain("pi05"), "EDGEVLA_CHECKPOINT=" + checkpoint(),
            "EDGEVLA_RUN_DIR=" + dir_->string()};
  }
  // Runs launch/<name>.yaml with this fixture's environment, then `bag report --json` on its
  // recording (<name>.mcap): the report, and the launch's log in `log`.
  static void launch_and_report(const std::string& name, json& report, std::string& log) {
    auto r = testing::run(launch_args(name + ".yaml"), env(), (*dir_ / name).string(),
                          std::chrono::seconds(120 + 60 * static_cast<int>(testing::time_scale())));
    ASSERT_EQ(r.code, 0) << r.err;
    log = r.err;
    const std::string out = (*dir_ / (name + ".json")).string();
    auto rep = testing::run({exe(), "bag", "report", (*dir_ / (name + ".mcap")).string(), "--json", out}, env(),
                            (*dir_ / (name + "_report")).string());
    ASSERT_EQ(rep.code, 0) << rep.err;
    std::ifstream f(out);
    report = json::parse(f);
  }
  // A count in the report, or -1 where it is missing (a graph that made nothing has no section).
  static int count(json& j, const char* section, const char* key) {
    return j[section][key].is_number() ? j[section][key].get<int>() : -1;
  }
  static std::string checkpoint() { return (*dir_ / "tiny_pi05").string(); }
  static std::string bag() { return (*dir_ / "pi05_demo.mcap").string(); }
  static bag::ReplayOptions replay(const std::string& node) {
    bag::ReplayOptions o;
    o.bag = bag();
    o.node = node;
    o.tolerance.rel_l2 = 0;  // same backend, same inputs, same generator states: the same bits
    o.tolerance.max_abs = 0;
    return o;
  }
  static fs::path* dir_;
};
fs::path* Pi05Pipeline::dir_ = nullptr;

TEST_F(Pi05Pipeline, ReportHasStageLatencyEndToEndLatencyDropsAndMemory) {
  const std::string out = (*dir_ / "report.json").string();
  auto r = testing::run({exe(), "bag", "report", bag(), "--json", out, "--checkpoint", checkpoint()}, env(),
                        (*dir_ / "report").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("camera -> actuation"), std::string::npos);
  std::ifstream f(out);
  json j = json::parse(f);  // not const: a missing key reads as null and fails the check
  EXPECT_GE(j["messages"]["Observation"].get<int>(), 5);
  EXPECT_GE(j["messages"]["ActionChunk"].get<int>(), 5);
  EXPECT_GE(j["messages"]["JointCommand"].get<int>(), 50);
  for (const char* stage : {"camera", "preprocess", "backbone", "action_head"}) {
    EXPECT_GE(j["stages_ms"][stage]["n"].get<int>(), 5) << stage;
    EXPECT_GT(j["stages_ms"][stage]["p50"].get<double>(), 0.0) << stage;
  }
  json& lat = j["latency_ms"];
  EXPECT_GE(lat["camera_to_actuation"]["n"].get<int>(), 5);
  // End to end covers the stages' compute; what is left is overhead, never negative.
  EXPECT_GE(lat["camera_to_actuation"]["p50"].get<double>(), j["stages_ms"]["backbone"]["p50"].get<double>());
  EXPECT_GE(lat["framework_overhead"]["n"].get<int>(), 5);
  EXPECT_GE(lat["framework_overhead"]["p50"].get<double>(), 0.0);
  // The hand-offs are the part of the overhead spent between stages.
  EXPECT_GE(lat["stage_handoffs"]["n"].get<int>(), 5);
  EXPECT_GT(lat["stage_handoffs"]["p50"].get<double>(), 0.0);
  for (const char* part : {"delivery_camera_to_preprocess", "delivery_preprocess_to_backbone",
                           "delivery_backbone_to_action_head", "delivery_action_head_to_actuation"}) {
    EXPECT_GE(j["overhead_ms"][part]["n"].get<int>(), 5) << part;
  }
  EXPECT_GE(lat["camera_to_command"]["p50"].get<double>(), lat["camera_to_actuation"]["p50"].get<double>());
  // Memory: the model stages report what they hold, bounded by the process.
  json& nodes = j["nodes"];
  for (const char* n : {"backbone", "action_head"}) {
    ASSERT_TRUE(nodes.contains(n)) << n;
    EXPECT_GT(nodes[n]["memory_bytes"].get<std::int64_t>(), 0) << n;
    EXPECT_GT(nodes[n]["load_bytes"].get<std::int64_t>(), 0) << n;
    EXPECT_LE(nodes[n]["memory_bytes"].get<std::int64_t>(), nodes[n]["process_peak_rss_bytes"].get<std::int64_t>());
    EXPECT_EQ(nodes[n]["bad_inputs"].get<int>(), 0) << n;
  }
  EXPECT_GT(j["checkpoint_bytes"].get<std::int64_t>(), 0);
  EXPECT_GT(j["peak_rss_over_checkpoint"].get<double>(), 0.0);
  EXPECT_GE(j["actuation"]["chunks_received"].get<int>(), 5);
  EXPECT_EQ(j["actuation"]["watchdog_faults"].get<int>(), 0);
}

TEST_F(Pi05Pipeline, PreprocessReplaysBitForBit) {
  auto o = replay("preprocess");
  EXPECT_REPLAY_PASSES(o);
  auto r = bag::replay_node(o);
  ASSERT_TRUE(r.has_value());
  EXPECT_GE(r->outputs.at("/policy/observation").first, 5u);
}

TEST_F(Pi05Pipeline, BackboneReplaysBitForBit) { EXPECT_REPLAY_PASSES(replay("backbone")); }

TEST_F(Pi05Pipeline, ActionHeadReplaysBitForBit) { EXPECT_REPLAY_PASSES(replay("action_head")); }

TEST_F(Pi05Pipeline, ModelStagesReplayWithTheThreadCountTheyRanWith) {
  // The graph ran with threads: 0 (one per core). The outputs carry the resolved count and
  // replay uses it, so a machine with another core count still replays bit for bit.
  const std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  auto r = bag::replay_node(replay("action_head"));
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_TRUE(r->passed()) << r->table();
  bool noted = false;
  for (const auto& n : r->notes) noted = noted || n.starts_with("threads = " + cores + " as recorded");
  EXPECT_TRUE(noted) << r->table();
  // Another count, given by the user: said so, and equal within the backend's tolerance.
  auto o = replay("backbone");
  const std::string other = cores == "1" ? "2" : "1";
  o.sets = {"threads=" + other};
  o.tolerance.max_abs = -1;
  o.tolerance.rel_l2 = 1e-5;
  auto r2 = bag::replay_node(o);
  ASSERT_TRUE(r2.has_value()) << r2.status().to_string();
  EXPECT_TRUE(r2->passed()) << r2->table();
  bool differs = false;
  for (const auto& n : r2->notes) differs = differs || (n.starts_with("threads = " + other) && n.find("differs") != std::string::npos);
  EXPECT_TRUE(differs) << r2->table();
}

TEST_F(Pi05Pipeline, ActuationReplaysItsControlTicksBitForBit) {
  auto o = replay("actuation");
  auto r = bag::replay_node(o);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_TRUE(r->passed()) << r->table();
  EXPECT_GE(r->ticks, 50u);  // the control loop ran from the recorded tick times
  EXPECT_EQ(r->outputs.at("/robot/command").first, r->outputs.at("/robot/command").second);
}

TEST_F(Pi05Pipeline, ChangingNumStepsFailsTheActionHeadReplay) {
  auto o = replay("action_head");
  o.sets = {"num_steps=3"};
  EXPECT_REPLAY_FAILS(o);
}

TEST_F(Pi05Pipeline, MultiprocessLaunchStartsTheHeaviestStageFirstAndRuns) {
  auto d = load_launch(launch_file("pi05_multiprocess.yaml"), {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  std::vector<std::string> order;
  for (const GroupDescription* g : start_order(*d)) order.push_back(g->name);
  EXPECT_EQ(order, (std::vector<std::string>{"record", "backbone", "action_head", "robot"}));

  json j;  // not const: a missing key reads as null and fails the check
  std::string log;
  ASSERT_NO_FATAL_FAILURE(launch_and_report("pi05_multiprocess", j, log));
  EXPECT_GE(count(j, "actuation", "chunks_received"), 3) << j.dump(1) << "\n" << log;
  // Three policy processes, each its own pid.
  EXPECT_NE(j["nodes"]["backbone"]["pid"], j["nodes"]["action_head"]["pid"]);
  EXPECT_NE(j["nodes"]["backbone"]["pid"], j["nodes"]["preprocess"]["pid"]);
}

// The GPU graph split over processes (backbone, action head, robot, recorder): cuda where a
// GPU takes the stages, the cpu engines here. It runs and records.
TEST_F(Pi05Pipeline, CudaMultiprocessLaunchRunsAcrossProcesses) {
  json j;  // not const: a missing key reads as null and fails the check
  std::string log;
  ASSERT_NO_FATAL_FAILURE(launch_and_report("pi05_cuda_multiprocess", j, log));
  EXPECT_GE(count(j, "actuation", "chunks_received"), 3) << j.dump(1) << "\n" << log;
  EXPECT_NE(j["nodes"]["backbone"]["pid"], j["nodes"]["action_head"]["pid"]);
  EXPECT_NE(j["nodes"]["action_head"]["pid"], j["nodes"]["preprocess"]["pid"]);
}

// Backends mixed in one graph: the backbone's chain [cuda, cpu], the action head on cpu.
TEST_F(Pi05Pipeline, MixedBackendLaunchRunsAndRecords) {
  json j;  // not const: a missing key reads as null and fails the check
  std::string log;
  ASSERT_NO_FATAL_FAILURE(launch_and_report("pi05_mixed", j, log));
  EXPECT_NE(log.find("action_head: pi05 runs on backend 'cpu'"), std::string::npos) << log;
  EXPECT_GE(count(j, "actuation", "chunks_received"), 3) << j.dump(1) << "\n" << log;
}

TEST_F(Pi05Pipeline, MultiprocessRunWithARealDepthCheckpointMakesChunks) {
  // pi0.5's real depth (18 layers, small widths): the BackboneOutput carries the K/V of 36 layer halves in one
  // shared-memory block, which each receiving process (action head, recorder) must hold with
  // one slot, not one per tensor.
  const std::string deep = (*dir_ / "deep_pi05").string();
  model::GenerateOptions g;
  g.config = *model::preset_config("tiny", model::ModelType::kPi05);
  g.config.vlm.depth = 18;
  g.config.expert.depth = 18;
  g.seed = 4;
  ASSERT_OK(model::generate_checkpoint(g, deep));
  const fs::path run = *dir_ / "deep";
  fs::create_directories(run);
  std::vector<std::string> e = env();
  e[1] = "EDGEVLA_CHECKPOINT=" + deep;
  e[2] = "EDGEVLA_RUN_DIR=" + run.string();
  // The deep model is slower, much slower on a loaded machine (a full ctest -j16 on 16 cores:
  // ~0.7 s from camera to actions, 2.1 s once with both model stages on all 16 cores there):
  // actions 0.2 s apart keep its chunks from arriving stale, and two threads a model stage keep
  // its passes from waiting on workers that the other tests' processes preempt; neither is what
  // this test is about.
  std::vector<std::string> args = launch_args("pi05_multiprocess.yaml");
  const double k = testing::time_scale();
  for (const std::string& s : {std::string("backbone.threads=2"), std::string("action_head.threads=2"),
                               "action_head.action_dt_s=" + std::to_string(0.2 * k),
                               "actuation.watchdog_timeout_s=" + std::to_string(4 * k),
                               "preprocess.chunk_timeout_s=" + std::to_string(6 * k)}) {
    args.push_back("--set");
    args.push_back(s);
  }
  auto r = testing::run(args, e, (run / "launch").string(),
                        std::chrono::seconds(120 + 60 * static_cast<int>(testing::time_scale())));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string out = (run / "report.json").string();
  auto rep = testing::run({exe(), "bag", "report", (run / "pi05_multiprocess.mcap").string(), "--json", out}, e,
                          (run / "report").string());
  ASSERT_EQ(rep.code, 0) << rep.err;
  std::ifstream f(out);
  json j = json::parse(f);  // not const: a missing key reads as null and fails the check
  EXPECT_GE(count(j, "actuation", "chunks_received"), 3) << j.dump(1) << "\n" << r.err;
  // The recorder got the deep prefixes too.
  EXPECT_GE(count(j, "messages", "BackboneOutput"), 3) << j.dump(1) << "\n" << r.err;
}

TEST_F(Pi05Pipeline, LaunchCheckRefusesTheOtherVariant) {
  const std::string pi0 = (*dir_ / "tiny_pi0").string();
  model::GenerateOptions g;
  g.config = *model::preset_config("tiny", model::ModelType::kPi0);
  ASSERT_OK(model::generate_checkpoint(g, pi0));
  auto r = testing::run({exe(), "launch", launch_file("pi05_demo.yaml"), "--check"},
                        {"EDGEVLA_DOMAIN=" + testing::unique_domain("check"), "EDGEVLA_CHECKPOINT=" + pi0,
                         "EDGEVLA_RUN_DIR=" + dir_->string()},
                        (*dir_ / "check").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("pi0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("model_type"), std::string::npos) << r.err;
}

// `launch --check` asks each model stage's backends whether their device can take the stage:
// with [cuda, cpu] one of them always can (cpu here, cuda on a GPU machine); with [cuda] alone
// the answer depends on the machine, and is either the GPU found or the reason none is usable.
TEST_F(Pi05Pipeline, LaunchCheckAsksTheBackendsForADevice) {
  const std::vector<std::string> env = {"EDGEVLA_DOMAIN=" + testing::unique_domain("devcheck"),
                                        "EDGEVLA_CHECKPOINT=" + checkpoint(), "EDGEVLA_RUN_DIR=" + dir_->string()};
  // A misspelt knob of the cuda backend (env_knobs.hpp) is named when the backend loads, with
  // the knob it meant; where no cuda backend was built nothing loads it.
  std::vector<std::string> typo_env = env;
  typo_env.push_back("EDGEVLA_ATTN_NARROWW=1");
  auto chain = testing::run({exe(), "launch", launch_file("pi05_cuda.yaml"), "--check"}, typo_env,
                            (*dir_ / "devcheck").string());
  EXPECT_EQ(chain.code, 0) << chain.err;
  EXPECT_NE(chain.err.find("backbone: backend '"), std::string::npos) << chain.err;
  EXPECT_NE(chain.err.find("action_head: backend '"), std::string::npos) << chain.err;
  if (std::filesystem::exists(std::filesystem::path(testing::bin_dir()) / ".." / "lib" / "libedgevla_backend_cuda.so")) {
    EXPECT_NE(chain.err.find("EDGEVLA_ATTN_NARROWW is set but edgevla reads no such variable"), std::string::npos)
        << chain.err;
    EXPECT_NE(chain.err.find("did you mean EDGEVLA_ATTN_NARROW?"), std::string::npos) << chain.err;
  }
  auto only = testing::run({exe(), "launch", launch_file("pi05_cuda.yaml"), "--check", "--set", "backbone.backend=[cuda]"},
                           env, (*dir_ / "devcheck").string());
  if (only.code == 0) {
    EXPECT_NE(only.err.find("backbone: backend 'cuda' can run it: cuda:0"), std::string::npos) << only.err;
  } else {
    EXPECT_EQ(only.code, 2) << only.err;
    EXPECT_NE(only.err.find("no backend of [cuda] can run stage backbone"), std::string::npos) << only.err;
  }
}

}  // namespace
}  // namespace edgevla
