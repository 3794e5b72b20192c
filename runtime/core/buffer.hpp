// Buffer: a reference-counted block of bytes (shared_ptr<Buffer>) that tensors view.
// The kind says who owns the bytes; the release action runs when the last reference goes,
// on whatever thread drops it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "runtime/core/device.hpp"
#include "runtime/core/status.hpp"

namespace edgevla {

enum class BufferKind {
  kHeap,          // aligned heap allocation owned by the buffer
  kSharedMemory,  // a block of a POSIX shared-memory segment (see runtime/shm)
  kMappedFile,    // a read-only memory-mapped file (weights)
  kExternal,      // memory owned by someone else (a received ZeroMQ frame, a caller's array)
  kDevice,        // accelerator memory from a backend's pool (data() is a device address)
};

std::string_view buffer_kind_name(BufferKind kind);

// Where a shared-memory buffer lives, so another process can map the same bytes.
struct ShmLocation {
  std::string segment;        // shm_open name, e.g. "/edgevla.1000.4242.1.7"
  std::uint64_t offset = 0;   // byte offset of the data inside the segment
  std::uint64_t size = 0;     // bytes
  std::uint32_t generation = 0;  // block generation at publish time (recycling guard)
};

// Device work still queued on a buffer's bytes. A producer that publishes device memory before
// its stream has finished writing it attaches one (Buffer::set_ready); whoever reads the bytes
// waits on it first: a reader on the host with wait(), a stream of the same device with
// wait_on() (queued behind the producer's work, the host does not wait). A backend makes it
// (cuda: an event recorded on the producer's stream).
class ReadyFence {
 public:
  virtual ~ReadyFence() = default;
  // The device whose queue the work is on.
  virtual Device device() const = 0;
  // Returns once the work is done; an error names what failed (a stream error, a lost device).
  virtual Status wait() = 0;
  // Has `stream` (the backend's native stream handle, on device()) wait for the work before its
  // next operations, without waiting on the host.
  virtual Status wait_on(void* stream) = 0;
  // True once the work is done (never blocks).
  virtual bool done() = 0;
};

// How readers in other processes learn that a shared block's bytes are written (blocks of the
// bus's shared pool carry one; readers in the producer's own process use the ReadyFence). A block
// counts as written when it is sent, unless its producer armed it first: then it is written when
// the producer signals, and readers elsewhere wait for that (runtime/shm/ready.hpp).
class RemoteReady {
 public:
  virtual ~RemoteReady() = default;
  // Before the block is published with work still queued on it: readers in other processes wait
  // for signal().
  virtual void arm() = 0;
  virtual bool armed() const = 0;
  // The bytes are written (ok), or never will be (the work failed: readers get an error). Once per
  // hand-out; from any thread, without locks or device calls.
  virtual void signal(bool ok) = 0;
  // Where the block's device can mark it written itself, behind the producer's work on its queue:
  // set the 32-bit word at this device address to ready_value() (null: it cannot, only signal()).
  virtual void* device_ready_word() const { return nullptr; }
  virtual std::uint32_t ready_value() const { return 0; }
};

class Buffer final {
 public:
  using Release = std::function<void()>;

  struct Options {
    BufferKind kind = BufferKind::kExternal;
    Device device = Device::cpu();
    bool writable = false;
    std::optional<ShmLocation> shm;  // set for kSharedMemory
    std::shared_ptr<RemoteReady> remote_ready;  // blocks of the bus's shared pool
    Release release;                 // runs once when the buffer is destroyed
  };

  Buffer(std::byte* data, std::size_t size, Options options);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // 64-byte aligned heap memory, uninitialised.
  static Expected<std::shared_ptr<Buffer>> allocate_heap(std::size_t size);
  // Maps a whole file read-only. The mapping is shared and never copied to the heap.
  static Expected<std::shared_ptr<Buffer>> map_file(const std::string& path);
  // Wraps caller memory; `keep_alive` owns it and is released with the buffer.
  static std::shared_ptr<Buffer> wrap(std::byte* data, std::size_t size,
                                      std::shared_ptr<void> keep_alive, bool writable);

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }
  BufferKind kind() const { return options_.kind; }
  Device device() const { return options_.device; }
  bool writable() const { return options_.writable; }
  const std::optional<ShmLocation>& shm() const { return options_.shm; }
  // Readiness for other processes (null: not a block of this process's shared pool).
  RemoteReady* remote_ready() const { return options_.remote_ready.get(); }

