#include "runtime/node/node.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>
#include <mutex>
#include <optional>

#include "runtime/bus/bus.hpp"
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
