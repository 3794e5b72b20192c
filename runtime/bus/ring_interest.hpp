// A bus's topic interest, kept in the shared area of its inbound ring (shm/ring.hpp) so that
// publishers in other processes read, at each send, exactly which topics this process takes
// and in which role: no subscription messages, no discovery delay. One writer (the owning bus's
// I/O thread), many readers, a sequence lock; entries are topic hashes (FNV-1a, 64 bits; the
// receiving bus still checks the topic by name, so a collision costs a dropped copy, not a
// wrong delivery).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace edgevla {

enum class RingRole : std::uint32_t { kNone = 0, kPipeline = 1, kObserver = 2 };

struct RingInterestTable {
  static constexpr std::uint32_t kMaxTopics = 1024;
  static constexpr std::uint32_t kMaxAnnouncers = 32;
  struct Entry {
    std::atomic<std::uint64_t> hash;
    std::atomic<std::uint32_t> role;
    // 1: the owner's pipeline subscriptions to the topic only keep what arrives (QoS::triggers
    // off): its publishers' callbacks send it no upstream announcements.
    std::atomic<std::uint32_t> held;
  };
  // Upstream announcements (the launch group's upstream_spin_us): a process whose node starts a
  // callback that publishes to this process's pipeline topics adds one to `busy` in its own
  // slot (claimed by writing its pid) and bumps `epoch`; the owner's ring thread then spins for
  // the record to come. A slot whose process died while busy is cleared by the owner.
  struct Announcer {
    std::atomic<std::uint32_t> pid;
    std::atomic<std::uint32_t> busy;
  };
  std::atomic<std::uint32_t> version;  // odd while the writer changes entries
  std::atomic<std::uint32_t> count;
  std::atomic<std::uint32_t> spins;    // the owner spins for upstream work (else nobody announces)
  std::atomic<std::uint32_t> epoch;    // bumped by every announcement
  Announcer announcers[kMaxAnnouncers];
  Entry entries[kMaxTopics];
};

// Announcer: one more callback of process `pid` is busy for the table's owner. False when no
// slot was free (then nothing is to be withdrawn).
inline bool ring_announce_upstream(RingInterestTable& t, std::uint32_t pid) {
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& a : t.announcers) {
      std::uint32_t owner = a.pid.load(std::memory_order_acquire);
      if (owner != pid) {
        if (pass == 0 || owner != 0 || !a.pid.compare_exchange_strong(owner, pid, std::memory_order_acq_rel)) continue;
      }
      a.busy.fetch_add(1, std::memory_order_acq_rel);
      t.epoch.fetch_add(1, std::memory_order_acq_rel);
      return true;
    }
  }
  return false;
}

// Announcer: the callback announced by ring_announce_upstream(t, pid) ended.
inline void ring_withdraw_upstream(RingInterestTable& t, std::uint32_t pid) {
  for (auto& a : t.announcers) {
    if (a.pid.load(std::memory_order_acquire) != pid) continue;
    std::uint32_t n = a.busy.load(std::memory_order_acquire);
    while (n > 0 && !a.busy.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) {
    }
    return;
  }
}

// Owner: clears the slots of announcers that `alive(pid)` says are gone while still counted
// busy (they died mid-callback); returns how many.
template <class Alive>
std::uint32_t ring_clear_dead_announcers(RingInterestTable& t, Alive&& alive) {
  std::uint32_t cleared = 0;
  for (auto& a : t.announcers) {
    const std::uint32_t pid = a.pid.load(std::memory_order_acquire);
    if (pid == 0 || a.busy.load(std::memory_order_acquire) == 0 || alive(pid)) continue;
    a.busy.store(0, std::memory_order_release);
    a.pid.store(0, std::memory_order_release);
    ++cleared;
  }
  return cleared;
}

// Owner: callbacks of other processes busy for it now.
inline std::uint32_t ring_upstream_busy(const RingInterestTable& t) {
  std::uint32_t n = 0;
  for (const auto& a : t.announcers) n += a.busy.load(std::memory_order_acquire);
  return n;
}

inline std::uint64_t topic_hash(std::string_view topic) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : topic) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// Writer: sets the role of `topic` (kNone removes it) and whether the owner only holds what
// arrives there. False when the table is full.
inline bool set_ring_interest(RingInterestTable& t, std::string_view topic, RingRole role, bool held = false) {
  const std::uint64_t h = topic_hash(topic);
  const std::uint32_t n = t.count.load(std::memory_order_relaxed);
  std::uint32_t at = n;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (t.entries[i].hash.load(std::memory_order_relaxed) == h) at = i;
  }
  if (at == n && role == RingRole::kNone) return true;
  if (at == n && n == RingInterestTable::kMaxTopics) return false;
  t.version.fetch_add(1, std::memory_order_acq_rel);  // odd: readers retry
  std::atomic_thread_fence(std::memory_order_release);
  if (role == RingRole::kNone) {
    const std::uint32_t last = n - 1;
    t.entries[at].hash.store(t.entries[last].hash.load(std::memory_order_relaxed), std::memory_order_relaxed);
    t.entries[at].role.store(t.entries[last].role.load(std::memory_order_relaxed), std::memory_order_relaxed);
    t.entries[at].held.store(t.entries[last].held.load(std::memory_order_relaxed), std::memory_order_relaxed);
    t.count.store(last, std::memory_order_relaxed);
  } else {
    t.entries[at].hash.store(h, std::memory_order_relaxed);
    t.entries[at].role.store(static_cast<std::uint32_t>(role), std::memory_order_relaxed);
    t.entries[at].held.store(held ? 1u : 0u, std::memory_order_relaxed);
    if (at == n) t.count.store(n + 1, std::memory_order_relaxed);
  }
  t.version.fetch_add(1, std::memory_order_release);  // even again
  return true;
}

// Reader: the role the table's owner takes `topic` in; an observer of every topic (the empty
// topic) counts for each. `held`, when given, is set to whether the owner only holds what
// arrives on `topic` (no upstream announcements for it).
inline RingRole ring_interest(const RingInterestTable& t, std::string_view topic, bool* held = nullptr) {
  const std::uint64_t h = topic_hash(topic), all = topic_hash("");
  for (;;) {
    const std::uint32_t v1 = t.version.load(std::memory_order_acquire);
    if (v1 & 1u) continue;
    RingRole role = RingRole::kNone, every = RingRole::kNone;
    bool topic_held = false;
    const std::uint32_t n = std::min(t.count.load(std::memory_order_relaxed), RingInterestTable::kMaxTopics);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t eh = t.entries[i].hash.load(std::memory_order_relaxed);
      if (eh == h) {
        role = static_cast<RingRole>(t.entries[i].role.load(std::memory_order_relaxed));
        topic_held = t.entries[i].held.load(std::memory_order_relaxed) != 0;
      }
      if (eh == all) every = static_cast<RingRole>(t.entries[i].role.load(std::memory_order_relaxed));
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (t.version.load(std::memory_order_relaxed) != v1) continue;
    if (role == RingRole::kNone && every == RingRole::kObserver) role = RingRole::kObserver;
    if (held != nullptr) *held = topic_held;
    return role;
  }
}

}  // namespace edgevla