  // The work that still writes the bytes (null: they are ready). Set by the producer before the
  // buffer is published, and not changed after: readers on other threads see it through the
  // hand-over (the bus queues order it).
  void set_ready(std::shared_ptr<ReadyFence> fence) { ready_ = std::move(fence); }
  const std::shared_ptr<ReadyFence>& ready() const { return ready_; }
  // Waits on the host until the bytes are written (ok at once without a fence).
  Status wait_ready() const;

 private:
  std::byte* data_;
  std::size_t size_;
  Options options_;
  std::shared_ptr<ReadyFence> ready_;
};

using BufferPtr = std::shared_ptr<Buffer>;

// Directions of Allocator::copy, seen from the allocator's device.
enum class CopyKind { kToHost, kFromHost, kOnDevice };

// Allocates buffers on the devices of one type. CPU's is built in; a GPU backend registers its
// own.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns `size` bytes of writable, uninitialised memory on device().
  virtual Expected<BufferPtr> allocate(std::size_t size) = 0;
  // The same on device `index` of this type (CPU: index 0 only).
  virtual Expected<BufferPtr> allocate_on(int index, std::size_t size);
  // The device this allocator's buffers live on (index 0 of its type).
  virtual Device device() const = 0;
  // Copies `bytes` between this type's memory and host memory, returning once the bytes are in
  // place (a producer finishes its writes before it publishes, so no stream is waited for).
  // CPU: a memcpy whatever the kind.
  virtual Status copy(std::byte* dst, const std::byte* src, std::size_t bytes, CopyKind kind);

  // Memory another process can map (a device block handed over by descriptor, e.g. through
  // shm::FdServer): `size` bytes on device `index` and a file descriptor for them, which stays
  // valid as long as the buffer does (the buffer owns it). Default: unimplemented.
  struct Shareable {
    BufferPtr buffer;
    int fd = -1;
    std::size_t size = 0;  // bytes the descriptor covers (size rounded up to the granularity)
  };
  virtual Expected<Shareable> allocate_shareable(int index, std::size_t size);
  // Maps `size` bytes from a descriptor another process's allocate_shareable made, on device
  // `index`; the caller keeps (and may close) `fd`. Default: unimplemented.
  virtual Expected<BufferPtr> import_shareable(int fd, std::size_t size, int index);
  // Makes `bytes` of page-aligned host memory (a shared-memory page other processes map) writable by
  // device `index`'s queues, e.g. a block's readiness word (runtime/shm/ready.hpp): the device's
  // address of `host`, registered until the returned handle goes. Default: unimplemented.
  struct HostMapping {
    void* device_address = nullptr;
    std::shared_ptr<void> registration;  // unregisters when the last copy goes
  };
  virtual Expected<HostMapping> map_host_for_device(void* host, std::size_t bytes, int index);
  // Makes device `index` ready for use in this process (its runtime and context started), so
  // the first import or copy later does not pay for that. Default: nothing to do.
  virtual Status warm(int index);
};

// Registers the allocator for a device type, replacing any earlier one.
void register_allocator(DeviceType type, std::shared_ptr<Allocator> allocator);
// The allocator for `device`; not_found names the backend that would provide it. When none is
// registered, the loader (below) is asked once per device type to provide one.
Expected<Allocator*> allocator_for(Device device);
// Loads whatever registers the allocator of a device type (the backend seam loads that
// backend's plugin), for a process that meets a device buffer before any of its nodes asked
// for the backend: a recorder mapping another process's device block.
using AllocatorLoader = std::function<void(DeviceType)>;
void register_allocator_loader(AllocatorLoader loader);

}  // namespace edgevla
