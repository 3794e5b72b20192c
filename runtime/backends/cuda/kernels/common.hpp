// What every CUDA kernel file and engine of the cuda backend shares: the status check for CUDA
// runtime calls (returns a Status with file and line; nothing aborts), and the element types a
// kernel accepts. Activations are f32 or bf16 (`precision: f32` runs the same kernels in f32);
// small per-channel vectors (norm weights, biases, modulations) are always f32.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "runtime/core/dtype.hpp"
#include "runtime/core/status.hpp"

namespace edgevla::backends::cuda {

// A failed CUDA runtime call as a Status naming the call, file and line.
Status cuda_status(cudaError_t err, const char* what, const char* file, int line);

#define EDGEVLA_CUDA_RETURN_IF_ERROR(call)                                                   \
  do {                                                                                       \
    const cudaError_t edgevla_cuda_err_ = (call);                                            \
    if (edgevla_cuda_err_ != cudaSuccess) {                                                  \
      return ::edgevla::backends::cuda::cuda_status(edgevla_cuda_err_, #call, __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)

// The error of the last kernel launch on this thread (launch configuration errors), as a Status.
Status last_launch_status(const char* kernel);

// Chained launches (launch.cuh): while a scope is alive on this thread, the backend's own
// kernels that take part (norms, RoPE, GeGLU, attention, chain_gemm) launch as programmatic
// dependents of the kernel before them, on devices that have it (compute capability 9.0+).
// Scopes nest; `on` false leaves the current state as it is.
class DependentLaunchScope {
 public:
  explicit DependentLaunchScope(bool on);
  ~DependentLaunchScope();
  DependentLaunchScope(const DependentLaunchScope&) = delete;
  DependentLaunchScope& operator=(const DependentLaunchScope&) = delete;

 private:
  bool on_;
};
// Launches inside this scope are plain, whatever scopes are alive around it (a kernel that must
// follow a non-kernel dependency, e.g. an event wait, rather than release early behind the one
// before it); the chain resumes after it.
class ChainPause {
 public:
  ChainPause();
  ~ChainPause();
  ChainPause(const ChainPause&) = delete;
  ChainPause& operator=(const ChainPause&) = delete;

 private:
  int saved_;
};
// Whether launches on this thread are chained now (a scope is alive and the device has it).
bool dependent_launch_active();
// Whether the current device takes programmatic dependent launches (cached per device).
bool dependent_launch_supported();

// A whole number in [lo, hi] from the environment variable `name` (the kernels' run-time knobs,
// read once a process by their callers); `fallback` when it is unset or empty, and when it is
// anything else, which is then reported on stderr with the range it takes.
int env_int(const char* name, int fallback, int lo, int hi);

// True for the activation dtypes kernels take (f32, bf16).
inline bool is_activation_dtype(DType t) { return t == DType::kF32 || t == DType::kBF16; }

}  // namespace edgevla::backends::cuda
