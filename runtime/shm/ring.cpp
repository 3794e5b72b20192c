#include "runtime/shm/ring.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "runtime/shm/segment.hpp"

namespace edgevla::shm {

namespace {

constexpr std::size_t kLine = 64;
constexpr std::uint64_t kPidBits = 22;  // Linux pids stay below 2^22
constexpr std::uint64_t kPidMask = (std::uint64_t{1} << kPidBits) - 1;

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string errno_text(int e) { return std::strerror(e); }

std::uint64_t owner_word(std::uint64_t pos, pid_t pid) {
  return (pos << kPidBits) | (static_cast<std::uint64_t>(pid) & kPidMask);
}

long futex_op(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout) {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, timeout, nullptr, 0);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

}  // namespace

struct Ring::Header {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t slots;
  std::uint32_t slot_bytes;
  std::uint32_t owner_pid;
  std::uint64_t slot_stride;
  std::uint64_t user_bytes;  // the shared area between the header and the slots
  alignas(kLine) std::atomic<std::uint64_t> enqueue;  // next position a producer claims
  alignas(kLine) std::atomic<std::uint64_t> dequeue;  // the consumer's position (informational)
  alignas(kLine) std::atomic<std::uint32_t> futex;    // bumped by every wake
  std::atomic<std::uint32_t> waiting;                  // the consumer sleeps (or is about to)
  std::atomic<std::uint32_t> interrupts;               // bumped by interrupt()
};

struct Ring::Slot {
  std::atomic<std::uint64_t> seq;
  std::atomic<std::uint64_t> owner;  // (position << 22) | producer pid, written right after the claim
  std::uint32_t length;  // head: the whole record's bytes; continuation: this slot's bytes
  std::uint32_t span;    // head: the record's slots (>= 1); 0: a continuation slot
  // record bytes follow at offset kLine
};

static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && std::atomic<std::uint64_t>::is_always_lock_free);

std::string ring_name(pid_t pid, const std::string& tag) {
  return segment_prefix() + std::to_string(pid) + ".ring." + tag;
}

Ring::Ring(std::string name, void* base, std::size_t bytes, bool owner, std::int64_t stale_claim_ns)
    : name_(std::move(name)), base_(base), bytes_(bytes), owner_(owner), stale_claim_ns_(stale_claim_ns) {}

Ring::~Ring() {
  ::munmap(base_, bytes_);
  if (owner_) ::shm_unlink(name_.c_str());
}

Ring::Header& Ring::header() const { return *static_cast<Header*>(base_); }

std::byte* Ring::user_area() const { return static_cast<std::byte*>(base_) + round_up(sizeof(Header), kLine); }
std::uint32_t Ring::user_bytes() const { return static_cast<std::uint32_t>(header().user_bytes); }

Ring::Slot& Ring::slot(std::uint64_t pos) const {
  const Header& h = header();
  auto* first = static_cast<std::byte*>(base_) + round_up(sizeof(Header), kLine) + h.user_bytes;
  return *reinterpret_cast<Slot*>(first + (pos & (h.slots - 1)) * h.slot_stride);
}

std::uint32_t Ring::slot_bytes() const { return header().slot_bytes; }
pid_t Ring::owner_pid() const { return static_cast<pid_t>(header().owner_pid); }

