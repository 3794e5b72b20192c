// Status conversion of CUDA runtime errors for the cuda backend.
#include "runtime/backends/cuda/kernels/common.hpp"

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

Status last_launch_status(const char* kernel) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::ok();
  return status_for(err, std::string("launching CUDA kernel ") + kernel + " failed: " + describe(err));
}

}  // namespace edgevla::backends::cuda
