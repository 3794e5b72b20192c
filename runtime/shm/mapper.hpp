// The receiving side of shared memory: maps publishers' segments (once, then cached) and
// turns a descriptor into a read-only buffer that holds the block until the last reference
// to it is dropped.
//
// A process takes one holder slot per block, however many tensors or messages of it point
// into the block (a PrefixCache carries 2 x layers K/V tensors in one block): the slot is
// shared in the process and released with the last buffer over that block. Pending counts stay
// per descriptor (the publisher counts one per tensor and receiver).
#pragma once

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
  std::uint64_t holders = 0;               // blocks this process holds a slot of now
  std::uint64_t mapped = 0;                // segments mapped now
};

class Mapper {
 public:
  explicit Mapper(std::size_t max_cached_segments = 1024);

  // A buffer over [loc.offset, loc.offset + loc.size) of the segment, or the reason why not.
  Expected<BufferPtr> acquire(const ShmLocation& loc);
  // Drops cached mappings of segments created by `pid` (it exited).
  void forget_process(std::uint32_t pid);
  MapperStats stats() const;

 private:
  Expected<std::shared_ptr<Segment>> segment(const std::string& name);

  // This process's slot in one block (one generation of a segment); released with the last
  // buffer that refers to it.
  struct Hold {
    std::shared_ptr<Segment> segment;
    int slot = -1;
    ~Hold() { segment->release_slot(slot); }
  };

  std::size_t max_cached_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::pair<std::shared_ptr<Segment>, std::list<std::string>::iterator>> cache_;
  std::list<std::string> lru_;  // front = most recently used
  // (segment name, generation) -> this process's hold, while any buffer uses it.
  std::map<std::pair<std::string, std::uint32_t>, std::weak_ptr<Hold>> holds_;
  struct Counters {
    Counter acquired, recycled_before_read, vanished, bad_descriptor, slots_full, shared_holds;
  } counters_;
  std::uint32_t pid_;
};

}  // namespace edgevla::shm
