// One POSIX shared-memory segment holding one buffer block, with a small control header.
//
// Cross-process lifetime protocol (specified in msgs/README.md, section 6):
//  - state packs generation (32 bits) | pending pipeline receivers (12) | pending observers
//    (12) | flags (8). A send counts each receiving process once per block, however many of
//    the message's tensors lie in it, in the counter of that receiver's role.
//  - A receiver claims a holder slot (CAS 0 -> its pid), then checks the generation it was
//    told and decrements its role's pending count, once per block and message. A wrong
//    generation or RECYCLING flag means the block was reused before this receiver got to it:
//    it releases the slot and counts a drop.
//  - The owner recycles a block only when it holds no local reference, nothing is pending (or
//    the transit timeout passed) and no slot is held: it sets RECYCLING with the next
//    generation, re-checks the slots, and reverts if a receiver slipped in. When its pool is
//    short it may also take back a block that only observers have yet to pick up.
//  - Slots of dead processes are cleared by the owner, so a crashed subscriber cannot pin a
//    block forever.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/core/buffer.hpp"
#include "runtime/core/device.hpp"
#include "runtime/core/status.hpp"

namespace edgevla::shm {

inline constexpr std::uint64_t kMagic = 0x314d485341564c45ull;  // "ELVASHM1" little endian
inline constexpr std::uint32_t kLayoutVersion = 5;
inline constexpr int kMaxHolders = 32;
inline constexpr std::size_t kDataOffset = 4096;
inline constexpr std::uint32_t kFlagRecycling = 1;

inline constexpr std::uint32_t kMaxPending = 0xfff;

struct State {
  std::uint32_t generation = 0;
  std::uint16_t pending = 0;           // pipeline receivers yet to pick the block up
  std::uint16_t observer_pending = 0;  // observers yet to pick it up
  std::uint8_t flags = 0;

  static State unpack(std::uint64_t v) {
    return {static_cast<std::uint32_t>(v >> 32), static_cast<std::uint16_t>((v >> 20) & kMaxPending),
            static_cast<std::uint16_t>((v >> 8) & kMaxPending), static_cast<std::uint8_t>(v & 0xff)};
  }
  std::uint64_t pack() const {
    return (static_cast<std::uint64_t>(generation) << 32) |
           (static_cast<std::uint64_t>(pending & kMaxPending) << 20) |
           (static_cast<std::uint64_t>(observer_pending & kMaxPending) << 8) | flags;
  }
};

struct SegmentHeader {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t owner_pid;
  std::uint64_t data_offset;
  std::uint64_t data_capacity;
  std::atomic<std::uint64_t> state;
  std::atomic<std::uint32_t> holders[kMaxHolders];  // pid of each process holding the block
  // Receivers that found every holder slot taken (each counts a dropped message); the
  // publisher reports them by topic.
  std::atomic<std::uint32_t> slot_refusals;
  // A device block (layout 4): its bytes are device memory, not this segment's. The owner hands
  // them out as a file descriptor from its FdServer named `fd_channel`, keyed by this segment's
  // name; data_capacity is 0 and device_bytes the size of the device memory (device_type 0:
  // a host block, the data follows this header).
  std::int32_t device_type;
  std::int32_t device_index;
  std::uint64_t device_bytes;
  char fd_channel[104];
  // Readiness (layout 5; runtime/shm/ready.hpp): the generation whose bytes are written. The pool
  // stores it when it sends the block, unless the producer armed the block (device work still
  // queued): then the producer stores it once that work is done. A futex word: readers in other
  // processes wait on it. `failed_generation`: that work failed, the bytes will never be written.
  alignas(64) std::atomic<std::uint32_t> ready_generation;
  std::atomic<std::uint32_t> failed_generation;
};
static_assert(sizeof(SegmentHeader) <= kDataOffset);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

class Segment {
 public:
  // Creates a new segment (mode 0600) with `capacity` data bytes reserved up front, so a full
  // /dev/shm is an error here rather than a SIGBUS on first write.
  static Expected<std::unique_ptr<Segment>> create(const std::string& name, std::size_t capacity);
  // A header-only segment that stands for `device_bytes` of memory on `device` (not the CPU),
  // served as a descriptor by the FdServer `fd_channel` under this segment's name.
  static Expected<std::unique_ptr<Segment>> create_device(const std::string& name, Device device,
                                                          std::size_t device_bytes, const std::string& fd_channel);
  // Opens an existing segment read-write (the header's atomics need writes) and checks it.
  static Expected<std::unique_ptr<Segment>> open(const std::string& name);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const std::string& name() const { return name_; }
  SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base_); }
  std::byte* data() const { return static_cast<std::byte*>(base_) + kDataOffset; }
  std::size_t capacity() const { return header().data_capacity; }
  // Where the block's bytes are: the CPU (this segment's data) or a device (create_device).
  Device device() const;
  std::size_t device_bytes() const { return header().device_bytes; }
  std::string fd_channel() const;
  // The device memory behind a device block: the owner's allocation, or in a receiving process
  // the mapping imported from the owner's descriptor (kept as long as the segment is mapped).
  const BufferPtr& device_memory() const { return device_memory_; }
  void set_device_memory(BufferPtr memory) { device_memory_ = std::move(memory); }
  // The header as the block's device addresses it (Allocator::map_host_for_device), so the device
  // can mark the block written itself; null when it cannot. Kept until the segment is unmapped.
  void set_header_mapping(Allocator::HostMapping mapping) { header_mapping_ = std::move(mapping); }
  void* device_header() const { return header_mapping_.device_address; }

  // Claims a holder slot for `pid`; -1 when all slots are taken.
  int claim_slot(std::uint32_t pid) const;
  void release_slot(int slot) const;
  bool any_holder() const;
  // Clears slots whose process no longer exists; returns how many.
  int clear_dead_holders() const;

 private:
  Segment(std::string name, void* base, std::size_t map_size, bool owner)
      : name_(std::move(name)), base_(base), map_size_(map_size), owner_(owner) {}

  std::string name_;
  void* base_;
  std::size_t map_size_;
  bool owner_;  // the creator unlinks the name on destruction
  BufferPtr device_memory_;
  Allocator::HostMapping header_mapping_;
};

bool process_alive(pid_t pid);
// Segment names of this user begin with this prefix ("/edgevla.<uid>.").
std::string segment_prefix();
// Unlinks segments whose creating process is gone (crashed publishers). Returns the count.
int remove_stale_segments();

}  // namespace edgevla::shm
