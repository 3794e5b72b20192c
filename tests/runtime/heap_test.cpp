// Giving freed heap memory back (runtime/util/heap.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "runtime/util/heap.hpp"

namespace edgevla {
namespace {

TEST(Heap, FreedBlocksBelowALiveOneGoBackToTheSystem) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "release_free_heap gives memory back with glibc's malloc_trim only";
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
