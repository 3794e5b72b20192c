// A stand-in for a GPU allocator on machines without one: host memory dressed as device memory
// of cuda:<index> (buffers of kind kDevice), shareable with other processes through memfd
// descriptors. That is the contract of the cuda backend's VMM allocator (allocate_shareable /
// import_shareable), so the bus and shared-memory code around device blocks runs in CI; the
// same paths on a real GPU run in tests/gpu/.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "runtime/core/buffer.hpp"

namespace edgevla::testing {

class MemfdDeviceAllocator final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t size) override { return allocate_on(0, size); }
  Expected<BufferPtr> allocate_on(int index, std::size_t size) override {
    auto s = allocate_shareable(index, size);
    if (!s) return s.status();
    return s->buffer;
  }
  Device device() const override { return Device::cuda(0); }
  Status copy(std::byte* dst, const std::byte* src, std::size_t bytes, CopyKind kind) override {
    (kind == CopyKind::kToHost ? to_host : from_host).fetch_add(1);
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Expected<Shareable> allocate_shareable(int index, std::size_t size) override {
    exported.fetch_add(1);
    const int fd = ::memfd_create("edgevla-test-device", MFD_CLOEXEC);
    if (fd < 0) return unavailable("memfd_create failed");
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      ::close(fd);
      return unavailable("ftruncate of a memfd failed");
    }
    auto buffer = map(fd, size, index, /*owns_fd=*/true);
    if (!buffer) return buffer.status();
    return Shareable{*buffer, fd, size};
  }
  Expected<BufferPtr> import_shareable(int fd, std::size_t size, int index) override {
    if (index == missing_index) return invalid_argument("cuda:" + std::to_string(index) + " does not exist here");
    imported.fetch_add(1);
    return map(fd, size, index, /*owns_fd=*/false);
  }
  std::atomic<int> exported{0}, imported{0}, to_host{0}, from_host{0};
  int missing_index = -1;  // imports on this device index fail (a device this process lacks)

 private:
  static Expected<BufferPtr> map(int fd, std::size_t size, int index, bool owns_fd) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      if (owns_fd) ::close(fd);
      return unavailable("mmap of a memfd failed");
    }
    Buffer::Options o;
    o.kind = BufferKind::kDevice;
    o.device = Device::cuda(index);
    o.writable = true;
    o.release = [p, size, fd, owns_fd] {
      ::munmap(p, size);
      if (owns_fd) ::close(fd);
    };
    return std::make_shared<Buffer>(static_cast<std::byte*>(p), size, std::move(o));
  }
};

}  // namespace edgevla::testing
