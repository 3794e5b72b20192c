#include "runtime/shm/mapper.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/shm/fd_channel.hpp"
#include "runtime/shm/ready.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::shm {

Mapper::Mapper(std::size_t max_cached_segments, std::size_t max_observer_holds)
    : max_cached_(max_cached_segments),
      max_observer_holds_(max_observer_holds),
      pid_(static_cast<std::uint32_t>(::getpid())) {}

void Mapper::prune_unlinked() {
  // At most once a second: segments their publisher unlinked (trimmed from its pool, or swept
  // after it died) leave the cache, so their pages go once no message uses them.
  const std::int64_t now = steady_now_ns();
  if (now - last_prune_ns_ < 1'000'000'000) return;
  last_prune_ns_ = now;
  for (auto it = cache_.begin(); it != cache_.end();) {
    struct stat st {};
    if (::stat(("/dev/shm" + it->first).c_str(), &st) != 0 && errno == ENOENT) {
      lru_.erase(it->second.second);
      it = cache_.erase(it);
      counters_.unlinked_dropped.add();
    } else {
      ++it;
    }
  }
}

Expected<std::shared_ptr<Segment>> Mapper::segment(const std::string& name) {
  prune_unlinked();
  if (auto it = cache_.find(name); it != cache_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return it->second.first;
  }
  if (!name.starts_with(segment_prefix())) {
    counters_.bad_descriptor.add();
    return invalid_argument("shared memory segment '" + name +
                            "' is not an edgevla segment of this user");
  }
  auto opened = Segment::open(name);
  if (!opened) {
    if (opened.status().code() == StatusCode::kNotFound) {
      counters_.vanished.add();
    } else {
      counters_.bad_descriptor.add();
    }
    return opened.status();
  }
  std::shared_ptr<Segment> seg = std::move(*opened);
  lru_.push_front(name);
  cache_.emplace(name, std::make_pair(seg, lru_.begin()));
  while (cache_.size() > max_cached_) {
    cache_.erase(lru_.back());  // buffers still using it keep their own reference
    lru_.pop_back();
  }
  return seg;
}

Expected<BufferPtr> Mapper::import_device_block(const Segment& seg, const std::string& name) {
  auto fd = request_fd(seg.fd_channel(), name);
  if (!fd) {
    counters_.vanished.add();
    return not_found("device block '" + name + "': " + fd.status().message());
  }
  auto alloc = allocator_for(seg.device());
  if (!alloc) {
    counters_.bad_descriptor.add();
    return alloc.status().with_context("device block '" + name + "'");
  }
  auto imported = (*alloc)->import_shareable(fd->get(), seg.device_bytes(), seg.device().index);
  if (!imported) {
    // E.g. a device index this process does not have (another CUDA_VISIBLE_DEVICES).
    counters_.bad_descriptor.add();
    return imported.status().with_context("device block '" + name + "' on " + seg.device().to_string());
  }
  return std::move(*imported);
}

Expected<BufferPtr> Mapper::acquire(const ShmLocation& loc, AcquireOptions options) {
  std::shared_ptr<Segment> seg;
  BufferPtr device_memory;  // the block's mapping on its device (device blocks only)
  bool import = false;
  {
    std::lock_guard lock(mu_);
    auto s = segment(loc.segment);
    if (!s) return s.status();
    seg = std::move(*s);
    const bool on_device = !seg->device().is_cpu();
    const std::size_t capacity = on_device ? seg->device_bytes() : seg->capacity();
    if (loc.offset < kDataOffset || loc.offset - kDataOffset > capacity ||
        loc.size > capacity - (loc.offset - kDataOffset)) {
      counters_.bad_descriptor.add();
      return out_of_range("descriptor [offset " + std::to_string(loc.offset) + ", " +
                          std::to_string(loc.size) + " bytes] points outside segment '" +
                          loc.segment + "' (data at offset " + std::to_string(kDataOffset) + ", " +
                          std::to_string(capacity) + " bytes)");
    }
    device_memory = seg->device_memory();
    import = on_device && !device_memory;
  }
  if (import) {
    // Once per device block and process, outside the lock (the owner answers over a socket): the
    // owner's descriptor, imported on the same device.
    EDGEVLA_ASSIGN_OR_RETURN(device_memory, import_device_block(*seg, loc.segment));
    std::lock_guard lock(mu_);
    if (seg->device_memory()) {
      device_memory = seg->device_memory();  // another thread imported it first
    } else {
      seg->set_device_memory(device_memory);
      counters_.device_imports.add();
    }
  }
  // One slot per block and process: reuse this process's hold when it has one.
  std::shared_ptr<Hold> hold;
  bool shared = false;
  {
    std::lock_guard lock(mu_);
    auto key = std::make_pair(loc.segment, loc.generation);
    if (auto it = holds_.find(key); it != holds_.end()) {
      hold = it->second.lock();
      if (!hold) holds_.erase(it);
    }
    shared = hold != nullptr;
    if (hold && !options.observer && hold->observer.exchange(false)) {
      observer_holds_->fetch_sub(1);  // a pipeline subscriber uses it too: no longer bounded
    }
    if (!hold) {
      const int slot = seg->claim_slot(pid_);
      if (slot < 0) {
        counters_.slots_full.add();
        seg->header().slot_refusals.fetch_add(1);
        return resource_exhausted("segment '" + loc.segment + "' already has " + std::to_string(kMaxHolders) +
                                  " holder processes (each process takes one, however many tensors it holds)");
      }
      hold = std::make_shared<Hold>();
      hold->segment = seg;
      hold->slot = slot;
      hold->observer_holds = observer_holds_;
      if (options.observer) {
        hold->observer.store(true);
        observer_holds_->fetch_add(1);
      }
      holds_[key] = hold;
      // Forget expired entries now and then, so the map tracks only live holds.
      if (holds_.size() > 4096) std::erase_if(holds_, [](const auto& kv) { return kv.second.expired(); });
    }
  }
  auto& state = seg->header().state;
  std::uint64_t raw = state.load();
  for (;;) {
    State s = State::unpack(raw);
    if (s.generation != loc.generation || (s.flags & kFlagRecycling)) {
      counters_.recycled_before_read.add();
      return unavailable("buffer in '" + loc.segment +
                         "' was recycled by its publisher before this subscriber read it "
                         "(the subscriber fell behind by more than the publisher's pool)");
    }
    if (!options.take_pending) break;
    // This receiver's role counter; the other one if the publisher saw the role differently.
    std::uint16_t& mine = options.observer ? s.observer_pending : s.pending;
    std::uint16_t& other = options.observer ? s.pending : s.observer_pending;
    if (mine > 0) {
      --mine;
    } else if (other > 0) {
      --other;
    } else {
      break;
    }
    if (state.compare_exchange_weak(raw, s.pack())) break;
  }
  counters_.acquired.add();
  if (shared) counters_.shared_holds.add();
  // Published before its producer's device work was done: readers wait for the producer's signal.
  std::shared_ptr<BlockReadyFence> fence;
  if (!is_ready(seg->header(), loc.generation)) {
    fence = std::make_shared<BlockReadyFence>(seg, loc.generation);
    counters_.awaited.add();
  }
  const Device device = seg->device();
  std::byte* data = (device.is_cpu() ? seg->data() : device_memory->data()) + (loc.offset - kDataOffset);
  if (options.observer && !shared && hold->observer.load() &&
      observer_holds_->load() > static_cast<std::int64_t>(max_observer_holds_)) {
    // Past the observer's bound: read a copy; the hold (and the slot) goes with this scope.
    counters_.observer_copies.add();
    if (fence) EDGEVLA_RETURN_IF_ERROR(fence->wait());
    auto copy = Buffer::allocate_heap(loc.size);
    if (!copy) return copy.status();
    if (device.is_cpu()) {
      std::memcpy((*copy)->data(), data, loc.size);
    } else {
      auto alloc = allocator_for(device);
      if (!alloc) return alloc.status();
      EDGEVLA_RETURN_IF_ERROR((*alloc)->copy((*copy)->data(), data, loc.size, CopyKind::kToHost));
    }
    return copy;
  }
  Buffer::Options o;
  o.kind = device.is_cpu() ? BufferKind::kSharedMemory : BufferKind::kDevice;
  o.device = device;
  o.writable = false;
  o.shm = loc;
  o.release = [hold] {};  // the hold (and so the slot) lives as long as any buffer over it
  auto buffer = std::make_shared<Buffer>(data, loc.size, std::move(o));
  if (fence) buffer->set_ready(std::move(fence));
  return buffer;
}

void Mapper::forget_process(std::uint32_t pid) {
  const std::string prefix = segment_prefix() + std::to_string(pid) + ".";
  std::lock_guard lock(mu_);
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->first.starts_with(prefix)) {
      lru_.erase(it->second.second);
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }
}

MapperStats Mapper::stats() const {
  MapperStats s;
  s.acquired = counters_.acquired.get();
  s.recycled_before_read = counters_.recycled_before_read.get();
  s.vanished = counters_.vanished.get();
  s.bad_descriptor = counters_.bad_descriptor.get();
  s.slots_full = counters_.slots_full.get();
  s.device_imports = counters_.device_imports.get();
  s.unlinked_dropped = counters_.unlinked_dropped.get();
  s.shared_holds = counters_.shared_holds.get();
  s.observer_copies = counters_.observer_copies.get();
  s.awaited = counters_.awaited.get();
  s.observer_holds = static_cast<std::uint64_t>(std::max<std::int64_t>(0, observer_holds_->load()));
  std::lock_guard lock(mu_);
  s.mapped = cache_.size();
  for (const auto& [key, h] : holds_) s.holders += h.expired() ? 0 : 1;
  return s;
}

}  // namespace edgevla::shm
