// Same-host delivery through the receiving process's shared-memory ring (issue 10): the ring
// is used instead of ZeroMQ, malformed records, a full ring, records larger than a slot, and a
// publisher process killed mid-write.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <poll.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include <yaml-cpp/yaml.h>

#include "msgs/wire.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/node/host.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/bus/ring_interest.hpp"
#include "runtime/shm/ring.hpp"
#include "runtime/shm/segment.hpp"
#include "tests/runtime/bus_test_util.hpp"

namespace edgevla {
namespace {

using testing::Collector;
using testing::eventually;
using testing::image_message;
using testing::make_bus;
using testing::publish_until_received;
using testing::unique_domain;

std::uint64_t transport_counter(const Bus& bus, const char* counter) {
  return YAML::Load(bus.stats_yaml())["transport"][counter].as<std::uint64_t>(0);
}

// The ring the registry names for `bus`.
std::string ring_of(const std::string& domain, const Bus& bus) {
  auto reg = Registry::open(Registry::default_dir(domain));
  EXPECT_TRUE(reg.has_value());
  for (const auto& e : reg->list()) {
    if (e.bus_id == bus.id()) return e.ring;
  }
  return {};
}

TEST(BusRing, SameHostDeliveryGoesThroughTheReceiversRing) {
  const auto domain = unique_domain("ring");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  EXPECT_FALSE(ring_of(domain, *sub).empty()) << "a bus without allowed_groups announces a ring";
  auto writer = pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  std::uint8_t fill = 0;
  publish_until_received(*pub, **writer, c, 64, fill);
  MessagePtr got = c.queue->pop();
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->tensor("pixels")->buffer()->kind(), BufferKind::kSharedMemory);
  EXPECT_GE(transport_counter(*pub, "sent_ring"), 1u);
  EXPECT_EQ(transport_counter(*pub, "sent_ipc"), 0u) << "a ring peer must not get ZeroMQ copies too";
  EXPECT_GE(transport_counter(*sub, "received_ring"), 1u);
  EXPECT_EQ(transport_counter(*sub, "duplicates"), 0u);
}

// Found by bench/soak: a node that waited seconds for its input (a restarted stage) published
// a header recording every callback it ran meanwhile; its envelope outgrew one ring slot, the
// record was refused, and the graph never recovered. A record larger than a slot now spans
// slots: the message arrives whole through the ring.
TEST(BusRing, AnEnvelopeLargerThanASlotStillArrivesThroughTheRing) {
  const auto domain = unique_domain("bigenv");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  auto writer = pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  std::uint8_t fill = 0;
  publish_until_received(*pub, **writer, c, 8, fill);
  c.queue->pop();
  Message big = image_message(*pub, 8, 8, 7);
  for (int i = 0; i < 600; ++i) {
    big.header().taken.push_back({"/robot/state/with/a/long/name", 1'000'000 + i, 2'000'000 + i});
  }
  ASSERT_OK(pub->publish(**writer, std::move(big)));
  MessagePtr got;  // (images of the warm-up still in flight arrive first)
  ASSERT_TRUE(eventually([&] {
    for (MessagePtr m; (m = c.queue->pop()) != nullptr;) {
      if (!m->header().taken.empty()) got = m;
    }
    return got != nullptr;
  })) << pub->stats_yaml();
  ASSERT_EQ(got->header().taken.size(), 600u);
  EXPECT_EQ(got->header().taken.back().publish_stamp_ns, 1'000'599);
  EXPECT_EQ(got->tensor("pixels")->data<std::uint8_t>()[0], 7);
  EXPECT_EQ(transport_counter(*pub, "sent_ipc"), 0u) << "delivered through the ring, not ZeroMQ";
}

// Fault injection: a publisher process killed (SIGKILL) at an arbitrary moment of its loop
// (mostly in the middle of filling a 1 MiB loaned block, or of a ring push) delivers nothing
// half-written: every message that arrives is whole (each fills its pixels with one byte
// value), and the subscriber carries on.
TEST(BusRing, APublisherKilledMidWriteDeliversNothingHalfWritten) {
  const auto domain = unique_domain("midwrite");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    BusOptions o;
    o.domain = domain;
    auto bus = Bus::create(o);
    if (!bus) ::_exit(2);
    auto writer = (*bus)->advertise("/k", "Image", "killed");
    if (!writer) ::_exit(3);
    for (std::uint8_t fill = 1;; fill = static_cast<std::uint8_t>(fill % 250 + 1)) {
      (void)(*bus)->publish(**writer, image_message(**bus, 512, 683, fill));  // ~1 MiB
    }
  }
  auto sub = make_bus(domain);
  Collector c("/k", "Image", QoS::keep_last(8));  // the oldest go (and free their blocks) as it floods
  ASSERT_OK(sub->attach(c.queue));
  std::size_t received = 0, whole = 0;
  // A bounded number per call: a checker slower than the publisher (under a sanitizer) must
  // still get back to its deadline. All bytes equal each other iff every byte equals the
  // next (one memcmp, which a sanitizer checks as one range).
  const auto check = [&] {
    MessagePtr m;
    for (int k = 0; k < 16 && (m = c.queue->pop()) != nullptr; ++k) {
      ++received;
      const Tensor& px = *m->tensor("pixels");
      const auto* b = px.data<std::uint8_t>();
      const auto n = static_cast<std::size_t>(px.numel());
      if (n == 512u * 683u * 3u && std::memcmp(b, b + 1, n - 1) == 0) ++whole;
    }
  };
  EXPECT_TRUE(eventually([&] {
    check();
    return received >= 20;
  }, std::chrono::seconds(30)));
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the publisher must have been running until killed (status " << status << ")";
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until) {
    check();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(received, 20u);
  EXPECT_EQ(whole, received) << "a message arrived half-written";
  // The killed process's pool and ring go with the next stale sweep (every bus runs one).
  shm::remove_stale_segments();
  const std::string mark = "." + std::to_string(child) + ".";
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_EQ(e.path().filename().string().find(mark), std::string::npos) << e.path() << " outlived its process";
  }
  // Once the receiving bus has seen the publisher go (registry rescan) and what it had queued
  // is freed, it gives its freed heap back to the system.
  EXPECT_TRUE(eventually([&] { return transport_counter(*sub, "heap_releases") >= 1; }, std::chrono::seconds(20)))
      << sub->stats_yaml();
}

