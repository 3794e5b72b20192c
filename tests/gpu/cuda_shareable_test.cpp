// Device memory shared between processes by descriptor (the cuda allocator's
// allocate_shareable / import_shareable over shm::FdServer): a block written here is read,
// and written back, by another process that got its descriptor over the fd channel; a second
// mapping in this process sees the same bytes; bad descriptors are clear errors. And the bus's
// pool of device blocks on the real allocator: a reader process killed with SIGKILL while it
// holds a block leaves nothing pinned (the block is recycled, device memory does not grow).
// Without a CUDA device every test skips itself (the test main then reports "not run").
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <thread>
#include <string>
#include <vector>

#include "runtime/backends/backend.hpp"
#include "runtime/core/buffer.hpp"
#include "runtime/shm/fd_channel.hpp"
#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "tests/support/process.hpp"

namespace edgevla {
namespace {

std::vector<unsigned char> pattern(std::size_t n, unsigned char salt) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + salt) & 0xff);
  return v;
}

// The other process: started by the test below with the channel name and block size in its
// environment, before gtest runs. Maps the block, checks the owner's bytes, writes its own.
const int kChildResult = [] {
  const char* channel = std::getenv("EDGEVLA_TEST_SHAREABLE_CHANNEL");
  const char* size_text = std::getenv("EDGEVLA_TEST_SHAREABLE_SIZE");
  if (channel == nullptr || size_text == nullptr) return 0;
  const std::size_t size = std::strtoull(size_text, nullptr, 10);
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "child: %s\n", why.c_str());
    std::_Exit(2);
  };
  if (!backends::make_backend("cuda")) fail("cuda backend did not load");
  auto alloc = allocator_for(Device::cuda(0));
  if (!alloc) fail(alloc.status().to_string());
  auto fd = shm::request_fd(channel, "block");
  if (!fd) fail(fd.status().to_string());
  auto buf = (*alloc)->import_shareable(fd->get(), size, 0);
  if (!buf) fail(buf.status().to_string());
  std::vector<unsigned char> got(size);
  if (cudaMemcpy(got.data(), (*buf)->data(), size, cudaMemcpyDeviceToHost) != cudaSuccess) fail("read");
  if (got != pattern(size, 7)) fail("the owner's bytes differ");
  const auto mine = pattern(size, 99);
  if (cudaMemcpy((*buf)->data(), mine.data(), size, cudaMemcpyHostToDevice) != cudaSuccess) fail("write");
  if (cudaDeviceSynchronize() != cudaSuccess) fail("sync");
  std::_Exit(0);
}();

// The killed reader: maps the pool's device block named in its environment, checks the owner's
// bytes on the device, and dies holding it (SIGKILL: no release runs).
const int kReaderResult = [] {
  const char* segment = std::getenv("EDGEVLA_TEST_POOL_SEGMENT");
  const char* gen = std::getenv("EDGEVLA_TEST_POOL_GENERATION");
  const char* size_text = std::getenv("EDGEVLA_TEST_POOL_SIZE");
  if (segment == nullptr || gen == nullptr || size_text == nullptr) return 0;
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "reader: %s\n", why.c_str());
    std::_Exit(2);
  };
  const std::size_t size = std::strtoull(size_text, nullptr, 10);
  shm::Mapper m;
  ShmLocation loc{segment, shm::kDataOffset, size, static_cast<std::uint32_t>(std::strtoul(gen, nullptr, 10))};
  auto b = m.acquire(loc);  // loads the cuda backend's allocator on its own
  if (!b) fail(b.status().to_string());
  if ((*b)->device() != Device::cuda(0)) fail("not a device buffer");
  std::vector<unsigned char> got(size);
  if (cudaMemcpy(got.data(), (*b)->data(), size, cudaMemcpyDeviceToHost) != cudaSuccess) fail("read");
  if (got != pattern(size, 11)) fail("the owner's bytes differ");
  ::raise(SIGKILL);
  return 1;
}();


bool gpu_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

class CudaShareable : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (cudaGetDeviceCount found none)";
    ASSERT_TRUE(backends::make_backend("cuda").has_value());
    auto a = allocator_for(Device::cuda(0));
    ASSERT_TRUE(a.has_value()) << a.status().to_string();
    alloc_ = *a;
  }
  Allocator* alloc_ = nullptr;
};

