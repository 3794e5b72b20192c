// Device tensors on the bus, without a GPU: a stand-in allocator registered for the cuda device
// type hands out host memory marked as device memory (BufferKind::kDevice, cuda:N) and counts
// its copies, so what the bus, the recorder and Tensor::to do with a device tensor is checked
// here; the cuda backend's own allocator is exercised by the GPU tests.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <filesystem>

#include "msgs/types.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/bus/bus.hpp"
#include "tests/support/memfd_device.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

using testing::eventually;
using testing::unique_domain;

class StandInDevice final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t size) override { return allocate_on(0, size); }
  Expected<BufferPtr> allocate_on(int index, std::size_t size) override {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(64, std::max<std::size_t>(64, (size + 63) / 64 * 64)));
    Buffer::Options o;
    o.kind = BufferKind::kDevice;
    o.device = Device::cuda(index);
    o.writable = true;
    o.release = [p] { std::free(p); };
    return std::make_shared<Buffer>(p, size, std::move(o));
  }
  Device device() const override { return Device::cuda(0); }
  Status copy(std::byte* dst, const std::byte* src, std::size_t bytes, CopyKind kind) override {
    (kind == CopyKind::kToHost ? to_host : from_host).fetch_add(1);
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  std::atomic<int> to_host{0}, from_host{0};
};

class DeviceTensors : public ::testing::Test {
 protected:
  void SetUp() override { register_allocator(DeviceType::kCuda, device_); }
  void TearDown() override { register_allocator(DeviceType::kCuda, nullptr); }

  // A [rows, 4] f32 tensor on cuda:0 holding i * 0.5 at element i.
  Tensor device_tensor(std::int64_t rows) {
    Tensor host = *Tensor::empty(DType::kF32, Shape{rows, 4});
    for (std::int64_t i = 0; i < host.numel(); ++i) host.data<float>()[i] = static_cast<float>(i) * 0.5f;
    auto dev = host.to(Device::cuda(0));
    EXPECT_TRUE(dev.has_value()) << dev.status().to_string();
    return *dev;
  }

  std::shared_ptr<StandInDevice> device_ = std::make_shared<StandInDevice>();
};

void expect_values(const Tensor& t, std::int64_t rows) {
  ASSERT_TRUE(t.device().is_cpu());
  ASSERT_EQ(t.shape(), (Shape{rows, 4}));
  for (std::int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t.data<float>()[i], static_cast<float>(i) * 0.5f) << i;
}

TEST_F(DeviceTensors, ToCopiesBetweenHostAndDeviceThroughTheAllocator) {
  const Tensor dev = device_tensor(3);
  EXPECT_EQ(dev.device(), Device::cuda(0));
  EXPECT_EQ(dev.buffer()->kind(), BufferKind::kDevice);
  EXPECT_EQ(device_->from_host.load(), 1);
  // Already there: the same tensor, no copy.
  auto same = dev.to(Device::cuda(0));
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->raw_data(), dev.raw_data());
  auto back = dev.to(Device::cpu());
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  EXPECT_EQ(device_->to_host.load(), 1);
  expect_values(*back, 3);
  // A strided device view is refused by name; device to another device as well.
  const Tensor col = *dev.slice(1, 0, 2);
  auto strided = col.to(Device::cpu());
  ASSERT_FALSE(strided.has_value());
  EXPECT_NE(strided.status().message().find("strided"), std::string::npos) << strided.status().to_string();
  auto other = dev.to(Device::cuda(1));
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.status().message().find("host <-> device"), std::string::npos) << other.status().to_string();
}

TEST_F(DeviceTensors, WithoutABackendADeviceTensorIsAClearError) {
  register_allocator(DeviceType::kCuda, nullptr);
  auto t = Tensor::empty(DType::kF32, Shape{2}, Device::cuda(0));
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("no allocator for cuda:0"), std::string::npos) << t.status().to_string();
}

// A subscriber that takes device tensors as they are (as an engine on the device does).
struct Collector {
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  std::shared_ptr<SubscriptionQueue> queue;
  explicit Collector(const std::string& topic, QoS qos = QoS::keep_last(100).taking_device_tensors(),
                     const std::string& owner = "collector")
      : queue(std::make_shared<SubscriptionQueue>(topic, "ActionChunk", qos, owner, waker)) {}
};

