// The actuation node in a NodeHost: chunks in, JointCommands out at the control rate, sinks.
// Timing bounds are deliberately loose; exact behaviour is covered by chunk_executor_test.
#include "nodes/actuation/actuation_node.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/bus/bus.hpp"
#include "runtime/launch/launch_file.hpp"
#include "runtime/node/host.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::nodes {
namespace {

using edgevla::testing::eventually;

constexpr int kDim = 3;
const float kValues[kDim] = {0.25f, -0.5f, 1.5f};  // exact in float, double and text

// Publishes chunks and collects the commands that come back.
class Harness final : public Node {
 public:
  explicit Harness(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_ASSIGN_OR_RETURN(chunks, spec.publisher<msgs::ActionChunk>("chunks"));
    EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::RobotState>("state", QoS::keep_last(10000),
                                                             [this](const msgs::RobotState& m) {
                                                               std::lock_guard lock(mu_);
                                                               states_.push_back(m.ptr());
                                                             }));
    return spec.subscribe<msgs::JointCommand>("command", QoS::keep_last(10000),
                                              [this](const msgs::JointCommand& m) {
                                                std::lock_guard lock(mu_);
                                                commands_.push_back(m.ptr());
                                              });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }

  std::vector<MessagePtr> commands() const {
    std::lock_guard lock(mu_);
    return commands_;
  }
  std::size_t count() const {
    std::lock_guard lock(mu_);
    return commands_.size();
  }
  MessagePtr last() const {
    std::lock_guard lock(mu_);
    return commands_.empty() ? nullptr : commands_.back();
  }
  std::vector<MessagePtr> states() const {
    std::lock_guard lock(mu_);
    return states_;
  }

  Publisher<msgs::ActionChunk> chunks;

 private:
  mutable std::mutex mu_;
  std::vector<MessagePtr> commands_;
  std::vector<MessagePtr> states_;
};

// [rows, 32] with every action equal: values[j] in column j < kDim, padding elsewhere.
Message chunk_of(std::int64_t rows, const float* values, std::int64_t cols = 32) {
  std::vector<float> data(static_cast<std::size_t>(rows * cols), 7.0f);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < std::min<std::int64_t>(cols, kDim); ++j) {
      data[static_cast<std::size_t>(i * cols + j)] = values[j];
    }
  }
  auto t = Tensor::from_values(std::span<const float>(data), Shape{rows, cols});
  auto m = msgs::ActionChunk::make(std::move(*t), 0.02);
  m->header().source_stamp_ns = wall_now_ns();
  return std::move(*m);
}

std::vector<double> position_of(const MessagePtr& m) {
  const Tensor& p = *m->tensor("position");
  EXPECT_EQ(p.dtype(), DType::kF64);
  const double* d = p.data<double>();
  return {d, d + p.numel()};
}

void expect_values(const MessagePtr& m, const float* values) {
  const std::vector<double> p = position_of(m);
  ASSERT_EQ(p.size(), static_cast<std::size_t>(kDim));
  for (int j = 0; j < kDim; ++j) EXPECT_EQ(p[static_cast<std::size_t>(j)], values[j]) << j;
}

ParamOverride yaml(const std::string& text) { return {YAML::Load(text), "test"}; }

struct Graph {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  Harness* harness = nullptr;
};

// An actuation node "act" (action_dim 3, 50 Hz) wired to a harness.
Graph start(const std::string& tag, ParamOverrides params, const Clock* clock = nullptr) {
  Graph g;
  BusOptions bo;
  bo.domain = edgevla::testing::unique_domain(tag);
  g.bus = std::move(*Bus::create(bo));
  NodeHostOptions ho;
  ho.clock = clock;
  g.host = std::make_unique<NodeHost>(*g.bus, ho);
  NodeOptions a;
  a.name = "act";
  a.type = "actuation";
  a.remaps = {{"chunks", "/t/chunks"}, {"command", "/t/command"}, {"state", "/t/state"}};
  params.emplace("action_dim", yaml(std::to_string(kDim)));
  params.emplace("watchdog_timeout_s", yaml("0"));  // unless the test wants one
  a.params = std::move(params);
  auto added = g.host->add(a);
  EXPECT_TRUE(added.has_value()) << added.status().to_string();
  NodeOptions h;
  h.name = "harness";
  h.type = "test_harness";
  h.remaps = a.remaps;
  g.harness = static_cast<Harness*>(*g.host->add(std::make_unique<Harness>(h)));
  EXPECT_OK(g.host->activate_all());
  return g;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + edgevla::testing::unique_domain(name);
}