TEST(BusRing, AProcessWithAllowedGroupsIsServedOverZeroMqIpc) {
  const auto domain = unique_domain("noring");
  auto pub = make_bus(domain);
  BusOptions o;
  o.domain = domain;
  o.allowed_gids = {static_cast<std::uint32_t>(::getegid())};
  auto sub = Bus::create(o);
  ASSERT_TRUE(sub.has_value()) << sub.status().to_string();
  EXPECT_TRUE(ring_of(domain, **sub).empty()) << "other users' processes could not open an owner-only ring";
  auto writer = pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK((*sub)->attach(c.queue));
  std::uint8_t fill = 0;
  publish_until_received(*pub, **writer, c, 16, fill);
  EXPECT_GE(transport_counter(*pub, "sent_ipc"), 1u);
  EXPECT_EQ(transport_counter(*pub, "sent_ring"), 0u);
}

TEST(BusRing, MalformedRingRecordsAreRejectedAndCountedAndGoodOnesStillFlow) {
  const auto domain = unique_domain("ringbad");
  auto pub = make_bus(domain);
  auto sub = make_bus(domain);
  auto writer = pub->advertise("/cam", "Image", "src");
  Collector c("/cam", "Image");
  ASSERT_OK(sub->attach(c.queue));
  std::uint8_t fill = 0;
  publish_until_received(*pub, **writer, c, 8, fill);
  while (c.queue->pop()) {
  }
  auto ring = shm::Ring::open(ring_of(domain, *sub));
  ASSERT_TRUE(ring.has_value()) << ring.status().to_string();
  // Bytes that are no record at all: counted by the transport.
  const std::uint64_t errors = transport_counter(*sub, "decode_errors");
  const std::string junk("\x05\x00\x00\x00" "abc", 7);  // claims 5 bytes, holds 3
  ASSERT_OK((*ring)->push(std::as_bytes(std::span(junk.data(), junk.size()))));
  ASSERT_TRUE(eventually([&] { return transport_counter(*sub, "decode_errors") > errors; }));
  // A well-formed record whose envelope is garbage: rejected on the topic's subscription.
  const std::string frame = wire::topic_frame("/cam"), envelope = "\xc1\xc1garbage";
  std::string rec;
  const auto put = [&rec](const std::string& s) {
    const auto n = static_cast<std::uint32_t>(s.size());
    rec.append(reinterpret_cast<const char*>(&n), 4);
    rec += s;
  };
  put(frame);
  put(envelope);
  rec.append(4, '\0');  // no inline tensors
  const std::uint64_t rejected = c.queue->counters().rejected.get();
  ASSERT_OK((*ring)->push(std::as_bytes(std::span(rec.data(), rec.size()))));
  ASSERT_TRUE(eventually([&] { return c.queue->counters().rejected.get() > rejected; }));
  // And the next good message flows.
  publish_until_received(*pub, **writer, c, 8, fill);
}

