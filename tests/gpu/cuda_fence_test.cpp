// Ready fences of the cuda backend (runtime/backends/cuda/fence.hpp): a buffer published while
// its producer's stream still writes it carries a CudaFence; an engine's stream waits for it on
// the device (wait_for_inputs, what every cuda engine calls before reading its inputs) and a
// host copy (Tensor::to) waits on the host. The producer here is a stream kept busy for a few
// milliseconds by device-to-device copies before it writes the tensor, so a reader that did not
// wait would see the old bytes. Across processes: a block of the bus's pool published with its
// write still queued is armed, and a reader in another process waits for the producer's signal
// (runtime/shm/ready.hpp). Without a CUDA device every test skips itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/fence.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "runtime/shm/segment.hpp"
#include "tests/support/process.hpp"

namespace edgevla::backends::cuda {
namespace {

constexpr std::size_t kArmedBytes = std::size_t{8} << 20;
unsigned char armed_byte(std::size_t i) { return static_cast<unsigned char>((i * 29 + 5) & 0xff); }

// The reader process of the cross-process test: acquires the armed device block named in its
// environment, which must not be written yet, waits for the producer's signal, checks the bytes.
const int kArmedReader = [] {
  const char* segment = std::getenv("EDGEVLA_TEST_ARMED_SEGMENT");
  const char* gen = std::getenv("EDGEVLA_TEST_ARMED_GENERATION");
  if (segment == nullptr || gen == nullptr) return 0;
  auto fail = [](int code, const std::string& why) {
    std::fprintf(stderr, "reader: %s\n", why.c_str());
    std::_Exit(code);
  };
  shm::Mapper m;
  auto b = m.acquire(ShmLocation{segment, shm::kDataOffset, kArmedBytes, static_cast<std::uint32_t>(std::strtoul(gen, nullptr, 10))});
  if (!b) fail(2, b.status().to_string());
  if ((*b)->ready() == nullptr) fail(3, "the block came without a fence although its producer had not signalled");
  if ((*b)->ready()->done()) fail(4, "the fence was done before the producer's write ran");
  Tensor t = *Tensor::from_buffer(*b, DType::kU8, Shape{static_cast<std::int64_t>(kArmedBytes)});
  auto host = t.to(Device::cpu());  // waits for the producer's signal
  if (!host) fail(5, host.status().to_string());
  const auto* p = host->data<std::uint8_t>();
  for (std::size_t i = 0; i < kArmedBytes; ++i) {
    if (p[i] != armed_byte(i)) fail(6, "byte " + std::to_string(i) + " is not the producer's");
  }
  std::_Exit(0);
}();


#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

bool gpu_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

class CudaFenceTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kValues = std::int64_t{1} << 20;   // 4 MB of f32
  static constexpr std::size_t kBusyBytes = std::size_t{256} << 20;  // each busy copy

  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (cudaGetDeviceCount found none)";
    ASSERT_TRUE(backends::make_backend("cuda").has_value());  // registers the device allocator
    ASSERT_CUDA(cudaSetDevice(0));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&producer_, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&consumer_, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaMalloc(&busy_a_, kBusyBytes));
    ASSERT_CUDA(cudaMalloc(&busy_b_, kBusyBytes));
    ASSERT_CUDA(cudaMallocHost(&pattern_, kValues * sizeof(float)));
    for (std::int64_t i = 0; i < kValues; ++i) pattern_[i] = static_cast<float>(i % 4096) * 0.5f;
  }
  void TearDown() override {
    release_ = true;
    if (producer_ != nullptr) {
      cudaStreamSynchronize(producer_);
      cudaStreamDestroy(producer_);
    }
    if (consumer_ != nullptr) cudaStreamDestroy(consumer_);
    cudaFree(busy_a_);
    cudaFree(busy_b_);
    cudaFreeHost(pattern_);
  }

  // A zeroed device tensor that the producer stream fills with the pattern after ~2-5 ms of
  // other work, with the fence of that write on its buffer.
  Tensor written_later(std::shared_ptr<CudaFence>* fence_out = nullptr) {
    Tensor t = *Tensor::empty(DType::kF32, Shape{kValues}, Device::cuda(0));
    EXPECT_EQ(cudaMemset(t.raw_data(), 0, t.nbytes()), cudaSuccess);
    for (int i = 0; i < 16; ++i) {
      EXPECT_EQ(cudaMemcpyAsync(busy_b_, busy_a_, kBusyBytes, cudaMemcpyDeviceToDevice, producer_), cudaSuccess);
    }
    EXPECT_EQ(cudaMemcpyAsync(t.raw_data(), pattern_, t.nbytes(), cudaMemcpyHostToDevice, producer_), cudaSuccess);
    auto fence = CudaFence::record(producer_, 0);
    EXPECT_TRUE(fence.has_value()) << fence.status().to_string();
    t.buffer()->set_ready(*fence);
    if (fence_out != nullptr) *fence_out = *fence;
    return t;
  }

  // Holds the producer stream's later work back until release_ is set (a host function on it that
  // waits; TearDown sets it too, so a failed assertion does not leave the stream held).
  cudaError_t hold_producer() {
    return cudaLaunchHostFunc(
        producer_,
        [](void* flag) {
          while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        &release_);
  }

  void expect_pattern(const std::vector<float>& got) {
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kValues));
    for (std::int64_t i = 0; i < kValues; i += 997) ASSERT_EQ(got[static_cast<std::size_t>(i)], pattern_[i]) << i;
    ASSERT_EQ(got.back(), pattern_[kValues - 1]);
  }

  cudaStream_t producer_ = nullptr, consumer_ = nullptr;
  std::atomic<bool> release_{false};
  void* busy_a_ = nullptr;
  void* busy_b_ = nullptr;
  float* pattern_ = nullptr;
};