std::unique_ptr<Bus> make_bus(const std::string& domain) {
  BusOptions o;
  o.domain = domain;
  return std::move(*Bus::create(o));
}

// In this process the subscriber gets the very device buffer; another bus (another process's
// view) gets the values as a host copy in shared memory, counted.
TEST_F(DeviceTensors, SameProcessHandsOverTheDeviceBufferOtherProcessesGetHostCopies) {
  const auto domain = unique_domain("devtensor");
  auto pub = make_bus(domain);
  auto other = make_bus(domain);
  auto writer = *pub->advertise("/act", "ActionChunk", "head");
  Collector local("/act"), remote("/act");
  ASSERT_OK(pub->attach(local.queue));
  ASSERT_OK(other->attach(remote.queue));
  const std::byte* sent = nullptr;
  ASSERT_TRUE(eventually([&] {
    Tensor dev = device_tensor(5);
    sent = dev.raw_data();
    EXPECT_OK(pub->publish(*writer, *msgs::ActionChunk::make(std::move(dev), 0.02)));
    return remote.queue->size() > 0;
  }));
  MessagePtr mine = nullptr;
  while (MessagePtr m = local.queue->pop()) mine = m;
  ASSERT_NE(mine, nullptr);
  const Tensor& handed = *mine->tensor("actions");
  EXPECT_EQ(handed.device(), Device::cuda(0));
  EXPECT_EQ(handed.raw_data(), sent);  // zero copy
  MessagePtr theirs = remote.queue->pop();
  ASSERT_NE(theirs, nullptr);
  expect_values(*theirs->tensor("actions"), 5);
  EXPECT_NE(pub->stats_yaml().find("device_to_host"), std::string::npos);
  EXPECT_GE(device_->to_host.load(), 1);
}

// A device loan stays on the device while the topic's pipeline subscribers are all in this
// process; once another process subscribes, the loan is host shared memory (filled straight
// from the device by the producer, no second copy at send).
TEST_F(DeviceTensors, LoansStayOnTheDeviceUntilAnotherProcessSubscribes) {
  const auto domain = unique_domain("devloan");
  auto pub = make_bus(domain);
  auto writer = *pub->advertise("/act", "ActionChunk", "head");
  Collector local("/act");
  ASSERT_OK(pub->attach(local.queue));
  auto on_device = pub->loan_for("/act", DType::kF32, Shape{4, 4}, Device::cuda(0));
  ASSERT_TRUE(on_device.has_value()) << on_device.status().to_string();
  EXPECT_EQ(on_device->device(), Device::cuda(0));
  auto other = make_bus(domain);
  Collector remote("/act");
  ASSERT_OK(other->attach(remote.queue));
  ASSERT_TRUE(eventually([&] {
    auto t = pub->loan_for("/act", DType::kF32, Shape{4, 4}, Device::cuda(0));
    return t.has_value() && t->device().is_cpu() && t->buffer()->kind() == BufferKind::kSharedMemory;
  }));
}

