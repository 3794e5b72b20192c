// Multi-process tests: `edgevla launch` with process groups, signals, respawn and plugins.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "runtime/bus/registry.hpp"
#include "runtime/launch/launcher.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
using testing::eventually;
using testing::Process;

class Launcher : public ::testing::Test {
 protected:
  void SetUp() override {
    domain_ = testing::unique_domain(::testing::UnitTest::GetInstance()->current_test_info()->name());
    dir_ = fs::path(::testing::TempDir()) / domain_;
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> env() const { return {"EDGEVLA_DOMAIN=" + domain_}; }
  std::string exe() const { return testing::bin_dir() + "/edgevla"; }
  std::string demo(const std::string& name) const { return testing::source_dir() + "/launch/" + name; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }
  YAML::Node summary(const std::string& name) const { return YAML::LoadFile(path(name)); }

  std::vector<RegistryEntry> entries() const {
    return Registry::open(Registry::default_dir(domain_))->list();
  }
  pid_t pid_of_process(const std::string& process) const {
    for (const auto& e : entries()) {
      if (e.process == process && !e.nodes.empty()) return static_cast<pid_t>(e.pid);
    }
    return -1;
  }

  std::string domain_;
  fs::path dir_;
};

TEST_F(Launcher, TwoProcessesDeliverEveryByteThroughSharedMemory) {
  auto r = testing::run({exe(), "launch", demo("demo_multiprocess.yaml"), "--duration", "3", "--set",
                         "source.rate_hz=50", "--set", "sink.summary_file=" + path("sink.yaml")},
                        env(), path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  const YAML::Node s = summary("sink.yaml");
  EXPECT_GE(s["frames"].as<int>(), 50);
  EXPECT_EQ(s["corrupt"].as<int>(), 0);
  EXPECT_EQ(s["missing"].as<int>(), 0);
  EXPECT_EQ(s["transport"].as<std::string>(), "shm");
  EXPECT_GT(s["p50_ns"].as<std::int64_t>(), 0);
}

// A free tcp port on 127.0.0.1 (bound, read and released: the launch binds it next).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

TEST_F(Launcher, TheTcpDemoDeliversEveryByteOverEncryptedTcp) {
  fs::create_directories(dir_ / "keys");
  for (const char* name : {"sensors", "consumers"}) {
    auto k = testing::run({exe(), "keys", "generate", "--out", path("keys/") + name}, env(), path(name));
    ASSERT_EQ(k.code, 0) << k.err;
  }
  const int port = free_port();
  ASSERT_GT(port, 0);
  // Two domains: the launches find each other over tcp only, not through the registry.
  const std::vector<std::string> common = {"EDGEVLA_KEYS=" + path("keys"), "EDGEVLA_TCP_LISTEN=" + std::to_string(port),
                                           "EDGEVLA_TCP_PEER=tcp://127.0.0.1:" + std::to_string(port)};
  auto with_domain = [&](const std::string& d) {
    auto e = common;
    e.push_back("EDGEVLA_DOMAIN=" + domain_ + d);
    return e;
  };
  Process sensors({exe(), "launch", demo("demo_tcp_sensors.yaml"), "--set", "source.rate_hz=50"}, with_domain("s"),
                  path("sensors"));
  auto r = testing::run({exe(), "launch", demo("demo_tcp_consumers.yaml"), "--duration", "3", "--set",
                         "sink.summary_file=" + path("sink.yaml")},
                        with_domain("c"), path("consumers"));
  sensors.signal(SIGINT);
  EXPECT_EQ(sensors.wait(std::chrono::seconds(20)), 0) << sensors.err();
  ASSERT_EQ(r.code, 0) << r.err;
  const YAML::Node s = summary("sink.yaml");
  EXPECT_GE(s["frames"].as<int>(), 30);
  EXPECT_EQ(s["corrupt"].as<int>(), 0);
  EXPECT_EQ(s["transport"].as<std::string>(), "external");  // ZeroMQ's received frame: tcp
  for (const auto& d : {"s", "c"}) fs::remove_all(Registry::default_dir(domain_ + d));
}

TEST_F(Launcher, OneProcessDeliversEveryFrameIntact) {
  auto r = testing::run({exe(), "launch", demo("demo_inprocess.yaml"), "--duration", "2", "--set",
                         "sink.summary_file=" + path("sink.yaml")},
                        env(), path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  const YAML::Node s = summary("sink.yaml");
  EXPECT_GE(s["frames"].as<int>(), 30);
  EXPECT_EQ(s["corrupt"].as<int>(), 0);
  EXPECT_NE(r.out.find("frames"), std::string::npos);  // the sink printed its table
}

TEST_F(Launcher, SigintStopsEveryGroupCleanly) {
  Process p({exe(), "launch", demo("demo_multiprocess.yaml"), "--set", "sink.summary_file=" + path("sink.yaml"),
             "--set", "source.summary_file=" + path("source.yaml")},
            env(), path("run"));
  ASSERT_TRUE(eventually([&] { return pid_of_process("consumers") > 0 && pid_of_process("sensors") > 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 0) << p.err();
  EXPECT_GT(summary("sink.yaml")["frames"].as<int>(), 0);  // deactivate ran and flushed
  EXPECT_TRUE(eventually([&] { return entries().empty(); }, std::chrono::seconds(3)));
  // Shutdown order: consumers (started last) are deactivated before sensors.
  EXPECT_LT(summary("sink.yaml")["deactivated_ns"].as<std::int64_t>(),
            summary("source.yaml")["deactivated_ns"].as<std::int64_t>());
  EXPECT_GE(summary("source.yaml")["frames"].as<int>(), summary("sink.yaml")["frames"].as<int>());
}

// Libraries may start threads before main blocks the launch signals (OpenBLAS starts one per
// core when it loads); the kernel gives a process-directed SIGTERM to such a thread when the
// waiting thread is busy. Found on a 16-core machine: the launcher died of a SIGTERM sent
// while it was starting its nodes, instead of stopping cleanly.
TEST_F(Launcher, AStopSignalAThreadStartedBeforeMainTakesStillReachesTheLauncher) {
  std::atomic<bool> done{false};
  std::thread early([&] {
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  block_launch_signals();
  // Only `early` leaves SIGTERM unblocked, so the kernel hands it these; without the hand-on
  // the default action would end this process here.
  ::kill(::getpid(), SIGTERM);
  ::kill(::getpid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(wait_launch_signal(2'000'000'000), SIGTERM);
  ::kill(::getpid(), SIGCHLD);
  EXPECT_EQ(wait_launch_signal(2'000'000'000), SIGCHLD);
  EXPECT_EQ(wait_launch_signal(1'000'000), 0);  // nothing else pending
  done = true;
  early.join();
}

TEST_F(Launcher, SigtermStopsASingleProcessLaunchCleanly) {
  Process p({exe(), "launch", demo("demo_inprocess.yaml"), "--set", "sink.summary_file=" + path("sink.yaml")},
            env(), path("run"));
  ASSERT_TRUE(eventually([&] { return pid_of_process("main") > 0; }));
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 0) << p.err();
  EXPECT_TRUE(fs::exists(path("sink.yaml")));
}

TEST_F(Launcher, RespawnRestartsACrashedGroup) {
  const auto f = write("respawn.yaml", "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n"
                       "groups:\n"
                       "  - name: sensors\n    nodes: [{name: source, type: tensor_source, remap: {image: /r}}]\n"
                       "  - name: consumers\n    respawn: true\n    respawn_delay_s: 0.2\n"
                       "    nodes: [{name: sink, type: tensor_sink, remap: {image: /r}}]\n");
  Process p({exe(), "launch", f}, env(), path("run"));
  pid_t first = -1;
  // Killed once it reported ready (dying while starting is a start failure, not a crash).
  ASSERT_TRUE(eventually([&] {
    return p.err().find("group 'consumers' started") != std::string::npos && (first = pid_of_process("consumers")) > 0;
  }));
  ::kill(first, SIGKILL);
  pid_t second = -1;
  ASSERT_TRUE(eventually([&] {
    second = pid_of_process("consumers");
    return second > 0 && second != first;
  })) << p.err();
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 0) << p.err();
}

// Fault injection: a group process that hangs (SIGSTOP: every thread stopped) sends no more
// heartbeats; the supervisor kills it after heartbeat_timeout_s and respawns it.
TEST_F(Launcher, AStoppedGroupIsFoundByItsHeartbeatAndRestarted) {
  const auto f = write("hang.yaml", "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n"
                       "groups:\n"
                       "  - name: sensors\n    nodes: [{name: source, type: tensor_source, remap: {image: /h}}]\n"
                       "  - name: consumers\n    respawn: true\n    respawn_delay_s: 0.2\n"
                       "    heartbeat_timeout_s: 1.0\n"
                       "    nodes: [{name: sink, type: tensor_sink, remap: {image: /h}}]\n");
  Process p({exe(), "launch", f}, env(), path("run"));
  pid_t first = -1;
  ASSERT_TRUE(eventually([&] {
    return p.err().find("group 'consumers' started") != std::string::npos && (first = pid_of_process("consumers")) > 0;
  }));
  // Running normally for longer than the timeout is not a hang.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(p.err().find("sent no heartbeat"), std::string::npos) << p.err();
  const auto stopped_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(first, SIGSTOP), 0);
  pid_t second = -1;
  ASSERT_TRUE(eventually([&] {
    second = pid_of_process("consumers");
    return second > 0 && second != first;
  }, std::chrono::seconds(20))) << p.err();
  const double recovered_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  ::testing::Test::RecordProperty("recovered_s", std::to_string(recovered_s));
  EXPECT_NE(p.err().find("group 'consumers' (pid " + std::to_string(first) + ") sent no heartbeat"), std::string::npos)
      << p.err();
  EXPECT_NE(p.err().find("group 'consumers' was killed for want of a heartbeat; restarting"), std::string::npos)
      << p.err();
  EXPECT_NE(::kill(first, 0), 0) << "the stopped process must be gone";
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 0) << p.err();
}

TEST_F(Launcher, RequiredGroupEndingStopsTheLaunch) {
  const auto f = write("required.yaml", "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n"
                       "groups:\n"
                       "  - name: sensors\n    required: true\n"
                       "    nodes: [{name: source, type: tensor_source}]\n"
                       "  - name: consumers\n    nodes: [{name: sink, type: tensor_sink}]\n");
  Process p({exe(), "launch", f}, env(), path("run"));
  pid_t sensors = -1;
  ASSERT_TRUE(eventually([&] { return (sensors = pid_of_process("sensors")) > 0 && pid_of_process("consumers") > 0; }));
  ::kill(sensors, SIGKILL);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 1);  // a group died: the launch reports failure
  EXPECT_TRUE(eventually([&] { return pid_of_process("consumers") < 0; }));
}

TEST_F(Launcher, UsedUpRespawnsStopTheLaunchWithOneErrorLine) {
  // Groups are required by default: once a group used its restarts, the launch stops, exit 1.
  const auto f = write("giveup.yaml", "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n"
                       "groups:\n"
                       "  - name: sensors\n    nodes: [{name: source, type: tensor_source, remap: {image: /g}}]\n"
                       "  - name: consumers\n    respawn: true\n    respawn_delay_s: 0.1\n    max_respawns: 1\n"
                       "    nodes: [{name: sink, type: tensor_sink, remap: {image: /g}}]\n");
  Process p({exe(), "launch", f}, env(), path("run"));
  pid_t first = -1, second = -1;
  // Each kill waits for the group to have reported ready: a group that dies while starting is a
  // start failure (the launch stops at once), not a crash that uses a restart.
  ASSERT_TRUE(eventually([&] {
    return p.err().find("group 'consumers' started") != std::string::npos && (first = pid_of_process("consumers")) > 0;
  }));
  ::kill(first, SIGKILL);
  ASSERT_TRUE(eventually([&] {
    return p.err().find("group 'consumers' restarted") != std::string::npos &&
           (second = pid_of_process("consumers")) > 0 && second != first;
  })) << p.err();
  ::kill(second, SIGKILL);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 1) << p.err();
  const std::string err = p.err();
  EXPECT_NE(err.find("used all 1 restart(s)"), std::string::npos) << err;
  EXPECT_NE(err.find("stopping the launch"), std::string::npos) << err;
}

TEST_F(Launcher, ADeadRecorderIsAnErrorAndTheLaunchExitsNonZero) {
  const auto f = write("rec.yaml", "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n"
                       "record: {output: " + path("r.mcap") + ", topics: [/d]}\n"
                       "groups:\n"
                       "  - name: sensors\n    nodes: [{name: source, type: tensor_source, remap: {image: /d}}]\n");
  Process p({exe(), "launch", f, "--duration", "3"}, env(), path("run"));
  pid_t rec = -1;
  ASSERT_TRUE(eventually([&] { return (rec = pid_of_process("record")) > 0 && pid_of_process("sensors") > 0; }));
  ::kill(rec, SIGKILL);
  EXPECT_EQ(p.wait(std::chrono::seconds(20)), 1) << p.err();  // the robot went on; the exit says it
  EXPECT_NE(p.err().find("the recording stops here"), std::string::npos) << p.err();
}

TEST_F(Launcher, CheckRefusesBadRespawnValuesRemapTyposAndRecordTopicsThatMatchNothing) {
  const std::string params = "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n";
  struct Case {
    std::string name, text, want;
  };
  const std::vector<Case> cases = {
      {"neg", params + "groups:\n  - name: a\n    max_respawns: -1\n    nodes: [{name: s, type: tensor_sink}]\n",
       "'max_respawns' must be a whole number >= 0"},
      {"frac", params + "groups:\n  - name: a\n    max_respawns: 1.5\n    nodes: [{name: s, type: tensor_sink}]\n",
       "'max_respawns' must be a whole number"},
      {"delay", params + "groups:\n  - name: a\n    respawn_delay_s: -2\n    nodes: [{name: s, type: tensor_sink}]\n",
       "'respawn_delay_s' must be between"},
      {"remap", params + "nodes: [{name: s, type: tensor_sink, remap: {imgae: /x}}]\n",
       "remap key 'imgae' that matches none of its publishers or subscriptions; did you mean 'image'?"},
      {"record", params + "record: {output: x.mcap, topics: [/camera/imgae]}\n"
                          "nodes: [{name: s, type: tensor_source, remap: {image: /camera/image}}]\n",
       "record topic '/camera/imgae' is neither published nor subscribed by any node of this launch; did you mean "
       "'/camera/image'?"},
  };
  for (const auto& c : cases) {
    auto r = testing::run({exe(), "launch", "--check", write(c.name + ".yaml", c.text)}, env(), path(c.name));
    EXPECT_NE(r.code, 0) << c.name;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.name << ": " << r.err;
  }
  // A remap by the resolved topic name is fine too.
  auto ok = testing::run({exe(), "launch", "--check",
                          write("ok.yaml", params + "nodes: [{name: s, type: tensor_sink, remap: {/image: /x}}]\n")},
                         env(), path("ok"));
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST_F(Launcher, RecordSectionRecordsTheGraph) {
  const auto f = write("rec.yaml", "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n"
                       "record:\n  output: " + path("run.mcap") + "\n  topics: [/demo/image]\n  compression: lz4\n"
                       "nodes:\n"
                       "  - {name: source, type: tensor_source, remap: {image: /demo/image}}\n");
  auto r = testing::run({exe(), "launch", f, "--duration", "3"}, env(), path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto info = testing::run({exe(), "bag", "info", path("run.mcap")}, env(), path("info"));
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("complete:  yes"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("/demo/image"), std::string::npos);
  EXPECT_NE(info.out.find("Image v1"), std::string::npos);
  EXPECT_NE(info.out.find("lz4"), std::string::npos);
  EXPECT_NE(info.out.find("source (tensor_source)"), std::string::npos) << info.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(info.out, m, std::regex("/demo/image +Image v1 +([0-9]+) msgs")));
  EXPECT_GT(std::stoi(m[1]), 30);
  // The recorder's account per topic: everything written, and why anything was not.
  std::smatch d;
  ASSERT_TRUE(std::regex_search(info.out, d, std::regex("/demo/image +written ([0-9]+), dropped_overflow ([0-9]+), "
                                                         "dropped_transport ([0-9]+), lost_in_transport ([0-9]+), "
                                                         "rejected ([0-9]+), queued_at_stop ([0-9]+)")))
      << info.out;
  EXPECT_EQ(d[1], m[1]);
  EXPECT_EQ(d[4], "0");
  EXPECT_EQ(d[6], "0");  // the recorder drains its queue before closing the bag
  // A typo in the record section is an ordinary param error with its line.
  const auto bad = write("bad.yaml", "record:\n  output: x.mcap\n  topcs: [/a]\n"
                         "nodes: [{name: s, type: tensor_sink}]\n");
  auto e = testing::run({exe(), "launch", "--check", bad}, env(), path("bad"));
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("'topcs'"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("bad.yaml:3"), std::string::npos) << e.err;
}

TEST_F(Launcher, KilledRecorderLosesAtMostTheChunkInProgress) {
  Process graph({exe(), "launch", demo("demo_inprocess.yaml"), "--set", "source.rate_hz=50"}, env(), path("graph"));
  ASSERT_TRUE(eventually([&] { return pid_of_process("main") > 0; }));
  Process rec({exe(), "bag", "record", "-o", path("killed.mcap"), "--topics", "/demo/image", "--compression", "none"},
              env(), path("rec"));
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(2500 * testing::time_scale())));
  rec.signal(SIGKILL);
  rec.wait(std::chrono::seconds(5));
  graph.signal(SIGINT);
  EXPECT_EQ(graph.wait(std::chrono::seconds(20)), 0);

  auto info = testing::run({exe(), "bag", "info", path("killed.mcap")}, env(), path("info"));
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("NO: recording was cut short"), std::string::npos) << info.out;
  auto recover = testing::run({exe(), "bag", "recover", path("killed.mcap"), path("fixed.mcap")}, env(), path("recover"));
  ASSERT_EQ(recover.code, 0) << recover.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(recover.out, m, std::regex("recovered ([0-9]+) message")));
  // ~2 s at 50 Hz were recorded; the recorder flushes every 0.5 s, so a kill loses at most
  // about 25 frames (the chunk in progress).
  EXPECT_GT(std::stoi(m[1]), 50);
  auto fixed = testing::run({exe(), "bag", "info", path("fixed.mcap")}, env(), path("info2"));
  EXPECT_NE(fixed.out.find("complete:  yes"), std::string::npos) << fixed.out;
  ASSERT_TRUE(std::regex_search(fixed.out, m, std::regex("/demo/image +Image v1 +([0-9]+) msgs")));
}

TEST_F(Launcher, BadParamStartsNothing) {
  auto r = testing::run({exe(), "launch", demo("demo_multiprocess.yaml"), "--set", "sink.qos=fastest"}, env(),
                        path("run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sink"), std::string::npos);
  EXPECT_NE(r.err.find("qos"), std::string::npos);
  EXPECT_TRUE(entries().empty());
}

TEST_F(Launcher, CheckValidatesWithoutStarting) {
  auto r = testing::run({exe(), "launch", "--check", demo("demo_multiprocess.yaml")}, env(), path("run"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("group consumers: sink(tensor_sink)"), std::string::npos);
}

TEST_F(Launcher, PluginNodeTypesLoadFromTheLaunchFile) {
  const std::string lib = testing::bin_dir() + "/../lib/libedgevla_test_plugin.so";
  const auto f = write("plugin.yaml", "plugins: [" + lib + "]\n"
                       "params_files: [" + testing::source_dir() + "/params/demo.yaml]\n"
                       "nodes:\n"
                       "  - {name: source, type: tensor_source, remap: {image: /raw}}\n"
                       "  - {name: relay, type: test_relay, remap: {in: /raw, out: /relayed}}\n"
                       "  - {name: sink, type: tensor_sink, remap: {image: /relayed}, params: {summary_file: " +
                       path("sink.yaml") + "}}\n");
  auto r = testing::run({exe(), "launch", f, "--duration", "2"}, env(), path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(summary("sink.yaml")["frames"].as<int>(), 10);
  EXPECT_EQ(summary("sink.yaml")["corrupt"].as<int>(), 0);

  const std::string bad = testing::bin_dir() + "/../lib/libedgevla_test_plugin_duplicate.so";
  const auto g = write("dup.yaml", "plugins: [" + bad + "]\nnodes: [{name: s, type: tensor_sink}]\n");
  auto d = testing::run({exe(), "launch", "--check", g}, env(), path("dup"));
  EXPECT_EQ(d.code, 2);
  EXPECT_NE(d.err.find("registered twice"), std::string::npos) << d.err;
}

}  // namespace
}  // namespace edgevla
