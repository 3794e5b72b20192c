#include "runtime/node/node.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <mutex>
#include <optional>
#include <set>

#include "runtime/bus/bus.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/bus/ring_interest.hpp"
#include "runtime/shm/ring.hpp"
#include "runtime/node/host.hpp"
#include "runtime/node/node_registry.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

using testing::eventually;

ParamOverride yaml(const std::string& text, const std::string& origin = "test.yaml:3") {
  return {YAML::Load(text), origin};
}

// A node with one param of every kind, a publisher, a subscription and a timer.
class ProbeNode final : public Node {
 public:
  explicit ProbeNode(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_RETURN_IF_ERROR(spec.declare(steps));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(rate));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(enabled));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(mode));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(limits));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(names));
    EDGEVLA_RETURN_IF_ERROR(spec.declare(window));
    EDGEVLA_ASSIGN_OR_RETURN(out, spec.publisher<msgs::ActionChunk>("out"));
    const QoS in_qos = take_device ? QoS::keep_last(10).taking_device_tensors() : QoS::keep_last(10);
    EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::ActionChunk>("in", in_qos, [this](const msgs::ActionChunk& m) {
      if (m.actions().shape()[0] == 13) throw std::runtime_error("unlucky chunk");
      last_steps = *steps;
      ++received;
      if (m.actions().shape()[0] == 7) report_bad_input("chunk", invalid_argument("7 is bad"));
      order.push_back("cb");
    }));
    in_topic = spec.resolve_topic("in");
    if (load > 0) spec.declare_load(load);
    return spec.timer("tick", std::chrono::milliseconds(5), [this] { ++ticks; });
  }
  Status activate() override {
    order.push_back("activate:" + name());
    if (shared_order) shared_order->push_back(name());
    if (publish_device) EDGEVLA_RETURN_IF_ERROR(out.publishes_on(*publish_device));
    return fail_activate ? unavailable("device busy") : Status::ok();
  }
  Status deactivate() override {
    order.push_back("deactivate:" + name());
    return Status::ok();
  }

  std::int64_t load = 0;                            // declared at configure when > 0
  std::vector<std::string>* shared_order = nullptr;  // activation order across nodes
  Param<int> steps{"num_steps", 10, {"denoising steps", 1, 100}};
  Param<double> rate{"rate_hz", 50.0, {"control rate", 0.5, 1000.0}};
  Param<bool> enabled{"enabled", true, {"on/off"}};
  Param<std::string> mode{"mode", "replace", {"transition", {}, {}, {"replace", "blend"}}};
  Param<std::vector<double>> limits{"limits", {1.0, 2.0}, {"per joint", -10.0, 10.0}};
  Param<std::vector<std::string>> names{"names", {}, {"joint names"}};
  Param<int> window{"window", 4, {"fixed at configure", 1, 10, {}, true}};
  std::atomic<int> last_steps{0};
  Publisher<msgs::ActionChunk> out;
  std::string in_topic;
  std::atomic<int> received{0};
  std::atomic<int> ticks{0};
  bool fail_activate = false;
  bool take_device = false;              // "in" takes device tensors as they are
  std::optional<Device> publish_device;  // "out" declares this device in activate
  std::vector<std::string> order;  // lifecycle calls this instance saw, in order
};

std::unique_ptr<Bus> bus_for(const std::string& tag) {
  BusOptions o;
  o.domain = testing::unique_domain(tag);
  return std::move(*Bus::create(o));
}

NodeOptions opts(const std::string& name, ParamOverrides params = {}) {
  NodeOptions o;
  o.name = name;
  o.type = "probe";
  o.params = std::move(params);
  return o;
}

Message chunk(int rows) { return *msgs::ActionChunk::make(*Tensor::empty(DType::kF32, Shape{rows, 2}), 0.02); }

TEST(Params, DefaultsAndOverridesReachTheNode) {
  auto bus = bus_for("params");
  NodeHost host(*bus);
  auto* n = static_cast<ProbeNode*>(*host.add(std::make_unique<ProbeNode>(opts(
      "p", {{"num_steps", yaml("3")}, {"rate_hz", yaml("25")}, {"enabled", yaml("false")},
            {"mode", yaml("blend")}, {"limits", yaml("[0.5, -1, 3]")}, {"names", yaml("[a, b]")}}))));
  EXPECT_EQ(*n->steps, 3);
  EXPECT_EQ(*n->rate, 25.0);
  EXPECT_FALSE(*n->enabled);
  EXPECT_EQ(*n->mode, "blend");
  EXPECT_EQ(n->limits->size(), 3u);
  EXPECT_EQ((*n->names)[1], "b");
  auto dump = host.params_yaml("p");
  ASSERT_TRUE(dump.has_value());
  EXPECT_NE(dump->find("num_steps: 3"), std::string::npos);
  EXPECT_NE(dump->find("from test.yaml:3"), std::string::npos);
  // The dump is itself a valid params file for this node.
  const YAML::Node parsed = YAML::Load(*dump);
  EXPECT_EQ(parsed["p"]["num_steps"].as<int>(), 3);
  EXPECT_EQ(parsed["p"]["mode"].as<std::string>(), "blend");
}