// A subscription with `device:cpu` in its QoS takes host copies, made when it pops (the
// publisher does not wait for them), counted; one without gets the device tensor itself.
// With an allocator that can export device memory (the cuda backend's VMM allocator; here its
// memfd stand-in), a loan for another process is a device block of the shared pool: it crosses
// as a descriptor and the other process reads it in place on the device; a subscriber there
// that asked for neither device tensors nor host copies gets a host copy, counted.
TEST_F(DeviceTensors, ALoanForAnotherProcessIsADeviceBlockReadThereInPlace) {
  auto shareable = std::make_shared<testing::MemfdDeviceAllocator>();
  register_allocator(DeviceType::kCuda, shareable);
  const auto domain = unique_domain("devblock");
  auto pub = make_bus(domain);
  auto other = make_bus(domain);
  auto writer = *pub->advertise("/act", "ActionChunk", "head");
  Collector remote("/act");
  Collector plain("/act", QoS::keep_last(100), "plain");
  ASSERT_OK(other->attach(remote.queue));
  ASSERT_OK(other->attach(plain.queue));
  const std::byte* filled = nullptr;
  ASSERT_TRUE(eventually([&] {
    // Until the publisher sees the other process's subscription, a device loan is a block of
    // this process only (it would reach the other bus as a host copy): publish only pool blocks.
    auto t = pub->loan_for("/act", DType::kF32, Shape{6, 4}, Device::cuda(0));
    if (!t || t->device().is_cpu() || !t->buffer()->shm()) return false;
    EXPECT_EQ(t->buffer()->kind(), BufferKind::kDevice);
    for (std::int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] = static_cast<float>(i) * 0.5f;
    filled = t->raw_data();
    EXPECT_OK(pub->publish(*writer, *msgs::ActionChunk::make(std::move(*t), 0.02)));
    return remote.queue->size() > 0 && plain.queue->size() > 0;
  }));
  MessagePtr got = remote.queue->pop();
  ASSERT_NE(got, nullptr);
  const Tensor& a = *got->tensor("actions");
  EXPECT_EQ(a.device(), Device::cuda(0));
  EXPECT_EQ(a.buffer()->kind(), BufferKind::kDevice);
  ASSERT_TRUE(a.buffer()->shm().has_value());
  EXPECT_NE(a.raw_data(), filled);  // its own mapping of the same memory
  for (std::int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], static_cast<float>(i) * 0.5f) << i;
  EXPECT_EQ(YAML::Load(pub->stats_yaml())["transport"]["device_to_host"].as<std::uint64_t>(99), 0u)
      << "the device block crosses as a descriptor";
  EXPECT_GE(shareable->exported.load(), 1);
  EXPECT_GE(shareable->imported.load(), 1);
  MessagePtr host = plain.queue->pop();
  ASSERT_NE(host, nullptr);
  expect_values(*host->tensor("actions"), 6);
  EXPECT_GE(plain.queue->counters().device_copies.get(), 1u);
  EXPECT_EQ(plain.queue->counters().rejected.get(), 0u);
  // Once every reader let go, the next loans reuse the block: no new device memory, no new
  // import on the other side.
  got.reset();
  host.reset();
  while (remote.queue->pop() || plain.queue->pop()) {
  }
  const int exported_before = shareable->exported.load();
  for (int i = 0; i < 8; ++i) {
    auto t = pub->loan_for("/act", DType::kF32, Shape{6, 4}, Device::cuda(0));
    ASSERT_TRUE(t && !t->device().is_cpu());
    ASSERT_OK(pub->publish(*writer, *msgs::ActionChunk::make(std::move(*t), 0.02)));
    ASSERT_TRUE(eventually([&] { return remote.queue->size() > 0 && plain.queue->size() > 0; }));
    while (remote.queue->pop() || plain.queue->pop()) {
    }
  }
  EXPECT_LE(shareable->exported.load() - exported_before, 1) << "each send made a new device block";
}

// The first device block another process hands over makes the receiving process import it
// (on a GPU, the device starting up there: seconds on a loaded machine), and every message
// behind it waits in the ring meanwhile. A drain with too little time says what is left; one
// with enough hands over all of it, the block and the small messages behind it.
class SlowImport final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t size) override { return inner.allocate(size); }
  Expected<BufferPtr> allocate_on(int index, std::size_t size) override { return inner.allocate_on(index, size); }
  Device device() const override { return inner.device(); }
  Status copy(std::byte* dst, const std::byte* src, std::size_t bytes, CopyKind kind) override {
    return inner.copy(dst, src, bytes, kind);
  }
  Expected<Shareable> allocate_shareable(int index, std::size_t size) override {
    return inner.allocate_shareable(index, size);
  }
  Expected<BufferPtr> import_shareable(int fd, std::size_t size, int index) override {
    importing = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
    return inner.import_shareable(fd, size, index);
  }
  testing::MemfdDeviceAllocator inner;
  std::atomic<int> delay_ms{0};
  std::atomic<bool> importing{false};
};

