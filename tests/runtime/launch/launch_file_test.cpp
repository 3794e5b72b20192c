#include "runtime/launch/launch_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace edgevla {
namespace {

namespace fs = std::filesystem;

class LaunchFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("launch_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "params");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // Expects `load_launch` to fail with a message containing every part of `parts`.
  void expect_error(const std::string& file, std::vector<std::string> parts, std::vector<std::string> sets = {}) {
    auto d = load_launch(file, sets);
    ASSERT_FALSE(d.has_value()) << "expected an error";
    for (const auto& p : parts) EXPECT_NE(d.status().message().find(p), std::string::npos) << d.status().message();
  }
  fs::path dir_;
};

constexpr const char* kTwoNodes = R"(params_files: [params/p.yaml]
nodes:
  - name: source
    type: tensor_source
    params: {rate_hz: 10}
    remap: {image: /cam}
  - name: sink
    type: tensor_sink
    remap: {image: /cam}
    qos: {image: keep_latest}
)";

TEST_F(LaunchFile, ParamsPrecedenceFileThenInlineThenSet) {
  write("params/p.yaml", "source:\n  rate_hz: 5\n  width: 32\nsink:\n  verify: false\n");
  const auto f = write("l.yaml", kTwoNodes);
  auto d = load_launch(f, {"source.width=16"});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  ASSERT_EQ(d->groups.size(), 1u);
  EXPECT_EQ(d->groups[0].name, "main");
  const NodeOptions& src = d->groups[0].nodes[0];
  EXPECT_EQ(src.params.at("rate_hz").value.as<double>(), 10.0);  // inline beats the file
  EXPECT_EQ(src.params.at("width").value.as<int>(), 16);         // --set beats everything
  EXPECT_NE(src.params.at("width").origin.find("--set"), std::string::npos);
  EXPECT_NE(src.params.at("rate_hz").origin.find("l.yaml:5"), std::string::npos);
  const NodeOptions& sink = d->groups[0].nodes[1];
  EXPECT_NE(sink.params.at("verify").origin.find("p.yaml:5"), std::string::npos);
  EXPECT_EQ(sink.remaps.at("image"), "/cam");
  EXPECT_EQ(sink.qos.at("image").depth, 1u);
  EXPECT_NE(src.origin.find("l.yaml:3"), std::string::npos);
}