Expected<std::unique_ptr<Ring>> Ring::create(const std::string& name, const RingOptions& o) {
  if (o.slots < 2 || (o.slots & (o.slots - 1)) != 0 || o.slots > (1u << 20)) {
    return invalid_argument("ring '" + name + "': slots must be a power of two in 2..2^20, not " +
                            std::to_string(o.slots));
  }
  if (o.slot_bytes < 16 || o.slot_bytes > (64u << 20)) {
    return invalid_argument("ring '" + name + "': slot_bytes must be in 16..64 MiB, not " +
                            std::to_string(o.slot_bytes));
  }
  if (o.user_bytes > (16u << 20)) return invalid_argument("ring '" + name + "': user_bytes over 16 MiB");
  const std::size_t stride = kLine + round_up(o.slot_bytes, kLine);
  const std::size_t user = round_up(o.user_bytes, kLine);
  const std::size_t total = round_up(sizeof(Header), kLine) + user + stride * o.slots;
  Fd f{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, o.mode)};
  if (f.fd < 0) return unavailable("cannot create ring '" + name + "': " + errno_text(errno));
  // The process umask may have narrowed the mode; the ring's is exactly the one asked for.
  if (::fchmod(f.fd, o.mode) != 0 || ::ftruncate(f.fd, static_cast<off_t>(total)) != 0) {
    const int err = errno;
    ::shm_unlink(name.c_str());
    return unavailable("cannot set up ring '" + name + "': " + errno_text(err));
  }
  if (const int err = ::posix_fallocate(f.fd, 0, static_cast<off_t>(total)); err != 0) {
    ::shm_unlink(name.c_str());
    return resource_exhausted("shared memory is full: cannot reserve " + std::to_string(total) + " bytes for ring '" +
                              name + "' (" + errno_text(err) + "); enlarge /dev/shm (docker: --shm-size)");
  }
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, f.fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::shm_unlink(name.c_str());
    return unavailable("cannot map ring '" + name + "': " + errno_text(err));
  }
  auto* h = new (base) Header{};
  h->magic = kRingMagic;
  h->version = kRingVersion;
  h->slots = o.slots;
  h->slot_bytes = o.slot_bytes;
  h->owner_pid = static_cast<std::uint32_t>(::getpid());
  h->slot_stride = stride;
  h->user_bytes = user;
  std::memset(static_cast<std::byte*>(base) + round_up(sizeof(Header), kLine), 0, user);
  h->enqueue.store(0);
  h->dequeue.store(0);
  h->futex.store(0);
  h->waiting.store(0);
  auto ring = std::unique_ptr<Ring>(new Ring(name, base, total, /*owner=*/true, o.stale_claim_ns));
  ring->file_uid_ = ::geteuid();
  ring->file_mode_ = o.mode & 0777;
  for (std::uint64_t i = 0; i < o.slots; ++i) {
    Slot* s = new (&ring->slot(i)) Slot{};
    s->seq.store(i);
    s->owner.store(0);
  }
  return ring;
}

Expected<std::unique_ptr<Ring>> Ring::open(const std::string& name) {
  Fd f{::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0)};
  if (f.fd < 0) {
    if (errno == ENOENT) return not_found("ring '" + name + "' does not exist (its process exited)");
    return unavailable("cannot open ring '" + name + "': " + errno_text(errno));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return unavailable("cannot stat ring '" + name + "': " + errno_text(errno));
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < round_up(sizeof(Header), kLine)) {
    return invalid_argument("'" + name + "' is not a ring (" + std::to_string(size) + " bytes)");
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (base == MAP_FAILED) return unavailable("cannot map ring '" + name + "': " + errno_text(errno));
  const auto* h = static_cast<const Header*>(base);
  const std::size_t expect = round_up(sizeof(Header), kLine) + h->user_bytes + h->slot_stride * h->slots;
  if (h->magic != kRingMagic || h->version != kRingVersion || h->slots < 2 || (h->slots & (h->slots - 1)) != 0 ||
      h->slot_stride < kLine + h->slot_bytes || h->user_bytes % kLine != 0 || expect != size) {
    ::munmap(base, size);
    return invalid_argument("'" + name + "' is not an edgevla ring of version " + std::to_string(kRingVersion) +
                            " (magic, version or size differ)");
  }
  auto ring = std::unique_ptr<Ring>(new Ring(name, base, size, /*owner=*/false, RingOptions{}.stale_claim_ns));
  ring->file_uid_ = st.st_uid;
  ring->file_mode_ = st.st_mode & 0777;
  return ring;
}

