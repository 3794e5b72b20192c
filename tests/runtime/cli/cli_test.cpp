// The introspection CLI against a graph started by another process (as from another terminal).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>

#include "runtime/bus/registry.hpp"
#include "runtime/bus/tcp_keys.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
using testing::eventually;

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    domain_ = new std::string(testing::unique_domain("cli"));
    dir_ = new fs::path(fs::path(::testing::TempDir()) / *domain_);
    fs::create_directories(*dir_);
    graph_ = new testing::Process({exe(), "launch", testing::source_dir() + "/launch/demo_multiprocess.yaml"},
                                  env(), (*dir_ / "graph").string());
    // Wait until both processes are up and the sink is receiving.
    ASSERT_TRUE(eventually([] {
      int nodes = 0;
      for (const auto& e : Registry::open(Registry::default_dir(*domain_))->list()) nodes += static_cast<int>(e.nodes.size());
      return nodes == 2;
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  static void TearDownTestSuite() {
    graph_->signal(SIGINT);
    EXPECT_EQ(graph_->wait(std::chrono::seconds(20)), 0) << graph_->err();
    delete graph_;
    fs::remove_all(*dir_);
    delete dir_;
    delete domain_;
  }
  static std::string exe() { return testing::bin_dir() + "/edgevla"; }
  static std::vector<std::string> env() { return {"EDGEVLA_DOMAIN=" + *domain_}; }
  static testing::RunResult cli(std::vector<std::string> args) {
    args.insert(args.begin(), exe());
    static int n = 0;
    return testing::run(args, env(), (*dir_ / ("cli" + std::to_string(++n))).string(), std::chrono::seconds(30));
  }

  static std::string* domain_;
  static fs::path* dir_;
  static testing::Process* graph_;
};
std::string* Cli::domain_ = nullptr;
fs::path* Cli::dir_ = nullptr;
testing::Process* Cli::graph_ = nullptr;

TEST_F(Cli, TopicList) {
  auto r = cli({"topic", "list", "-v"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("/demo/image"), std::string::npos);
  EXPECT_NE(r.out.find("Image"), std::string::npos);
  EXPECT_NE(r.out.find("pub source@sensors"), std::string::npos);
  EXPECT_NE(r.out.find("sub sink@consumers"), std::string::npos);
  EXPECT_NE(r.out.find("/edgevla/status"), std::string::npos);
  auto info = cli({"topic", "info", "/demo/image"});
  EXPECT_EQ(info.code, 0);
  EXPECT_NE(info.out.find("publisher  source"), std::string::npos);
  EXPECT_EQ(cli({"topic", "info", "/nothing"}).code, 1);
}

TEST_F(Cli, TopicEchoPrintsHeaderAndTensorSummaries) {
  auto r = cli({"topic", "echo", "/demo/image", "-n", "2", "--timeout", "10"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("type: Image v1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("u8[480,640,3] shm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("min 0 max 255"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trace: source@"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("camera=\"base\""), std::string::npos) << r.out;
  std::size_t n = 0;
  for (std::size_t p = 0; (p = r.out.find("---\n", p)) != std::string::npos; ++p) ++n;
  EXPECT_EQ(n, 2u);
  auto none = cli({"topic", "echo", "/silent", "--timeout", "1"});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no message"), std::string::npos);
}

TEST_F(Cli, TopicHzMeasuresTheSourceRate) {
  auto r = cli({"topic", "hz", "/demo/image", "--duration", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("average rate: ([0-9.]+) Hz"))) << r.out;
  const double hz = std::stod(m[1]);
  // The source publishes at 30 Hz (params/demo.yaml); the band is wide so a loaded machine
  // cannot fail it, narrow enough that a wrong rate computation would.
  EXPECT_GT(hz, 10.0);
  EXPECT_LT(hz, 45.0);
  // What this observer did not get, by cause, every second and at the end.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("received [0-9]+ message\\(s\\) on /demo/image; dropped: queue [0-9]+, "
                                                  "transport [0-9]+, lost [0-9]+, rejected [0-9]+")))
      << r.out;
}

TEST_F(Cli, TopicBwMeasuresBytes) {
  auto r = cli({"topic", "bw", "/demo/image", "--duration", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("bandwidth: ([0-9.]+) MB/s  mean size ([0-9.]+) KB"))) << r.out;
  EXPECT_NEAR(std::stod(m[2]), 921.6, 1.0);  // 640*480*3 bytes
  EXPECT_GT(std::stod(m[1]), 15.0);
}

TEST_F(Cli, NodeListAndInfo) {
  auto r = cli({"node", "list"});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("source"), std::string::npos);
  EXPECT_NE(r.out.find("process consumers"), std::string::npos);
  auto v = cli({"node", "list", "-v"});
  ASSERT_EQ(v.code, 0) << v.err;
  for (const auto& doc : YAML::LoadAll(v.out)) {
    for (const auto& n : doc["nodes"]) {
      EXPECT_EQ(n["state"].as<std::string>(), "active");
      if (n["name"].as<std::string>() == "sink") {
        EXPECT_GT(n["callbacks"][0]["count"].as<int>(), 0);
        EXPECT_EQ(n["subscriptions"][0]["topic"].as<std::string>(), "/demo/image");
      }
    }
  }
  auto info = cli({"node", "info", "sink"});
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("dropped_overflow"), std::string::npos);
  EXPECT_EQ(cli({"node", "info", "ghost"}).code, 1);
}

