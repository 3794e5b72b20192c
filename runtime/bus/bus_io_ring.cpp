// The bus's same-host delivery through shared-memory rings (see bus_io.hpp and
// runtime/shm/ring.hpp): this process's inbound ring and its thread, the rings of its peers,
// the record a message becomes in a ring, and the drain of what peers delivered (drain_inbound).
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "msgs/wire.hpp"
#include "runtime/bus/bus_io.hpp"
#include "runtime/shm/segment.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/cpu_marks.hpp"
#include "runtime/util/cpu_relax.hpp"

namespace edgevla {
namespace {

// How long a publisher waits for room in a full ring of another process before it drops.
constexpr std::int64_t kRingFullWaitNs = 20'000'000;
// A record that takes longer than this to hand to the bus is reported (the ring waits on it).
constexpr std::int64_t kSlowTakeNs = 500'000'000;

}  // namespace

// This process's inbound ring, named after its pid and bus number `n`; without one (no room
// in /dev/shm) peers deliver over ZeroMQ ipc.
void BusIo::create_ring(const std::string& n) {
  shm::RingOptions ro;
  ro.slots = options_.ring_slots;
  ro.slot_bytes = options_.ring_slot_bytes;
  ro.user_bytes = sizeof(RingInterestTable);
  auto ring = shm::Ring::create(shm::ring_name(::getpid(), n), ro);
  if (!ring) {
    rate_log_.warn("ring", "no inbound ring (" + ring.status().message() + "); peers deliver over ZeroMQ ipc");
    return;
  }
  ring_ = std::move(*ring);
  interest_ = reinterpret_cast<RingInterestTable*>(ring_->user_area());  // zeroed: an empty table
  interest_->spins.store(options_.upstream_spin_ns > 0 ? 1u : 0u, std::memory_order_release);
  self_.ring = ring_->name();
}

void BusIo::update_ring_peers(const std::vector<RegistryEntry>& entries) {
  // Rings of the peers that have one: kept while the peer lives, opened when new.
  std::vector<std::shared_ptr<RingPeer>> rings;
  {
    std::lock_guard lock(peers_mu_);
    for (const auto& e : entries) {
      if (e.bus_id == bus_id_ || e.ring.empty() || !connected_.contains(e.bus_id)) continue;
      for (const auto& p : ring_peers_) {
        if (p->bus_id == e.bus_id) rings.push_back(p);
      }
    }
  }
  for (const auto& e : entries) {
    if (e.bus_id == bus_id_ || e.ring.empty() || !connected_.contains(e.bus_id)) continue;
    if (std::any_of(rings.begin(), rings.end(), [&](const auto& p) { return p->bus_id == e.bus_id; })) continue;
    auto ring = shm::Ring::open(e.ring);
    std::string why;
    if (!ring) {
      why = ring.status().message();
    } else if ((*ring)->user_bytes() < sizeof(RingInterestTable) || (*ring)->owner_pid() != static_cast<pid_t>(e.pid)) {
      why = "its layout or creating process differs from the registry's";
    } else if ((*ring)->file_uid() != ::geteuid() || ((*ring)->file_mode() & 077) != 0) {
      // Delivering into another user's ring would hand it our data (root could open it).
      why = "it belongs to uid " + std::to_string((*ring)->file_uid()) + " with mode 0" +
            std::to_string(((*ring)->file_mode() >> 6) & 7) + std::to_string(((*ring)->file_mode() >> 3) & 7) +
            std::to_string((*ring)->file_mode() & 7) + " (owner-only rings of this uid only)";
    }
    if (!why.empty()) {
      counters_.ring_unavailable.add();
      rate_log_.warn("ring:" + e.bus_id, "cannot deliver to " + e.bus_id + " through its ring '" + e.ring + "': " + why);
      continue;
    }
    auto peer = std::make_shared<RingPeer>();
    peer->bus_id = e.bus_id;
    peer->pid = e.pid;
    peer->interest = reinterpret_cast<RingInterestTable*>((*ring)->user_area());
    peer->ring = std::move(*ring);
    rings.push_back(std::move(peer));
  }
  std::lock_guard lock(peers_mu_);
  ring_peers_ = std::move(rings);
}

// Same-host processes with a ring that take `topic`, and in which role (read from their rings).
std::vector<BusIo::RingTarget> BusIo::ring_targets_for(const std::string& topic) {
  std::vector<RingTarget> targets;
  std::lock_guard lock(peers_mu_);
  for (const auto& p : ring_peers_) {
    const RingRole role = ring_interest(*p->interest, topic);
    if (role != RingRole::kNone) targets.push_back({p, role});
  }
  return targets;
}

// A ring record: the frames a ZeroMQ message would carry (topic frame, envelope, inline
// tensors), each preceded by its length; split_record() reverses it.
std::string BusIo::ring_record(const std::string& frame, const std::string& envelope,
                               const std::vector<const Tensor*>& inline_tensors) {
  std::string record;
  const auto put_u32 = [&record](std::size_t v) {
    const auto u = static_cast<std::uint32_t>(v);
    record.append(reinterpret_cast<const char*>(&u), sizeof u);
  };
  put_u32(frame.size());
  record += frame;
  put_u32(envelope.size());
  record += envelope;
  put_u32(inline_tensors.size());
  for (const Tensor* t : inline_tensors) {
    put_u32(t->nbytes());
    record.append(reinterpret_cast<const char*>(t->raw_data()), t->nbytes());
  }
  return record;
}

// Pushes `record` into each target's ring; a ring that refuses takes its pending count on
// `blocks` back. True when any took it.
bool BusIo::deliver_to_rings(TopicWriter& writer, const std::string& topic, const std::string& record,
                             const std::vector<BufferPtr>& blocks, const std::vector<RingTarget>& rings) {
  bool delivered = false;
  const auto record_bytes = std::as_bytes(std::span(record.data(), record.size()));
  for (const RingTarget& r : rings) {
    Status st = r.peer->ring->push(record_bytes);
    // A full ring: its process is a burst behind. Wait for it briefly (its ring thread only
    // queues), unless this publisher must never wait, the process is gone, or it did not catch
    // up last time (a stopped process must not cost every publish the wait).
    if (st.code() == StatusCode::kResourceExhausted && !writer.options().never_wait &&
        !r.peer->congested.load(std::memory_order_relaxed) && shm::process_alive(static_cast<pid_t>(r.peer->pid))) {
      const std::int64_t until = steady_now_ns() + kRingFullWaitNs;
      while (st.code() == StatusCode::kResourceExhausted && steady_now_ns() < until) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        st = r.peer->ring->push(record_bytes);
      }
      if (!st.is_ok()) r.peer->congested.store(true, std::memory_order_relaxed);
    }
    if (st.is_ok()) r.peer->congested.store(false, std::memory_order_relaxed);
    const shm::Receivers one{r.role == RingRole::kObserver ? 0u : 1u, r.role == RingRole::kObserver ? 1u : 0u};
    if (!st.is_ok()) {
      for (const auto& b : blocks) pool_->cancel_sent(*b, one);
      if (st.code() == StatusCode::kResourceExhausted) counters_.dropped_ring_full.add();
      rate_log_.warn("ring-send:" + r.peer->bus_id, "'" + topic + "' not delivered to " + r.peer->bus_id +
                                                        ": " + st.message());
      continue;
    }
    counters_.sent_ring.add();
    delivered = true;
  }
  return delivered;
}