Expected<Ring::Reservation> Ring::reserve() {
  Header& h = header();
  std::uint64_t pos = h.enqueue.load(std::memory_order_relaxed);
  Slot* s = nullptr;
  for (;;) {
    s = &slot(pos);
    const std::uint64_t seq = s->seq.load(std::memory_order_acquire);
    const auto diff = static_cast<std::int64_t>(seq - pos);
    if (diff == 0) {
      if (h.enqueue.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (diff < 0) {
      full_.fetch_add(1, std::memory_order_relaxed);
      return resource_exhausted("ring '" + name_ + "' is full (" + std::to_string(h.slots) +
                                " records not yet taken by its consumer)");
    } else {
      pos = h.enqueue.load(std::memory_order_relaxed);
    }
  }
  s->owner.store(owner_word(pos, ::getpid()), std::memory_order_release);
  return Reservation{pos, reinterpret_cast<std::byte*>(s) + kLine, h.slot_bytes};
}

Status Ring::commit(const Reservation& r, std::size_t length) {
  Header& h = header();
  Slot& s = slot(r.position);
  s.length = static_cast<std::uint32_t>(std::min<std::size_t>(length, h.slot_bytes));
  s.span = 1;
  std::uint64_t expect = r.position;
  if (!s.seq.compare_exchange_strong(expect, r.position + 1, std::memory_order_acq_rel)) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    return data_loss("ring '" + name_ + "': the consumer skipped this record's slot (the producer stalled longer "
                     "than the stale-claim limit); the record is lost");
  }
  pushed_.fetch_add(1, std::memory_order_relaxed);
  wake_consumer();
  return Status::ok();
}

void Ring::wake_consumer() {
  Header& h = header();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h.waiting.load(std::memory_order_relaxed) != 0) {
    h.futex.fetch_add(1, std::memory_order_release);
    futex_op(&h.futex, FUTEX_WAKE, 1, nullptr);
    wakes_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::uint32_t Ring::max_record_bytes() const {
  const Header& h = header();
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(std::uint64_t{h.slot_bytes} * (h.slots / 2), UINT32_MAX));
}

Status Ring::push(std::span<const std::span<const std::byte>> parts) {
  std::size_t total = 0;
  for (const auto& p : parts) total += p.size();
  Header& h = header();
  if (total > max_record_bytes()) {
    too_big_.fetch_add(1, std::memory_order_relaxed);
    return invalid_argument("a record of " + std::to_string(total) + " bytes does not fit ring '" + name_ + "' (" +
                            std::to_string(max_record_bytes()) + " bytes at most: half its " +
                            std::to_string(h.slots) + " slots of " + std::to_string(h.slot_bytes) + " bytes)");
  }
  if (total <= h.slot_bytes) {
    EDGEVLA_ASSIGN_OR_RETURN(const Reservation r, reserve());
    std::byte* dst = r.data;
    for (const auto& p : parts) {
      if (!p.empty()) std::memcpy(dst, p.data(), p.size());
      dst += p.size();
    }
    return commit(r, total);
  }
  // A record larger than a slot takes `span` consecutive slots, claimed together.
  const std::uint64_t span = (total + h.slot_bytes - 1) / h.slot_bytes;
  std::uint64_t pos = h.enqueue.load(std::memory_order_relaxed);
  for (;;) {
    bool stale = false, full = false;
    for (std::uint64_t i = 0; i < span && !stale && !full; ++i) {
      const auto diff = static_cast<std::int64_t>(slot(pos + i).seq.load(std::memory_order_acquire) - (pos + i));
      full = diff < 0;
      stale = diff > 0;
    }
    if (full) {
      full_.fetch_add(1, std::memory_order_relaxed);
      return resource_exhausted("ring '" + name_ + "' is full (no " + std::to_string(span) + " free slots in a row for a " +
                                std::to_string(total) + "-byte record)");
    }
    // Free slots stay free until claimed, and a claim moves `enqueue`: the CAS settles it.
    if (!stale && h.enqueue.compare_exchange_weak(pos, pos + span, std::memory_order_relaxed)) break;
    if (stale) pos = h.enqueue.load(std::memory_order_relaxed);
  }
  for (std::uint64_t i = 0; i < span; ++i) slot(pos + i).owner.store(owner_word(pos + i, ::getpid()), std::memory_order_release);
  // Copy the parts across the slots' byte areas.
  std::uint64_t at_slot = 0;
  std::size_t at = 0;  // bytes filled in slot `at_slot`
  for (const auto& p : parts) {
    std::size_t done = 0;
    while (done < p.size()) {
      if (at == h.slot_bytes) {
        ++at_slot;
        at = 0;
      }
      const std::size_t n = std::min<std::size_t>(p.size() - done, h.slot_bytes - at);
      std::memcpy(reinterpret_cast<std::byte*>(&slot(pos + at_slot)) + kLine + at, p.data() + done, n);
      done += n;
      at += n;
    }
  }
  // Continuations first, the head last: a consumer that sees the head sees the whole record.
  for (std::uint64_t i = span - 1; i >= 1; --i) {
    Slot& c = slot(pos + i);
    c.length = static_cast<std::uint32_t>(i + 1 < span ? h.slot_bytes : total - (span - 1) * h.slot_bytes);
    c.span = 0;
    std::uint64_t expect = pos + i;
    if (!c.seq.compare_exchange_strong(expect, pos + i + 1, std::memory_order_acq_rel)) {
      lost_.fetch_add(1, std::memory_order_relaxed);
      return data_loss("ring '" + name_ + "': the consumer skipped this record's slots (the producer stalled longer "
                       "than the stale-claim limit); the record is lost");
    }
  }
  Slot& head = slot(pos);
  head.length = static_cast<std::uint32_t>(total);
  head.span = static_cast<std::uint32_t>(span);
  std::uint64_t expect = pos;
  if (!head.seq.compare_exchange_strong(expect, pos + 1, std::memory_order_acq_rel)) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    return data_loss("ring '" + name_ + "': the consumer skipped this record's slots (the producer stalled longer "
                     "than the stale-claim limit); the record is lost");
  }
  pushed_.fetch_add(1, std::memory_order_relaxed);
  wake_consumer();
  return Status::ok();
}

