// A node whose output depends on the order it takes its inputs in, recorded while its executor
// takes them in another order than they were published (the situation a busy 16-core machine
// creates between camera frames and action chunks): replay must run the recorded callbacks in
// the recorded order, not in publish-stamp order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "msgs/types.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/bag/replay.hpp"
#include "runtime/node/host.hpp"
#include "runtime/node/node_registry.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;

float value_of(const msgs::ActionChunk& m) { return m.actions().data<float>()[0]; }

Message chunk(float v) {
  auto t = *Tensor::empty(DType::kF32, Shape{1, 1});
  t.data<float>()[0] = v;
  return *msgs::ActionChunk::make(std::move(t), 0.02);
}

// b opens a gate and sets the value; the next a publishes 1000 * b + a and closes the gate.
// An a taken before the b that was published ahead of it publishes nothing, so which a made
// which output depends on the order the executor took them in. The first a holds the executor
// for a while, so what arrives meanwhile is taken in its round-robin order.
class OrderProbeNode final : public Node {
 public:
  explicit OrderProbeNode(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override {
    EDGEVLA_ASSIGN_OR_RETURN(out_, spec.publisher<msgs::ActionChunk>("out"));
    EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::ActionChunk>("a", QoS::keep_last(64), [this](const msgs::ActionChunk& m) {
      const float a = value_of(m);
      if (a == 0.0f && !replaying()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!open_) return;
      open_ = false;
      Message o = chunk(1000.0f * b_ + a);
      o.derive_from(m.header());
      (void)out_.publish(std::move(o));
    }));
    return spec.subscribe<msgs::ActionChunk>("b", QoS::keep_last(64), [this](const msgs::ActionChunk& m) {
      b_ = value_of(m);
      open_ = true;
    });
  }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }

 private:
  // In replay the clock is the recorded one (far in the past): no need to hold the executor.
  bool replaying() const { return wall_now_ns() - now_ns() > 1'000'000'000; }
  Publisher<msgs::ActionChunk> out_;
  float b_ = 0;
  bool open_ = true;
};
EDGEVLA_REGISTER_NODE(OrderProbeNode, "order_probe", "test: output depends on input order");

TEST(OrderReplay, RunsTheRecordedCallbacksInTheRecordedOrder) {
  const std::string bag = (fs::path(::testing::TempDir()) / ("order_" + std::to_string(::getpid()) + ".mcap")).string();
  {
    BusOptions bo;
    bo.domain = testing::unique_domain("order");
    auto bus = std::move(*Bus::create(bo));
    NodeHostOptions ho;
    ho.status_period = std::chrono::milliseconds(0);
    NodeHost host(*bus, ho);
    NodeOptions probe{"probe", "order_probe"};
    probe.remaps = {{"a", "/a"}, {"b", "/b"}, {"out", "/out"}};
    ASSERT_TRUE(host.add(probe).has_value());
    bag::RecorderOptions ro;
    ro.output = bag;
    ro.topics = {"/a", "/b", "/out"};
    auto rec = std::move(*bag::Recorder::start(*bus, ro));
    ASSERT_TRUE(host.activate_all().is_ok());
    auto a = std::move(*bus->advertise("/a", "ActionChunk", "test"));
    auto b = std::move(*bus->advertise("/b", "ActionChunk", "test"));
    ASSERT_OK(bus->publish(*a, chunk(0)));  // holds the executor
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // Published in this order while the executor is busy: every b before every a.
    for (int i = 1; i <= 3; ++i) ASSERT_OK(bus->publish(*b, chunk(static_cast<float>(i))));
    for (int i = 1; i <= 3; ++i) ASSERT_OK(bus->publish(*a, chunk(static_cast<float>(i))));
    // The probe takes all six once its first callback returns: two or three more outputs,
    // depending on which queue its executor looks at first.
    ASSERT_TRUE(testing::eventually([&] { return rec->stats().per_topic["/out"] >= 2; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(host.deactivate_all().is_ok());
    ASSERT_TRUE(rec->stop().is_ok());
  }
  // Every b was published before every a. Taken in that order, a=1 would make 3001 and the
  // other a nothing; the executor alternated between its queues instead.
  std::vector<float> outs;
  auto reader = std::move(*mcap::McapReader::open(bag));
  ASSERT_OK(reader->for_each_message([&](const mcap::MessageView& v) {
    if (v.channel->topic != "/out") return Status::ok();
    auto m = bag::decode_record(v);
    if (!m) return m.status();
    outs.push_back(m->tensor("actions")->data<float>()[0]);
    return Status::ok();
  }));
  std::string got;
  for (float f : outs) got += std::to_string(static_cast<int>(f)) + " ";
  ASSERT_GE(outs.size(), 2u) << got;
  EXPECT_EQ(outs[0], 0.0f);
  EXPECT_NE(outs[1], 3001.0f) << "the executor took the inputs in publish order; the test needs another: " << got;

  bag::ReplayOptions o;
  o.bag = bag;
  o.node = "probe";
  o.tolerance.rel_l2 = 0;
  o.tolerance.max_abs = 0;
  auto r = bag::replay_node(o);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_TRUE(r->passed()) << r->table();
  EXPECT_GE(r->inputs, 5u);
  EXPECT_EQ(r->outputs.at("/out").first, outs.size());
  fs::remove(bag);
}

}  // namespace
}  // namespace edgevla