TEST(ActuationNode, CommandsFollowTheChunkAtTheControlRate) {
  Graph g = start("rate", {});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(g.harness->count(), 0u);  // nothing before the first chunk
  Message chunk = chunk_of(100, kValues);
  const std::int64_t stamp = chunk.header().source_stamp_ns;
  ASSERT_OK(g.harness->chunks.publish(std::move(chunk)));
  ASSERT_TRUE(eventually([&] { return g.harness->count() >= 1; }));
  const std::size_t before = g.harness->count();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::size_t during = g.harness->count() - before;
  EXPECT_GE(during, 5u);  // 25 expected at 50 Hz
  EXPECT_LE(during, 60u);
  const auto commands = g.harness->commands();
  for (const MessagePtr& m : commands) {
    expect_values(m, kValues);
    EXPECT_EQ(m->header().source_stamp_ns, stamp);  // derived from the chunk's observation
    EXPECT_EQ(*m->int_field("chunk_seq"), 1);
    EXPECT_EQ(*m->string_field("state"), "run");
    EXPECT_EQ(*m->int_field("chunks_received"), 1);
    EXPECT_EQ(m->field("fault"), nullptr);
  }
  // Ticks count up, one per command.
  EXPECT_GT(*commands.back()->int_field("tick"), *commands.front()->int_field("tick"));
  EXPECT_EQ(g.host->bad_inputs("act"), 0u);
}

TEST(ActuationNode, PublishStateEchoesEachCommandAsTheRobotState) {
  Graph quiet = start("nostate", {});
  ASSERT_OK(quiet.harness->chunks.publish(chunk_of(100, kValues)));
  ASSERT_TRUE(eventually([&] { return quiet.harness->count() >= 3; }));
  EXPECT_TRUE(quiet.harness->states().empty());  // off by default

  Graph g = start("state", {{"publish_state", yaml("true")}});
  ASSERT_OK(g.harness->chunks.publish(chunk_of(100, kValues)));
  ASSERT_TRUE(eventually([&] { return g.harness->states().size() >= 3; }));
  for (const MessagePtr& m : g.harness->states()) {
    expect_values(m, kValues);  // where the robot was commanded
    EXPECT_GT(m->header().source_stamp_ns, 0);
  }
}

TEST(ActuationNode, BadChunksAreCountedAndThePreviousPlanKeepsRunning) {
  Graph g = start("bad", {});
  ASSERT_OK(g.harness->chunks.publish(chunk_of(500, kValues)));
  ASSERT_TRUE(eventually([&] { return g.harness->count() >= 1; }));
  const float other[kDim] = {9, 9, 9};
  ASSERT_OK(
      g.harness->chunks.publish(chunk_of(50, other, /*cols=*/2)));  // narrower than action_dim
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("act") == 1; }));
  const float nan[kDim] = {0, std::numeric_limits<float>::quiet_NaN(), 0};
  ASSERT_OK(g.harness->chunks.publish(chunk_of(50, nan)));
  ASSERT_TRUE(eventually([&] { return g.host->bad_inputs("act") == 2; }));
  ASSERT_TRUE(eventually([&] {
    MessagePtr m = g.harness->last();
    return m && *m->int_field("chunks_rejected") == 2;
  }));
  for (const MessagePtr& m : g.harness->commands()) expect_values(m, kValues);
}

TEST(ActuationNode, WatchdogHoldsReportsAFaultAndRecovers) {
  Graph g = start("watchdog", {{"watchdog_timeout_s", yaml("0.1")}});
  ASSERT_OK(g.harness->chunks.publish(chunk_of(500, kValues)));
  MessagePtr fault;
  ASSERT_TRUE(eventually([&] {
    fault = g.harness->last();
    return fault && fault->field("fault") != nullptr;
  }));
  EXPECT_EQ(*fault->string_field("state"), "fault");
  EXPECT_GE(*fault->int_field("watchdog_faults"), 1);
  expect_values(fault, kValues);  // holding, never zeros
  const float next[kDim] = {0.5f, 0.5f, 0.5f};
  ASSERT_OK(g.harness->chunks.publish(chunk_of(500, next)));
  MessagePtr ok;
  ASSERT_TRUE(eventually([&] {
    ok = g.harness->last();
    return ok && ok->field("fault") == nullptr && *ok->int_field("chunk_seq") == 2;
  }));
  expect_values(ok, next);
  EXPECT_EQ(*ok->int_field("watchdog_faults"), 1);
}