TEST_F(CudaShareable, AnotherProcessReadsAndWritesTheBlock) {
  const std::size_t want = (std::size_t{3} << 20) + 5;
  auto block = alloc_->allocate_shareable(0, want);
  ASSERT_TRUE(block.has_value()) << block.status().to_string();
  EXPECT_GE(block->size, want);
  EXPECT_EQ(block->buffer->size(), want);
  EXPECT_EQ(block->buffer->device(), Device::cuda(0));
  const std::size_t n = block->size;
  // Write through the owner's mapping (the whole rounded size: the importer maps it all).
  std::vector<unsigned char> rounded_pattern = pattern(n, 7);
  ASSERT_EQ(cudaMemcpy(block->buffer->data(), rounded_pattern.data(), want, cudaMemcpyHostToDevice), cudaSuccess);
  // The tail past `want` is the owner's too; fill it through a second mapping below.

  // A second mapping in this process: the same memory at another address.
  auto again = alloc_->import_shareable(block->fd, n, 0);
  ASSERT_TRUE(again.has_value()) << again.status().to_string();
  EXPECT_NE((*again)->data(), block->buffer->data());
  ASSERT_EQ(cudaMemcpy((*again)->data() + want, rounded_pattern.data() + want, n - want, cudaMemcpyHostToDevice),
            cudaSuccess);
  std::vector<unsigned char> seen(n);
  ASSERT_EQ(cudaMemcpy(seen.data(), (*again)->data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(seen == rounded_pattern);

  // Another process, through the fd channel.
  const std::string channel = "edgevla.test.shareable." + std::to_string(::getpid());
  const int fd = block->fd;
  auto server = shm::FdServer::start(channel, [fd](std::string_view key, const shm::FdPeer&) -> Expected<shm::UniqueFd> {
    if (key != "block") return not_found("no such block");
    return shm::duplicate_fd(fd);
  });
  ASSERT_TRUE(server.has_value()) << server.status().to_string();
  const pid_t child =
      testing::spawn_self({"EDGEVLA_TEST_SHAREABLE_CHANNEL=" + channel, "EDGEVLA_TEST_SHAREABLE_SIZE=" + std::to_string(n)});
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ((*server)->served(), 1u);
  // The child has exited; its writes are here, in both of this process's mappings.
  ASSERT_EQ(cudaMemcpy(seen.data(), block->buffer->data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(seen == pattern(n, 99));
}

TEST_F(CudaShareable, AReaderKilledHoldingAPoolDeviceBlockLeavesNothingPinned) {
  auto pool = shm::Pool::create({shm::segment_prefix() + std::to_string(::getpid()) + ".gpukill", std::size_t{1} << 30});
  const std::size_t size = std::size_t{64} << 20;
  const auto bytes = pattern(size, 11);
  std::string first_segment;
  std::size_t free_after_first = 0, total = 0;
  for (int round = 0; round < 6; ++round) {
    std::string seg;
    std::uint32_t gen = 0;
    {
      auto b = pool->allocate_on(Device::cuda(0), size);
      ASSERT_TRUE(b.has_value()) << b.status().to_string();
      ASSERT_EQ(cudaMemcpy((*b)->data(), bytes.data(), size, cudaMemcpyHostToDevice), cudaSuccess);
      seg = (*b)->shm()->segment;
      gen = (*b)->shm()->generation;
      pool->mark_sent(**b, {1, 0}, "kv");
    }
    if (round == 0) first_segment = seg;
    EXPECT_EQ(seg, first_segment) << "round " << round << ": the killed reader's block was not recycled";
    const pid_t child = testing::spawn_self({"EDGEVLA_TEST_POOL_SEGMENT=" + seg,
                                    "EDGEVLA_TEST_POOL_GENERATION=" + std::to_string(gen),
                                    "EDGEVLA_TEST_POOL_SIZE=" + std::to_string(size)});
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "reader status " << status;
    std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past the pool's sweep interval
    std::size_t free_now = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_now, &total), cudaSuccess);
    if (round == 0) free_after_first = free_now;
    // Nothing grows round after round: neither this pool nor what the killed readers mapped.
    EXPECT_GE(free_now + (std::size_t{8} << 20), free_after_first) << "round " << round;
  }
  EXPECT_GE(pool->stats().dead_holders_cleared, 5u);
  EXPECT_EQ(pool->stats().segments, 1u);
}

TEST_F(CudaShareable, BadDescriptorsAreClearErrors) {
  auto g = alloc_->allocate_shareable(0, 1);
  ASSERT_TRUE(g.has_value()) << g.status().to_string();
  const std::size_t unit = g->size;
  EXPECT_EQ(alloc_->import_shareable(-1, unit, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(alloc_->import_shareable(g->fd, unit + 1, 0).status().code(), StatusCode::kInvalidArgument);
  // A descriptor that is not a device block (a memfd).
  const int mfd = ::memfd_create("not-a-device-block", MFD_CLOEXEC);
  ASSERT_GE(mfd, 0);
  ASSERT_EQ(::ftruncate(mfd, static_cast<off_t>(unit)), 0);
  auto wrong = alloc_->import_shareable(mfd, unit, 0);
  ::close(mfd);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.status().message().find("not a shared device block"), std::string::npos) << wrong.status().to_string();
  EXPECT_EQ(alloc_->allocate_shareable(-3, 64).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace edgevla