// The consumer stream, idle, would copy at once; waiting on the fence it copies after the write.
TEST_F(CudaFenceTest, AnEngineStreamWaitsOnTheDeviceForAFencedInput) {
  std::shared_ptr<CudaFence> fence;
  Tensor in = written_later(&fence);
  EXPECT_FALSE(fence->done());  // the producer has milliseconds of copies queued before the write
  Tensor out = *Tensor::empty(DType::kF32, Shape{kValues}, Device::cuda(0));
  auto wait = wait_for_inputs({&in, nullptr}, consumer_, 0);
  ASSERT_TRUE(wait.has_value()) << wait.status().to_string();
  EXPECT_EQ(wait->waits(), 1u);
  ASSERT_CUDA(cudaMemcpyAsync(out.raw_data(), in.raw_data(), in.nbytes(), cudaMemcpyDeviceToDevice, consumer_));
  std::vector<float> got(static_cast<std::size_t>(kValues));
  ASSERT_CUDA(cudaMemcpyAsync(got.data(), out.raw_data(), out.nbytes(), cudaMemcpyDeviceToHost, consumer_));
  ASSERT_CUDA(cudaStreamSynchronize(consumer_));
  expect_pattern(got);
  EXPECT_TRUE(fence->done());
  // The consumer stood waiting for most of the producer's ~2-5 ms of copies.
  auto waited = wait->waited_ms();
  ASSERT_TRUE(waited.has_value()) << waited.status().to_string();
  EXPECT_GT(*waited, 0.5) << "ms the consumer stream waited";
  EXPECT_LT(*waited, 1000.0);
  // An input without a fence is not waited for, and no wait is measured.
  Tensor plain = *Tensor::empty(DType::kF32, Shape{4}, Device::cuda(0));
  auto none = wait_for_inputs({&plain}, consumer_, 0);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->waits(), 0u);
  EXPECT_EQ(*none->waited_ms(), 0.0);
}

// A host copy of a fenced device tensor waits on the host for the write.
TEST_F(CudaFenceTest, AHostCopyWaitsForTheWrite) {
  std::shared_ptr<CudaFence> fence;
  Tensor in = written_later(&fence);
  EXPECT_FALSE(fence->done());
  auto host = in.to(Device::cpu());
  ASSERT_TRUE(host.has_value()) << host.status().to_string();
  EXPECT_TRUE(fence->done());
  expect_pattern(std::vector<float>(host->data<float>(), host->data<float>() + kValues));
}

