// Giving freed heap memory back (runtime/util/heap.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/resource.h>

#include "runtime/util/heap.hpp"

namespace edgevla {
namespace {

TEST(Heap, AfterConfigureLargeBuffersAreUnmappedWhenFreedEveryTime) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "configure_process_heap sets glibc's allocator up only";
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator stands in for glibc's malloc here (scripts/sanitize)";
#else
  if (std::getenv("GLIBC_TUNABLES") || std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_ARENA_MAX")) {
    GTEST_SKIP() << "the environment sets the allocator up; configure_process_heap leaves it alone";
  }
  configure_process_heap();
  // Fresh buffers come from the heap's free space when it has room (hence this test comes
  // first in the file); past it, glibc's default would raise its mapping threshold past the
  // buffer's size when the first one is freed, and serve the second from its heap (where
  // freeing keeps it resident).
  const std::size_t big = static_cast<std::size_t>(kHeapMapThresholdBytes) * 2;
  for (int round = 0; round < 3; ++round) {
    const std::size_t before = ::mallinfo2().hblkhd;
    // Through a volatile pointer: the compiler may not drop the malloc/free pair.
    void* volatile p = std::malloc(big);
    ASSERT_NE(p, nullptr);
    std::memset(p, round, big);
    EXPECT_GE(::mallinfo2().hblkhd, before + big) << "round " << round << ": not a mapping of its own";
    std::free(p);
    EXPECT_EQ(::mallinfo2().hblkhd, before) << "round " << round << ": not unmapped when freed";
  }
#endif
}

// A stage's short-lived buffers of a few MB (a frame pipeline's images, once per message) are
// reused from the heap: after the first message, the next ones take (almost) no page faults.
TEST(Heap, AfterConfigureShortLivedBuffersOfAFewMbTakeNoPageFaults) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "configure_process_heap sets glibc's allocator up only";
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator stands in for glibc's malloc here (scripts/sanitize)";
#else
  if (std::getenv("GLIBC_TUNABLES") || std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_ARENA_MAX") ||
      std::getenv("MALLOC_TRIM_THRESHOLD_")) {
    GTEST_SKIP() << "the environment sets the allocator up; configure_process_heap leaves it alone";
  }
  configure_process_heap();
  auto message = [] {  // one message's buffers: 1 MiB, 2 MiB, 256 KiB, each written and freed
    for (const std::size_t n : {std::size_t{1} << 20, std::size_t{2} << 20, std::size_t{256} << 10}) {
      std::vector<unsigned char> v(n, 7);
      volatile unsigned char sink = v[n / 2];
      (void)sink;
    }
  };
  message();
  rusage before{}, after{};
  ::getrusage(RUSAGE_THREAD, &before);
  for (int i = 0; i < 20; ++i) message();
  ::getrusage(RUSAGE_THREAD, &after);
  // Mapped afresh each time, 20 messages of 3.25 MiB would take ~16,000 faults of 4 KiB pages.
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 200) << "the buffers are not reused from the heap";
#endif
}

TEST(Heap, FreedBlocksBelowALiveOneGoBackToTheSystem) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "release_free_heap gives memory back with glibc's malloc_trim only";
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator stands in for glibc's malloc here (scripts/sanitize): malloc_trim has "
                  "nothing of this test's to give back";
#else
  // 64 MB in 64 KB blocks (below the size the C library maps on its own), then one block
  // allocated after them that stays: freeing the others leaves a hole the library keeps.
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 1024; ++i) {
    blocks.emplace_back(new char[64 << 10]);
    std::memset(blocks.back().get(), i & 0xff, 64 << 10);
  }
  auto keep = std::make_unique<char[]>(64 << 10);
  std::memset(keep.get(), 1, 64 << 10);
  const std::int64_t full = private_resident_bytes();
  ASSERT_GT(full, 64 << 20) << "RssAnon not readable or the blocks not resident";
  blocks.clear();
  const std::int64_t freed = private_resident_bytes();
  release_free_heap();
  const std::int64_t released = private_resident_bytes();
  // Freeing alone keeps most of it; releasing gives back most of the 64 MB.
  EXPECT_LT(released, freed - (48 << 20)) << "before free " << full << ", after free " << freed << ", after release "
                                          << released;
  EXPECT_EQ(keep[100], 1);
#endif
}

}  // namespace
}  // namespace edgevla