void BusIo::announce_upstream(const std::string& topic, std::vector<std::shared_ptr<RingInterestTable>>& out) {
  std::vector<std::shared_ptr<RingPeer>> peers;
  {
    std::lock_guard lock(peers_mu_);
    for (const auto& p : ring_peers_) {
      if (p->interest->spins.load(std::memory_order_acquire) == 0) continue;
      bool held = false;
      if (ring_interest(*p->interest, topic, &held) != RingRole::kPipeline || held) continue;
      peers.push_back(p);
    }
  }
  const auto pid = static_cast<std::uint32_t>(::getpid());
  for (const auto& p : peers) {
    if (std::any_of(out.begin(), out.end(), [&](const auto& t) { return t.get() == p->interest; })) continue;
    if (!ring_announce_upstream(*p->interest, pid)) continue;  // no free slot: no spin, nothing lost
    p->ring->interrupt();
    out.emplace_back(p, p->interest);  // shares the peer: its mapping outlives the announcement
  }
}

void BusIo::take_record(const std::string& record) {
  taking_record_.store(true, std::memory_order_relaxed);
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag.store(false, std::memory_order_relaxed); }
  } done{taking_record_};
  const std::int64_t arrival = wall_now_ns();
  std::vector<zmq::message_t> parts;
  if (!split_record(record, parts)) {
    counters_.decode_errors.add();
    bus_.reject_remote("?", "malformed ring record of " + std::to_string(record.size()) + " bytes");
    return;
  }
  counters_.received_ring.add();
  const std::int64_t start = steady_now_ns();
  {
    std::lock_guard lock(recv_mu_);
    handle_message(parts, /*shm_allowed=*/true, arrival);
  }
  if (const std::int64_t took = steady_now_ns() - start; took > kSlowTakeNs) {
    // Said, because every topic of this process waited behind it (handle_message leaves the
    // topic frame in place).
    const auto topic = wire::parse_topic_frame(std::as_bytes(std::span(static_cast<const char*>(parts[0].data()), parts[0].size())));
    rate_log_.warn("slow-take", "taking a message on '" + std::string(topic ? *topic : "?") + "' from the ring took " +
                                    std::to_string(took / 1'000'000) +
                                    " ms (a first device block starts the device in this process); the messages "
                                    "behind it waited");
  }
}