TEST_F(Cli, ParamDumpIsAParamsFile) {
  auto r = cli({"param", "dump", "source"});
  ASSERT_EQ(r.code, 0) << r.err;
  const YAML::Node y = YAML::Load(r.out);
  EXPECT_EQ(y["source"]["width"].as<int>(), 640);
  EXPECT_EQ(y["source"]["rate_hz"].as<double>(), 30.0);
  EXPECT_NE(r.out.find("demo.yaml"), std::string::npos);  // where each value came from
  auto missing = cli({"param", "dump", "ghost"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("ghost"), std::string::npos);
}

TEST_F(Cli, NodeStatsTableCoversEveryProcess) {
  auto r = cli({"node", "stats"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("consumers +sink +image +subscription +([0-9]+)"))) << r.out;
  EXPECT_GT(std::stoi(m[1]), 0);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("sensors +source +tick +timer +[1-9]"))) << r.out;
}

TEST_F(Cli, NodeStatsBusPrintsEveryProcesssBusCounters) {
  auto r = cli({"node", "stats", "--bus"});
  ASSERT_EQ(r.code, 0) << r.err;
  int docs = 0;
  for (const YAML::Node& d : YAML::LoadAll(r.out)) {
    ++docs;
    EXPECT_TRUE(d["shm_mapper"].IsMap()) << r.out;
    EXPECT_TRUE(d["shm_mapper"]["awaited_producer"].IsScalar()) << r.out;
  }
  EXPECT_GE(docs, 2) << r.out;  // the sensors and consumers processes at least
  EXPECT_NE(r.out.find("# process consumers"), std::string::npos) << r.out;
}

TEST_F(Cli, ParamSetChangesARunningNode) {
  auto r = cli({"param", "set", "source", "width", "320"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(YAML::Load(r.out)["source"]["width"].as<int>(), 320);
  // The next frames come out at the new size.
  ASSERT_TRUE(eventually([&] {
    return cli({"topic", "echo", "/demo/image", "-n", "1", "--timeout", "5"}).out.find("u8[480,320,3]") !=
           std::string::npos;
  }));
  EXPECT_EQ(cli({"param", "set", "source", "width", "640"}).code, 0);
  auto ro = cli({"param", "set", "source", "rate_hz", "10"});
  EXPECT_EQ(ro.code, 1);
  EXPECT_NE(ro.err.find("read-only"), std::string::npos);
  auto bad = cli({"param", "set", "source", "width", "-5"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("out of range"), std::string::npos);
}

TEST_F(Cli, CtrlCStopsEchoHzAndBw) {
  for (const char* verb : {"echo", "hz", "bw"}) {
    testing::Process p({exe(), "topic", verb, "/demo/image"}, env(), (*dir_ / (std::string("sig_") + verb)).string());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    p.signal(SIGINT);
    EXPECT_EQ(p.wait(std::chrono::seconds(10)), 0) << verb << ": " << p.err();
  }
}

TEST_F(Cli, KeysGenerateWritesAnOwnerOnlySecretAndRefusesToOverwrite) {
  fs::create_directories(*dir_ / "keys");
  const std::string prefix = (*dir_ / "keys" / "robot").string();
  auto r = cli({"keys", "generate", "--out", prefix});
  ASSERT_EQ(r.code, 0) << r.err;
  using fs::perms;
  EXPECT_EQ(fs::status(prefix + ".secret").permissions(), perms::owner_read | perms::owner_write);
  EXPECT_EQ(fs::status(prefix + ".public").permissions() & (perms::group_write | perms::others_write), perms::none);
  const auto pair = read_secret_key_file(prefix + ".secret");
  ASSERT_TRUE(pair.has_value()) << pair.status().to_string();
  EXPECT_EQ(*read_public_key_file(prefix + ".public"), pair->public_key);
  EXPECT_NE(r.out.find(pair->public_key), std::string::npos) << r.out;
  // Never over an existing pair, unless --force.
  r = cli({"keys", "generate", "--out", prefix});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(read_secret_key_file(prefix + ".secret")->secret_key, pair->secret_key);
  r = cli({"keys", "generate", "--out", prefix, "--force"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(read_secret_key_file(prefix + ".secret")->secret_key, pair->secret_key);
  // A folder that does not exist is named, with the fix.
  r = cli({"keys", "generate", "--out", (*dir_ / "nowhere" / "robot").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("mkdir -p " + (*dir_ / "nowhere").string()), std::string::npos) << r.err;
}

TEST_F(Cli, NodeTypes) {
  auto r = cli({"node", "types"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("tensor_source"), std::string::npos);
  EXPECT_NE(r.out.find("tensor_sink"), std::string::npos);
}

}  // namespace
}  // namespace edgevla