// A process that stopped taking records from its ring (stopped, or hung): the publisher waits
// for it once, then drops (counted) without waiting until the ring has room again.
TEST(BusRing, AFullRingCostsOneWaitThenDropsUntilItDrains) {
  const auto domain = unique_domain("ringfull");
  auto pub = make_bus(domain);
  auto writer = pub->advertise("/cam", "Image", "src");
  // A stand-in for the stopped process: a registry entry and a 4-record ring nobody drains.
  auto reg = Registry::open(Registry::default_dir(domain));
  ASSERT_TRUE(reg.has_value());
  RegistryEntry e;
  e.bus_id = "stalled/" + std::to_string(::getpid()) + "/77";
  e.pid = static_cast<std::uint32_t>(::getpid());
  e.process = "stalled";
  e.data_endpoint = "ipc://" + reg->path_for(e.bus_id, ".pub");
  auto ring = shm::Ring::create(shm::ring_name(::getpid(), "stalled77"),
                                {.slots = 4, .slot_bytes = 8192, .user_bytes = sizeof(RingInterestTable)});
  ASSERT_TRUE(ring.has_value()) << ring.status().to_string();
  auto* interest = reinterpret_cast<RingInterestTable*>((*ring)->user_area());
  ASSERT_TRUE(set_ring_interest(*interest, "/cam", RingRole::kPipeline));
  e.ring = (*ring)->name();
  ASSERT_OK(reg->write(e));
  std::uint8_t fill = 0;
  std::string record;
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(**writer, image_message(*pub, 8, 8, ++fill)));
    return transport_counter(*pub, "sent_ring") >= 1;
  }));
  while ((*ring)->pop(record, 0)) {
  }
  const std::uint64_t sent = transport_counter(*pub, "sent_ring");
  for (int i = 0; i < 20; ++i) EXPECT_OK(pub->publish(**writer, image_message(*pub, 8, 8, ++fill)));
  EXPECT_EQ(transport_counter(*pub, "sent_ring"), sent + 4) << "the ring holds four records";
  EXPECT_EQ(transport_counter(*pub, "dropped_ring_full"), 16u);
  // Drained, it takes records again.
  while ((*ring)->pop(record, 0)) {
  }
  EXPECT_OK(pub->publish(**writer, image_message(*pub, 8, 8, ++fill)));
  EXPECT_EQ(transport_counter(*pub, "sent_ring"), sent + 5);
  reg->remove(e);
}


// The interest table keeps each topic's role and whether its owner only holds what arrives
// there (no upstream announcements) through updates and removals (a removal moves the last
// entry into the freed slot); an observer of every topic counts for the others.
TEST(RingInterest, RolesAndHeldTopicsSurviveUpdatesAndRemovals) {
  auto t = std::make_unique<RingInterestTable>();
  ASSERT_TRUE(set_ring_interest(*t, "/a", RingRole::kPipeline, true));
  ASSERT_TRUE(set_ring_interest(*t, "/b", RingRole::kObserver));
  ASSERT_TRUE(set_ring_interest(*t, "/c", RingRole::kPipeline));
  const auto role_of = [&](std::string_view topic, bool& held) {
    held = !held;  // overwritten by the reader
    return ring_interest(*t, topic, &held);
  };
  bool held = false;
  EXPECT_EQ(role_of("/a", held), RingRole::kPipeline);
  EXPECT_TRUE(held);
  EXPECT_EQ(role_of("/c", held), RingRole::kPipeline);
  EXPECT_FALSE(held);
  ASSERT_TRUE(set_ring_interest(*t, "/a", RingRole::kNone));  // /c moves into /a's slot
  EXPECT_EQ(role_of("/a", held), RingRole::kNone);
  EXPECT_FALSE(held);
  EXPECT_EQ(role_of("/c", held), RingRole::kPipeline);
  EXPECT_FALSE(held);
  ASSERT_TRUE(set_ring_interest(*t, "/c", RingRole::kPipeline, true));  // updated in place
  EXPECT_EQ(role_of("/c", held), RingRole::kPipeline);
  EXPECT_TRUE(held);
  EXPECT_EQ(role_of("/b", held), RingRole::kObserver);
  EXPECT_FALSE(held);
  ASSERT_TRUE(set_ring_interest(*t, "", RingRole::kObserver));
  EXPECT_EQ(role_of("/elsewhere", held), RingRole::kObserver);
  EXPECT_FALSE(held);
  EXPECT_EQ(t->count.load(), 3u);
}

