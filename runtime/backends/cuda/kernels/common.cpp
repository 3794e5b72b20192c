// Status conversion of CUDA runtime errors for the cuda backend.
#include "runtime/backends/cuda/kernels/common.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "runtime/backends/cuda/kernels/launch.cuh"

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

ChainPause::ChainPause() : saved_(g_chain_depth) { g_chain_depth = 0; }
ChainPause::~ChainPause() { g_chain_depth = saved_; }

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

int clusters_resident(const void* kernel, unsigned threads, int smem, dim3 cluster) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int, unsigned, unsigned, unsigned>, int> known;
  const auto key = std::make_tuple(device, kernel, smem, cluster.x, cluster.y, cluster.z);
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  const unsigned blocks = cluster.x * cluster.y * cluster.z;
  int n = 0;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err == cudaSuccess && blocks > 8) err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (err == cudaSuccess && blocks == 1) {
    int per_sm = 0, sms = 0;
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(threads), smem);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    n = per_sm * sms;
  } else if (err == cudaSuccess) {
    cudaLaunchConfig_t config{};
    config.gridDim = cluster;
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = static_cast<std::size_t>(smem);
    cudaLaunchAttribute attributes[1];
    add_cluster(config, attributes, cluster);
    err = cudaOccupancyMaxActiveClusters(&n, kernel, &config);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // a refusal here only means: none
    n = 0;
  }
  known.emplace(key, n);
  return n;
}

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return fallback;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end == '\0' && v >= lo && v <= hi) return static_cast<int>(v);
  std::fprintf(stderr, "edgevla: %s is '%s'; give a whole number from %d to %d (using %d)\n", name, env, lo, hi,
               fallback);
  return fallback;
}

}  // namespace edgevla::backends::cuda
