#include "runtime/shm/pool.hpp"

#include <algorithm>
#include <bit>

#include "runtime/shm/ready.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::shm {

std::shared_ptr<Pool> Pool::create(PoolOptions options) {
  return std::shared_ptr<Pool>(new Pool(std::move(options)));
}

Pool::~Pool() = default;

std::size_t Pool::size_class(std::size_t size) {
  constexpr std::size_t kMin = 4096;
  constexpr std::size_t kFine = 64 * 1024;
  if (size <= kMin) return kMin;
  if (size <= kFine) return std::bit_ceil(size);
  const std::size_t pow = std::bit_floor(size);
  const std::size_t step = pow / 4;
  return (size + step - 1) / step * step;
}

namespace {
// Whether the pending counts of `s` still keep its block (`expired`: the transit timeout
// passed, so nobody is waited for any more).
bool pending_keeps(const State& s, bool expired, bool over_observers) {
  if (expired) return false;
  return s.pending > 0 || (s.observer_pending > 0 && !over_observers);
}
// A block's readiness for other processes (RemoteReady) during one hand-out: armed by a producer
// that publishes with device work still queued, signalled by it once the work is done. The pool
// outlives it (captured), and the block's segment cannot go while the buffer holding it is alive.
class BlockReady final : public RemoteReady {
 public:
  BlockReady(std::shared_ptr<const void> pool, const Segment& segment, std::atomic<bool>* armed, std::uint32_t generation)
      : pool_(std::move(pool)), header_(&segment.header()), device_header_(segment.device_header()), armed_(armed),
        generation_(generation) {}
  void arm() override { armed_->store(true, std::memory_order_release); }
  bool armed() const override { return armed_->load(std::memory_order_acquire); }
  void signal(bool ok) override {
    if (armed()) {
      mark_ready(*header_, generation_, ok);  // readers may be asleep on the word: woken
    } else {
      // Marked as it is sent (Pool::mark_sent): no reader has its descriptor yet, none to wake.
      header_->ready_generation.store(generation_, std::memory_order_release);
    }
  }
  void* device_ready_word() const override {
    if (device_header_ == nullptr) return nullptr;
    const auto offset = reinterpret_cast<const std::byte*>(&header_->ready_generation) -
                        reinterpret_cast<const std::byte*>(header_);
    return static_cast<std::byte*>(device_header_) + offset;
  }
  std::uint32_t ready_value() const override { return generation_; }

 private:
  std::shared_ptr<const void> pool_;
  SegmentHeader* header_;
  void* device_header_;  // the header as the block's device addresses it (null: not mapped)
  std::atomic<bool>* armed_;
  std::uint32_t generation_;
};

}  // namespace

bool Pool::looks_reusable(const Block& b, std::int64_t now_ns, bool over_observers) const {
  if (!b.segment || b.local_in_use.load()) return false;
  const State s = State::unpack(b.segment->header().state.load());
  if (s.flags != 0) return false;
  if (pending_keeps(s, now_ns - b.sent_ns >= options_.transit_timeout_ns, over_observers)) return false;
  return !b.segment->any_holder();
}

template <class Eligible>
Pool::Block* Pool::recycle(std::int64_t now_ns, bool over_observers, bool newest, Eligible eligible) {
  // Candidates by cheap checks, in order; only the one taken is recycled (its generation
  // bumped), and the next is tried only if a receiver slipped in meanwhile.
  std::vector<Block*> candidates;
  for (auto& b : blocks_) {
    if (eligible(*b) && looks_reusable(*b, now_ns, over_observers)) candidates.push_back(b.get());
  }
  std::sort(candidates.begin(), candidates.end(), [newest](const Block* a, const Block* b) {
    return newest ? a->last_used > b->last_used : a->last_used < b->last_used;
  });
  for (Block* b : candidates) {
    if (try_recycle(*b, now_ns, over_observers)) return b;
  }
  return nullptr;
}

