#include "runtime/core/buffer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace edgevla {

std::string_view buffer_kind_name(BufferKind kind) {
  switch (kind) {
    case BufferKind::kHeap: return "heap";
    case BufferKind::kSharedMemory: return "shm";
    case BufferKind::kMappedFile: return "mmap";
    case BufferKind::kExternal: return "external";
    case BufferKind::kDevice: return "device";
  }
  return "unknown";
}

Buffer::Buffer(std::byte* data, std::size_t size, Options options)
    : data_(data), size_(size), options_(std::move(options)) {}

Buffer::~Buffer() {
  if (options_.release) options_.release();
}

Status Buffer::wait_ready() const {
  if (!ready_) return Status::ok();
  if (Status s = ready_->wait(); !s.is_ok()) {
    return s.with_context("waiting for the " + ready_->device().to_string() + " work that writes a buffer of " +
                          std::to_string(size_) + " bytes");
  }
  return Status::ok();
}

Expected<BufferPtr> Buffer::allocate_heap(std::size_t size) {
  constexpr std::size_t kAlign = 64;
  const std::size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (p == nullptr) {
    return resource_exhausted("heap allocation of " + std::to_string(size) + " bytes failed");
  }
  Options o;
  o.kind = BufferKind::kHeap;
  o.writable = true;
  o.release = [p] { std::free(p); };
  return std::make_shared<Buffer>(static_cast<std::byte*>(p), size, std::move(o));
}

Expected<BufferPtr> Buffer::map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return not_found("cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return unavailable("cannot stat '" + path + "': " + std::strerror(err));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* p = nullptr;
  if (size > 0) {
    p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return unavailable("cannot mmap '" + path + "': " + std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps the file alive
  Options o;
  o.kind = BufferKind::kMappedFile;
  o.writable = false;
  o.release = [p, size] {
    if (p != nullptr) ::munmap(p, size);
  };
  return std::make_shared<Buffer>(static_cast<std::byte*>(p), size, std::move(o));
}

BufferPtr Buffer::wrap(std::byte* data, std::size_t size, std::shared_ptr<void> keep_alive,
                       bool writable) {
  Options o;
  o.kind = BufferKind::kExternal;
  o.writable = writable;
  o.release = [k = std::move(keep_alive)]() mutable { k.reset(); };
  return std::make_shared<Buffer>(data, size, std::move(o));
}

Expected<BufferPtr> Allocator::allocate_on(int index, std::size_t size) {
  if (index != 0) {
    return invalid_argument(device().to_string() + " allocator has no device " + std::to_string(index));
  }
  return allocate(size);
}

Expected<Allocator::Shareable> Allocator::allocate_shareable(int, std::size_t) {
  return failed_precondition(device().to_string() + " memory cannot be shared with other processes by descriptor");
}

Expected<BufferPtr> Allocator::import_shareable(int, std::size_t, int) {
  return failed_precondition(device().to_string() + " memory cannot be mapped from another process's descriptor");
}

Expected<Allocator::HostMapping> Allocator::map_host_for_device(void*, std::size_t, int) {
  return failed_precondition(device().to_string() + " cannot write host memory from its queues");
}

Status Allocator::warm(int) { return Status::ok(); }

Status Allocator::copy(std::byte* dst, const std::byte* src, std::size_t bytes, CopyKind) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return Status::ok();
}

namespace {

class CpuAllocator final : public Allocator {
 public:
  Expected<BufferPtr> allocate(std::size_t size) override { return Buffer::allocate_heap(size); }
  Device device() const override { return Device::cpu(); }
};

struct AllocatorTable {
  std::mutex mu;
  // Held while the loader runs: a second thread asking for the same device (a bus thread
  // starting it ahead while a receive thread imports a block) waits for that load instead of
  // finding no allocator yet.
  std::recursive_mutex load_mu;
  std::array<std::shared_ptr<Allocator>, 2> by_type{std::make_shared<CpuAllocator>(), nullptr};
  AllocatorLoader loader;
  std::array<bool, 2> tried{true, false};  // the loader runs once per device type
};

AllocatorTable& table() {
  static AllocatorTable t;
  return t;
}

}  // namespace

void register_allocator(DeviceType type, std::shared_ptr<Allocator> allocator) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.by_type[static_cast<std::size_t>(type)] = std::move(allocator);
}

void register_allocator_loader(AllocatorLoader loader) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.loader = std::move(loader);
}

Expected<Allocator*> allocator_for(Device device) {
  auto& t = table();
  const auto i = static_cast<std::size_t>(device.type);
  {
    std::lock_guard lock(t.mu);
    if (t.by_type[i]) return t.by_type[i].get();
  }
  {
    std::lock_guard load(t.load_mu);
    AllocatorLoader loader;
    {
      std::lock_guard lock(t.mu);
      if (!t.by_type[i] && !t.tried[i] && t.loader) {
        t.tried[i] = true;
        loader = t.loader;
      }
    }
    if (loader) loader(device.type);  // outside `mu`: it registers the allocator
  }
  std::lock_guard lock(t.mu);
  if (!t.by_type[i]) {
    return not_found("no allocator for " + device.to_string() +
                     ": this build has no backend for that device; build the CUDA backend or "
                     "set the stage's device param to cpu");
  }
  return t.by_type[i].get();
}

}  // namespace edgevla
