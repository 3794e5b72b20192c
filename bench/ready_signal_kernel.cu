// A kernel that holds its stream until the host sets a flag in mapped pinned memory: the moment the
// host sets it is the bench's start, so the device work's end is known on the host clock.
#include <cuda_runtime.h>

namespace {
__global__ void wait_for_flag(const volatile int* flag) {
  while (*flag == 0) {
  }
}
}  // namespace

cudaError_t edgevla_bench_launch_wait_for_flag(const int* flag, cudaStream_t stream) {
  wait_for_flag<<<1, 1, 0, stream>>>(flag);
  return cudaGetLastError();
}