bool Pool::try_recycle(Block& b, std::int64_t now_ns, bool over_observers) {
  const Segment& seg = *b.segment;
  auto& state = seg.header().state;
  std::uint64_t raw = state.load();
  const State s = State::unpack(raw);
  if (s.flags != 0) return false;
  const bool expired = now_ns - b.sent_ns >= options_.transit_timeout_ns;
  if (pending_keeps(s, expired, over_observers)) return false;
  if (seg.any_holder()) return false;
  const State recycling{s.generation + 1, 0, 0, kFlagRecycling};
  if (!state.compare_exchange_strong(raw, recycling.pack())) return false;
  if (seg.any_holder()) {
    // A receiver claimed a slot between our checks; it keeps the block.
    std::uint64_t expect = recycling.pack();
    state.compare_exchange_strong(expect, s.pack());
    return false;
  }
  state.store(State{s.generation + 1, 0, 0, 0}.pack());
  b.generation = s.generation + 1;
  if (expired && (s.pending > 0 || s.observer_pending > 0)) {
    ++stats_.transit_expired;
  } else if (s.observer_pending > 0) {
    stats_.observer_reclaims[b.topic.empty() ? "?" : b.topic] += s.observer_pending;
  } else if (b.sent_ns != 0) {
    ++stats_.recycled;
  }
  b.sent_ns = 0;
  return true;
}

bool Pool::evict_idle_for(std::size_t need, bool over_observers) {
  // Frees least recently used idle blocks (any size class) until `need` more bytes fit.
  const std::int64_t now = steady_now_ns();
  while (bytes_ + need > options_.max_bytes) {
    Block* victim = recycle(now, over_observers, /*newest=*/false, [](const Block&) { return true; });
    if (victim == nullptr) return false;
    drop_segment(*victim);
  }
  return true;
}

void Pool::drop_segment(Block& b) {
  bytes_ -= b.size_class;
  collect_refusals(b);
  by_segment_.erase(b.segment->name());
  b.segment.reset();  // a device block's memory goes with it
  b.fd = -1;
  b.device = Device::cpu();
}

void Pool::trim_idle(std::int64_t now_ns) {
  if (options_.idle_trim_ns <= 0) return;
  for (auto& b : blocks_) {
    if (!b->segment || b->last_used_ns == 0 || now_ns - b->last_used_ns < options_.idle_trim_ns) continue;
    if (looks_reusable(*b, now_ns, /*over_observers=*/false) && try_recycle(*b, now_ns, /*over_observers=*/false)) {
      drop_segment(*b);
      ++stats_.trimmed;
    }
  }
}

BufferPtr Pool::hand_out(Block& b, std::size_t size) {
  b.local_in_use.store(true);
  b.last_used = ++tick_;
  b.last_used_ns = steady_now_ns();
  ++stats_.allocations;
  Buffer::Options o;
  const bool on_device = !b.device.is_cpu();
  o.kind = on_device ? BufferKind::kDevice : BufferKind::kSharedMemory;
  o.device = b.device;
  o.writable = true;
  // Device blocks use the same offsets (data at kDataOffset), counted in the device memory.
  o.shm = ShmLocation{b.segment->name(), kDataOffset, size, b.generation};
  // The pool outlives its buffers (captured), and a Block is never evicted while in use.
  o.release = [self = shared_from_this(), block = &b] { block->local_in_use.store(false); };
  b.armed.store(false);
  o.remote_ready = std::make_shared<BlockReady>(shared_from_this(), *b.segment, &b.armed, b.generation);
  std::byte* data = on_device ? b.segment->device_memory()->data() : b.segment->data();
  return std::make_shared<Buffer>(data, size, std::move(o));
}

Status Pool::ensure_fd_server() {
  if (fd_server_) return Status::ok();
  // Abstract socket names are private to the network namespace and vanish with the process.
  auto server = FdServer::start("edgevla-fd" + options_.name_prefix,
                                [this](std::string_view key, const FdPeer&) { return lookup_fd(key); });
  if (!server) return server.status();
  fd_server_ = std::move(*server);
  return Status::ok();
}