TEST_F(DeviceTensors, ADrainWaitsForASlowFirstImportAndTheMessagesBehindIt) {
  auto slow = std::make_shared<SlowImport>();
  register_allocator(DeviceType::kCuda, slow);
  const auto domain = unique_domain("slowimport");
  auto pub = make_bus(domain);
  auto other = make_bus(domain);
  auto prefix_writer = *pub->advertise("/prefix", "ActionChunk", "backbone");
  auto small_writer = *pub->advertise("/small", "ActionChunk", "robot");
  Collector prefix("/prefix"), small("/small", QoS::keep_last(1000));
  ASSERT_OK(other->attach(prefix.queue));
  ASSERT_OK(other->attach(small.queue));
  // Warm-up chunks hold 0, the ones published behind the slow import 1: a warm-up chunk still on
  // its way when the queue was emptied (seen under a 16-job load) is not counted as one of them.
  const auto small_chunk = [](float value) {
    Tensor t = *Tensor::empty(DType::kF32, Shape{2, 4});
    std::fill(t.data<float>(), t.data<float>() + t.numel(), value);
    return *msgs::ActionChunk::make(std::move(t), 0.02);
  };
  // Both subscriptions seen by the publisher: small messages arrive, a device loan is a block of
  // the shared pool (not yet published).
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(*small_writer, small_chunk(0.0f)));
    return small.queue->size() > 0;
  }));
  Tensor block;
  ASSERT_TRUE(eventually([&] {
    auto t = pub->loan_for("/prefix", DType::kF32, Shape{6, 4}, Device::cuda(0));
    if (!t || t->device().is_cpu() || !t->buffer()->shm()) return false;
    block = std::move(*t);
    return true;
  }));
  while (small.queue->pop()) {
  }
  slow->delay_ms = 1500;
  ASSERT_OK(pub->publish(*prefix_writer, *msgs::ActionChunk::make(std::move(block), 0.02)));
  constexpr int kBehind = 200;
  for (int i = 0; i < kBehind; ++i) ASSERT_OK(pub->publish(*small_writer, small_chunk(1.0f)));
  ASSERT_TRUE(eventually([&] { return slow->importing.load(); })) << "the receiving side never imported the block";
  const Status short_wait = other->drain_inbound(200'000'000);
  EXPECT_EQ(short_wait.code(), StatusCode::kTimeout) << short_wait.to_string();
  EXPECT_NE(short_wait.message().find("still being taken"), std::string::npos) << short_wait.message();
  ASSERT_OK(other->drain_inbound(10'000'000'000));
  EXPECT_EQ(prefix.queue->size(), 1u);
  int behind = 0;
  while (MessagePtr m = small.queue->pop()) behind += m->tensor("actions")->data<float>()[0] == 1.0f ? 1 : 0;
  EXPECT_EQ(behind, kBehind) << "messages behind the slow import were lost";
  EXPECT_GE(slow->inner.imported.load(), 1);
}

TEST_F(DeviceTensors, ASubscriptionThatAsksForTheHostGetsCountedHostCopies) {
  auto qos = parse_qos("keep_last:5,device:cpu");
  ASSERT_TRUE(qos.has_value()) << qos.status().to_string();
  EXPECT_TRUE(qos->host_tensors);
  EXPECT_EQ(qos->to_string(), "keep_last:5,device:cpu");
  EXPECT_FALSE(parse_qos("keep_last:5,device:gpu").has_value());
  auto bus = make_bus(unique_domain("devqos"));
  auto writer = *bus->advertise("/act", "ActionChunk", "head");
  auto waker = std::make_shared<Waker>();
  auto host = std::make_shared<SubscriptionQueue>("/act", "ActionChunk", *qos, "cpu_node", waker);
  Collector as_is("/act");
  ASSERT_OK(bus->attach(host));
  ASSERT_OK(bus->attach(as_is.queue));
  const int copies_before = device_->to_host.load();
  ASSERT_OK(bus->publish(*writer, *msgs::ActionChunk::make(device_tensor(6), 0.02)));
  EXPECT_EQ(device_->to_host.load(), copies_before);  // nothing copied at publish
  MessagePtr got = host->pop();
  ASSERT_NE(got, nullptr);
  expect_values(*got->tensor("actions"), 6);
  EXPECT_EQ(host->counters().device_copies.get(), 1u);
  MessagePtr raw = as_is.queue->pop();
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->tensor("actions")->device(), Device::cuda(0));
  EXPECT_EQ(as_is.queue->counters().device_copies.get(), 0u);
  // Without a backend for the device the message cannot be copied: counted as rejected.
  ASSERT_OK(bus->publish(*writer, *msgs::ActionChunk::make(device_tensor(2), 0.02)));
  register_allocator(DeviceType::kCuda, nullptr);
  EXPECT_EQ(host->pop(), nullptr);
  EXPECT_EQ(host->counters().rejected.get(), 1u);
}

