// Status conversion of CUDA runtime errors for the cuda backend.
#include "runtime/backends/cuda/kernels/common.hpp"

#include <atomic>
#include <string>

namespace edgevla::backends::cuda {

namespace {

// Errors that say the device is gone or unusable map to unavailable, memory to
// resource_exhausted, bad launch parameters to invalid_argument; everything else is internal.
Status status_for(cudaError_t err, std::string message) {
  switch (err) {
    case cudaErrorMemoryAllocation:
      return resource_exhausted(std::move(message));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInvalidDevice:
      return unavailable(std::move(message));
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidValue:
      return invalid_argument(std::move(message));
    default:
      return internal_error(std::move(message));
  }
}

std::string describe(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

}  // namespace

Status cuda_status(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return Status::ok();
  return status_for(err, std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                             describe(err));
}

namespace {
thread_local cudaError_t g_launch_error = cudaSuccess;
thread_local int g_chain_depth = 0;
}  // namespace

void note_launch_error(cudaError_t err) {
  if (g_launch_error == cudaSuccess) g_launch_error = err;
}

DependentLaunchScope::DependentLaunchScope(bool on) : on_(on) {
  if (on_) ++g_chain_depth;
}
DependentLaunchScope::~DependentLaunchScope() {
  if (on_) --g_chain_depth;
}

bool dependent_launch_supported() {
  static std::atomic<int> known[64] = {};  // per device: 0 unknown, 1 no, 2 yes
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
  int k = known[dev].load(std::memory_order_relaxed);
  if (k == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
    k = major >= 9 ? 2 : 1;
    known[dev].store(k, std::memory_order_relaxed);
  }
  return k == 2;
}

bool dependent_launch_active() { return g_chain_depth > 0 && dependent_launch_supported(); }

Status last_launch_status(const char* kernel) {
  cudaError_t err = g_launch_error;
  g_launch_error = cudaSuccess;
  const cudaError_t last = cudaGetLastError();
  if (err == cudaSuccess) err = last;
  if (err == cudaSuccess) return Status::ok();
  return status_for(err, std::string("launching CUDA kernel ") + kernel + " failed: " + describe(err));
}

}  // namespace edgevla::backends::cuda