Expected<UniqueFd> Pool::lookup_fd(std::string_view segment) {
  std::lock_guard lock(mu_);
  auto it = by_segment_.find(std::string(segment));
  if (it == by_segment_.end() || it->second->fd < 0) {
    return not_found("no device block '" + std::string(segment) + "' in this process (it was freed)");
  }
  // Duplicated under the pool lock: an eviction may close the block's own descriptor meanwhile.
  return duplicate_fd(it->second->fd);
}

Expected<BufferPtr> Pool::allocate(std::size_t size) { return allocate_on(Device::cpu(), size); }

Expected<BufferPtr> Pool::allocate_on(Device device, std::size_t size) {
  const std::size_t cls = size_class(size);
  Allocator* dev_alloc = nullptr;
  if (!device.is_cpu()) {
    EDGEVLA_ASSIGN_OR_RETURN(dev_alloc, allocator_for(device));
  }
  std::string name;
  {
    std::lock_guard lock(mu_);
    const std::int64_t now = steady_now_ns();
    // Sweep slots of dead receivers now and then, so a crashed subscriber frees its blocks.
    if (now - last_sweep_ns_ > 100'000'000) {
      last_sweep_ns_ = now;
      for (auto& b : blocks_) {
        if (b->segment && !b->local_in_use.load()) {
          stats_.dead_holders_cleared += static_cast<std::uint64_t>(b->segment->clear_dead_holders());
        }
      }
      trim_idle(now);
    }
    const auto same_class = [cls, device](const Block& b) { return b.size_class == cls && b.device == device; };
    if (Block* reuse = recycle(now, /*over_observers=*/false, /*newest=*/true, same_class)) return hand_out(*reuse, size);
    const bool fits = bytes_ + cls <= options_.max_bytes || evict_idle_for(cls, /*over_observers=*/false);
    // Short: observers lose first. A block only observers have yet to pick up is taken back.
    if (!fits) {
      // (the oldest: its observers had the longest time to pick it up)
      if (Block* reuse = recycle(now, /*over_observers=*/true, /*newest=*/false, same_class)) return hand_out(*reuse, size);
    }
    if (!fits && !evict_idle_for(cls, /*over_observers=*/true)) {
      ++stats_.exhausted;
      return resource_exhausted(
          "shared memory pool is full (" + std::to_string(bytes_ >> 20) + " MiB of " +
          std::to_string(options_.max_bytes >> 20) +
          " MiB held by this process's in-flight messages); subscribers are holding buffers — "
          "release received messages sooner or raise the group's shm_pool_mb");
    }
    bytes_ += cls;  // reserved while the segment is created without the lock
    name = options_.name_prefix + "." + std::to_string(next_segment_++);
  }
  Expected<std::unique_ptr<Segment>> seg = unavailable("");
  Allocator::Shareable mem;
  if (device.is_cpu()) {
    seg = Segment::create(name, cls);
  } else {
    Status st;
    {
      std::lock_guard lock(mu_);
      st = ensure_fd_server();
    }
    auto m = st.is_ok() ? dev_alloc->allocate_shareable(device.index, cls) : Expected<Allocator::Shareable>(st);
    if (m) {
      mem = std::move(*m);
      seg = Segment::create_device(name, device, mem.size, fd_server_->name());
      if (seg) {
        (*seg)->set_device_memory(mem.buffer);
        // The device marks the block written itself when it can (fence_output); else the producer's
        // process does, a little later.
        if (auto mapping = dev_alloc->map_host_for_device(&(*seg)->header(), kDataOffset, device.index)) {
          (*seg)->set_header_mapping(std::move(*mapping));
        }
      }
    } else {
      seg = m.status();
    }
  }
  std::lock_guard lock(mu_);
  if (!seg) {
    bytes_ -= cls;
    return seg.status();
  }
  Block* slot = nullptr;
  for (auto& b : blocks_) {
    if (!b->segment && !b->local_in_use.load()) {
      slot = b.get();
      break;
    }
  }
  if (slot == nullptr) {
    blocks_.push_back(std::make_unique<Block>());
    slot = blocks_.back().get();
  }
  slot->segment = std::move(*seg);
  by_segment_[slot->segment->name()] = slot;
  slot->size_class = cls;
  slot->device = device;
  slot->fd = mem.fd;  // owned by mem.buffer, which the segment keeps
  slot->generation = State::unpack(slot->segment->header().state.load()).generation;
  slot->sent_ns = 0;
  ++stats_.created;
  return hand_out(*slot, size);
}