// Found on the GPU host under a 16-core test load: the recorder process's ring thread spent
// seconds on its first device block (the device starting up in that process) while the other
// processes' messages waited in its ring; the recorder was stopped before it took them, and
// the bag lacked them with nothing counted. Now a node host, before its nodes stop, takes what
// other processes already delivered. Here the receiving process is frozen (SIGSTOP) while
// the publisher fills its ring, and told to stop the moment it runs again.
namespace drain {

constexpr int kFrozenMessages = 300;
constexpr std::uint8_t kMarker = 200;

bool read_byte(int fd, char& c, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && ::read(fd, &c, 1) == 1;
}

NodeOptions recorder_options(const std::string& path) {
  NodeOptions n;
  n.name = "recorder";
  n.type = "bag_recorder";
  n.origin = "test";
  n.params["output"] = ParamOverride{YAML::Load("\"" + path + "\""), "test"};
  n.params["topics"] = ParamOverride{YAML::Load("[/t]"), "test"};
  return n;
}

// The receiving process: a collector (or, with `path`, a recorder node) on /t. Says 'r' once a
// warm-up message arrived, waits for 'g', then stops at once; writes how many marked messages
// it holds (the collector) and exits.
[[noreturn]] void receiver(const std::string& domain, int ready_w, int go_r, const std::string& path) {
  BusOptions o;
  o.domain = domain;
  auto bus = Bus::create(o);
  if (!bus) ::_exit(2);
  const char r = 'r';
  if (path.empty()) {
    testing::Collector c("/t", "Image", QoS::keep_last(4096));
    if (!(*bus)->attach(c.queue).is_ok()) ::_exit(3);
    while (c.queue->size() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (::write(ready_w, &r, 1) != 1) ::_exit(4);
    char g = 0;
    if (!read_byte(go_r, g, 60'000)) ::_exit(5);
    if (!(*bus)->drain_inbound(5'000'000'000).is_ok()) ::_exit(6);
    int marked = 0;
    for (MessagePtr m; (m = c.queue->pop()) != nullptr;) {
      marked += m->tensor("pixels")->data<std::uint8_t>()[0] == kMarker;
    }
    if (::write(ready_w, &marked, sizeof marked) != sizeof marked) ::_exit(7);
    ::_exit(0);
  }
  {
    NodeHost host(**bus);
    if (!host.add(recorder_options(path)).has_value() || !host.activate_all().is_ok()) ::_exit(3);
    // Ready once the publisher's warm-up messages arrive (the recorder's status counts them).
    for (;;) {
      const YAML::Node st = YAML::Load((*bus)->stats_yaml());
      if (st["transport"]["received_ring"].as<std::uint64_t>(0) > 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (::write(ready_w, &r, 1) != 1) ::_exit(4);
    char g = 0;
    if (!read_byte(go_r, g, 60'000)) ::_exit(5);
    if (!host.deactivate_all().is_ok()) ::_exit(6);
    host.shutdown();
  }
  ::_exit(0);
}

// Forks the receiver, publishes warm-up messages until it is ready, freezes it, publishes
// kFrozenMessages marked ones into its ring, then wakes it and tells it to stop.
void run(const std::string& domain, const std::string& path, int& marked_out) {
  auto pub = make_bus(domain);
  auto writer = pub->advertise("/t", "Image", "src");
  ASSERT_TRUE(writer.has_value());
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) receiver(domain, ready[1], go[0], path);
  // A failed assertion below returns early: the receiver (perhaps stopped) must not outlive it.
  struct Reaper {
    pid_t pid;
    int fds[4];
    bool reaped = false;
    ~Reaper() {
      if (!reaped) {
        ::kill(pid, SIGKILL);
        ::kill(pid, SIGCONT);
        ::waitpid(pid, nullptr, 0);
      }
      for (int fd : fds) ::close(fd);
    }
  } reaper{child, {ready[0], ready[1], go[0], go[1]}};
  char r = 0;
  bool is_ready = false;
  for (int i = 0; i < 6000 && !is_ready; ++i) {
    ASSERT_OK(pub->publish(**writer, image_message(*pub, 2, 2, 1, /*loan=*/false)));
    is_ready = read_byte(ready[0], r, 10);
  }
  ASSERT_TRUE(is_ready) << "the receiver never got a message";
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  for (int i = 0; i < kFrozenMessages; ++i) {
    ASSERT_OK(pub->publish(**writer, image_message(*pub, 2, 2, kMarker, /*loan=*/false)));
  }
  EXPECT_EQ(transport_counter(*pub, "dropped_ring_full"), 0u);
  ASSERT_EQ(::kill(child, SIGCONT), 0);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  if (path.empty()) {
    pollfd p{ready[0], POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 60'000), 1);
    ASSERT_EQ(::read(ready[0], &marked_out, sizeof marked_out), static_cast<ssize_t>(sizeof marked_out));
  }
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  reaper.reaped = true;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "receiver exit status " << status;
}

}  // namespace drain

TEST(BusRing, DrainInboundTakesEverythingAlreadyInTheRing) {
  int marked = -1;
  ASSERT_NO_FATAL_FAILURE(drain::run(unique_domain("drain"), "", marked));
  EXPECT_EQ(marked, drain::kFrozenMessages);
}

TEST(BusRing, ARecorderStoppedRightAfterThePublishersKeepsWhatTheyDelivered) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("edgevla_drain_" + std::to_string(::getpid()) + ".mcap")).string();
  int unused = 0;
  ASSERT_NO_FATAL_FAILURE(drain::run(unique_domain("drainrec"), path, unused));
  auto reader = mcap::McapReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().to_string();
  int marked = 0;
  ASSERT_OK((*reader)->for_each_message([&](const mcap::MessageView& v) -> Status {
    EDGEVLA_ASSIGN_OR_RETURN(Message m, bag::decode_record(v));
    marked += m.tensor("pixels")->data<std::uint8_t>()[0] == drain::kMarker;
    return Status::ok();
  }));
  EXPECT_EQ(marked, drain::kFrozenMessages);
  std::filesystem::remove(path);
}


// A device a peer publishes on is started in a process that takes the topic before the first
// block arrives (the other half of the loss above: that start-up stalled the receive thread).
// A stand-in allocator for cuda counts the starts.
class WarmCounter final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t) override { return failed_precondition("test allocator"); }
  Device device() const override { return Device::cuda(0); }
  Status warm(int index) override {
    if (index == 1) ++warmed;
    return Status::ok();
  }
  std::atomic<int> warmed{0};
};

TEST(BusRing, AProcessTakingADeviceTopicStartsThatDeviceAheadOnce) {
  auto counter = std::make_shared<WarmCounter>();
  register_allocator(DeviceType::kCuda, counter);
  const auto domain = unique_domain("warm");
  auto pub = make_bus(domain);
  auto taker = make_bus(domain);
  auto bystander = make_bus(domain);  // takes another topic only
  Collector prefix("/prefix", "Image", QoS::keep_last(4));
  ASSERT_OK(taker->attach(prefix.queue));
  Collector other("/other", "Image");
  ASSERT_OK(bystander->attach(other.queue));
  auto writer = pub->advertise("/prefix", "Image", "backbone");
  ASSERT_TRUE(writer.has_value());
  auto plain = pub->advertise("/other", "Image", "camera");
  ASSERT_TRUE(plain.has_value());
  ASSERT_OK(pub->publishes_on(**writer, Device::cuda(1)));
  EXPECT_TRUE(eventually([&] { return counter->warmed.load() >= 1; })) << "the taker never started cuda:1";
  // Later registry changes (a second subscription, a new publisher) start nothing again.
  Collector again("/prefix", "Image", QoS::keep_last(4));
  ASSERT_OK(taker->attach(again.queue));
  auto late = pub->advertise("/late", "Image", "late");
  ASSERT_TRUE(late.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(counter->warmed.load(), 1) << "once per device and process; the bystander takes no device topic";
  register_allocator(DeviceType::kCuda, nullptr);
}

}  // namespace
}  // namespace edgevla
