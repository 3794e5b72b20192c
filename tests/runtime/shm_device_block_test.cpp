// Device blocks of the shared-memory pool, end to end on a machine without a GPU: a stand-in
// allocator registered for "cuda" (tests/support/memfd_device.hpp) exports host memory as a
// memfd descriptor, the contract of the cuda backend's VMM allocator, so everything around the
// device memory runs here: the header-only segment, the owner's FdServer,
// the receiver's one import per block, holder slots, recycling after every reader let go, a
// killed reader's hold cleared, and the errors. The same path on a real GPU is
// tests/gpu/cuda_shareable_test.cpp plus the GPU bus tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <thread>

#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "tests/support/memfd_device.hpp"

namespace edgevla::shm {
namespace {

using testing::MemfdDeviceAllocator;

// An allocator that cannot export memory (the core default for allocate_shareable).
class PlainDeviceAllocator final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t size) override { return Buffer::allocate_heap(size); }
  Device device() const override { return Device::cuda(0); }
};

std::string prefix(const std::string& tag) {
  static int n = 0;
  return segment_prefix() + std::to_string(::getpid()) + ".d" + tag + std::to_string(++n);
}

class ShmDeviceBlock : public ::testing::Test {
 protected:
  void SetUp() override {
    alloc_ = std::make_shared<MemfdDeviceAllocator>();
    register_allocator(DeviceType::kCuda, alloc_);
  }
  std::shared_ptr<MemfdDeviceAllocator> alloc_;
};

void fill(const BufferPtr& b, std::uint8_t seed) {
  for (std::size_t i = 0; i < b->size(); ++i) b->data()[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
}

bool same_pattern(const std::byte* p, std::size_t n, std::uint8_t seed) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<std::byte>((i * 131 + seed) & 0xff)) return false;
  }
  return true;
}