// A device block of the bus's pool, fenced and sent while the producer's stream still holds its
// write back (a host function that waits until the reader holds the block): the reader in another
// process gets a fence, waits, and reads the producer's bytes; the producer's host never waited.
TEST_F(CudaFenceTest, AReaderInAnotherProcessWaitsForAnArmedDeviceBlock) {
  auto pool = shm::Pool::create({shm::segment_prefix() + std::to_string(::getpid()) + ".armed", std::size_t{1} << 30});
  auto b = pool->allocate_on(Device::cuda(0), kArmedBytes);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  ASSERT_CUDA(cudaMemset((*b)->data(), 0, kArmedBytes));
  ASSERT_CUDA(cudaDeviceSynchronize());
  unsigned char* bytes = nullptr;
  ASSERT_CUDA(cudaMallocHost(&bytes, kArmedBytes));
  for (std::size_t i = 0; i < kArmedBytes; ++i) bytes[i] = armed_byte(i);
  ASSERT_CUDA(hold_producer());
  ASSERT_CUDA(cudaMemcpyAsync((*b)->data(), bytes, kArmedBytes, cudaMemcpyHostToDevice, producer_));
  Tensor t = *Tensor::from_buffer(*b, DType::kU8, Shape{static_cast<std::int64_t>(kArmedBytes)});
  ASSERT_TRUE(may_fence(t, 0));
  ASSERT_TRUE(fence_output(t, producer_, 0).is_ok());
  EXPECT_TRUE((*b)->remote_ready()->armed());
  pool->mark_sent(**b, {1, 0}, "kv");
  const ShmLocation loc = *(*b)->shm();
  const pid_t child = testing::spawn_self({"EDGEVLA_TEST_ARMED_SEGMENT=" + loc.segment,
                                  "EDGEVLA_TEST_ARMED_GENERATION=" + std::to_string(loc.generation)});
  ASSERT_GT(child, 0);
  // Hold the write back until the reader holds the block (then it is waiting, or about to).
  auto header = shm::Segment::open(loc.segment);
  ASSERT_TRUE(header.has_value()) << header.status().to_string();
  for (int i = 0; i < 30000 && !(*header)->any_holder(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE((*header)->any_holder()) << "the reader never acquired the block";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release_ = true;
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "reader status " << status;
  ASSERT_CUDA(cudaStreamSynchronize(producer_));
  cudaFreeHost(bytes);
}

// An engine's host wait for a block of another process can be deferred to just before it reads
// the block (wait_for_inputs(..., defer_host_waits), finish_host_waits()): the first call returns
// while the producer still holds the write back; the second waits for its signal and says when.
TEST_F(CudaFenceTest, AnEngineDefersItsHostWaitForAnotherProcesssBlock) {
  auto pool = shm::Pool::create({shm::segment_prefix() + std::to_string(::getpid()) + ".defer", std::size_t{1} << 30});
  auto b = pool->allocate_on(Device::cuda(0), kArmedBytes);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  ASSERT_CUDA(cudaMemset((*b)->data(), 0, kArmedBytes));
  ASSERT_CUDA(cudaDeviceSynchronize());
  ASSERT_CUDA(hold_producer());
  ASSERT_CUDA(cudaMemsetAsync((*b)->data(), 0x5c, kArmedBytes, producer_));
  Tensor t = *Tensor::from_buffer(*b, DType::kU8, Shape{static_cast<std::int64_t>(kArmedBytes)});
  ASSERT_TRUE(fence_output(t, producer_, 0).is_ok());
  pool->mark_sent(**b, {1, 0}, "kv");
  // The reader's view of the block, as another process maps it (its own import and fence).
  shm::Mapper m;
  auto got = m.acquire(*(*b)->shm());
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  ASSERT_NE((*got)->ready(), nullptr);
  Tensor in = *Tensor::from_buffer(*got, DType::kU8, Shape{static_cast<std::int64_t>(kArmedBytes)});
  auto w = wait_for_inputs({&in}, consumer_, 0, /*defer_host_waits=*/true);
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  EXPECT_EQ(w->waits(), 1u);
  EXPECT_EQ(w->host_ready_ns(), 0);
  EXPECT_FALSE((*got)->ready()->done());
  std::thread releaser([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    release_ = true;
  });
  ASSERT_TRUE(w->finish_host_waits().is_ok());
  releaser.join();
  EXPECT_GT(w->host_ready_ns(), 0);
  auto waited = w->waited_ms();
  ASSERT_TRUE(waited.has_value());
  EXPECT_GT(*waited, 20.0) << "ms waited for the producer's signal";
  std::vector<unsigned char> host(kArmedBytes);
  ASSERT_CUDA(cudaMemcpyAsync(host.data(), in.raw_data(), kArmedBytes, cudaMemcpyDeviceToHost, consumer_));
  ASSERT_CUDA(cudaStreamSynchronize(consumer_));
  EXPECT_EQ(host.front(), 0x5c);
  EXPECT_EQ(host.back(), 0x5c);
  ASSERT_CUDA(cudaStreamSynchronize(producer_));
}

// The device marks an armed block written itself, in its stream right behind the write: once the
// producer's stream is done, the word is set, with no wait for the producer's signalling thread.
TEST_F(CudaFenceTest, TheDeviceMarksAnArmedBlockWrittenBehindItsWork) {
  auto pool = shm::Pool::create({shm::segment_prefix() + std::to_string(::getpid()) + ".devmark", std::size_t{1} << 30});
  for (int round = 0; round < 20; ++round) {
    auto b = pool->allocate_on(Device::cuda(0), kArmedBytes);
    ASSERT_TRUE(b.has_value()) << b.status().to_string();
    ASSERT_NE((*b)->remote_ready()->device_ready_word(), nullptr) << "the pool did not map the block's header";
    Tensor t = *Tensor::from_buffer(*b, DType::kU8, Shape{static_cast<std::int64_t>(kArmedBytes)});
    for (int i = 0; i < 16; ++i) {  // milliseconds of work before the write
      ASSERT_CUDA(cudaMemcpyAsync(busy_b_, busy_a_, kBusyBytes, cudaMemcpyDeviceToDevice, producer_));
    }
    ASSERT_CUDA(cudaMemsetAsync(t.raw_data(), round, kArmedBytes, producer_));
    ASSERT_TRUE(fence_output(t, producer_, 0).is_ok());
    pool->mark_sent(**b, {1, 0}, "kv");
    auto header = shm::Segment::open((*b)->shm()->segment);
    ASSERT_TRUE(header.has_value()) << header.status().to_string();
    const std::uint32_t gen = (*b)->shm()->generation;
    EXPECT_NE((*header)->header().ready_generation.load(), gen) << "marked before the work ran";
    ASSERT_CUDA(cudaStreamSynchronize(producer_));
    EXPECT_EQ((*header)->header().ready_generation.load(), gen) << "round " << round;
  }
}

}  // namespace
}  // namespace edgevla::backends::cuda
