// Chains of stages: upstream spinning (one process and two, the host's value and a node's own),
// executor thread names, and where the delays of messages from another process are split.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "runtime/bus/bus.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/bus/ring_interest.hpp"
#include "runtime/node/host.hpp"
#include "runtime/node/node.hpp"
#include "runtime/shm/ring.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

using testing::eventually;

std::unique_ptr<Bus> bus_for(const std::string& tag) {
  BusOptions o;
  o.domain = testing::unique_domain(tag);
  return std::move(*Bus::create(o));
}

Message chunk(int rows) { return *msgs::ActionChunk::make(*Tensor::empty(DType::kF32, Shape{rows, 2}), 0.02); }

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

// The stage after it: counts what arrives on /mid, and ticks every 5 ms. `held`: it only keeps
// what arrives (QoS::triggers off).
class DownstreamStage final : public Node {
 public:
  explicit DownstreamStage(const NodeOptions& o, bool held = false) : Node(o), held_(held) {}
  Status configure(NodeSpec& spec) override {
    const QoS qos = held_ ? QoS::keep_last(10).held_input() : QoS::keep_last(10);
    EDGEVLA_RETURN_IF_ERROR(
        spec.subscribe<msgs::ActionChunk>("in", qos, [this](const msgs::ActionChunk&) { ++received; }));
    return spec.timer("tick", std::chrono::milliseconds(5), [this] { ++ticks; });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }
  std::atomic<int> received{0};
  std::atomic<int> ticks{0};

 private:
  bool held_;
};

struct SpinChain {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  UpstreamStage* up = nullptr;
  DownstreamStage* down = nullptr;
  std::shared_ptr<TopicWriter> in;
};

SpinChain spin_chain(const std::string& tag, std::int64_t upstream_spin_ns,
                     std::optional<std::int64_t> down_upstream_spin_us = std::nullopt, bool down_held = false,
                     std::map<std::string, QoS> down_qos = {}) {
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
  d.qos = std::move(down_qos);
  c.down = static_cast<DownstreamStage*>(*c.host->add(std::make_unique<DownstreamStage>(d, down_held)));
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

// A subscription that only keeps what arrives (QoS::triggers off) makes its executor neither
// spin for the upstream callback nor wake at its start, in a spinning host; what arrives is
// still delivered, and a launch file's QoS for the subscription keeps the node's choice.
TEST(Node, AHeldInputIsNotSpunFor) {
  for (const bool launch_qos : {false, true}) {
    std::map<std::string, QoS> qos;
    if (launch_qos) qos["in"] = QoS::keep_last(5);
    SpinChain c = spin_chain(launch_qos ? "upspin_held_qos" : "upspin_held", 30'000'000'000, std::nullopt, true, qos);
    ASSERT_OK(c.host->activate_all());
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK(c.bus->publish(*c.in, chunk(2)));
      ASSERT_TRUE(eventually([&] { return c.down->received.load() == i + 1; }));
    }
    const auto none = c.host->upstream_spins("down");
    EXPECT_EQ(none.taken + none.missed, 0u) << "launch qos " << launch_qos;
    EXPECT_EQ(none.busy, 0) << "launch qos " << launch_qos;
    ASSERT_OK(c.host->deactivate_all());
  }
  // The same chain with a triggering subscription spins (the test above, once more as a check
  // that this chain could have).
  SpinChain t = spin_chain("upspin_trigger", 30'000'000'000);
  ASSERT_OK(t.host->activate_all());
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(t.bus->publish(*t.in, chunk(2)));
    ASSERT_TRUE(eventually([&] { return t.down->received.load() == i + 1; }));
  }
  const auto some = t.host->upstream_spins("down");
  EXPECT_GE(some.taken + some.missed, 1u);
  ASSERT_OK(t.host->deactivate_all());
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

void split_chain(SplitChain& c, const std::string& tag, std::int64_t upstream_spin_ns, std::chrono::milliseconds hold,
                 bool down_held = false) {
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
  c.down = static_cast<DownstreamStage*>(*c.host_b->add(std::make_unique<DownstreamStage>(d, down_held)));
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

// Across processes too: a receiver whose only subscription to the topic keeps what arrives
// (QoS::triggers off) says so in its ring's interest table, and the upstream callback in the
// other process announces nothing there: neither the ring thread nor the executor spins.
TEST(Node, AHeldInputInAnotherProcessIsNotSpunFor) {
  SplitChain c;
  ASSERT_NO_FATAL_FAILURE(split_chain(c, "upspin_x_held", 300'000'000, std::chrono::milliseconds(20), true));
  auto& [domain, bus_a, bus_b, host_a, host_b, up, down, in] = c;
  const auto ring_spins = [&] {
    return transport_counter(*bus_b, "upstream_spins_taken") + transport_counter(*bus_b, "upstream_spins_missed");
  };
  const int before = down->received.load();
  const std::uint64_t spins_before = ring_spins();
  for (int i = 1; i <= 5; ++i) {
    ASSERT_OK(bus_a->publish(*in, chunk(2)));
    ASSERT_TRUE(eventually([&] { return down->received.load() == before + i; }));
  }
  EXPECT_EQ(ring_spins(), spins_before) << bus_b->stats_yaml();
  const auto none = host_b->upstream_spins("down");
  EXPECT_EQ(none.taken + none.missed, 0u);
  // The table says so: /mid is taken as a pipeline topic, held.
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
  const auto* table = reinterpret_cast<const RingInterestTable*>((*ring)->user_area());
  bool held = false;
  EXPECT_EQ(ring_interest(*table, "/mid", &held), RingRole::kPipeline);
  EXPECT_TRUE(held);
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

}  // namespace
}  // namespace edgevla