// Runs `f` in a child process; its exit code (0: every check there passed).
template <class F>
int in_child(F f) {
  const pid_t child = ::fork();
  if (child == 0) _exit(f());
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

TEST_F(ShmDeviceBlock, AnotherProcessReadsTheDeviceBytesInPlaceImportingEachBlockOnce) {
  auto pool = Pool::create({prefix("read"), 64 << 20});
  auto block = pool->allocate_on(Device::cuda(0), 1 << 20);
  ASSERT_TRUE(block) << block.status().to_string();
  const BufferPtr b = *block;
  EXPECT_EQ(b->kind(), BufferKind::kDevice);
  EXPECT_EQ(b->device(), Device::cuda(0));
  ASSERT_TRUE(b->shm().has_value());
  EXPECT_TRUE(pool->owns(*b));
  fill(b, 7);
  // Two tensors in the block, sent in one message to one pipeline receiver.
  ShmLocation whole = *b->shm();
  ShmLocation second = whole;
  second.offset += 4096;
  second.size = 1000;
  pool->mark_sent(*b, {1, 0}, "prefix");
  const int rc = in_child([&] {
    Mapper m;
    auto a = m.acquire(whole);
    auto c = m.acquire(second, {false, /*take_pending=*/false});
    if (!a || !c) return 1;
    if ((*a)->kind() != BufferKind::kDevice || (*a)->device() != Device::cuda(0)) return 2;
    if ((*a)->writable()) return 3;
    if (!same_pattern((*a)->data(), whole.size, 7)) return 4;
    if ((*c)->data() != (*a)->data() + 4096) return 5;  // the same mapping, not a second import
    if (m.stats().device_imports != 1 || alloc_->imported != 1) return 6;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(alloc_->exported, 1);
}

TEST_F(ShmDeviceBlock, IsRecycledOnlyAfterEveryReaderLetGoAndKeepsItsDeviceMemory) {
  auto pool = Pool::create({prefix("recycle"), 64 << 20});
  ShmLocation loc;
  const std::byte* device_bytes = nullptr;
  {
    auto b = *pool->allocate_on(Device::cuda(0), 256 << 10);
    loc = *b->shm();
    device_bytes = b->data();
    fill(b, 3);
    pool->mark_sent(*b, {1, 0});
  }
  // Nobody has read it: a new allocation of the same size gets another block.
  auto other = pool->allocate_on(Device::cuda(0), 256 << 10);
  ASSERT_TRUE(other);
  EXPECT_NE((*other)->shm()->segment, loc.segment);
  ASSERT_EQ(in_child([&] {
              Mapper m;
              auto a = m.acquire(loc);
              return a && same_pattern((*a)->data(), loc.size, 3) ? 0 : 1;
            }),
            0);
  // Read and let go: the block comes back, with the same device memory and a new generation.
  auto again = pool->allocate_on(Device::cuda(0), 256 << 10);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->shm()->segment, loc.segment);
  EXPECT_EQ((*again)->data(), device_bytes);
  EXPECT_EQ((*again)->shm()->generation, loc.generation + 1);
  EXPECT_EQ(pool->stats().recycled, 1u);
  EXPECT_EQ(alloc_->exported, 2);  // two blocks, each exported once
  // Host and device blocks of one size class are never mixed.
  auto host = pool->allocate(256 << 10);
  ASSERT_TRUE(host);
  EXPECT_EQ((*host)->kind(), BufferKind::kSharedMemory);
}

TEST_F(ShmDeviceBlock, AReaderKilledWhileHoldingDoesNotPinTheBlock) {
  auto pool = Pool::create({prefix("kill"), 64 << 20});
  ShmLocation loc;
  {
    auto b = *pool->allocate_on(Device::cuda(0), 64 << 10);
    loc = *b->shm();
    pool->mark_sent(*b, {1, 0});
  }
  const int rc = in_child([&] {
    Mapper m;
    auto a = m.acquire(loc);
    if (!a) return 1;
    ::raise(SIGKILL);  // dies holding the slot: no release runs
    return 2;
  });
  EXPECT_EQ(rc, 128 + SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past the pool's sweep interval
  std::vector<BufferPtr> keep;
  bool reused = false;
  for (int i = 0; i < 3 && !reused; ++i) {
    keep.push_back(*pool->allocate_on(Device::cuda(0), 64 << 10));
    reused = keep.back()->shm()->segment == loc.segment;
  }
  EXPECT_TRUE(reused);
  EXPECT_GE(pool->stats().dead_holders_cleared, 1u);
}

TEST_F(ShmDeviceBlock, ABlockWhoseOwnerIsGoneIsOneClearError) {
  ShmLocation loc;
  {
    auto pool = Pool::create({prefix("gone"), 64 << 20});
    auto b = *pool->allocate_on(Device::cuda(0), 4096);
    loc = *b->shm();
  }  // the pool (and its segment and descriptor server) is gone
  Mapper m;
  auto a = m.acquire(loc);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound);
  EXPECT_NE(a.status().message().find(loc.segment), std::string::npos) << a.status().message();
}

TEST_F(ShmDeviceBlock, ADescriptorOutsideTheDeviceMemoryIsRejected) {
  auto pool = Pool::create({prefix("bad"), 64 << 20});
  auto b = *pool->allocate_on(Device::cuda(0), 8192);
  ShmLocation loc = *b->shm();
  loc.size = (*b->shm()).size + (1 << 20);
  Mapper m;
  auto a = m.acquire(loc);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(m.stats().bad_descriptor, 1u);
}

TEST_F(ShmDeviceBlock, ABlockOnADeviceTheReaderLacksIsOneClearCountedError) {
  auto pool = Pool::create({prefix("index"), 64 << 20});
  auto b = pool->allocate_on(Device::cuda(1), 4096);
  ASSERT_TRUE(b) << b.status().to_string();
  alloc_->missing_index = 1;
  Mapper m;
  auto a = m.acquire(*(*b)->shm());
  ASSERT_FALSE(a);
  EXPECT_NE(a.status().message().find("cuda:1"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find((*b)->shm()->segment), std::string::npos) << a.status().message();
  EXPECT_EQ(m.stats().bad_descriptor, 1u);
  // The block on cuda:0 of the same pool still works.
  alloc_->missing_index = -1;
  auto c = pool->allocate_on(Device::cuda(0), 4096);
  ASSERT_TRUE(c);
  EXPECT_TRUE(m.acquire(*(*c)->shm()));
}

TEST_F(ShmDeviceBlock, AnAllocatorThatCannotExportIsNamed) {
  register_allocator(DeviceType::kCuda, std::make_shared<PlainDeviceAllocator>());
  auto pool = Pool::create({prefix("plain"), 64 << 20});
  auto b = pool->allocate_on(Device::cuda(0), 4096);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition) << b.status().to_string();
  EXPECT_EQ(pool->stats().segments, 0u);
  // The host side of the pool is unaffected.
  EXPECT_TRUE(pool->allocate(4096));
}

}  // namespace
}  // namespace edgevla::shm
