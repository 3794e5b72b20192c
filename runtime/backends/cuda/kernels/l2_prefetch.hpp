// Asks for byte ranges of device memory to be read into L2 ahead of the kernels that will read
// them (e.g. the next GEMMs' weights while the current one computes). Fire and forget: the kernel
// issues the requests and ends; nothing waits for the lines. Hopper and later take one bulk
// request a 16 KB chunk (cp.async.bulk.prefetch.L2), older devices one a 128-byte line.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

inline constexpr int kL2MaxRanges = 8;

// Up to kL2MaxRanges ranges, each 16-byte aligned (a trailing piece under 16 bytes is not asked for).
struct L2Ranges {
  struct Range {
    const void* p = nullptr;
    std::size_t bytes = 0;
  };
  Range at[kL2MaxRanges];
  int count = 0;
  void add(const void* p, std::size_t bytes) {
    if (count < kL2MaxRanges && p != nullptr && bytes > 0) at[count++] = Range{p, bytes};
  }
};

// One block a 512 KB piece of a range; enqueues only (capturable).
Status l2_prefetch(cudaStream_t stream, const L2Ranges& ranges);

}  // namespace edgevla::backends::cuda
