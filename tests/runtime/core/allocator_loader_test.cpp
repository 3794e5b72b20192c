// The allocator loader (runtime/core/buffer.hpp) asked for one device by two threads at once:
// a bus thread starting the device ahead of its first block while a receive thread imports
// one. The second caller waits for the load under way instead of finding no allocator yet.
// Its own binary: the loader runs once per device type and process.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/core/buffer.hpp"

namespace edgevla {
namespace {

class Registered final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t) override { return failed_precondition("test allocator"); }
  Device device() const override { return Device::cuda(0); }
};

TEST(AllocatorLoader, ASecondCallerWaitsForTheLoadUnderWay) {
  std::atomic<int> loads{0};
  std::atomic<bool> loading{false};
  register_allocator(DeviceType::kCuda, nullptr);
  register_allocator_loader([&](DeviceType type) {
    if (type != DeviceType::kCuda) return;
    ++loads;
    loading = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a plugin and a device starting
    register_allocator(DeviceType::kCuda, std::make_shared<Registered>());
  });
  Expected<Allocator*> first = not_found("not asked"), second = not_found("not asked");
  std::thread a([&] { first = allocator_for(Device::cuda(0)); });
  while (!loading) std::this_thread::yield();
  std::thread b([&] { second = allocator_for(Device::cuda(0)); });  // while the load sleeps
  a.join();
  b.join();
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  ASSERT_TRUE(second.has_value()) << "the second caller did not wait for the load: " << second.status().to_string();
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(loads.load(), 1) << "the loader runs once per device type";
  register_allocator(DeviceType::kCuda, nullptr);
}

}  // namespace
}  // namespace edgevla