Status BusIo::drain_inbound(std::int64_t timeout_ns) {
  const std::uint64_t ask = drain_asked_.fetch_add(1) + 1;
  // The I/O thread empties its sockets (runs its commands before it polls again).
  post([this, ask] {
    const std::int64_t until = steady_now_ns() + 1'000'000'000;
    while (receive(sub_ipc_, /*shm_allowed=*/true) + receive(sub_tcp_, /*shm_allowed=*/false) > 0 &&
           steady_now_ns() < until) {
    }
    std::lock_guard lock(drain_mu_);
    sockets_drained_ = std::max(sockets_drained_, ask);
    drain_cv_.notify_all();
  });
  // The ring thread looks at the request at its next turn (its pop returns on the interrupt).
  if (ring_) ring_->interrupt();
  std::unique_lock lock(drain_mu_);
  const bool done = drain_cv_.wait_for(lock, std::chrono::nanoseconds(std::max<std::int64_t>(timeout_ns, 0)), [&] {
    return sockets_drained_ >= ask && (!ring_ || ring_drained_ >= ask);
  });
  if (done) return Status::ok();
  std::string left;
  if (ring_ && ring_drained_ < ask) {
    left = std::to_string(ring_->backlog_slots()) + " ring slot(s) not yet taken" +
           (taking_record_.load() ? " (one record still being taken)" : "");
  }
  if (sockets_drained_ < ask) left += std::string(left.empty() ? "" : "; ") + "ZeroMQ sockets not yet read";
  return timeout_error("inbound messages not all taken within " + std::to_string(timeout_ns / 1'000'000) +
                       " ms: " + left);
}

void BusIo::answer_drain(std::uint64_t ask) {
  std::string record;
  while (!stop_.load(std::memory_order_relaxed) && ring_->pop(record, 0)) take_record(record);
  std::lock_guard lock(drain_mu_);
  ring_drained_ = ask;
  drain_cv_.notify_all();
}

void BusIo::spin_for_upstream(std::string& record) {
  std::vector<std::shared_ptr<Waker>> local;
  bus_.upstream_wakers(local);
  // This thread spins: it keeps off CPUs other busy threads of this process hold, and marks its
  // own before the local spinners it is about to wake look for theirs.
  const cpu_marks::Mark spinning = cpu_marks::settle();
  for (const auto& w : local) w->upstream_begins();
  const std::int64_t until = steady_now_ns() + options_.upstream_spin_ns;
  bool took = false;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (ring_->pop(record, 0)) {
      take_record(record);
      took = true;
      continue;  // the announced callback may publish more; spin on while it runs
    }
    if (ring_upstream_busy(*interest_) == 0) {
      // What the callback published is in the ring before its announcement ends: one more look.
      while (ring_->pop(record, 0)) {
        take_record(record);
        took = true;
      }
      break;
    }
    if (steady_now_ns() >= until) {
      // Still busy at the limit: an announcer that died mid-callback leaves its count behind.
      counters_.upstream_dead_cleared.add(ring_clear_dead_announcers(
          *interest_, [](std::uint32_t pid) { return shm::process_alive(static_cast<pid_t>(pid)); }));
      break;
    }
    cpu_relax();
  }
  for (const auto& w : local) w->upstream_ends();
  (took ? counters_.upstream_spins_taken : counters_.upstream_spins_missed).add();
}

void BusIo::run_ring() {
  std::string record;
  std::uint32_t spun_epoch = interest_->epoch.load(std::memory_order_acquire);
  std::uint64_t drain_answered = 0;
  while (!stop_.load()) {
    const std::uint32_t interrupts = ring_->interrupts();
    // Read after `interrupts`: a drain asked later interrupts the pop below.
    if (const std::uint64_t ask = drain_asked_.load(std::memory_order_acquire); ask != drain_answered) {
      drain_answered = ask;
      answer_drain(ask);
      continue;
    }
    if (options_.upstream_spin_ns > 0) {
      // Spin once per announcement (a count left by a dead announcer does not keep it spinning).
      const std::uint32_t epoch = interest_->epoch.load(std::memory_order_acquire);
      if (epoch != spun_epoch && ring_upstream_busy(*interest_) > 0) {
        spun_epoch = epoch;
        spin_for_upstream(record);
        continue;
      }
      spun_epoch = epoch;
    }
    if (!ring_->pop(record, 200'000'000, interrupts)) continue;
    take_record(record);
  }
}
bool BusIo::split_record(const std::string& record, std::vector<zmq::message_t>& parts) {
  std::size_t at = 0;
  const auto get_u32 = [&](std::uint32_t& v) {
    if (record.size() - at < sizeof v) return false;
    std::memcpy(&v, record.data() + at, sizeof v);
    at += sizeof v;
    return true;
  };
  const auto get_bytes = [&]() {
    std::uint32_t n = 0;
    if (!get_u32(n) || record.size() - at < n) return false;
    parts.emplace_back(record.data() + at, n);
    at += n;
    return true;
  };
  std::uint32_t inline_count = 0;
  if (!get_bytes() || !get_bytes() || !get_u32(inline_count)) return false;
  if (inline_count > record.size()) return false;
  for (std::uint32_t i = 0; i < inline_count; ++i) {
    if (!get_bytes()) return false;
  }
  return at == record.size();
}

}  // namespace edgevla