// The published slot at `pos` starts a whole record: a head whose length fits its span and
// whose continuation slots are all published.
bool Ring::record_ok(std::uint64_t pos) const {
  const Header& h = header();
  const Slot& s = slot(pos);
  const std::uint64_t span = s.span;
  if (span == 0 || span > h.slots / 2 || s.length > span * h.slot_bytes) return false;
  if (span == 1) return true;
  if (s.length <= (span - 1) * h.slot_bytes) return false;
  for (std::uint64_t i = 1; i < span; ++i) {
    const Slot& c = slot(pos + i);
    if (c.seq.load(std::memory_order_acquire) != pos + i + 1 || c.span != 0) return false;
  }
  return true;
}

bool Ring::ready() {
  Header& h = header();
  for (;;) {
    const std::uint64_t pos = dequeue_;
    Slot& s = slot(pos);
    const std::uint64_t seq = s.seq.load(std::memory_order_acquire);
    if (seq == pos + 1) {
      stuck_pos_ = ~0ull;
      if (record_ok(pos)) return true;
      // A continuation whose head was skipped, or a head whose slots do not add up (a producer
      // that is not an edgevla ring writer): freed and counted, never handed out.
      s.seq.store(pos + h.slots, std::memory_order_release);
      skipped_.fetch_add(1, std::memory_order_relaxed);
      ++dequeue_;
      h.dequeue.store(dequeue_, std::memory_order_relaxed);
      continue;
    }
    if (h.enqueue.load(std::memory_order_acquire) <= pos) return false;  // nothing claimed yet
    // Claimed, not yet published: a producer is writing, or died doing so.
    const std::int64_t now = now_ns();
    if (stuck_pos_ != pos) {
      stuck_pos_ = pos;
      stuck_since_ns_ = now;
    }
    // The owner word is written just after the claim: until then it holds the slot's previous
    // record's word, or zero before the first lap (which would read as position 0, pid 0 —
    // a claim of the ring's very first record must not pass for a dead producer's).
    const std::uint64_t owner = s.owner.load(std::memory_order_acquire);
    const bool known = (owner & kPidMask) != 0 && (owner >> kPidBits) == (pos & (~std::uint64_t{0} >> kPidBits));
    const bool dead = known && !process_alive(static_cast<pid_t>(owner & kPidMask));
    if (!dead && now - stuck_since_ns_ < stale_claim_ns_) return false;
    std::uint64_t expect = pos;
    if (s.seq.compare_exchange_strong(expect, pos + h.slots, std::memory_order_acq_rel)) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      ++dequeue_;
      h.dequeue.store(dequeue_, std::memory_order_relaxed);
    }
    // Else the producer published meanwhile: the next pass takes it.
    stuck_pos_ = ~0ull;
  }
}