// A CPU node must never be handed a device pointer by accident. A publisher that declares its
// device (as the backbone does for its engine's device outputs) is refused while a subscriber
// in this process takes neither device tensors nor host copies, and such a subscriber is
// refused when it attaches after the declaration; each error names the node and the QoS fix.
TEST_F(DeviceTensors, ACpuSubscriberThatDidNotAskIsRefusedAtSetUp) {
  auto bus = make_bus(unique_domain("devrefuse"));
  auto writer = *bus->advertise("/prefix", "ActionChunk", "backbone");
  ASSERT_OK(bus->publishes_on(*writer, Device::cuda(0)));
  Collector plain("/prefix", QoS::keep_last(1), "my_cpu_node");
  const Status refused = bus->attach(plain.queue);
  ASSERT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.to_string();
  for (const char* part : {"my_cpu_node", "/prefix", "backbone", "cuda:0", "keep_latest,device:cpu"}) {
    EXPECT_NE(refused.message().find(part), std::string::npos) << part << " in: " << refused.message();
  }
  Collector host("/prefix", QoS::keep_last(1).on_host(), "cpu_with_copies");
  Collector engine("/prefix", QoS::keep_last(1).taking_device_tensors(), "gpu_engine");
  EXPECT_OK(bus->attach(host.queue));
  EXPECT_OK(bus->attach(engine.queue));

  // The other order: the subscriber first, then the declaration.
  auto bus2 = make_bus(unique_domain("devrefuse2"));
  Collector early("/prefix", QoS::keep_last(1), "my_cpu_node");
  ASSERT_OK(bus2->attach(early.queue));
  auto w2 = *bus2->advertise("/prefix", "ActionChunk", "backbone");
  const Status late = bus2->publishes_on(*w2, Device::cuda(0));
  ASSERT_EQ(late.code(), StatusCode::kFailedPrecondition) << late.to_string();
  EXPECT_NE(late.message().find("my_cpu_node"), std::string::npos) << late.message();
  EXPECT_TRUE(w2->device().is_cpu());  // not declared
  bus2->detach(early.queue);
  EXPECT_OK(bus2->publishes_on(*w2, Device::cuda(0)));
  EXPECT_EQ(w2->device(), Device::cuda(0));
}

// The net under the set-up check: a device tensor from a publisher that never declared its
// device reaches a subscriber that did not ask for one as nothing at all, counted as rejected.
TEST_F(DeviceTensors, AnUndeclaredDeviceTensorIsRejectedNotHandedOver) {
  auto bus = make_bus(unique_domain("devnet"));
  auto writer = *bus->advertise("/act", "ActionChunk", "head");
  Collector plain("/act", QoS::keep_last(4), "cpu_node");
  ASSERT_OK(bus->attach(plain.queue));
  ASSERT_OK(bus->publish(*writer, *msgs::ActionChunk::make(device_tensor(3), 0.02)));
  Tensor host = *Tensor::empty(DType::kF32, Shape{3, 4});
  ASSERT_OK(bus->publish(*writer, *msgs::ActionChunk::make(std::move(host), 0.02)));
  MessagePtr got = plain.queue->pop();
  ASSERT_NE(got, nullptr);  // the host message behind it still arrives
  EXPECT_TRUE(got->tensor("actions")->device().is_cpu());
  EXPECT_EQ(plain.queue->pop(), nullptr);
  EXPECT_EQ(plain.queue->counters().rejected.get(), 1u);
}

TEST_F(DeviceTensors, RecordingsHoldHostBytesAndCountTheCopies) {
  auto bus = make_bus(unique_domain("devrec"));
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / ("devrec_" + std::to_string(::getpid()) + ".mcap")).string();
  bag::RecorderOptions o;
  o.output = path;
  o.topics = {"/act"};
  auto rec = bag::Recorder::start(*bus, o);
  ASSERT_TRUE(rec.has_value()) << rec.status().to_string();
  auto writer = *bus->advertise("/act", "ActionChunk", "head");
  for (int i = 0; i < 3; ++i) ASSERT_OK(bus->publish(*writer, *msgs::ActionChunk::make(device_tensor(4), 0.02)));
  ASSERT_OK((*rec)->stop());
  const auto st = (*rec)->stats();
  EXPECT_EQ(st.written, 3u);
  EXPECT_EQ(st.device_copies, 3u);
  auto reader = std::move(*mcap::McapReader::open(path));
  int seen = 0;
  ASSERT_OK(reader->for_each_message([&](const mcap::MessageView& v) {
    auto m = bag::decode_record(v);
    EXPECT_TRUE(m.has_value()) << m.status().to_string();
    if (m) expect_values(*m->tensor("actions"), 4);
    ++seen;
    return Status::ok();
  }));
  EXPECT_EQ(seen, 3);
  std::filesystem::remove(path);
}

