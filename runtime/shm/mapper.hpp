// The receiving side of shared memory: maps publishers' segments (once, then cached) and
// turns a descriptor into a read-only buffer that holds the block until the last reference
// to it is dropped.
//
// A process takes one holder slot per block, however many tensors or messages of it point
// into the block (a BackboneOutput views every layer's K/V in one block): the slot is
// shared in the process and released with the last buffer over that block. The pending count
// is taken once per block and message (the publisher counts each receiving process once).
//
// An observer process holds at most `max_observer_holds` blocks at a time (plus, for the
// moment of a copy, the one being copied): past that it reads a copy and lets the block go at
// once, so observers can never pin a publisher's pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/core/buffer.hpp"
#include "runtime/shm/segment.hpp"
#include "runtime/util/stats.hpp"

namespace edgevla::shm {

struct MapperStats {
  std::uint64_t acquired = 0;
  std::uint64_t recycled_before_read = 0;  // the publisher reused the block first (too slow)
  std::uint64_t vanished = 0;              // the segment no longer exists
  std::uint64_t bad_descriptor = 0;        // offset/size outside the segment, bad header
  std::uint64_t slots_full = 0;            // more holder processes than kMaxHolders
  std::uint64_t shared_holds = 0;          // acquisitions served by this process's existing slot
  std::uint64_t observer_copies = 0;       // observer reads copied out (its hold bound reached)
  std::uint64_t observer_holds = 0;        // blocks held now for observers only
  std::uint64_t holders = 0;               // blocks this process holds a slot of now
  std::uint64_t mapped = 0;                // segments mapped now
  std::uint64_t device_imports = 0;        // device blocks imported (once per block and process)
  std::uint64_t unlinked_dropped = 0;      // cached segments dropped after their publisher unlinked them
  std::uint64_t awaited = 0;               // blocks received before their producer's device work was done
};

struct AcquireOptions {
  bool observer = false;       // for observers only (bounded holds, observer pending count)
  bool take_pending = true;    // the first descriptor of this block in its message
};

class Mapper {
 public:
  explicit Mapper(std::size_t max_cached_segments = 1024, std::size_t max_observer_holds = 16);

  // A buffer over [loc.offset, loc.offset + loc.size) of the segment, or the reason why not:
  // resource_exhausted (every holder slot taken), unavailable (recycled before read),
  // not_found (the segment is gone) — transport drops — or invalid_argument / out_of_range
  // (a bad descriptor).
  Expected<BufferPtr> acquire(const ShmLocation& loc, AcquireOptions options = {});
  // Drops cached mappings of segments created by `pid` (it exited).
  void forget_process(std::uint32_t pid);
  MapperStats stats() const;

 private:
  Expected<std::shared_ptr<Segment>> segment(const std::string& name);
  void prune_unlinked();  // mu_ held
  // The owner's device memory behind device block `seg`, mapped here.
  Expected<BufferPtr> import_device_block(const Segment& seg, const std::string& name);

  // This process's slot in one block (one generation of a segment); released with the last
  // buffer that refers to it.
  struct Hold {
    std::shared_ptr<Segment> segment;
    int slot = -1;
    // The mapper's count, shared: a received message may outlive the mapper (a subscription
    // queue destroyed after the bus's transport, found by ASan).
    std::shared_ptr<std::atomic<std::int64_t>> observer_holds;
    std::atomic<bool> observer{false};  // counted there (no pipeline subscriber uses it)
    ~Hold() {
      segment->release_slot(slot);
      if (observer.exchange(false)) observer_holds->fetch_sub(1);
    }
  };

  std::size_t max_cached_;
  std::size_t max_observer_holds_;
  std::shared_ptr<std::atomic<std::int64_t>> observer_holds_ = std::make_shared<std::atomic<std::int64_t>>(0);
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::pair<std::shared_ptr<Segment>, std::list<std::string>::iterator>> cache_;
  std::list<std::string> lru_;  // front = most recently used
  std::int64_t last_prune_ns_ = 0;
  // (segment name, generation) -> this process's hold, while any buffer uses it.
  std::map<std::pair<std::string, std::uint32_t>, std::weak_ptr<Hold>> holds_;
  struct Counters {
    Counter acquired, recycled_before_read, vanished, bad_descriptor, slots_full, shared_holds, observer_copies,
        device_imports, unlinked_dropped, awaited;
  } counters_;
  std::uint32_t pid_;
};

}  // namespace edgevla::shm