// The system clock as NTP or an operator may step it: wall time plus a settable offset.
class SteppedClock final : public Clock {
 public:
  std::int64_t now_ns() const override { return wall_now_ns() + offset_ns.load(); }
  bool live() const override { return true; }
  std::atomic<std::int64_t> offset_ns{0};
};

// Fault injection: the wall clock jumps 30 s forward, then 60 s back, while chunks are being
// executed. The watchdog (3 s) must not see the jumps as silence; it still fires once chunks
// really stop.
TEST(ActuationNode, ClockStepsDoNotTripTheWatchdog) {
  SteppedClock clock;
  Graph g = start("clockstep", {{"watchdog_timeout_s", yaml("3.0")}}, &clock);
  ASSERT_OK(g.harness->chunks.publish(chunk_of(500, kValues)));  // 10 s of actions
  ASSERT_TRUE(eventually([&] { return g.harness->count() > 5; }));
  clock.offset_ns = 30'000'000'000;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  clock.offset_ns = -30'000'000'000;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const MessagePtr& m : g.harness->commands()) {
    ASSERT_EQ(m->field("fault"), nullptr) << "a clock step tripped the watchdog";
    ASSERT_EQ(*m->int_field("watchdog_faults"), 0);
  }
  // Real silence is still caught (about 3 s after the chunk, with no new one).
  MessagePtr fault;
  ASSERT_TRUE(eventually([&] {
    fault = g.harness->last();
    return fault && fault->field("fault") != nullptr;
  }, std::chrono::seconds(15)));
  EXPECT_EQ(*fault->int_field("watchdog_faults"), 1);
}

// A clock that moves 1 ms at every read, as if each callback ran late after its stamp was taken.
class CreepingClock final : public Clock {
 public:
  std::int64_t now_ns() const override { return start_ + 1'000'000 * reads_.fetch_add(1); }

 private:
  std::int64_t start_ = wall_now_ns();
  mutable std::atomic<std::int64_t> reads_{0};
};

// The time a tick decides on (and stamps the state with) is its callback's stamp, which replay
// restores, not a later read of the clock. Found by a ThreadSanitizer run: ticks running late
// were replayed with another time, and a hold decision came out differently.
TEST(ActuationNode, TicksAreTimedByTheCallbackStampThatReplayRestores) {
  CreepingClock clock;
  Graph g = start("stamp", {{"publish_state", yaml("true")}}, &clock);
  ASSERT_OK(g.harness->chunks.publish(chunk_of(100, kValues)));
  ASSERT_TRUE(eventually([&] { return g.harness->states().size() >= 5; }));
  for (const MessagePtr& m : g.harness->states()) {
    EXPECT_GT(m->header().callback_stamp_ns, 0);
    EXPECT_EQ(m->header().source_stamp_ns, m->header().callback_stamp_ns);
  }
}

TEST(ActuationNode, CsvSinkWritesAHeaderAndARowPerCommand) {
  const std::string path = temp_path("act.csv");
  Graph g = start("csv", {{"sink", yaml("csv")}, {"sink_path", yaml(path)}});
  ASSERT_OK(g.harness->chunks.publish(chunk_of(500, kValues)));
  ASSERT_TRUE(eventually([&] { return g.harness->count() >= 5; }));
  ASSERT_OK(g.host->deactivate_all());
  const std::size_t published = g.harness->count();
  std::ifstream f(path);
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  EXPECT_EQ(line, "stamp_ns,tick,state,chunk_seq,chunk_step,clamped,j0,j1,j2");
  std::size_t rows = 0;
  std::int64_t last_tick = 0;
  while (std::getline(f, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
    ASSERT_EQ(cols.size(), 9u) << line;
    EXPECT_GT(std::stoll(cols[0]), 0);
    EXPECT_GT(std::stoll(cols[1]), last_tick);
    last_tick = std::stoll(cols[1]);
    EXPECT_EQ(cols[2], "run");
    EXPECT_EQ(cols[3], "1");
    EXPECT_EQ(cols[5], "0");
    for (int j = 0; j < kDim; ++j)
      EXPECT_EQ(std::stod(cols[6 + static_cast<std::size_t>(j)]), kValues[j]);
    ++rows;
  }
  EXPECT_GE(rows,
            published);  // every published command was written (the last may not have arrived)
  std::remove(path.c_str());
}

TEST(ActuationNode, UdpSinkSendsTheDocumentedDatagram) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string target = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  Graph g = start("udp", {{"sink", yaml("udp")}, {"sink_path", yaml(target)}});
  ASSERT_OK(g.harness->chunks.publish(chunk_of(500, kValues)));
  std::byte buf[2048];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  ::close(fd);
  ASSERT_EQ(n, 40 + 8 * kDim);
  auto le = [&](std::size_t off, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= static_cast<std::uint64_t>(buf[off + static_cast<std::size_t>(i)]) << (8 * i);
    return v;
  };
  EXPECT_EQ(std::memcmp(buf, "EVJC", 4), 0);
  EXPECT_EQ(le(4, 2), 1u);                             // version
  EXPECT_EQ(le(6, 2), 3u);                             // joints
  EXPECT_GE(le(8, 8), 1u);                             // tick
  EXPECT_GT(static_cast<std::int64_t>(le(16, 8)), 0);  // stamp_ns
  EXPECT_EQ(static_cast<std::int64_t>(le(24, 8)), 1);  // chunk_seq
  EXPECT_GE(static_cast<std::int32_t>(le(32, 4)), 0);  // chunk_step
  EXPECT_EQ(le(36, 1), 0u);                            // state: run
  EXPECT_EQ(le(37, 1) & 1u, 0u);                       // not clamped
  for (int j = 0; j < kDim; ++j) {
    EXPECT_EQ(std::bit_cast<double>(le(40 + 8 * static_cast<std::size_t>(j), 8)), kValues[j]);
  }
}

