// How the cuda backend's own kernels are launched: with programmatic dependent launch where the
// device has it (compute capability 9.0 and newer: Hopper, Thor). A kernel launched so may start
// (be scheduled, set up) while the kernel before it on the stream finishes; its first statement,
// wait_for_previous_grid(), holds it until that kernel's results are visible, so what overlaps is
// launch latency, never data. The chain is transitive: each kernel waits before it ends, so any
// earlier kernel is complete too. Inside a captured CUDA graph the same edges are kept.
// On older devices (Orin) the kernels launch plainly and the wait compiles to nothing.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace edgevla::backends::cuda {

__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  // Lets the next kernel on the stream be scheduled now (it still waits for this one's results).
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Whether the current device takes programmatic dependent launches (cached per device).
bool dependent_launch_supported();
// Records a failed launch for last_launch_status() (common.hpp).
void note_launch_error(cudaError_t err);

// kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent launch where the
// device supports it. A failure is reported by last_launch_status().
template <typename... KernelArgs, typename... Args>
void launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  if (dependent_launch_supported()) {
    config.attrs = attribute;
    config.numAttrs = 1;
  }
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) note_launch_error(err);
}

// The same for a kernel known by address only (variants picked at run time).
inline cudaError_t launch_untyped(const void* kernel, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                                  void** args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  if (dependent_launch_supported()) {
    config.attrs = attribute;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelExC(&config, kernel, args);
}

}  // namespace edgevla::backends::cuda
