// Chained launches: how a run of the cuda backend's own kernels hands over from one kernel to
// the next without the launch gap, and lets a GEMM read its weights while the kernels before it
// still run (chain_gemm.hpp).
//
// Inside a DependentLaunchScope (common.hpp), on a device with programmatic dependent launch
// (compute capability 9.0 and newer: Hopper, Thor), launch() starts a kernel as a programmatic
// dependent of the kernel before it on the stream. Such a kernel may be scheduled as soon as
// every block of the kernel before it has called chain_release(); it must call chain_wait()
// before it reads anything an earlier kernel wrote or writes anything an earlier kernel reads.
// chain_wait() returns once the kernel before it has finished and its writes are visible; as that
// kernel waited the same way, every earlier kernel has finished too. Inputs no kernel of the
// chain writes (weights, per-step constants) may be read before the wait: that is the point.
// Outside a scope, or on older devices (Orin), launch() is a plain launch and both device calls
// do nothing. Inside a captured CUDA graph the same edges are kept. A build with
// -DEDGEVLA_CHAIN_OFF compiles the device calls out (to measure what they cost; chained
// launches are then unsafe and must stay off).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

// Lets the next kernel of the chain be scheduled now (it still waits for this one's results).
__device__ __forceinline__ void chain_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(EDGEVLA_CHAIN_OFF)
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Blocks until the previous kernel of the chain has finished and its writes are visible.
__device__ __forceinline__ void chain_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(EDGEVLA_CHAIN_OFF)
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// The first statement of a short kernel in the chain: release the next one, then wait.
__device__ __forceinline__ void chain_enter() {
  chain_release();
  chain_wait();
}

// Records a failed launch for last_launch_status() (common.hpp).
void note_launch_error(cudaError_t err);

// The launch configuration: programmatic serialization inside a scope on a device that has it.
inline cudaLaunchConfig_t chain_config(dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                                       cudaLaunchAttribute* attribute) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  if (dependent_launch_active()) {
    attribute->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute->val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
  }
  return config;
}

// Adds thread-block clusters of cluster.x × .y × .z blocks to a configuration chain_config made
// (`attributes`: chain_config's attribute and room for one more).
inline void add_cluster(cudaLaunchConfig_t& config, cudaLaunchAttribute* attributes, dim3 cluster) {
  cudaLaunchAttribute& a = attributes[config.numAttrs];
  a = cudaLaunchAttribute{};
  a.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim.x = cluster.x;
  a.val.clusterDim.y = cluster.y;
  a.val.clusterDim.z = cluster.z;
  config.attrs = attributes;
  ++config.numAttrs;
}

// How many clusters of `cluster` blocks of `kernel` (`threads` threads and `smem` bytes of dynamic
// shared memory a block) the current device holds at once, or how many blocks where the cluster is
// one block; 0 where it cannot launch them. Asked of the driver once per device, kernel, shared
// memory and cluster shape; sets the kernel's dynamic shared memory limit (and allows clusters of
// more than 8 blocks) as a launch needs them.
int clusters_resident(const void* kernel, unsigned threads, int smem, dim3 cluster);

// kernel<<<grid, block, smem, stream>>>(args...), chained as above; a failure is reported by
// last_launch_status().
template <typename... KernelArgs, typename... Args>
void launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = chain_config(grid, block, smem, stream, &attribute);
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) note_launch_error(err);
}

// The same for a kernel known by address only (variants picked at run time).
inline cudaError_t launch_untyped(const void* kernel, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                                  void** args) {
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = chain_config(grid, block, smem, stream, &attribute);
  return cudaLaunchKernelExC(&config, kernel, args);
}

}  // namespace edgevla::backends::cuda
