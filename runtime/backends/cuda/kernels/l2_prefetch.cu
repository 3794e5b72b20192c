#include "runtime/backends/cuda/kernels/l2_prefetch.hpp"

#include <string>

namespace edgevla::backends::cuda {

namespace {

constexpr unsigned kThreads = 128;
// Bytes one prefetch instruction asks for (a multiple of 16, as the bulk form needs).
constexpr std::size_t kChunk = std::size_t{16} << 10;

// Block b asks for range b, its threads striding over the range's chunks. Fire and forget: the
// kernel ends once the requests are issued; the lines arrive in L2 meanwhile.
__global__ void l2_prefetch_kernel(L2Ranges r) {
  const auto* base = static_cast<const char*>(r.at[blockIdx.x].p);
  const std::size_t bytes = r.at[blockIdx.x].bytes;
  for (std::size_t off = threadIdx.x * kChunk; off < bytes; off += kThreads * kChunk) {
    const std::size_t left = bytes - off;
#if __CUDA_ARCH__ >= 900
    // The bulk form: one request for the whole chunk (its size rounded down to 16 bytes).
    const unsigned n = static_cast<unsigned>((left < kChunk ? left : kChunk) & ~std::size_t{15});
    if (n > 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(base + off), "r"(n) : "memory");
#else
    // Before Hopper: one request a 128-byte line.
    const std::size_t n = left < kChunk ? left : kChunk;
    for (std::size_t l = 0; l < n; l += 128) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(base + off + l));
#endif
  }
}

}  // namespace

Status l2_prefetch(cudaStream_t stream, const L2Ranges& ranges) {
  if (ranges.count < 0 || ranges.count > kL2MaxRanges) {
    return invalid_argument("l2_prefetch: " + std::to_string(ranges.count) + " ranges (0 to " +
                                    std::to_string(kL2MaxRanges) + ")");
  }
  for (int i = 0; i < ranges.count; ++i) {
    if (reinterpret_cast<std::uintptr_t>(ranges.at[i].p) % 16 != 0) {
      return invalid_argument("l2_prefetch: range " + std::to_string(i) + " is not 16-byte aligned");
    }
  }
  if (ranges.count == 0) return Status::ok();
  l2_prefetch_kernel<<<static_cast<unsigned>(ranges.count), kThreads, 0, stream>>>(ranges);
  return last_launch_status("l2_prefetch");
}

}  // namespace edgevla::backends::cuda
