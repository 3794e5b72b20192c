#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "runtime/shm/ready.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::shm {
namespace {

std::string prefix(const std::string& tag) {
  static int n = 0;
  return segment_prefix() + std::to_string(::getpid()) + ".t" + tag + std::to_string(++n);
}

std::shared_ptr<Pool> make_pool(const std::string& tag, std::size_t max_bytes = 64 << 20,
                                std::int64_t transit_ns = 2'000'000'000) {
  return Pool::create({prefix(tag), max_bytes, transit_ns});
}

TEST(ShmPool, SegmentsArePrivateToTheUser) {
  auto pool = make_pool("mode");
  auto b = *pool->allocate(1000);
  ASSERT_TRUE(b->shm().has_value());
  struct stat st {};
  ASSERT_EQ(::stat(("/dev/shm" + b->shm()->segment).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(b->size(), 1000u);
  EXPECT_TRUE(b->writable());
  EXPECT_TRUE(pool->owns(*b));
}

TEST(ShmPool, SizeClasses) {
  EXPECT_EQ(Pool::size_class(1), 4096u);
  EXPECT_EQ(Pool::size_class(5000), 8192u);
  EXPECT_EQ(Pool::size_class(65536), 65536u);
  EXPECT_EQ(Pool::size_class((1 << 20) + 1), (1u << 20) + (1u << 18));
  EXPECT_GE(Pool::size_class(64 << 20), std::size_t{64} << 20);
}

TEST(ShmMapper, ReadsThePublishersBytes) {
  auto pool = make_pool("read");
  auto b = *pool->allocate(4096);
  std::memset(b->data(), 0x5a, 4096);
  pool->mark_sent(*b, {1, 0});
  Mapper m;
  auto r = m.acquire(*b->shm());
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ((*r)->kind(), BufferKind::kSharedMemory);
  EXPECT_FALSE((*r)->writable());
  EXPECT_EQ(static_cast<int>((*r)->data()[4095]), 0x5a);
  EXPECT_EQ(m.stats().acquired, 1u);
}

TEST(ShmPool, BlockIsReusedOnlyAfterEveryReceiverLetGo) {
  auto pool = make_pool("reuse");
  Mapper m;
  ShmLocation loc;
  {
    auto b = *pool->allocate(4096);
    loc = *b->shm();
    pool->mark_sent(*b, {1, 0});
  }  // local reference gone, but one receiver is still pending
  auto second = *pool->allocate(4096);
  EXPECT_NE(second->shm()->segment, loc.segment);  // pending block is not reused
  second.reset();
  {
    auto held = m.acquire(loc);
    ASSERT_TRUE(held.has_value());
    auto third = *pool->allocate(4096);
    EXPECT_NE(third->shm()->segment, loc.segment);  // still held by the receiver
  }
  // Receiver released: the pool can recycle it now, with a new generation.
  std::vector<BufferPtr> keep;
  bool reused = false;
  for (int i = 0; i < 3 && !reused; ++i) {
    keep.push_back(*pool->allocate(4096));
    if (keep.back()->shm()->segment == loc.segment) {
      reused = true;
      EXPECT_NE(keep.back()->shm()->generation, loc.generation);
    }
  }
  EXPECT_TRUE(reused);
  EXPECT_EQ(pool->stats().created, 2u);
  // The old descriptor no longer reads: its generation is gone.
  auto stale = m.acquire(loc);
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(m.stats().recycled_before_read, 1u);
}

// Found by bench/soak: each restart of a stage left its publishers' pools a few segments
// larger for good (blocks the dead reader held while the flow went on). Reuse takes the most
// recently used free block, so the surplus stays unused and is unlinked after idle_trim_ns.
TEST(ShmPool, ReuseTakesTheNewestFreeBlockAndIdleSegmentsAreTrimmed) {
  auto pool = Pool::create({prefix("trim"), 64 << 20, 2'000'000'000, /*idle_trim_ns=*/150'000'000});
  std::vector<std::string> names;
  {
    std::vector<BufferPtr> burst;
    for (int i = 0; i < 4; ++i) {
      burst.push_back(*pool->allocate(4096));
      names.push_back(burst.back()->shm()->segment);
    }
  }
  EXPECT_EQ(pool->stats().segments, 4u);
  // Steady flow of one message at a time: always the same (newest) block.
  std::string steady;
  for (int i = 0; i < 20; ++i) {
    auto b = *pool->allocate(4096);
    if (i == 0) steady = b->shm()->segment;
    EXPECT_EQ(b->shm()->segment, steady) << "allocation " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(steady, names[3]) << "the most recently handed out block of the burst";
  // 400 ms later the three others have been idle past the limit and are gone.
  EXPECT_EQ(pool->stats().trimmed, 3u);
  EXPECT_EQ(pool->stats().segments, 1u);
  for (const std::string& n : names) {
    struct stat st {};
    EXPECT_EQ(::stat(("/dev/shm" + n).c_str(), &st) == 0, n == steady) << n;
  }
  // A block still pending for a receiver is never trimmed.
  auto held = *pool->allocate(4096);
  const std::string held_name = held->shm()->segment;
  pool->mark_sent(*held, {1, 0});
  held.reset();
  for (int i = 0; i < 15; ++i) {
    (void)*pool->allocate(4096);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  struct stat st {};
  EXPECT_EQ(::stat(("/dev/shm" + held_name).c_str(), &st), 0) << "a pending block was trimmed";
}

// The receiving side of trimming: a segment its publisher unlinked leaves the mapper's cache
// (within a second, on the next acquire), so its pages are not kept mapped for nothing.
TEST(ShmMapper, SegmentsThePublisherUnlinkedLeaveTheCache) {
  auto pool = Pool::create({prefix("unlinked"), 64 << 20, 2'000'000'000, /*idle_trim_ns=*/100'000'000});
  Mapper m;
  ShmLocation a, b;
  {
    auto first = *pool->allocate(4096);
    auto second = *pool->allocate(4096);
    a = *first->shm();
    b = *second->shm();
  }
  ASSERT_TRUE(m.acquire(a).has_value());
  ASSERT_TRUE(m.acquire(b).has_value());
  EXPECT_EQ(m.stats().mapped, 2u);
  // The publisher keeps using one block; the other is trimmed after 100 ms idle.
  ShmLocation kept;
  for (int i = 0; i < 15; ++i) {
    auto k = *pool->allocate(4096);
    kept = *k->shm();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  ASSERT_EQ(pool->stats().trimmed, 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_TRUE(m.acquire(kept).has_value());
  EXPECT_EQ(m.stats().mapped, 1u);
  EXPECT_EQ(m.stats().unlinked_dropped, 1u);
}

TEST(ShmPool, TransitTimeoutFreesBlocksNobodyPickedUp) {
  auto pool = make_pool("transit", 64 << 20, 30'000'000);
  std::string seg;
  {
    auto b = *pool->allocate(4096);
    seg = b->shm()->segment;
    pool->mark_sent(*b, {3, 0});  // three receivers expected, none will come
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto again = *pool->allocate(4096);
  EXPECT_EQ(again->shm()->segment, seg);
  EXPECT_EQ(pool->stats().transit_expired, 1u);
}

TEST(ShmPool, CrashedSubscriberDoesNotPinABlockForever) {
  auto pool = make_pool("crash");
  ShmLocation loc;
  {
    auto b = *pool->allocate(4096);
    loc = *b->shm();
    pool->mark_sent(*b, {1, 0});
  }
  const pid_t child = ::fork();
  if (child == 0) {
    Mapper m;
    auto held = m.acquire(loc);
    // Dies holding the block: no release runs.
    _exit(held.has_value() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past the sweep interval
  std::vector<BufferPtr> keep;
  bool reused = false;
  for (int i = 0; i < 3 && !reused; ++i) {
    keep.push_back(*pool->allocate(4096));
    reused = keep.back()->shm()->segment == loc.segment;
  }
  EXPECT_TRUE(reused);
  EXPECT_GE(pool->stats().dead_holders_cleared, 1u);
}

// A block referenced by 1,000 tensors from each of 8 processes: each process takes one holder
// slot (not one per tensor), reads every tensor, and its slot goes with its last buffer.
TEST(ShmMapper, OneHolderSlotPerProcessHoweverManyTensors) {
  constexpr int kProcesses = 8, kTensors = 1000, kBytes = 64;
  auto pool = make_pool("many");
  auto block = *pool->allocate(kTensors * kBytes);
  for (int t = 0; t < kTensors; ++t) std::memset(block->data() + t * kBytes, t % 251, kBytes);
  const ShmLocation whole = *block->shm();
  pool->mark_sent(*block, {kProcesses, 0});  // one per receiving process, however many tensors
  auto opened = Segment::open(whole.segment);
  ASSERT_TRUE(opened.has_value()) << opened.status().to_string();
  const Segment& seg = **opened;
  auto holders = [&] {
    int n = 0;
    for (const auto& h : seg.header().holders) n += h.load() != 0 ? 1 : 0;
    return n;
  };
  int go[2], ready[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(ready), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t child = ::fork();
    if (child == 0) {
      Mapper m;
      std::vector<BufferPtr> held;
      int bad = 0;
      for (int t = 0; t < kTensors; ++t) {
        ShmLocation loc = whole;
        loc.offset += static_cast<std::uint64_t>(t * kBytes);
        loc.size = kBytes;
        auto b = m.acquire(loc, {.observer = false, .take_pending = t == 0});  // one message
        if (!b) _exit(2);
        bad += std::to_integer<int>((*b)->data()[kBytes - 1]) != t % 251 ? 1 : 0;
        held.push_back(std::move(*b));
      }
      const MapperStats st = m.stats();
      const char c = (bad == 0 && st.holders == 1 && st.shared_holds == kTensors - 1) ? 'y' : 'n';
      if (::write(ready[1], &c, 1) != 1) _exit(3);
      char wait_for = 0;
      if (::read(go[0], &wait_for, 1) != 1) _exit(4);
      held.clear();  // the last buffer lets the slot go
      const bool released = m.stats().holders == 0;
      _exit(released ? 0 : 5);
    }
    children.push_back(child);
  }
  for (int p = 0; p < kProcesses; ++p) {
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    EXPECT_EQ(c, 'y') << "a process read wrong bytes or took more than one slot";
  }
  EXPECT_EQ(holders(), kProcesses);  // one slot per process, not per tensor (8000 would not fit in 32)
  EXPECT_EQ(State::unpack(seg.header().state.load()).pending, 0);  // each process counted once
  const std::string all(kProcesses, 'g');
  ASSERT_EQ(::write(go[1], all.data(), all.size()), static_cast<ssize_t>(all.size()));
  for (pid_t c : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(c, &status, 0), c);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit " << WEXITSTATUS(status);
  }
  EXPECT_EQ(holders(), 0);
  for (int fd : {go[0], go[1], ready[0], ready[1]}) ::close(fd);
}

TEST(ShmMapper, AReceiverFindingEverySlotTakenIsCountedByTopicAtThePublisher) {
  auto pool = make_pool("refuse");
  auto block = *pool->allocate(4096);
  const ShmLocation loc = *block->shm();
  pool->mark_sent(*block, {1, 0}, "/policy/prefix");
  auto opened = Segment::open(loc.segment);
  ASSERT_TRUE(opened.has_value());
  // Every slot held (by this live process, so no sweep clears them).
  std::vector<int> held;
  for (int i = 0; i < kMaxHolders; ++i) held.push_back((*opened)->claim_slot(static_cast<std::uint32_t>(::getpid())));
  ASSERT_EQ(held.back(), kMaxHolders - 1);
  const pid_t child = ::fork();
  if (child == 0) {
    Mapper m;
    auto r = m.acquire(loc);
    const bool said = !r.has_value() && r.status().message().find("holder processes") != std::string::npos;
    _exit(said && m.stats().slots_full == 1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const PoolStats st = pool->stats();
  ASSERT_TRUE(st.slot_refusals.contains("/policy/prefix"));
  EXPECT_EQ(st.slot_refusals.at("/policy/prefix"), 1u);
  for (int s : held) (*opened)->release_slot(s);
}

TEST(ShmPool, FullPoolIsAClearError) {
  auto pool = make_pool("full", 8192);
  auto a = *pool->allocate(4096);
  auto b = *pool->allocate(4096);
  auto c = pool->allocate(4096);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("shm_pool_mb"), std::string::npos);
  a.reset();
  EXPECT_TRUE(pool->allocate(4096).has_value());  // freed block is reused
  EXPECT_EQ(pool->stats().exhausted, 1u);
}

TEST(ShmPool, IdleBlocksOfOtherSizesAreEvictedWhenFull) {
  auto pool = make_pool("evict", 64 * 1024);
  { auto small = *pool->allocate(4096); }
  auto big = pool->allocate(60 * 1024);
  EXPECT_TRUE(big.has_value()) << big.status().to_string();
}

TEST(ShmMapper, BadDescriptors) {
  auto pool = make_pool("bad");
  auto b = *pool->allocate(4096);
  Mapper m;
  ShmLocation outside = *b->shm();
  outside.size = 1 << 20;
  auto r1 = m.acquire(outside);
  ASSERT_FALSE(r1.has_value());
  EXPECT_EQ(r1.status().code(), StatusCode::kOutOfRange);
  ShmLocation before = *b->shm();
  before.offset = 16;
  EXPECT_FALSE(m.acquire(before).has_value());
  ShmLocation vanished{segment_prefix() + "999999999.1.1", kDataOffset, 16, 1};
  auto r2 = m.acquire(vanished);
  ASSERT_FALSE(r2.has_value());
  EXPECT_EQ(r2.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r2.status().message().find("vanished"), std::string::npos);
  auto r3 = m.acquire({"/not-ours", kDataOffset, 16, 1});
  ASSERT_FALSE(r3.has_value());
  const auto s = m.stats();
  EXPECT_EQ(s.bad_descriptor, 3u);
  EXPECT_EQ(s.vanished, 1u);
}

TEST(ShmJanitor, RemovesSegmentsOfDeadProcesses) {
  const pid_t child = ::fork();
  if (child == 0) _exit(0);
  ::waitpid(child, nullptr, 0);  // a pid that is certainly gone
  const std::string name = segment_prefix() + std::to_string(child) + ".1.0";
  // The segment's creator dies without unlinking it (as a crash would): made in a child that
  // leaves through _exit, so no destructor runs there and nothing leaks here.
  const pid_t creator = ::fork();
  if (creator == 0) {
    auto seg = Segment::create(name, 4096);
    _exit(seg.has_value() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(creator, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_GE(remove_stale_segments(), 1);
  auto gone = Segment::open(name);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
}

// Readiness across processes (runtime/shm/ready.hpp). A block sent as usual is written when sent:
// its reader gets no fence. A block its producer armed (device work still queued) is read only
// after the producer signals; a failed signal, a producer that exits first, and one that never
// signals are each one clear error.
TEST(ShmReady, ABlockSentUnarmedIsReadyAndAnArmedOneWaitsForItsSignal) {
  auto pool = make_pool("ready");
  auto plain = *pool->allocate(4096);
  ASSERT_NE(plain->remote_ready(), nullptr);
  pool->mark_sent(*plain, {1, 0});
  Mapper m;
  auto r = m.acquire(*plain->shm());
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ((*r)->ready(), nullptr);

  auto armed = *pool->allocate(4096);
  std::memset(armed->data(), 0x11, 4096);
  armed->remote_ready()->arm();
  EXPECT_TRUE(armed->remote_ready()->armed());
  pool->mark_sent(*armed, {1, 0});  // sent before the bytes are written
  auto got = m.acquire(*armed->shm());
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  ASSERT_NE((*got)->ready(), nullptr);
  EXPECT_FALSE((*got)->ready()->done());
  EXPECT_EQ(m.stats().awaited, 1u);
  const std::int64_t t0 = steady_now_ns();
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    std::memset(armed->data(), 0x22, 4096);
    armed->remote_ready()->signal(true);
  });
  ASSERT_TRUE((*got)->wait_ready().is_ok());
  const std::int64_t waited = steady_now_ns() - t0;
  producer.join();
  EXPECT_GE(waited, 35'000'000) << "ns: the reader returned before the producer signalled";
  EXPECT_TRUE((*got)->ready()->done());
  EXPECT_EQ(static_cast<int>((*got)->data()[4095]), 0x22);

  // The next hand-out of the same block starts unarmed; signals of the old one do not count.
  const ShmLocation old = *armed->shm();
  armed.reset();
  got->reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto again = *pool->allocate(4096);
  ASSERT_EQ(again->shm()->segment, old.segment);
  EXPECT_NE(again->shm()->generation, old.generation);
  EXPECT_FALSE(again->remote_ready()->armed());
  pool->mark_sent(*again, {1, 0});
  auto fresh = m.acquire(*again->shm());
  ASSERT_TRUE(fresh.has_value()) << fresh.status().to_string();
  EXPECT_EQ((*fresh)->ready(), nullptr);
}

TEST(ShmReady, FailedWorkAndASilentProducerAreClearErrors) {
  auto pool = make_pool("readyfail");
  Mapper m;
  auto failed = *pool->allocate(4096);
  failed->remote_ready()->arm();
  pool->mark_sent(*failed, {1, 0});
  auto r = m.acquire(*failed->shm());
  ASSERT_TRUE(r.has_value());
  failed->remote_ready()->signal(false);
  Status s = (*r)->wait_ready();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("failed"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find(failed->shm()->segment), std::string::npos) << s.to_string();

  const std::int64_t saved = ready_timeout_ns();
  set_ready_timeout_ns(60'000'000);
  auto silent = *pool->allocate(4096);
  silent->remote_ready()->arm();
  pool->mark_sent(*silent, {1, 0});
  auto q = m.acquire(*silent->shm());
  ASSERT_TRUE(q.has_value());
  s = (*q)->wait_ready();
  set_ready_timeout_ns(saved);
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
  EXPECT_NE(s.message().find("has not finished"), std::string::npos) << s.to_string();
}

// The producer is another process that dies (SIGKILL) before it signals: the reader learns it
// within its liveness check, not at the timeout.
TEST(ShmReady, AProducerThatDiesBeforeItSignalsIsAClearError) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    auto pool = make_pool("readydead");
    auto b = *pool->allocate(4096);
    b->remote_ready()->arm();
    pool->mark_sent(*b, {1, 0});
    const ShmLocation loc = *b->shm();
    const std::string line = loc.segment + " " + std::to_string(loc.generation) + "\n";
    if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(3);
    ::pause();  // killed here, the block armed and never signalled
    _exit(0);
  }
  ::close(fds[1]);
  char text[256] = {};
  ssize_t n = 0;
  for (ssize_t got = 1; got > 0 && n < 255 && (n == 0 || text[n - 1] != '\n'); n += got) {
    got = ::read(fds[0], text + n, 255 - static_cast<std::size_t>(n));
    if (got <= 0) break;
  }
  ::close(fds[0]);
  char name[200] = {};
  unsigned gen = 0;
  ASSERT_EQ(std::sscanf(text, "%199s %u", name, &gen), 2) << text;
  Mapper m;
  auto r = m.acquire(ShmLocation{name, kDataOffset, 4096, gen});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_NE((*r)->ready(), nullptr);
  std::thread killer([child] {  // and reaps it, as a launcher does
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
  });
  const std::int64_t t0 = steady_now_ns();
  Status s = (*r)->wait_ready();
  const std::int64_t waited = steady_now_ns() - t0;
  killer.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
  EXPECT_NE(s.message().find("exited before"), std::string::npos) << s.to_string();
  EXPECT_LT(waited, 2'000'000'000) << "ns: noticed at the timeout, not by the liveness check";
  r->reset();
  ::shm_unlink(name);  // the killed producer's segment
}

}  // namespace
}  // namespace edgevla::shm
