// The cuda backend's allocator for tensors on the bus (register_allocator(kCuda)): device blocks
// from a per-device pool, so a stage that publishes a device tensor per message does not call
// cudaMalloc (slow, device-synchronising) once the pool is warm. A block returns to its pool
// when the last tensor viewing it goes; consumers finish reading before they drop a message
// (engines synchronise their stream at the end of a run), so a recycled block is never read
// again. At most kCachedBytes per device stay cached; beyond that blocks are freed.
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/backends/cuda/kernels/common.hpp"
#include "runtime/backends/cuda/shareable_memory.hpp"
#include "runtime/core/buffer.hpp"

namespace edgevla::backends::cuda {
namespace {

constexpr std::size_t kGranule = std::size_t{64} << 10;    // sizes rounded up to 64 KiB
constexpr std::size_t kCachedBytes = std::size_t{1} << 30;  // free blocks kept per device
constexpr int kMaxDevices = 64;

struct DevicePool {
  std::mutex mu;
  std::multimap<std::size_t, void*> free;  // size -> block
  std::size_t cached = 0;
};

struct Pools {
  std::array<DevicePool, kMaxDevices> devices;
};

// Makes `index` current for a scope and restores the caller's device.
class DeviceScope {
 public:
  explicit DeviceScope(int index) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != index) ok_ = cudaSetDevice(index) == cudaSuccess;
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool ok_ = true;
};

class CudaAllocator final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t size) override { return allocate_on(0, size); }

  Expected<BufferPtr> allocate_on(int index, std::size_t size) override {
    if (index < 0 || index >= kMaxDevices) return invalid_argument("cuda:" + std::to_string(index) + " is not a device");
    const std::size_t rounded = std::max(kGranule, (size + kGranule - 1) / kGranule * kGranule);
    DevicePool& pool = pools_->devices[static_cast<std::size_t>(index)];
    void* block = nullptr;
    {
      std::lock_guard lock(pool.mu);
      // The smallest cached block that fits and is not more than twice the size.
      auto it = pool.free.lower_bound(rounded);
      if (it != pool.free.end() && it->first <= 2 * rounded) {
        block = it->second;
        pool.cached -= it->first;
        const std::size_t got = it->first;
        pool.free.erase(it);
        return wrap(index, block, got, size);
      }
    }
    DeviceScope scope(index);
    if (!scope.ok()) return unavailable("cuda:" + std::to_string(index) + " cannot be selected");
    const cudaError_t err = cudaMalloc(&block, rounded);
    if (err != cudaSuccess) {
      return resource_exhausted("cuda:" + std::to_string(index) + ": no device memory for a " + std::to_string(size) +
                                "-byte tensor (" + cudaGetErrorString(err) +
                                "); lower gpu_memory_budget_mb of the engines or the queue depth of its subscribers");
    }
    return wrap(index, block, rounded, size);
  }

  Device device() const override { return Device::cuda(0); }

  Status copy(std::byte* dst, const std::byte* src, std::size_t bytes, CopyKind kind) override {
    if (bytes == 0) return Status::ok();
    const cudaMemcpyKind k = kind == CopyKind::kToHost     ? cudaMemcpyDeviceToHost
                             : kind == CopyKind::kFromHost ? cudaMemcpyHostToDevice
                                                           : cudaMemcpyDeviceToDevice;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, k));
    return Status::ok();
  }

  Expected<Shareable> allocate_shareable(int index, std::size_t size) override {
    if (index < 0 || index >= kMaxDevices) return invalid_argument("cuda:" + std::to_string(index) + " is not a device");
    DeviceScope scope(index);
    if (!scope.ok()) return unavailable("cuda:" + std::to_string(index) + " cannot be selected");
    return allocate_shareable_block(index, size);
  }

  Expected<HostMapping> map_host_for_device(void* host, std::size_t bytes, int index) override {
    if (index < 0 || index >= kMaxDevices) return invalid_argument("cuda:" + std::to_string(index) + " is not a device");
    DeviceScope scope(index);
    if (!scope.ok()) return unavailable("cuda:" + std::to_string(index) + " cannot be selected");
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaHostRegister(host, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
    void* dev = nullptr;
    if (const cudaError_t e = cudaHostGetDevicePointer(&dev, host, 0); e != cudaSuccess) {
      cudaHostUnregister(host);
      return unavailable(std::string("cuda:") + std::to_string(index) + ": no device address for registered host memory (" +
                         cudaGetErrorString(e) + ")");
    }
    // Unregistered before the host memory is unmapped: the holder (a segment) drops it first.
    return HostMapping{dev, std::shared_ptr<void>(host, [](void* h) { cudaHostUnregister(h); })};
  }

  Status warm(int index) override {
    if (index < 0 || index >= kMaxDevices) return invalid_argument("cuda:" + std::to_string(index) + " is not a device");
    DeviceScope scope(index);
    if (!scope.ok()) return unavailable("cuda:" + std::to_string(index) + " cannot be selected");
    const cudaError_t err = cudaFree(nullptr);  // starts the runtime and the device's context
    if (err != cudaSuccess) return unavailable("cuda:" + std::to_string(index) + ": " + cudaGetErrorString(err));
    return Status::ok();
  }

  Expected<BufferPtr> import_shareable(int fd, std::size_t size, int index) override {
    if (index < 0 || index >= kMaxDevices) return invalid_argument("cuda:" + std::to_string(index) + " is not a device");
    DeviceScope scope(index);
    if (!scope.ok()) return unavailable("cuda:" + std::to_string(index) + " cannot be selected");
    return import_shareable_block(fd, size, index);
  }

 private:
  BufferPtr wrap(int index, void* block, std::size_t capacity, std::size_t size) {
    Buffer::Options o;
    o.kind = BufferKind::kDevice;
    o.device = Device::cuda(index);
    o.writable = true;
    // The pools outlive every buffer (shared), even one released after the allocator is gone.
    o.release = [pools = pools_, index, block, capacity] {
      DevicePool& pool = pools->devices[static_cast<std::size_t>(index)];
      {
        std::lock_guard lock(pool.mu);
        if (pool.cached + capacity <= kCachedBytes) {
          pool.free.emplace(capacity, block);
          pool.cached += capacity;
          return;
        }
      }
      DeviceScope scope(index);
      cudaFree(block);
    };
    return std::make_shared<Buffer>(static_cast<std::byte*>(block), size, std::move(o));
  }

  std::shared_ptr<Pools> pools_ = std::make_shared<Pools>();
};

}  // namespace

const bool kCudaAllocatorRegistered = [] {
  register_allocator(DeviceType::kCuda, std::make_shared<CudaAllocator>());
  return true;
}();

}  // namespace edgevla::backends::cuda