struct BadParam {
  const char* key;
  const char* value;
  const char* expect;  // text the error must contain
};

class ParamErrors : public ::testing::TestWithParam<BadParam> {};

TEST_P(ParamErrors, NameNodeKeyAndOrigin) {
  const BadParam& b = GetParam();
  auto bus = bus_for("perr");
  NodeHost host(*bus);
  auto added = host.add(std::make_unique<ProbeNode>(opts("probe1", {{b.key, yaml(b.value, "params/x.yaml:12")}})));
  ASSERT_FALSE(added.has_value());
  const std::string m = added.status().message();
  EXPECT_NE(m.find("probe1"), std::string::npos) << m;
  EXPECT_NE(m.find(b.key), std::string::npos) << m;
  EXPECT_NE(m.find("params/x.yaml:12"), std::string::npos) << m;
  EXPECT_NE(m.find(b.expect), std::string::npos) << m;
  EXPECT_EQ(host.find("probe1"), nullptr);  // nothing was added
}

INSTANTIATE_TEST_SUITE_P(
    All, ParamErrors,
    ::testing::Values(BadParam{"num_steps", "ten", "expects an integer"},
                      BadParam{"num_steps", "2.5", "expects an integer"},
                      BadParam{"num_steps", "\"4\"", "quoted string"},
                      BadParam{"num_steps", "0", "out of range"},
                      BadParam{"num_steps", "99999999999", "out of range"},
                      BadParam{"rate_hz", "fast", "expects a number"},
                      BadParam{"enabled", "maybe", "expects a bool"},
                      BadParam{"mode", "mix", "not one of: replace, blend"},
                      BadParam{"limits", "3", "expects a list"},
                      BadParam{"limits", "[1, 20]", "out of range"},
                      BadParam{"limits", "[1, x]", "element 1"},
                      BadParam{"rate_hz", "[1, 2]", "expects a single double"},
                      BadParam{"rate_hz", "", "has no value"},
                      BadParam{"num_stepz", "3", "has no param 'num_stepz'"}));

TEST(Params, UnknownParamListsTheDeclaredOnes) {
  auto d = dry_configure([] {
    NodeOptions o;
    o.name = "sink";
    o.type = "tensor_sink";
    o.params["verfy"] = yaml("true", "--set sink.verfy=true");
    return o;
  }());
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.status().message().find("verify"), std::string::npos);
  EXPECT_NE(d.status().message().find("--set sink.verfy=true"), std::string::npos);
}

