// A ring of fixed-size records in one POSIX shared-memory segment: many producer processes, one
// consumer, and a futex the consumer sleeps on. It carries small records (message descriptors)
// from one process to another with one wake-up: the producer's store and, only when the
// consumer sleeps, one FUTEX_WAKE; no socket, no I/O thread on either side.
//
// Protocol (slot = sequence word, owner word, length, span, bytes; n slots):
//  - A slot with sequence == pos is free for the record at ring position pos. A producer claims
//    position pos by a compare-and-swap on the shared enqueue position, writes its pid and pos
//    into the slot's owner word, copies the record, and publishes it by a compare-and-swap of
//    the sequence from pos to pos + 1.
//  - The consumer takes the record at its dequeue position pos once the sequence reads pos + 1,
//    then frees the slot for position pos + n (sequence = pos + n).
//  - A record larger than a slot claims k consecutive positions with one compare-and-swap of
//    the enqueue position (all k slots free), writes its bytes across them, publishes the
//    k - 1 continuation slots (span 0) and then the head (span k, the whole length): the
//    consumer, seeing the head, takes all k. A continuation without its head (the head was
//    skipped as stale) is freed and counted, never handed out.
//  - A producer that dies (or stops) between claim and publish would block the ring. The
//    consumer skips such a slot (a compare-and-swap of the sequence from pos to pos + n) once
//    its owner word names a process that no longer exists, or once the slot has been claimed
//    for longer than the stale limit. A producer that finds its slot skipped loses its record
//    (its publish CAS fails; counted). A producer stopped past the limit in the middle of its
//    copy could still write into the slot's next record: stopped publishers are for the
//    supervisor to kill (heartbeats), and the limit is seconds.
//  - Sleeping: the consumer reads the futex word, announces it waits, re-checks the ring, then
//    FUTEX_WAITs on the word; a producer, after publishing, wakes it only if it announced so
//    (both sides order these with sequentially consistent fences, so no wake-up is lost).
// The creator (the consumer) owns the segment: it is created owner-only (mode 0600, or 0660
// for a group) and unlinked when the consumer's Ring is destroyed; a crashed consumer's segment
// is removed by the stale-segment sweep (its name carries the creator's pid).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "runtime/core/status.hpp"

namespace edgevla::shm {

inline constexpr std::uint64_t kRingMagic = 0x31474e4941564c45ull;  // "ELVAING1" little endian
inline constexpr std::uint32_t kRingVersion = 3;  // 2: records span slots; 3: interrupts

struct RingOptions {
  std::uint32_t slots = 256;        // a power of two
  std::uint32_t slot_bytes = 16384;  // largest record, bytes
  // A claimed slot whose producer is unknown is skipped after this long.
  std::int64_t stale_claim_ns = 2'000'000'000;
  mode_t mode = 0600;
  // Bytes of a zeroed area beside the header that the owner and its producers share for their
  // own use (the bus keeps its consumer's topic interest there).
  std::uint32_t user_bytes = 0;
};

struct RingCounters {
  std::uint64_t pushed = 0;
  std::uint64_t full = 0;        // pushes refused: the consumer is a full lap behind
  std::uint64_t too_big = 0;     // pushes refused: the record is larger than a slot
  std::uint64_t lost = 0;        // pushes whose slot the consumer skipped as stale
  std::uint64_t popped = 0;
  std::uint64_t skipped = 0;     // slots of dead producers skipped by the consumer
  std::uint64_t wakes = 0;       // FUTEX_WAKE calls made by producers of this handle
};

class Ring {
 public:
  // The consumer's side: creates segment `name` (a POSIX shm name, "/..."); fails if it exists.
  static Expected<std::unique_ptr<Ring>> create(const std::string& name, const RingOptions& options = {});
  // A producer's side: opens the ring `name` and checks its layout.
  static Expected<std::unique_ptr<Ring>> open(const std::string& name);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Producer, in two steps (a record written in place, no copy): reserve() claims the next
  // slot, the caller writes at most `capacity` bytes at `data`, commit() publishes `length` of
  // them. A reservation must be committed promptly: the consumer waits for it (up to the
  // stale-claim limit, or until this process is gone).
  struct Reservation {
    std::uint64_t position = 0;
    std::byte* data = nullptr;
    std::size_t capacity = 0;
  };
  Expected<Reservation> reserve();
  Status commit(const Reservation& r, std::size_t length);

  // Producer: copies the concatenation of `parts` into the ring as one record; a record
  // larger than a slot spans consecutive slots (up to half the ring: max_record_bytes()).
  // Errors: resource_exhausted when the ring has no room, invalid_argument when the record is
  // larger than max_record_bytes(), data_loss when the consumer skipped the record's slots
  // (this producer stalled too long).
  Status push(std::span<const std::span<const std::byte>> parts);
  Status push(std::span<const std::byte> record) { return push(std::span(&record, 1)); }

  // Consumer: takes the next record into `out`. Waits up to `timeout_ns` (0: does not wait)
  // for one; false when none came (or wake() was called, or, given `interrupts_seen`, when
  // interrupts() no longer equals it).
  bool pop(std::string& out, std::int64_t timeout_ns, std::optional<std::uint32_t> interrupts_seen = {});
  // Wakes a consumer sleeping in pop() (shutdown).
  void wake();
  // Any process: makes a consumer's pop() that was given an older interrupts() return (the
  // bus's ring thread then looks at its upstream announcements).
  void interrupt();
  std::uint32_t interrupts() const;

  const std::string& name() const { return name_; }
  std::uint32_t slot_bytes() const;
  // The largest record push() takes: half the slots' bytes.
  std::uint32_t max_record_bytes() const;
  // The shared area of RingOptions::user_bytes (64-byte aligned), and its size.
  std::byte* user_area() const;
  std::uint32_t user_bytes() const;
  // The creating process (the consumer).
  pid_t owner_pid() const;
  // The segment file's owner and permission bits, as found when it was opened.
  uid_t file_uid() const { return file_uid_; }
  mode_t file_mode() const { return file_mode_; }
  RingCounters counters() const;
  // Slots claimed by producers and not yet freed by the consumer (any thread; a snapshot).
  std::uint64_t backlog_slots() const;

 private:
  struct Header;
  struct Slot;
  Ring(std::string name, void* base, std::size_t bytes, bool owner, std::int64_t stale_claim_ns);
  Header& header() const;
  Slot& slot(std::uint64_t pos) const;
  // The consumer's check of the slot at its position: a record is ready (true), or nothing yet
  // (false); stale claims on the way are skipped.
  bool ready();
  bool record_ok(std::uint64_t pos) const;
  void wake_consumer();

  std::string name_;
  void* base_;
  std::size_t bytes_;
  bool owner_;
  std::int64_t stale_claim_ns_;
  std::uint64_t dequeue_ = 0;              // consumer only
  std::uint64_t stuck_pos_ = ~0ull;        // consumer: the claimed slot it is waiting on, since
  std::int64_t stuck_since_ns_ = 0;
  std::atomic<bool> kicked_{false};        // wake() was called
  uid_t file_uid_ = 0;
  mode_t file_mode_ = 0;
  std::atomic<std::uint64_t> pushed_{0}, full_{0}, too_big_{0}, lost_{0}, popped_{0}, skipped_{0}, wakes_{0};
};

// The ring name of a consumer: "/edgevla.<uid>.<pid>.ring.<tag>" (swept like other segments
// when <pid> is gone).
std::string ring_name(pid_t pid, const std::string& tag);

}  // namespace edgevla::shm