// Stand-in for a backend's fence: the "device work" is a thread that writes the tensor's final
// values after a delay; wait() returns once it has (or its error), wait_on() is counted. The
// thread writes through a pointer (the tensor, which owns this fence, outlives the write).
class StandInFence final : public ReadyFence {
 public:
  StandInFence(const Tensor& t, std::chrono::milliseconds delay, Status outcome = Status::ok())
      : outcome_(std::move(outcome)), worker_([this, p = t.data<float>(), n = t.numel(), delay] {
          std::this_thread::sleep_for(delay);
          for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i) * 0.5f;
          std::lock_guard lock(mu_);
          finished_ = true;
          cv_.notify_all();
        }) {}
  ~StandInFence() override { worker_.join(); }
  Device device() const override { return Device::cuda(0); }
  Status wait() override {
    waits.fetch_add(1);
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_; });
    return outcome_;
  }
  Status wait_on(void*) override {
    stream_waits.fetch_add(1);
    return Status::ok();
  }
  bool done() override {
    std::lock_guard lock(mu_);
    return finished_;
  }
  std::atomic<int> waits{0}, stream_waits{0};

 private:
  Status outcome_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread worker_;
};

// Across processes: a device block of the pool published while its producer's work still writes it
// (a fence on its buffer, the block armed) goes out at once; the reader in the other process gets a
// fence of its own and reads the bytes once the producer's process signals the block written (what
// the cuda backend's fence_output and signalling thread do).
TEST_F(DeviceTensors, AnArmedBlockGoesToAnotherProcessAtOnceAndIsReadAfterTheSignal) {
  auto shareable = std::make_shared<testing::MemfdDeviceAllocator>();
  register_allocator(DeviceType::kCuda, shareable);
  const auto domain = unique_domain("devarmed");
  auto pub = make_bus(domain);
  auto other = make_bus(domain);
  auto writer = *pub->advertise("/act", "ActionChunk", "head");
  Collector remote("/act");
  ASSERT_OK(other->attach(remote.queue));
  // Until the publisher sees the other process's subscription, its loans are not pool blocks.
  ASSERT_TRUE(eventually([&] {
    auto t = pub->loan_for("/act", DType::kF32, Shape{6, 4}, Device::cuda(0));
    return t && t->buffer()->shm().has_value();
  }));
  Tensor t = *pub->loan_for("/act", DType::kF32, Shape{6, 4}, Device::cuda(0));
  ASSERT_NE(t.buffer()->remote_ready(), nullptr);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = -1.0f;  // the block's old bytes
  auto fence = std::make_shared<StandInFence>(t, std::chrono::milliseconds(60));
  t.buffer()->set_ready(fence);
  t.buffer()->remote_ready()->arm();
  const BufferPtr block = t.buffer();
  ASSERT_OK(pub->publish(*writer, *msgs::ActionChunk::make(std::move(t), 0.02)));
  EXPECT_EQ(fence->waits.load(), 0) << "the publisher waited for the work instead of sending at once";
  // The producer's process signals once its work is done.
  std::thread signaller([block, fence] { block->remote_ready()->signal(fence->wait().is_ok()); });
  ASSERT_TRUE(eventually([&] { return remote.queue->size() > 0; }));
  MessagePtr got = remote.queue->pop();
  ASSERT_NE(got, nullptr);
  const Tensor& a = *got->tensor("actions");
  ASSERT_NE(a.buffer()->ready(), nullptr) << "the reader got no fence for a block not yet written";
  auto host = a.to(Device::cpu());  // waits for the signal
  ASSERT_TRUE(host.has_value()) << host.status().to_string();
  expect_values(*host, 6);
  EXPECT_TRUE(a.buffer()->ready()->done());
  signaller.join();
  EXPECT_EQ(fence->waits.load(), 1);  // the signaller's wait only
  EXPECT_GE(YAML::Load(other->stats_yaml())["shm_mapper"]["awaited_producer"].as<std::uint64_t>(0), 1u);
}