TEST(ActuationNode, StdoutSinkPrintsOneLinePerCommand) {
  ::testing::internal::CaptureStdout();
  Graph g = start("stdout", {{"sink", yaml("stdout")}});
  ASSERT_OK(g.harness->chunks.publish(chunk_of(500, kValues)));
  const bool got = eventually([&] { return g.harness->count() >= 3; });
  EXPECT_OK(g.host->deactivate_all());
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(got);
  std::size_t lines = 0;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind("actuation act tick=", 0) == 0) ++lines;
  }
  EXPECT_GE(lines, 3u);
}

TEST(ActuationNode, BadParamsStopConfigureNamingThem) {
  auto configure = [](ParamOverrides params) {
    NodeOptions o;
    o.name = "act";
    o.type = "actuation";
    o.params = std::move(params);
    return dry_configure(o);
  };
  EXPECT_TRUE(configure({}).has_value());
  auto lengths = configure({{"action_dim", yaml("2")}, {"position_min", yaml("[0, 0, 0]")}});
  ASSERT_FALSE(lengths.has_value());
  EXPECT_NE(lengths.status().message().find("position_min"), std::string::npos);
  EXPECT_NE(lengths.status().message().find("'act'"), std::string::npos);
  EXPECT_FALSE(configure({{"sink", yaml("csv")}}).has_value());  // no sink_path
  EXPECT_FALSE(configure({{"sink", yaml("udp")}, {"sink_path", yaml("localhost")}}).has_value());
  EXPECT_FALSE(configure({{"transition", yaml("average")}}).has_value());
  EXPECT_FALSE(configure({{"max_velocity", yaml("[-1]")}}).has_value());
}

TEST(ActuationNode, DemoLaunchFileRunsAndCommands) {
  auto launch = load_launch(edgevla::testing::source_dir() + "/launch/actuation_demo.yaml",
                            {"actuation.sink=none"});
  ASSERT_TRUE(launch.has_value()) << launch.status().to_string();
  BusOptions bo;
  bo.domain = edgevla::testing::unique_domain("demo");
  auto bus = std::move(*Bus::create(bo));
  NodeHost host(*bus);
  std::string command_topic;
  for (const auto& group : launch->groups) {
    for (const NodeOptions& o : group.nodes) {
      auto added = host.add(o);
      ASSERT_TRUE(added.has_value()) << added.status().to_string();
      if (o.type == "actuation") {
        auto topics = host.topics_of(o.name);
        for (const auto& p : topics->publishers) {
          if (p.name == "command") command_topic = p.topic;
        }
      }
    }
  }
  ASSERT_FALSE(command_topic.empty());
  NodeOptions h;
  h.name = "harness";
  h.type = "test_harness";
  h.remaps = {{"command", command_topic}, {"chunks", "/unused"}};
  auto* harness = static_cast<Harness*>(*host.add(std::make_unique<Harness>(h)));
  ASSERT_OK(host.activate_all());
  ASSERT_TRUE(eventually([&] {
    MessagePtr m = harness->last();
    return m && *m->string_field("state") == "run" && harness->count() >= 5;
  }));
  const std::vector<double> p = position_of(harness->last());
  ASSERT_EQ(p.size(), 3u);
  for (double v : p) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(host.bad_inputs("actuation"), 0u);
}

}  // namespace
}  // namespace edgevla::nodes
