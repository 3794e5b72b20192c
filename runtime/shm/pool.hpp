// The publishing side of shared memory: a pool of segments this process owns. A node loans a
// buffer, fills it and publishes; subscribers in other processes map the same bytes. Blocks
// are recycled once every receiver has let go (or the transit timeout passed), so memory use
// is bounded by the pool size and a slow or crashed subscriber costs drops, never a leak.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/core/buffer.hpp"
#include "runtime/shm/fd_channel.hpp"
#include "runtime/shm/segment.hpp"

namespace edgevla::shm {

struct PoolOptions {
  std::string name_prefix;                        // e.g. "/edgevla.1000.4242.1" (unique per bus)
  std::size_t max_bytes = std::size_t{2} << 30;   // all segments together
  std::int64_t transit_timeout_ns = 2'000'000'000; // a sent block not acquired by then is reusable
  // A free block not handed out for this long is unlinked (0: never): the segments a burst or
  // a restarted subscriber made the pool create go again once the flow is steady.
  std::int64_t idle_trim_ns = 30'000'000'000;
};

struct PoolStats {
  std::uint64_t segments = 0;        // segments that exist now
  std::uint64_t bytes = 0;           // their data bytes
  std::uint64_t in_use = 0;          // held locally or by receivers
  std::uint64_t allocations = 0;     // buffers handed out
  std::uint64_t created = 0;         // segments ever created
  std::uint64_t recycled = 0;        // blocks reused after every holder let go
  std::uint64_t transit_expired = 0; // blocks reused after the transit timeout (receiver lost)
  std::uint64_t trimmed = 0;         // segments unlinked after idle_trim_ns unused
  std::uint64_t dead_holders_cleared = 0;
  std::uint64_t exhausted = 0;       // allocations refused because the pool was full
  // Receivers that could not hold a block because all its holder slots were taken, by the
  // topic the block was last sent on (each is a message that receiver dropped).
  std::map<std::string, std::uint64_t> slot_refusals;
  // Blocks taken back from observers that had not picked them up yet, because the pool was
  // short (each is a message those observers drop), by the topic they were sent on.
  std::map<std::string, std::uint64_t> observer_reclaims;
};

// Receiving processes of one send, by role (each counted once per block).
struct Receivers {
  std::uint32_t pipeline = 0;
  std::uint32_t observers = 0;
};

class Pool : public std::enable_shared_from_this<Pool> {
 public:
  static std::shared_ptr<Pool> create(PoolOptions options);
  ~Pool();

  // A writable buffer of at least `size` bytes (exactly `size` visible) in shared memory.
  Expected<BufferPtr> allocate(std::size_t size);
  // The same on `device`: host shared memory for the CPU, else device memory that other
  // processes of this user map through a file descriptor (the device's allocator exports it,
  // this pool's FdServer hands it out by segment name). The block's lifetime rules are the host
  // blocks' (a header-only segment carries its holders and generation). failed_precondition
  // when the device's allocator cannot export memory.
  Expected<BufferPtr> allocate_on(Device device, std::size_t size);
  // Records that the block behind `buffer` is being sent to `receivers` other processes
  // (once per block and message, however many tensors of the message lie in it), and, unless
  // its producer armed it (RemoteReady), that its bytes are written.
  void mark_sent(const Buffer& buffer, Receivers receivers, const std::string& topic = {});
  // Takes back a mark_sent() whose send failed.
  void cancel_sent(const Buffer& buffer, Receivers receivers);
  // True when `buffer` is a block of this pool (then it can be sent as a descriptor).
  bool owns(const Buffer& buffer) const;
  PoolStats stats() const;

  // Size class of a request: powers of two up to 64 KiB, then four steps per power of two.
  static std::size_t size_class(std::size_t size);

 private:
  struct Block {
    std::unique_ptr<Segment> segment;  // null: an evicted slot, reusable
    std::size_t size_class = 0;
    std::uint32_t generation = 1;
    // Cleared without the pool lock when the last local reference goes, so a subscriber
    // dropping a message never waits for a publisher that is creating a segment.
    std::atomic<bool> local_in_use{false};
    std::int64_t sent_ns = 0;
    std::uint64_t last_used = 0;  // allocation tick: reuse takes the newest, eviction the oldest
    std::int64_t last_used_ns = 0;  // when it was last handed out (idle trimming)
    std::string topic;            // last sent on (slot refusals are reported by it)
    std::uint32_t refusals_seen = 0;  // of the segment's slot_refusals, already counted
    Device device = Device::cpu();
    int fd = -1;  // device blocks: the exported descriptor (owned by the segment's memory)
    // This hand-out's producer publishes before its device work is done (RemoteReady::arm).
    std::atomic<bool> armed{false};
  };

  explicit Pool(PoolOptions options)
      : options_(std::move(options)), segment_name_prefix_(options_.name_prefix + ".") {}
  // Cheap test (no state change): could try_recycle() succeed now? `over_observers`: a
  // block only observers have yet to pick up counts as reusable (the pool is short).
  bool looks_reusable(const Block& block, std::int64_t now_ns, bool over_observers) const;
  bool try_recycle(Block& block, std::int64_t now_ns, bool over_observers);
  // Recycles a reusable block among those `eligible` accepts: the most recently used one
  // (`newest`: warm pages, and the others age out to be trimmed) or the least recently used.
  template <class Eligible>
  Block* recycle(std::int64_t now_ns, bool over_observers, bool newest, Eligible eligible);
  // Unlinks the segment of a recycled block; its slot stays for a later segment.
  void drop_segment(Block& block);
  // Unlinks the segments of free blocks idle for longer than idle_trim_ns.
  void trim_idle(std::int64_t now_ns);
  void adjust_pending(const Buffer& buffer, std::int32_t pipeline, std::int32_t observers,
                      const std::string* topic = nullptr);
  // Moves new slot refusals of `block` into refusals_ (under mu_).
  void collect_refusals(Block& block);
  bool evict_idle_for(std::size_t need, bool over_observers);
  BufferPtr hand_out(Block& block, std::size_t size);
  Status ensure_fd_server();
  Expected<UniqueFd> lookup_fd(std::string_view segment);

  PoolOptions options_;
  std::string segment_name_prefix_;  // "<name_prefix>."
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;  // stable addresses; never shrinks
  std::unordered_map<std::string, Block*> by_segment_;
  std::size_t bytes_ = 0;
  std::uint64_t tick_ = 0;
  std::uint64_t next_segment_ = 0;
  std::int64_t last_sweep_ns_ = 0;
  PoolStats stats_;
  std::unique_ptr<FdServer> fd_server_;  // started with the first device block
};

}  // namespace edgevla::shm