// A device tensor published before its producer's queued work finished (a fence on its buffer):
// a subscriber in this process gets the buffer with the fence (its engine waits on its own
// stream); everything that reads the bytes on the host waits first: Tensor::to, the host copy
// for another process, the recorder. A failed fence is an error naming the device work.
TEST_F(DeviceTensors, HostReadersWaitForTheProducersQueuedWork) {
  const auto domain = unique_domain("devfence");
  auto pub = make_bus(domain);
  auto other = make_bus(domain);
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / ("devfence_" + std::to_string(::getpid()) + ".mcap")).string();
  bag::RecorderOptions ro;
  ro.output = path;
  ro.topics = {"/act"};
  auto rec = bag::Recorder::start(*pub, ro);
  ASSERT_TRUE(rec.has_value()) << rec.status().to_string();
  auto writer = *pub->advertise("/act", "ActionChunk", "head");
  Collector local("/act"), remote("/act");
  ASSERT_OK(pub->attach(local.queue));
  ASSERT_OK(other->attach(remote.queue));
  // Until the other bus is connected, with finished tensors.
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(*writer, *msgs::ActionChunk::make(device_tensor(3), 0.02)));
    return remote.queue->size() > 0;
  }));
  while (remote.queue->pop()) {
  }
  while (local.queue->pop()) {
  }

  // Zeros now; the values land 100 ms later, on the "device".
  Tensor dev = *Tensor::empty(DType::kF32, Shape{6, 4}, Device::cuda(0));
  std::memset(dev.raw_data(), 0, dev.nbytes());
  auto fence = std::make_shared<StandInFence>(dev, std::chrono::milliseconds(100));
  dev.buffer()->set_ready(fence);
  ASSERT_OK(pub->publish(*writer, *msgs::ActionChunk::make(dev, 0.02)));
  MessagePtr mine;
  while (MessagePtr m = local.queue->pop()) mine = m;  // the newest: any warm-up one came before
  ASSERT_NE(mine, nullptr);
  ASSERT_EQ(mine->tensor("actions")->shape()[0], 6);
  EXPECT_EQ(mine->tensor("actions")->buffer()->ready(), fence);  // handed over with its fence
  auto host = mine->tensor("actions")->to(Device::cpu());
  ASSERT_TRUE(host.has_value()) << host.status().to_string();
  expect_values(*host, 6);
  // The other bus's copy (after any late warm-up message).
  MessagePtr theirs;
  ASSERT_TRUE(eventually([&] {
    while (MessagePtr m = remote.queue->pop()) {
      if (m->tensor("actions")->shape()[0] == 6) theirs = m;
    }
    return theirs != nullptr;
  }));
  expect_values(*theirs->tensor("actions"), 6);
  ASSERT_OK((*rec)->stop());
  EXPECT_GE(fence->waits.load(), 2);  // Tensor::to, the copy for the other process (and the recorder's)
  {
    auto reader = std::move(*mcap::McapReader::open(path));
    int last_rows = 0;
    ASSERT_OK(reader->for_each_message([&](const mcap::MessageView& v) {
      auto m = bag::decode_record(v);
      EXPECT_TRUE(m.has_value()) << m.status().to_string();
      if (m) {
        last_rows = static_cast<int>(m->tensor("actions")->shape()[0]);
        if (last_rows == 6) expect_values(*m->tensor("actions"), 6);
      }
      return Status::ok();
    }));
    EXPECT_EQ(last_rows, 6);
  }
  std::filesystem::remove(path);

  // Work that failed: the host copy says so instead of handing out unwritten bytes.
  Tensor bad = *Tensor::empty(DType::kF32, Shape{2, 4}, Device::cuda(0));
  bad.buffer()->set_ready(std::make_shared<StandInFence>(bad, std::chrono::milliseconds(0),
                                                         internal_error("an illegal memory access was encountered")));
  auto refused = bad.to(Device::cpu());
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("waiting for the cuda:0 work"), std::string::npos)
      << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("illegal memory access"), std::string::npos);
}

}  // namespace
}  // namespace edgevla