std::uint64_t Ring::backlog_slots() const {
  const Header& h = header();
  const std::uint64_t enq = h.enqueue.load(std::memory_order_acquire), deq = h.dequeue.load(std::memory_order_relaxed);
  return enq > deq ? enq - deq : 0;
}

bool Ring::pop(std::string& out, std::int64_t timeout_ns, std::optional<std::uint32_t> interrupts_seen) {
  Header& h = header();
  const std::int64_t deadline = now_ns() + std::max<std::int64_t>(timeout_ns, 0);
  for (;;) {
    if (ready()) {
      Slot& s = slot(dequeue_);
      const std::uint32_t span = s.span;
      out.resize(s.length);
      std::size_t at = 0;
      for (std::uint32_t i = 0; i < span; ++i) {
        Slot& part = slot(dequeue_ + i);
        const std::size_t n = std::min<std::size_t>(h.slot_bytes, out.size() - at);
        std::memcpy(out.data() + at, reinterpret_cast<const char*>(&part) + kLine, n);
        at += n;
      }
      for (std::uint32_t i = 0; i < span; ++i) slot(dequeue_ + i).seq.store(dequeue_ + i + h.slots, std::memory_order_release);
      dequeue_ += span;
      h.dequeue.store(dequeue_, std::memory_order_relaxed);
      popped_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    const std::int64_t left = deadline - now_ns();
    if (left <= 0) return false;
    const std::uint32_t word = h.futex.load(std::memory_order_acquire);
    h.waiting.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ready()) {
      h.waiting.store(0, std::memory_order_relaxed);
      continue;
    }
    if (kicked_.exchange(false) ||
        (interrupts_seen && h.interrupts.load(std::memory_order_acquire) != *interrupts_seen)) {
      h.waiting.store(0, std::memory_order_relaxed);
      return false;
    }
    // While a claimed slot is pending, look again every millisecond (its producer may be dead).
    const std::int64_t wait = stuck_pos_ == dequeue_ ? std::min<std::int64_t>(left, 1'000'000) : left;
    const timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    futex_op(&h.futex, FUTEX_WAIT, word, &ts);
    h.waiting.store(0, std::memory_order_relaxed);
    if (kicked_.exchange(false)) return false;
  }
}

std::uint32_t Ring::interrupts() const { return header().interrupts.load(std::memory_order_acquire); }

void Ring::interrupt() {
  Header& h = header();
  h.interrupts.fetch_add(1, std::memory_order_acq_rel);
  h.futex.fetch_add(1, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h.waiting.load(std::memory_order_relaxed) != 0) futex_op(&h.futex, FUTEX_WAKE, 1, nullptr);
}

void Ring::wake() {
  Header& h = header();
  kicked_.store(true);
  h.futex.fetch_add(1, std::memory_order_release);
  futex_op(&h.futex, FUTEX_WAKE, 1, nullptr);
}

RingCounters Ring::counters() const {
  RingCounters c;
  c.pushed = pushed_.load();
  c.full = full_.load();
  c.too_big = too_big_.load();
  c.lost = lost_.load();
  c.popped = popped_.load();
  c.skipped = skipped_.load();
  c.wakes = wakes_.load();
  return c;
}

}  // namespace edgevla::shm