void Pool::mark_sent(const Buffer& buffer, Receivers receivers, const std::string& topic) {
  // Written before it is sent, unless its producer armed it (then it marks the block itself).
  if (RemoteReady* r = buffer.remote_ready(); r != nullptr && !r->armed()) r->signal(true);
  adjust_pending(buffer, static_cast<std::int32_t>(receivers.pipeline), static_cast<std::int32_t>(receivers.observers),
                 topic.empty() ? nullptr : &topic);
}

namespace {
// Slot refusals of a block not yet counted, and the topic they are counted under.
std::uint32_t new_refusals(const std::unique_ptr<Segment>& segment, std::uint32_t seen) {
  return segment ? segment->header().slot_refusals.load() - seen : 0;
}
std::string refusal_topic(const std::string& topic) { return topic.empty() ? "?" : topic; }
}  // namespace

void Pool::collect_refusals(Block& b) {
  const std::uint32_t n = new_refusals(b.segment, b.refusals_seen);
  if (n == 0) return;
  stats_.slot_refusals[refusal_topic(b.topic)] += n;
  b.refusals_seen += n;
}

void Pool::cancel_sent(const Buffer& buffer, Receivers receivers) {
  adjust_pending(buffer, -static_cast<std::int32_t>(receivers.pipeline), -static_cast<std::int32_t>(receivers.observers));
}

void Pool::adjust_pending(const Buffer& buffer, std::int32_t pipeline, std::int32_t observers, const std::string* topic) {
  if (!buffer.shm() || (pipeline == 0 && observers == 0)) return;
  std::lock_guard lock(mu_);
  auto it = by_segment_.find(buffer.shm()->segment);
  if (it == by_segment_.end()) return;
  Block& b = *it->second;
  if (topic != nullptr && *topic != b.topic) {
    collect_refusals(b);  // refusals so far belong to the topic it was sent on before
    b.topic = *topic;
  }
  const auto add = [](std::uint16_t v, std::int32_t d) {
    return static_cast<std::uint16_t>(std::clamp<std::int32_t>(static_cast<std::int32_t>(v) + d, 0, kMaxPending));
  };
  auto& state = b.segment->header().state;
  std::uint64_t raw = state.load();
  for (;;) {
    State s = State::unpack(raw);
    s.pending = add(s.pending, pipeline);
    s.observer_pending = add(s.observer_pending, observers);
    if (state.compare_exchange_weak(raw, s.pack())) break;
  }
  if (pipeline > 0 || observers > 0) b.sent_ns = steady_now_ns();
}

bool Pool::owns(const Buffer& buffer) const {
  return (buffer.kind() == BufferKind::kSharedMemory || buffer.kind() == BufferKind::kDevice) && buffer.shm() &&
         buffer.shm()->segment.starts_with(segment_name_prefix_);
}

PoolStats Pool::stats() const {
  std::lock_guard lock(mu_);
  PoolStats s = stats_;
  for (const auto& b : blocks_) {  // refusals not yet moved into stats_
    if (const std::uint32_t n = new_refusals(b->segment, b->refusals_seen)) s.slot_refusals[refusal_topic(b->topic)] += n;
  }
  s.segments = 0;
  s.in_use = 0;
  for (const auto& b : blocks_) {
    if (!b->segment) continue;
    ++s.segments;
    const State st = State::unpack(b->segment->header().state.load());
    if (b->local_in_use.load() || st.pending > 0 || st.observer_pending > 0 || b->segment->any_holder()) ++s.in_use;
  }
  s.bytes = bytes_;
  return s;
}

}  // namespace edgevla::shm