TEST_F(LaunchFile, EnvironmentVariablesExpandInParamValues) {
  ::setenv("EDGEVLA_TEST_RATE", "12.5", 1);
  ::unsetenv("EDGEVLA_TEST_UNSET");
  write("params/p.yaml", "sink:\n  qos: ${EDGEVLA_TEST_UNSET:-keep_last:3}\n");
  const auto f = write("l.yaml", R"(params_files: [params/p.yaml]
nodes:
  - name: source
    type: tensor_source
    params: {rate_hz: "${EDGEVLA_TEST_RATE}", encoding: "${EDGEVLA_TEST_UNSET:-rgb8}"}
  - name: sink
    type: tensor_sink
)");
  auto d = load_launch(f, {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  const NodeOptions& src = d->groups[0].nodes[0];
  EXPECT_EQ(src.params.at("rate_hz").value.as<double>(), 12.5);  // still a number
  EXPECT_EQ(src.params.at("encoding").value.as<std::string>(), "rgb8");
  EXPECT_EQ(d->groups[0].nodes[1].params.at("qos").value.as<std::string>(), "keep_last:3");

  // Unset without a default, and a malformed reference, name the file, line and variable.
  const auto bad = write("bad.yaml", "nodes:\n  - name: source\n    type: tensor_source\n"
                                     "    params: {encoding: \"${EDGEVLA_TEST_UNSET}\"}\n");
  expect_error(bad, {"bad.yaml:4", "EDGEVLA_TEST_UNSET", "not set"});
  const auto open = write("open.yaml", "nodes:\n  - name: source\n    type: tensor_source\n"
                                       "    params: {encoding: \"${OOPS\"}\n");
  expect_error(open, {"open.yaml:4", "unclosed"});
}

TEST_F(LaunchFile, GroupsIncludesAndPerNodeParamsFiles) {
  write("params/src.yaml", "source:\n  height: 24\n");
  write("common.yaml", "groups:\n  - name: sensors\n    respawn: true\n    nodes:\n      - name: source\n"
                       "        type: tensor_source\n        params_files: [params/src.yaml]\n");
  const auto f = write("top.yaml", "include: [common.yaml]\ngroups:\n  - name: consumers\n    spin_us: 20\n    upstream_spin_us: 50000\n"
                                   "    nodes:\n      - {name: sink, type: tensor_sink}\n"
                                   "      - {name: quiet_sink, type: tensor_sink, upstream_spin_us: 0}\n");
  auto d = load_launch(f, {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  ASSERT_EQ(d->groups.size(), 2u);
  EXPECT_EQ(d->groups[0].name, "sensors");
  EXPECT_TRUE(d->groups[0].respawn);
  EXPECT_EQ(d->groups[1].spin_us, 20);
  EXPECT_EQ(d->groups[1].upstream_spin_us, 50000);
  EXPECT_EQ(d->groups[0].upstream_spin_us, 0);  // off unless asked
  // What the launcher runs: as asked from 4 cores up, off below (the stages need the cores).
  EXPECT_EQ(effective_upstream_spin_us(d->groups[1], 16), 50000);
  EXPECT_EQ(effective_upstream_spin_us(d->groups[1], kUpstreamSpinMinCores), 50000);
  EXPECT_EQ(effective_upstream_spin_us(d->groups[1], kUpstreamSpinMinCores - 1), 0);
  EXPECT_EQ(effective_upstream_spin_us(d->groups[1], 2), 0);
  EXPECT_EQ(d->groups[0].nodes[0].params.at("height").value.as<int>(), 24);
  // A node's own value (the host takes it over the group's); unset where not given.
  EXPECT_FALSE(d->groups[1].nodes[0].upstream_spin_us.has_value());
  ASSERT_TRUE(d->groups[1].nodes[1].upstream_spin_us.has_value());
  EXPECT_EQ(*d->groups[1].nodes[1].upstream_spin_us, 0);
}

TEST_F(LaunchFile, AllowedGroupsTakeNamesOrGids) {
  const auto f = write("l.yaml",
                       "groups:\n  - name: g\n    allowed_groups: [root, 44]\n"
                       "    nodes:\n      - {name: sink, type: tensor_sink}\n");
  auto d = load_launch(f, {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->groups[0].allowed_gids, (std::vector<std::uint32_t>{0, 44}));
  expect_error(write("bad.yaml",
                     "groups:\n  - name: g\n    allowed_groups:\n      - root\n"
                     "      - no_such_group_here\n    nodes: []\n"),
               {"bad.yaml:5", "'allowed_groups'", "'no_such_group_here'", "numeric gid"});
  expect_error(
      write("scalar.yaml", "groups:\n  - name: g\n    allowed_groups: video\n    nodes: []\n"),
      {"scalar.yaml:3", "'allowed_groups' must be a list"});
}

// Keys for a group's tcp section: robot (this process), laptop (a client), arm (a peer).
void write_keys(const fs::path& dir) {
  fs::create_directories(dir / "keys");
  for (const char* name : {"robot", "laptop", "arm"}) {
    ASSERT_TRUE(write_key_pair((dir / "keys" / name).string(), *generate_curve_key_pair(), false).is_ok());
  }
}

constexpr const char* kTcpGroup = R"(groups:
  - name: g
    tcp:
      listen: 7447
      secret_key: keys/robot.secret
      allowed_keys: [keys/laptop.public]
      peers:
        - {endpoint: "tcp://10.0.0.2:7447", server_key: keys/arm.public}
    nodes:
      - {name: sink, type: tensor_sink}
)";

TEST_F(LaunchFile, TcpKeysAreReadRelativeToTheFile) {
  write_keys(dir_);
  auto d = load_launch(write("l.yaml", kTcpGroup), {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  const TcpOptions& t = d->groups[0].tcp;
  EXPECT_EQ(t.listen, "7447");
  EXPECT_FALSE(t.insecure);
  EXPECT_EQ(t.key.secret_key, read_secret_key_file((dir_ / "keys/robot.secret").string())->secret_key);
  EXPECT_EQ(t.key.public_key, *read_public_key_file((dir_ / "keys/robot.public").string()));
  EXPECT_EQ(t.allowed_keys, (std::vector<std::string>{*read_public_key_file((dir_ / "keys/laptop.public").string())}));
  ASSERT_EQ(t.peers.size(), 1u);
  EXPECT_EQ(t.peers[0].endpoint, "tcp://10.0.0.2:7447");
  EXPECT_EQ(t.peers[0].server_key, *read_public_key_file((dir_ / "keys/arm.public").string()));
}

TEST_F(LaunchFile, PlaintextTcpNeedsInsecureTrue) {
  const char* plain = "groups:\n  - name: g\n    tcp: {listen: 7447}\n    nodes:\n      - {name: sink, type: tensor_sink}\n";
  expect_error(write("plain.yaml", plain),
               {"plain.yaml:3", "group 'g'", "secret_key", "edgevla keys generate", "insecure: true"});
  const char* insecure =
      "groups:\n  - name: g\n    tcp: {listen: 7447, peers: [\"tcp://10.0.0.2:7447\"], insecure: true}\n"
      "    nodes:\n      - {name: sink, type: tensor_sink}\n";
  auto d = load_launch(write("insecure.yaml", insecure), {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_TRUE(d->groups[0].tcp.insecure);
  // The settings of before name the new section.
  expect_error(write("old.yaml", "groups:\n  - name: g\n    tcp_listen: \"tcp://0.0.0.0:7447\"\n    nodes: []\n"),
               {"old.yaml:3", "'tcp_listen'", "tcp: {listen"});
}

TEST_F(LaunchFile, TcpKeyErrorsNameTheFileAndTheFix) {
  write_keys(dir_);
  // A secret others can read.
  fs::permissions(dir_ / "keys/robot.secret", fs::perms(0644));
  expect_error(write("open.yaml", kTcpGroup),
               {"open.yaml:5", (dir_ / "keys/robot.secret").string(), "chmod 600"});
  fs::permissions(dir_ / "keys/robot.secret", fs::perms(0600));
  // A missing public key file.
  std::string text = kTcpGroup;
  text.replace(text.find("keys/laptop.public"), 18, "keys/lptop.public");
  expect_error(write("missing.yaml", text), {"missing.yaml:6", "keys/lptop.public", "edgevla keys generate"});
  // A listener with nobody allowed, a peer without its server's key.
  expect_error(write("nobody.yaml", "groups:\n  - name: g\n    tcp: {listen: 7447, secret_key: keys/robot.secret}\n"
                                    "    nodes: []\n"),
               {"nobody.yaml:3", "allowed_keys"});
  expect_error(write("nokey.yaml", "groups:\n  - name: g\n    tcp: {secret_key: keys/robot.secret, "
                                   "peers: [\"tcp://10.0.0.2:7447\"]}\n    nodes: []\n"),
               {"nokey.yaml:3", "server_key"});
  // A listen setting that is neither a port nor tcp://HOST:PORT.
  expect_error(write("listen.yaml", "groups:\n  - name: g\n    tcp: {listen: \"localhost:7447\", insecure: true}\n"
                                    "    nodes: []\n"),
               {"listen.yaml:3", "127.0.0.1", "tcp://HOST:PORT"});
}

TEST_F(LaunchFile, PerNodeParamsFileMustHaveTheNodesSection) {
  write("params/src.yaml", "sorce:\n  height: 24\n");
  const auto f = write("l.yaml", "nodes:\n  - name: source\n    type: tensor_source\n"
                                 "    params_files: [params/src.yaml]\n");
  expect_error(f, {"l.yaml:4", "src.yaml", "no section for node 'source'"});
}

TEST_F(LaunchFile, UnknownKeyNamesFileLineAndKey) {
  const auto f = write("l.yaml", "nodes:\n  - name: source\n    type: tensor_source\n    parms: {rate_hz: 3}\n");
  expect_error(f, {"l.yaml:4", "'parms'", "allowed:"});
}

TEST_F(LaunchFile, UnknownTopLevelKey) {
  expect_error(write("l.yaml", "nodez: []\n"), {"l.yaml:1", "'nodez'"});
}

TEST_F(LaunchFile, WrongTypesAreNamed) {
  expect_error(write("a.yaml", "groups:\n  - name: g\n    respawn: sometimes\n    nodes: []\n"),
               {"a.yaml:3", "respawn", "expects a bool"});
  expect_error(write("b.yaml", "nodes: {name: x}\n"), {"b.yaml:1", "'nodes' must be a list"});
  expect_error(write("c.yaml", "nodes:\n  - name: s\n    type: tensor_source\n    remap: [a, b]\n"),
               {"c.yaml:4", "remap"});
  expect_error(write("d.yaml", "nodes:\n  - name: s\n    type: tensor_sink\n    qos: {image: fast}\n"),
               {"d.yaml:4", "keep_last:N"});
}

TEST_F(LaunchFile, BadParamValuesAreStartupErrors) {
  write("params/p.yaml", "source:\n  width: -3\n");
  expect_error(write("l.yaml", kTwoNodes), {"source", "width", "out of range", "p.yaml:2"});
  write("params/p.yaml", "source:\n  rate: 3\n");
  expect_error(write("l.yaml", kTwoNodes), {"source", "'rate'", "p.yaml:2", "rate_hz"});
}

TEST_F(LaunchFile, MissingFilesAreNamed) {
  expect_error(write("l.yaml", kTwoNodes), {"params/p.yaml", "does not exist"});
  expect_error((dir_ / "absent.yaml").string(), {"absent.yaml", "does not exist"});
  expect_error(write("i.yaml", "include: [nope.yaml]\n"), {"nope.yaml", "i.yaml:1"});
}

// Found by tests/fuzz/launch_fuzzer (corpus/launch/crash-long-include): an include (or params
// file) whose name is longer than the file system allows made the existence check throw, and
// the launch terminated instead of reporting the file.
TEST_F(LaunchFile, FileNameTooLongIsAnErrorNotACrash) {
  const std::string long_name(300, 'x');
  const auto f = write("l.yaml", "include: [" + long_name + ".yaml]\n");
  auto d = parse_launch(f, {});
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.status().message().find("cannot be read"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find(long_name), std::string::npos);
  const auto g = write("g.yaml", "params_files: [" + long_name + "]\nnodes: [{name: a, type: tensor_sink}]\n");
  EXPECT_FALSE(parse_launch(g, {}).has_value());
}

// Found by tests/fuzz/launch_fuzzer in CI: a params file or include that names a folder made
// the YAML reader throw an I/O error no one caught, and the launch terminated.
TEST_F(LaunchFile, AFolderWhereAFileBelongsIsNamed) {
  std::filesystem::create_directories(dir_ / "sub");
  expect_error(write("l.yaml", "params_files: [sub]\nnodes:\n  - {name: a, type: tensor_source}\n"),
               {"sub", "is a folder"});
  expect_error(write("i.yaml", "include: [sub]\n"), {"sub", "is a folder", "i.yaml:1"});
  expect_error(write("d.yaml", "include: [/dev/null]\n"), {"/dev/null", "not a regular file"});
}

// Found by the launch fuzzer: a params file whose node or param name was a list or a map threw
// out of load_launch (a YAML conversion error) instead of returning an error.
TEST_F(LaunchFile, ParamsFileKeysThatAreNotStringsAreNamed) {
  const auto f = write("l.yaml", kTwoNodes);
  write("params/p.yaml", "source:\n  ? [rate_hz, width]\n  : 5\n");
  expect_error(f, {"p.yaml:2", "param name of node 'source'", "plain string"});
  write("params/p.yaml", "? {source: 1}\n: {rate_hz: 5}\n");
  expect_error(f, {"p.yaml:1", "node name must be a plain string"});
  write("params/p.yaml", "source: [rate_hz, 5]\n");
  expect_error(f, {"p.yaml:1", "params of node 'source' must be a map"});
  // The same file named by a node's own params_files.
  const auto own = write("own.yaml", "nodes:\n  - name: source\n    type: tensor_source\n"
                                     "    params_files: [params/q.yaml]\n");
  write("params/q.yaml", "source:\n  ? [a]\n  : 1\n");
  expect_error(own, {"q.yaml:2", "param name of node 'source'"});
}

TEST_F(LaunchFile, HeartbeatTimeoutIsReadAndChecked) {
  const auto ok = write("hb.yaml", "groups:\n  - name: g\n    heartbeat_timeout_s: 2.5\n"
                                   "    nodes: [{name: a, type: tensor_sink}]\n  - name: h\n"
                                   "    nodes: [{name: b, type: tensor_sink}]\n");
  auto d = parse_launch(ok, {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->groups[0].heartbeat_timeout_s, 2.5);
  EXPECT_EQ(d->groups[1].heartbeat_timeout_s, 5.0) << "on by default";
  expect_error(write("hb0.yaml", "groups:\n  - name: g\n    heartbeat_timeout_s: 0.05\n"
                                 "    nodes: [{name: a, type: tensor_sink}]\n"),
               {"hb0.yaml:3", "heartbeat_timeout_s", "0 (off) or between 0.2 and 3600"});
}

// Found by the launch fuzzer: `shm_pool_mb: .inf` reached a cast to an integer (undefined).
TEST_F(LaunchFile, GroupNumbersOutOfRangeAreNamed) {
  const auto group = [&](const std::string& line) {
    return write("g.yaml", "groups:\n  - name: g\n    " + line + "\n    nodes: [{name: a, type: tensor_sink}]\n");
  };
  for (const char* v : {".inf", "-1", "0.5", "1.5", "1e30"}) {
    expect_error(group(std::string("shm_pool_mb: ") + v), {"g.yaml:3", "'shm_pool_mb' must be a whole number"});
  }
  for (const char* v : {".inf", "-5", "2e6"}) {
    expect_error(group(std::string("spin_us: ") + v), {"g.yaml:3", "'spin_us' must be between 0"});
  }
  expect_error(group("spin_us: .nan"), {"g.yaml:3", "'spin_us' expects a number"});
  for (const char* v : {".inf", "-1", "2e7"}) {
    expect_error(group(std::string("upstream_spin_us: ") + v), {"g.yaml:3", "'upstream_spin_us' must be between 0"});
    expect_error(write("n.yaml", std::string("groups:\n  - name: g\n    nodes:\n      - {name: a, type: tensor_sink, "
                                             "upstream_spin_us: ") + v + "}\n"),
                 {"n.yaml:4", "'upstream_spin_us' must be between 0"});
  }
  for (const char* v : {".inf", "-1", "2.5"}) {
    expect_error(group(std::string("max_respawns: ") + v), {"g.yaml:3", "'max_respawns' must be a whole number"});
  }
  auto d = parse_launch(group("shm_pool_mb: 64"), {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->groups[0].shm_pool_mb, 64);
}

TEST_F(LaunchFile, DuplicateNodeNames) {
  expect_error(write("l.yaml", "nodes:\n  - {name: a, type: tensor_sink}\n  - {name: a, type: tensor_sink}\n"),
               {"'a'", "l.yaml:3", "l.yaml:2"});
}

TEST_F(LaunchFile, IncludeCycle) {
  write("a.yaml", "include: [b.yaml]\n");
  write("b.yaml", "include: [a.yaml]\nnodes: [{name: s, type: tensor_sink}]\n");
  expect_error((dir_ / "a.yaml").string(), {"include cycle", "a.yaml", "b.yaml"});
}

TEST_F(LaunchFile, ParamsForANodeThisLaunchDoesNotRunAreIgnored) {
  // A shared params file may carry sections for nodes of other launch files.
  write("params/p.yaml", "source:\n  width: 5\nother_node:\n  width: 3\n");
  auto d = load_launch(write("l.yaml", kTwoNodes), {});
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->groups[0].nodes[0].params.at("width").value.as<int>(), 5);
}

TEST_F(LaunchFile, SetErrors) {
  write("params/p.yaml", "{}\n");
  const auto f = write("l.yaml", kTwoNodes);
  expect_error(f, {"node.key=value"}, {"rate_hz=3"});
  expect_error(f, {"no node named 'cam'"}, {"cam.rate_hz=3"});
  expect_error(f, {"source", "'fps'", "--set source.fps=3"}, {"source.fps=3"});
  expect_error(f, {"source", "rate_hz", "expects a number"}, {"source.rate_hz=fast"});
}

TEST_F(LaunchFile, UnknownNodeTypeAndPlugin) {
  expect_error(write("l.yaml", "nodes: [{name: s, type: camera9000}]\n"), {"camera9000", "l.yaml:1", "known types"});
  expect_error(write("p.yaml", "plugins: [libnothere.so]\nnodes: [{name: s, type: tensor_sink}]\n"),
               {"libnothere.so", "does not exist"});
}

TEST_F(LaunchFile, BadNodeNameAndInvalidYaml) {
  expect_error(write("l.yaml", "nodes: [{name: a.b, type: tensor_sink}]\n"), {"'a.b'"});
  expect_error(write("y.yaml", "nodes: [\n  - {name: a\n"), {"y.yaml", "not valid YAML"});
  expect_error(write("e.yaml", "{}\n"), {"declares no nodes"});
}

}  // namespace
}  // namespace edgevla