TEST(Params, SetWhileRunningReachesTheNodeBetweenCallbacks) {
  auto bus = bus_for("pset");
  NodeHost host(*bus);
  NodeOptions o = opts("n");
  o.remaps["in"] = "/loop";
  o.remaps["out"] = "/loop";
  auto* n = static_cast<ProbeNode*>(*host.add(std::make_unique<ProbeNode>(o)));
  ASSERT_OK(host.activate_all());
  ASSERT_OK(host.set_param("n", "num_steps", "7"));
  ASSERT_OK(n->out.publish(chunk(2)));
  ASSERT_TRUE(eventually([&] { return n->last_steps.load() == 7; }));
  EXPECT_NE(host.params_yaml("n")->find("num_steps: 7"), std::string::npos);
  EXPECT_NE(host.params_yaml("n")->find("from param set"), std::string::npos);

  auto ro = host.set_param("n", "window", "5");
  EXPECT_EQ(ro.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(ro.message().find("read-only"), std::string::npos);
  auto type = host.set_param("n", "num_steps", "many");
  EXPECT_NE(type.message().find("expects an integer"), std::string::npos);
  auto range = host.set_param("n", "num_steps", "1000");
  EXPECT_EQ(range.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(host.set_param("n", "nope", "1").code(), StatusCode::kNotFound);
  EXPECT_EQ(host.set_param("ghost", "num_steps", "1").code(), StatusCode::kNotFound);
  EXPECT_EQ(*n->steps, 7);  // rejected changes left the value alone

  // A change posted just before deactivation is applied, not lost.
  ASSERT_OK(host.set_param("n", "num_steps", "9"));
  ASSERT_OK(host.deactivate_all());
  EXPECT_EQ(*n->steps, 9);
  // An inactive node (no executor) takes the change at once.
  ASSERT_OK(host.set_param("n", "mode", "blend"));
  EXPECT_EQ(*n->mode, "blend");
}

// The control endpoint's "set" (NodeHost::control): node, key and value split at the first
// two newlines; the value may hold more.
TEST(Params, SetRequestSplitsIntoNodeKeyAndValue) {
  auto set = parse_param_set("n\nlimits\n- 1\n- 2");
  ASSERT_OK(set.status());
  EXPECT_EQ(set->node, "n");
  EXPECT_EQ(set->key, "limits");
  EXPECT_EQ(set->value, "- 1\n- 2");
  EXPECT_EQ(parse_param_set("n\nkey").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_param_set("").status().code(), StatusCode::kInvalidArgument);
}

// Found by tests/fuzz/control_fuzzer (corpus/control/crash-not-utf8): a string param set to
// bytes that are not UTF-8 was accepted, and `params` then showed it with U+FFFD in their
// place, so the value shown (and dumped) was not the value set. Strings are now UTF-8 text,
// and a set's value text must be UTF-8 without NUL.
TEST(Params, StringThatIsNotUtf8IsRefused) {
  ParamDescriptor d;
  d.name = "label";
  d.type = ParamType::kString;
  auto bad = param_value_from_text("\xa6" "enabled\n [*a]", d, "node 'n': param 'label'");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("UTF-8"), std::string::npos);
  EXPECT_NE(bad.status().message().find("param 'label'"), std::string::npos);
  d.type = ParamType::kStringList;
  EXPECT_FALSE(param_value_from_text("[ok, \xff]", d, "x"));
  EXPECT_FALSE(param_value_from_text("\xed\xa0\x80", d, "x"));  // a surrogate
  // corpus/control/crash-utf16: NULs made the YAML reader decode the text as UTF-16, giving
  // U+FFFF, which no YAML emitter writes back.
  EXPECT_FALSE(param_value_from_text(std::string("\xf3\0\0\xf2\xff\xff\xff" "c~\",n\n.n+a", 17), d, "x"));
  EXPECT_FALSE(param_value_from_text("[\xef\xbf\xbf]", d, "x"));
  // corpus/control/crash-noncharacter: U+FDED (a noncharacter) beside a control character, which
  // makes the emitter quote the string; it then wrote U+FFFD for U+FDED.
  d.type = ParamType::kString;
  EXPECT_FALSE(param_value_from_text("j\xef\xb7\xad\x0eJ", d, "x"));
  EXPECT_FALSE(param_value_from_text("\xef\xb7\x90", d, "x"));      // U+FDD0
  EXPECT_FALSE(param_value_from_text("\xf0\x9f\xbf\xbe", d, "x"));  // U+1FFFE
  EXPECT_FALSE(param_value_from_text("\xf4\x8f\xbf\xbf", d, "x"));  // U+10FFFF
  EXPECT_TRUE(param_value_from_text("\xef\xb7\xb0", d, "x"));       // U+FDF0: a character
  // Well-formed text of any script passes unchanged.
  d.type = ParamType::kString;
  auto good = param_value_from_text("caf\xc3\xa9 \xe6\x9c\xba \xf0\x9f\xa4\x96", d, "x");
  ASSERT_OK(good.status());
  EXPECT_EQ(std::get<std::string>(*good), "caf\xc3\xa9 \xe6\x9c\xba \xf0\x9f\xa4\x96");
}

TEST(Node, TopicsResolveThroughNamespaceAndRemaps) {
  auto bus = bus_for("remap");
  NodeHost host(*bus);
  NodeOptions a = opts("a");
  a.ns = "robot1";
  auto* na = static_cast<ProbeNode*>(*host.add(std::make_unique<ProbeNode>(a)));
  EXPECT_EQ(na->in_topic, "/robot1/in");
  EXPECT_EQ(na->out.topic(), "/robot1/out");
  NodeOptions b = opts("b");
  b.remaps["in"] = "/chunks";
  b.remaps["/out"] = "/elsewhere";
  auto* nb = static_cast<ProbeNode*>(*host.add(std::make_unique<ProbeNode>(b)));
  EXPECT_EQ(nb->in_topic, "/chunks");
  EXPECT_EQ(nb->out.topic(), "/elsewhere");
}

TEST(Node, LifecycleCallbacksTimersAndStats) {
  auto bus = bus_for("life");
  NodeHost host(*bus);
  NodeOptions o = opts("n");
  o.remaps["in"] = "/loop";
  o.remaps["out"] = "/loop";
  auto* n = static_cast<ProbeNode*>(*host.add(std::make_unique<ProbeNode>(o)));
  // Not active yet: publishing is refused with a clear error.
  auto early = n->out.publish(chunk(2));
  ASSERT_FALSE(early.is_ok());
  EXPECT_NE(early.message().find("not active"), std::string::npos);
  ASSERT_OK(host.activate_all());
  ASSERT_OK(n->out.publish(chunk(2)));
  ASSERT_OK(n->out.publish(chunk(13)));  // its callback throws; the node keeps running
  ASSERT_OK(n->out.publish(chunk(7)));   // reported as bad input
  ASSERT_OK(n->out.publish(chunk(2)));
  ASSERT_TRUE(eventually([&] { return n->received.load() == 3 && n->ticks.load() >= 4; }));
  ASSERT_OK(host.deactivate_all());
  const int ticks = n->ticks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(n->ticks.load(), ticks);  // executor stopped before deactivate
  EXPECT_EQ(host.bad_inputs("n"), 1u);
  bool saw_sub = false, saw_timer = false;
  for (const auto& r : host.callback_reports()) {
    if (r.name == "in") {
      saw_sub = true;
      EXPECT_EQ(r.count, 4u);
      EXPECT_EQ(r.errors, 1u);
      EXPECT_GT(r.p50_ns, 0);
      EXPECT_GE(r.p99_ns, r.p50_ns);
    }
    if (r.name == "tick") {
      saw_timer = true;
      EXPECT_GE(r.count, 4u);
    }
  }
  EXPECT_TRUE(saw_sub && saw_timer);
  const std::string y = host.nodes_yaml();
  EXPECT_NE(y.find("name: n"), std::string::npos);
  EXPECT_NE(y.find("state: inactive"), std::string::npos);
  // Re-activation works.
  ASSERT_OK(host.activate_all());
  ASSERT_OK(n->out.publish(chunk(2)));
  ASSERT_TRUE(eventually([&] { return n->received.load() == 4; }));
}

// Upstream spinning: a stage of a chain, in: /in -> out: /mid. Its callback waits `hold` (or
// until `until` says so), then publishes unless the chunk has 3 rows, and throws on 13 rows.
class UpstreamStage final : public Node {
 public:
  explicit UpstreamStage(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_ASSIGN_OR_RETURN(out, spec.publisher<msgs::ActionChunk>("out"));
    return spec.subscribe<msgs::ActionChunk>("in", QoS::keep_last(10), [this](const msgs::ActionChunk& m) {
      const std::int64_t rows = m.actions().shape()[0];
      if (until) {
        held_until_ok = eventually([&] { return until(); }, std::chrono::seconds(10));
      } else {
        std::this_thread::sleep_for(hold);
      }
      if (rows == 13) throw std::runtime_error("unlucky chunk");
      if (rows != 3) (void)out.publish(chunk(static_cast<int>(rows)));
    });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }
  Publisher<msgs::ActionChunk> out;
  std::chrono::milliseconds hold{50};
  std::function<bool()> until;
  std::atomic<bool> held_until_ok{false};
};

// The stage after it: counts what arrives on /mid, and ticks every 5 ms.
class DownstreamStage final : public Node {
 public:
  explicit DownstreamStage(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_RETURN_IF_ERROR(
        spec.subscribe<msgs::ActionChunk>("in", QoS::keep_last(10), [this](const msgs::ActionChunk&) { ++received; }));
    return spec.timer("tick", std::chrono::milliseconds(5), [this] { ++ticks; });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }
  std::atomic<int> received{0};
  std::atomic<int> ticks{0};
};

struct SpinChain {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  UpstreamStage* up = nullptr;
  DownstreamStage* down = nullptr;
  std::shared_ptr<TopicWriter> in;
};

SpinChain spin_chain(const std::string& tag, std::int64_t upstream_spin_ns,
                     std::optional<std::int64_t> down_upstream_spin_us = std::nullopt) {
  SpinChain c;
  c.bus = bus_for(tag);
  NodeHostOptions ho;
  ho.status_period = std::chrono::milliseconds(0);
  ho.upstream_spin_ns = upstream_spin_ns;
  c.host = std::make_unique<NodeHost>(*c.bus, ho);
  NodeOptions u{"up", "upstream_stage"};
  u.remaps = {{"in", "/in"}, {"out", "/mid"}};
  c.up = static_cast<UpstreamStage*>(*c.host->add(std::make_unique<UpstreamStage>(u)));
  NodeOptions d{"down", "downstream_stage"};
  d.remaps = {{"in", "/mid"}};
  d.upstream_spin_us = down_upstream_spin_us;
  c.down = static_cast<DownstreamStage*>(*c.host->add(std::make_unique<DownstreamStage>(d)));
  c.in = *c.bus->advertise("/in", "ActionChunk", "test");
  return c;
}

// With upstream spinning on, the downstream executor spins while the upstream callback runs
// and takes its message without sleeping; callbacks that publish nothing or throw end the
// spin; nothing stays announced; off, nothing spins.
TEST(Node, UpstreamSpinTakesHandOversWithoutSleepingAndEndsWithTheCallback) {
  SpinChain c = spin_chain("upspin", 30'000'000'000);
  ASSERT_OK(c.host->activate_all());
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(c.bus->publish(*c.in, chunk(2)));
    ASSERT_TRUE(eventually([&] { return c.down->received.load() == i + 1; }));
  }
  auto spins = c.host->upstream_spins("down");
  EXPECT_GE(spins.taken, 1u);  // each of the 5 unless the executor was still busy when it came
  EXPECT_TRUE(eventually([&] { return c.host->upstream_spins("down").busy == 0; }));
  // A callback that publishes nothing and one that throws: the spin stops with them (the
  // limit is 30 s: a spin left running would stop the timer below).
  const std::uint64_t missed = c.host->upstream_spins("down").missed;
  ASSERT_OK(c.bus->publish(*c.in, chunk(3)));
  ASSERT_OK(c.bus->publish(*c.in, chunk(13)));
  ASSERT_TRUE(eventually([&] { return c.host->upstream_spins("down").missed >= missed + 1; }));
  EXPECT_TRUE(eventually([&] { return c.host->upstream_spins("down").busy == 0; }));
  EXPECT_EQ(c.down->received.load(), 5);
  // The spinning executor still runs its timer when it is due: the upstream callback waits for
  // three of its ticks.
  c.up->until = [&, from = c.down->ticks.load()] { return c.down->ticks.load() >= from + 3; };
  ASSERT_OK(c.bus->publish(*c.in, chunk(2)));
  ASSERT_TRUE(eventually([&] { return c.down->received.load() == 6; }, std::chrono::seconds(15)));
  EXPECT_TRUE(c.up->held_until_ok.load());
  EXPECT_NE(c.host->nodes_yaml().find("upstream_spin: {taken: "), std::string::npos);
  ASSERT_OK(c.host->deactivate_all());

  SpinChain off = spin_chain("upspin_off", 0);
  ASSERT_OK(off.host->activate_all());
  for (int i = 0; i < 3; ++i) ASSERT_OK(off.bus->publish(*off.in, chunk(2)));
  ASSERT_TRUE(eventually([&] { return off.down->received.load() == 3; }));
  const auto none = off.host->upstream_spins("down");
  EXPECT_EQ(none.taken + none.missed, 0u);
  EXPECT_EQ(off.host->nodes_yaml().find("upstream_spin"), std::string::npos);
  ASSERT_OK(off.host->deactivate_all());
}

// A node's own upstream_spin_us wins over its host's both ways: 0 in a spinning host keeps that
// node's executor asleep; set in a host that does not spin, the node spins (its upstream
// announces itself although the host's value is 0).
TEST(Node, ANodesOwnUpstreamSpinWinsOverItsHosts) {
  SpinChain quiet = spin_chain("upspin_node_off", 30'000'000'000, 0);
  ASSERT_OK(quiet.host->activate_all());
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(quiet.bus->publish(*quiet.in, chunk(2)));
    ASSERT_TRUE(eventually([&] { return quiet.down->received.load() == i + 1; }));
  }
  const auto none = quiet.host->upstream_spins("down");
  EXPECT_EQ(none.taken + none.missed, 0u);
  // `node info` lists the spin for "up" (the host's value) and not for "down".
  const YAML::Node quiet_nodes = YAML::Load(quiet.host->nodes_yaml());
  for (const auto& n : quiet_nodes["nodes"]) {
    EXPECT_EQ(static_cast<bool>(n["upstream_spin"]), n["name"].as<std::string>() == "up") << n["name"];
  }
  ASSERT_OK(quiet.host->deactivate_all());

  SpinChain own = spin_chain("upspin_node_on", 0, 30'000'000);
  ASSERT_OK(own.host->activate_all());
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(own.bus->publish(*own.in, chunk(2)));
    ASSERT_TRUE(eventually([&] { return own.down->received.load() == i + 1; }));
  }
  EXPECT_GE(own.host->upstream_spins("down").taken, 1u);
  EXPECT_TRUE(eventually([&] { return own.host->upstream_spins("down").busy == 0; }));
  const YAML::Node own_nodes = YAML::Load(own.host->nodes_yaml());
  for (const auto& n : own_nodes["nodes"]) {
    EXPECT_EQ(static_cast<bool>(n["upstream_spin"]), n["name"].as<std::string>() == "down") << n["name"];
  }
  ASSERT_OK(own.host->deactivate_all());
}

