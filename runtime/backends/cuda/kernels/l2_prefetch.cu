#include "runtime/backends/cuda/kernels/l2_prefetch.hpp"

#include <string>

namespace edgevla::backends::cuda {

namespace {

constexpr unsigned kThreads = 32;
// Bytes one prefetch instruction asks for (a multiple of 16, as the bulk form needs), and one
// block's share: one block a range ran at ~0.3-0.4 TB/s on the H200 (run 51 call 1), too slow
// for the 2.6-25 MB ranges the engines ask for, so a range is spread over blocks of 512 KB.
constexpr std::size_t kChunk = std::size_t{16} << 10;
constexpr std::size_t kBlockBytes = kChunk * kThreads;

std::size_t blocks_of(std::size_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes; }

// Each block takes kBlockBytes of one range (blocks numbered through the ranges in order), one
// chunk a thread. Fire and forget: the kernel ends once the requests are issued.
__global__ void l2_prefetch_kernel(L2Ranges r) {
  std::size_t b = blockIdx.x;
  int i = 0;
  for (; i < r.count; ++i) {
    const std::size_t n = (r.at[i].bytes + kBlockBytes - 1) / kBlockBytes;
    if (b < n) break;
    b -= n;
  }
  if (i == r.count) return;
  const std::size_t off = b * kBlockBytes + threadIdx.x * kChunk, bytes = r.at[i].bytes;
  if (off >= bytes) return;
  const char* p = static_cast<const char*>(r.at[i].p) + off;
  const std::size_t left = bytes - off, n = left < kChunk ? left : kChunk;
#if __CUDA_ARCH__ >= 900
  // The bulk form: one request for the whole chunk (its size rounded down to 16 bytes).
  const unsigned m = static_cast<unsigned>(n & ~std::size_t{15});
  if (m > 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(m) : "memory");
#else
  // Before Hopper: one request a 128-byte line.
  for (std::size_t l = 0; l < n; l += 128) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p + l));
#endif
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
  std::size_t blocks = 0;
  for (int i = 0; i < ranges.count; ++i) blocks += blocks_of(ranges.at[i].bytes);
  if (blocks == 0) return Status::ok();
  l2_prefetch_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(ranges);
  return last_launch_status("l2_prefetch");
}

}  // namespace edgevla::backends::cuda