// Each executor thread carries its node's name (`top -H`, perf and gdb show it).
TEST(Node, ExecutorThreadsCarryTheirNodesNames) {
  SpinChain c = spin_chain("thread_names", 0);
  ASSERT_OK(c.host->activate_all());
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.insert(name);
  }
  EXPECT_TRUE(names.contains("x:up"));
  EXPECT_TRUE(names.contains("x:down"));
  ASSERT_OK(c.host->deactivate_all());
}

std::uint64_t transport_counter(const Bus& bus, const char* counter) {
  return YAML::Load(bus.stats_yaml())["transport"][counter].as<std::uint64_t>(0);
}

// The upstream / downstream chain split over two buses of one domain (as two processes on one
// host: they deliver through each other's rings), activated, and run until they found each other.
struct SplitChain {
  std::string domain;
  std::unique_ptr<Bus> bus_a, bus_b;
  std::unique_ptr<NodeHost> host_a, host_b;
  UpstreamStage* up = nullptr;
  DownstreamStage* down = nullptr;
  std::shared_ptr<TopicWriter> in;
};

void split_chain(SplitChain& c, const std::string& tag, std::int64_t upstream_spin_ns, std::chrono::milliseconds hold) {
  c.domain = testing::unique_domain(tag);
  const auto make = [&](const std::string& name, std::unique_ptr<Bus>& bus, std::unique_ptr<NodeHost>& host) {
    BusOptions bo;
    bo.domain = c.domain;
    bo.process_name = name;
    bo.upstream_spin_ns = upstream_spin_ns;
    bus = std::move(*Bus::create(bo));
    NodeHostOptions ho;
    ho.status_period = std::chrono::milliseconds(0);
    ho.upstream_spin_ns = upstream_spin_ns;
    host = std::make_unique<NodeHost>(*bus, ho);
  };
  make("a", c.bus_a, c.host_a);
  make("b", c.bus_b, c.host_b);
  NodeOptions u{"up", "upstream_stage"};
  u.remaps = {{"in", "/in"}, {"out", "/mid"}};
  c.up = static_cast<UpstreamStage*>(*c.host_a->add(std::make_unique<UpstreamStage>(u)));
  c.up->hold = hold;
  NodeOptions d{"down", "downstream_stage"};
  d.remaps = {{"in", "/mid"}};
  c.down = static_cast<DownstreamStage*>(*c.host_b->add(std::make_unique<DownstreamStage>(d)));
  c.in = *c.bus_a->advertise("/in", "ActionChunk", "test");
  ASSERT_OK(c.host_a->activate_all());
  ASSERT_OK(c.host_b->activate_all());
  // Until the buses found each other.
  ASSERT_TRUE(eventually([&] {
    if (c.down->received.load() > 0) return true;
    (void)c.bus_a->publish(*c.in, chunk(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return c.down->received.load() > 0;
  }));
}

// The same chain split over two buses (as two processes on one host: they deliver through each
// other's rings): the upstream callback announces itself in the receiver's ring, whose thread
// spins for the record and has the downstream executor spinning too. An announcer that died
// busy is cleared by the receiver at the spin limit.
TEST(Node, UpstreamSpinReachesAnotherProcessThroughItsRing) {
  SplitChain c;
  ASSERT_NO_FATAL_FAILURE(split_chain(c, "upspin_x", 300'000'000, std::chrono::milliseconds(20)));
  auto& [domain, bus_a, bus_b, host_a, host_b, up, down, in] = c;
  ASSERT_TRUE(eventually([&] { return host_a->upstream_spins("up").busy == 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the warm-up's callbacks end
  const int before = down->received.load();
  const std::uint64_t ring_taken = transport_counter(*bus_b, "upstream_spins_taken");
  for (int i = 1; i <= 5; ++i) {
    ASSERT_OK(bus_a->publish(*in, chunk(2)));
    ASSERT_TRUE(eventually([&] { return down->received.load() == before + i; }));
  }
  EXPECT_GE(transport_counter(*bus_b, "upstream_spins_taken"), ring_taken + 1) << bus_b->stats_yaml() << bus_a->stats_yaml();
  EXPECT_GE(host_b->upstream_spins("down").taken, 1u);

  // A process that announced and died before withdrawing (a reaped child's pid).
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  std::string ring_name;
  {
    auto reg = Registry::open(Registry::default_dir(domain));
    ASSERT_TRUE(reg.has_value());
    for (const auto& e : reg->list()) {
      if (e.bus_id == bus_b->id()) ring_name = e.ring;
    }
  }
  auto ring = shm::Ring::open(ring_name);
  ASSERT_TRUE(ring.has_value()) << ring.status().to_string();
  auto* table = reinterpret_cast<RingInterestTable*>((*ring)->user_area());
  ASSERT_TRUE(ring_announce_upstream(*table, static_cast<std::uint32_t>(child)));
  EXPECT_EQ(ring_upstream_busy(*table), 1u);
  // The next announcement makes b spin to its limit (the dead count never ends), then clear it.
  ASSERT_OK(bus_a->publish(*in, chunk(2)));
  ASSERT_TRUE(eventually([&] { return down->received.load() == before + 6; }));
  EXPECT_TRUE(eventually([&] { return transport_counter(*bus_b, "upstream_dead_cleared") == 1; }));
  EXPECT_EQ(ring_upstream_busy(*table), 0u);
  // And nothing keeps it spinning afterwards: more hand-overs go through as before.
  ASSERT_OK(bus_a->publish(*in, chunk(2)));
  ASSERT_TRUE(eventually([&] { return down->received.load() == before + 7; }));
  ASSERT_OK(host_a->deactivate_all());
  ASSERT_OK(host_b->deactivate_all());
}

// A subscription's delay (publish -> callback start) of messages from another process is split
// where they arrived here: transport (the sender's send, the ring, the wake-up) and hand-off
// (decode, dispatch, the executor). Messages published in the same process have no split.
TEST(Node, DelaysOfMessagesFromAnotherProcessSplitWhereTheyArrived) {
  SplitChain c;
  ASSERT_NO_FATAL_FAILURE(split_chain(c, "arrival", 0, std::chrono::milliseconds(1)));
  auto& [domain, bus_a, bus_b, host_a, host_b, up, down, in] = c;
  for (int i = 0; i < 20; ++i) {
    const int before = down->received.load();
    ASSERT_OK(bus_a->publish(*in, chunk(2)));
    ASSERT_TRUE(eventually([&] { return down->received.load() > before; }));
  }
  const auto report = [](NodeHost& host, const std::string& node) {
    for (const CallbackReport& r : host.callback_reports()) {
      if (r.node == node && r.kind == "subscription") return r;
    }
    ADD_FAILURE() << "no subscription report for " << node;
    return CallbackReport{};
  };
  const CallbackReport remote = report(*host_b, "down");
  EXPECT_EQ(remote.remote, remote.count);  // every message on /mid came from the other bus
  EXPECT_GE(remote.remote, 21u);
  // Each part is at most the whole for every message, so at every quantile too.
  EXPECT_GT(remote.transport_p50_ns, 0);
  EXPECT_GT(remote.handoff_p50_ns, 0);
  EXPECT_LE(remote.transport_p50_ns, remote.delay_p50_ns);
  EXPECT_LE(remote.handoff_p50_ns, remote.delay_p50_ns);
  EXPECT_NE(host_b->nodes_yaml().find("transport_p50_us"), std::string::npos) << host_b->nodes_yaml();
  const CallbackReport local = report(*host_a, "up");  // /in is published by its own bus
  EXPECT_GE(local.count, 21u);
  EXPECT_EQ(local.remote, 0u);
  EXPECT_EQ(host_a->nodes_yaml().find("transport_p50_us"), std::string::npos) << host_a->nodes_yaml();
  ASSERT_OK(host_a->deactivate_all());
  ASSERT_OK(host_b->deactivate_all());
}

TEST(Node, FailedActivationRollsBackInReverseOrder) {
  auto bus = bus_for("rollback");
  NodeHost host(*bus);
  std::vector<std::string> order;
  auto a = std::make_unique<ProbeNode>(opts("a"));
  auto b = std::make_unique<ProbeNode>(opts("b"));
  auto c = std::make_unique<ProbeNode>(opts("c"));
  c->fail_activate = true;
  auto* pa = a.get();
  auto* pb = b.get();
  ASSERT_TRUE(host.add(std::move(a)).has_value());
  ASSERT_TRUE(host.add(std::move(b)).has_value());
  ASSERT_TRUE(host.add(std::move(c)).has_value());
  auto s = host.activate_all();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'c'"), std::string::npos);
  EXPECT_NE(s.message().find("device busy"), std::string::npos);
  EXPECT_EQ(pa->order, (std::vector<std::string>{"activate:a", "deactivate:a"}));
  EXPECT_EQ(pb->order, (std::vector<std::string>{"activate:b", "deactivate:b"}));
}

TEST(Node, HeaviestDeclaredLoadIsActivatedFirst) {
  auto bus = bus_for("heavy_first");
  NodeHost host(*bus);
  std::vector<std::string> order;
  for (auto [name, load] : {std::pair{"camera", std::int64_t{0}}, {"head", std::int64_t{300}},
                            {"backbone", std::int64_t{9000}}, {"actuation", std::int64_t{0}}}) {
    auto n = std::make_unique<ProbeNode>(opts(name));
    n->load = load;
    n->shared_order = &order;
    ASSERT_TRUE(host.add(std::move(n)).has_value());
  }
  ASSERT_OK(host.activate_all());
  // Heaviest first; nodes that declared nothing keep the order they were added in.
  EXPECT_EQ(order, (std::vector<std::string>{"backbone", "head", "camera", "actuation"}));
  ASSERT_OK(host.deactivate_all());
}

// Device tensors and CPU nodes at graph set-up: a node whose publisher declares a device
// (as the backbone does for a cuda engine's outputs) stops activation while a node in the
// process subscribes without taking device tensors or host copies; the launch file's
// `device:cpu` fixes it, and a launch file's QoS keeps what the node's code declared.
TEST(Node, DevicePublishersAndCpuSubscribersAreCheckedAtActivation) {
  for (int variant = 0; variant < 3; ++variant) {
    auto bus = bus_for("device_check");
    NodeHost host(*bus);
    NodeOptions go = opts("gpu");
    go.remaps["out"] = "/prefix";
    auto gpu = std::make_unique<ProbeNode>(go);
    gpu->publish_device = Device::cuda(0);
    NodeOptions co = opts("reader");
    co.remaps["in"] = "/prefix";
    if (variant == 1) co.qos["in"] = *parse_qos("keep_last:2,device:cpu");
    if (variant == 2) co.qos["in"] = *parse_qos("keep_last:2");
    auto reader = std::make_unique<ProbeNode>(co);
    reader->take_device = variant == 2;
    ASSERT_TRUE(host.add(std::move(gpu)).has_value());
    ASSERT_TRUE(host.add(std::move(reader)).has_value());
    const Status s = host.activate_all();
    if (variant == 0) {
      ASSERT_FALSE(s.is_ok());
      EXPECT_NE(s.message().find("node 'reader' subscribes to '/prefix'"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("device:cpu"), std::string::npos) << s.message();
    } else {
      ASSERT_OK(s);
      ASSERT_OK(host.deactivate_all());
    }
  }
}

TEST(Node, DuplicateNamesAndUnknownTypesAreRejected) {
  auto bus = bus_for("dups");
  NodeHost host(*bus);
  ASSERT_TRUE(host.add(std::make_unique<ProbeNode>(opts("same"))).has_value());
  auto dup = host.add(std::make_unique<ProbeNode>(opts("same")));
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.status().message().find("'same'"), std::string::npos);
  NodeOptions o;
  o.name = "x";
  o.type = "no_such_type";
  auto unknown = host.add(o);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.status().message().find("tensor_source"), std::string::npos);  // lists known types
}

TEST(Node, StatusIsPublishedForEveryNode) {
  auto bus = bus_for("status");
  NodeHostOptions ho;
  ho.process_name = "proc";
  ho.status_period = std::chrono::milliseconds(20);
  NodeHost host(*bus, ho);
  ASSERT_TRUE(host.add(std::make_unique<ProbeNode>(opts("watched"))).has_value());
  ASSERT_OK(host.activate_all());
  auto waker = std::make_shared<Waker>();
  auto q = std::make_shared<SubscriptionQueue>("/edgevla/status", "NodeStatus", QoS::keep_last(50), "t", waker);
  ASSERT_OK(bus->attach(q));
  MessagePtr m;
  ASSERT_TRUE(eventually([&] {
    m = q->pop();
    return m != nullptr;
  }));
  EXPECT_EQ(*m->string_field("node"), "watched");
  EXPECT_EQ(*m->string_field("state"), "active");
  EXPECT_GT(*m->int_field("process_rss_bytes"), 0);
  EXPECT_TRUE(m->field("cb.tick.count") != nullptr);
  bus->detach(q);
}

}  // namespace
}  // namespace edgevla
