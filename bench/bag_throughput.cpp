// Bag recorder throughput, against a baseline measured in the same run: a plain sequential
// write() of the same bytes, in blocks of the recorder's chunk size (two frames, ~5.5 MB), to a
// file in the same directory, opened with the same flags, with the same end-of-run policy.
//
// Part 1 (throughput): one in-process publisher publishes N camera frames (1280x720x3 u8
// msgs::Image) as fast as it can into a recorder whose queue holds them all (the frames are
// 16 pre-filled buffers shared by reference, so the queue costs no memory and nothing is
// dropped); throughput = tensor payload bytes / wall time from the first publish to stop()
// returning (which writes what is queued and closes the bag). Two end-of-run policies, applied
// to the recorder and the baseline alike:
//   fdatasync: fdatasync() of the file before the clock stops (the data is on the disk);
//   close:     close() only, as the recorder's writer does (data may still be in the page cache).
// Page cache "warm" / "cold": see prepare_target(). Warm runs are interleaved per rep (raw,
// none, lz4, zstd; fdatasync then close); cold runs (raw and none, fdatasync) follow.
// Part 2 (cameras): 5 publisher threads, one per topic /camera/0..4, each loans a frame from
// the bus every 33.3 ms (all triggered together, like hardware-synced cameras), copies the
// image in (the camera driver's write), publishes; the recorder runs with default queues
// (512 MB per topic). Reports published / written / dropped per camera, MB/s, the backlog
// (published - written, from public counters: sampled every 10 ms and at the last frame),
// process CPU (getrusage; publisher threads separately) and system-wide CPU (/proc/stat).
// Part 0 (costs): single-thread speed of the per-byte steps the writer does (memcpy, zlib
// crc32, lz4, zstd) on the same frames.
//
// Frames: RGB gradients (shifted per frame) with blocky "objects" and uniform sensor noise of
// +-4 levels per byte, so they compress about as poorly as real camera images (not all-zero):
// lz4 1.00x, zstd-1 1.10x.
//
//   edgevla_bench_bag [--dir DIR] [--gb G] [--reps N] [--cold-reps N] [--settle-s S]
//                     [--camera-s S] [--camera-cache warm|cold] [--only costs|throughput|cameras]
//                     [--json F] [--markdown F]
// DIR must be on the disk under test (default /tmp; a tmpfs is refused). Written files are
// deleted. Takes about 2.5 minutes with the defaults (2 GB per run, 2 warm reps, 1 cold, 10 s).
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

#include "bench/bench_common.hpp"
#include "msgs/types.hpp"
#include "runtime/bag/compression.hpp"
#include "runtime/bag/mcap_records.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::bench {
namespace {

constexpr int kH = 720, kW = 1280, kC = 3;
constexpr std::size_t kFrameBytes = std::size_t{kH} * kW * kC;
constexpr int kDistinctFrames = 16;
constexpr int kCameras = 5;
constexpr double kCameraHz = 30.0;

struct Config {
  std::string dir = "/tmp";
  double gb = 2.0;  // payload per throughput configuration
  int reps = 2;
  int cold_reps = 1;       // extra reps with a cold page cache (fdatasync only)
  double settle_s = 3.0;   // cold: wait after freeing the previous file's pages
  bool camera_cold = false;
  double camera_s = 10.0;
  std::string only;
  std::string json;
  std::string markdown;
};

enum class EndPolicy { kClose, kFdatasync };
const char* policy_name(EndPolicy p) { return p == EndPolicy::kClose ? "close" : "fdatasync"; }

std::string compression_label(mcap::Compression c) {
  switch (c) {
    case mcap::Compression::kNone: return "none";
    case mcap::Compression::kLz4: return "lz4";
    case mcap::Compression::kZstd: return "zstd";
  }
  return "?";
}

double mb(double bytes) { return bytes / 1e6; }

// --- frames --------------------------------------------------------------------------------

void fill_frame(std::uint8_t* p, int index) {
  std::uint64_t s = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(index + 1);
  auto next = [&s] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) {
      const std::uint64_t r = next();
      int v[3] = {(x + 7 * index) * 255 / (kW + 112), y * 255 / kH, (x + y + 5 * index) * 255 / (kW + kH + 80)};
      if (((x + 4 * index) / 160 + y / 120) % 5 == 0) {  // blocky objects moving across
        v[0] = 255 - v[0];
        v[2] = (v[2] + 90) % 256;
      }
      for (int c = 0; c < kC; ++c) {
        const int noise = static_cast<int>((r >> (16 * c)) % 9) - 4;
        p[(static_cast<std::size_t>(y) * kW + x) * kC + c] = static_cast<std::uint8_t>(std::clamp(v[c] + noise, 0, 255));
      }
    }
  }
}

std::vector<Tensor> make_frames() {
  std::vector<Tensor> frames;
  for (int i = 0; i < kDistinctFrames; ++i) {
    Tensor t = *Tensor::empty(DType::kU8, Shape{kH, kW, kC});
    fill_frame(t.data<std::uint8_t>(), i);
    frames.push_back(std::move(t));
  }
  return frames;
}

// --- CPU time ----------------------------------------------------------------------------------

struct Cpu {
  double user_s = 0, sys_s = 0;
  double total() const { return user_s + sys_s; }
  Cpu operator-(const Cpu& o) const { return {std::max(0.0, user_s - o.user_s), std::max(0.0, sys_s - o.sys_s)}; }
};

Cpu cpu_now(int who) {
  rusage u{};
  ::getrusage(who, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return {s(u.ru_utime), s(u.ru_stime)};
}

// System-wide CPU time from /proc/stat (all cores): busy = user+nice+system+irq+softirq+steal.
struct MachineCpu {
  double busy = 0, iowait = 0, total = 0;
  static MachineCpu now() {
    std::ifstream f("/proc/stat");
    std::string cpu;
    double v[8] = {};
    f >> cpu;
    for (double& x : v) f >> x;
    MachineCpu m;
    m.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    m.iowait = v[4];
    m.total = m.busy + v[3] + v[4];
    return m;
  }
  // Fractions of all cores' time between `before` and this sample.
  MachineCpu since(const MachineCpu& before) const {
    const double t = std::max(1.0, total - before.total);
    return {(busy - before.busy) / t, (iowait - before.iowait) / t, 1};
  }
};

double seconds_since(std::int64_t t0) { return static_cast<double>(steady_now_ns() - t0) / 1e9; }

void sleep_until(std::int64_t steady_ns) {
  for (std::int64_t now = steady_now_ns(); now < steady_ns; now = steady_now_ns()) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(steady_ns - now));
  }
}

std::string unique_path(const Config& c, const std::string& tag) {
  static int n = 0;
  return c.dir + "/edgevla-bench-bag-" + std::to_string(::getpid()) + "-" + std::to_string(++n) + "-" + tag;
}

std::string unique_domain(const std::string& tag) {
  static int n = 0;
  return "bench-bag-" + std::to_string(::getpid()) + "-" + std::to_string(++n) + "-" + tag;
}

// Removes the (empty) registry directory a bench bus left behind.
struct RegistryDirCleanup {
  std::string dir;
  ~RegistryDirCleanup() { ::rmdir(dir.c_str()); }
};

std::uint64_t file_size(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// Flushes the file's data to the disk (the recorder closed its descriptor; fdatasync on a new
// one writes back the same inode's dirty pages).
void fdatasync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fdatasync(fd);
  ::close(fd);
}

// Page-cache state of a measured run. On this VM (Firecracker, virtio-balloon free page
// reporting) free guest memory goes back to the host within seconds, and a page the host has
// taken back costs a host fault when the page cache next uses it: write() into such "cold"
// pages runs at 0.25-0.95 GB/s instead of ~2-5 GB/s, and varies run to run. Real hardware
// has no such cost. So by default ("warm") the previous run's file is kept as a spare (topped
// up to the run's size, synced) and a feeder thread truncates it step by step, 256 MB ahead of
// the growing output: the pages the run needs are freed just before it needs them, too
// recently for the host to take them back. "cold" deletes the previous file, syncs and waits
// settle_s instead. Both treat the recorder and the raw baseline alike.
enum class Cache { kWarm, kCold };
const char* cache_name(Cache k) { return k == Cache::kWarm ? "warm" : "cold"; }

std::string g_spare;  // the previous run's file, kept for recycling

std::uint64_t reported_kib() {
  std::ifstream f("/sys/module/page_reporting/parameters/reported_kib");
  std::uint64_t v = 0;
  f >> v;
  return v;
}

class Target {
 public:
  static constexpr std::uint64_t kMargin = std::uint64_t{256} << 20;

  Target(const Config& c, const std::string& tag, std::uint64_t bytes, Cache cache) : path_(unique_path(c, tag)) {
    if (cache == Cache::kCold) {
      if (!g_spare.empty()) ::unlink(g_spare.c_str());
      g_spare.clear();
      ::sync();
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<std::int64_t>(c.settle_s * 1000)));
      return;
    }
    spare_ = unique_path(c, "spare");
    if (!g_spare.empty() && ::rename(g_spare.c_str(), spare_.c_str()) != 0) ::unlink(g_spare.c_str());
    g_spare.clear();
    spare_fd_ = ::open(spare_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (spare_fd_ < 0) return;
    const std::uint64_t want = bytes + bytes / 16 + kMargin;
    static const std::string zeros(8 << 20, '\0');
    for (std::uint64_t have = file_size(spare_); have < want;) {
      const ssize_t k =
          ::write(spare_fd_, zeros.data(), static_cast<std::size_t>(std::min<std::uint64_t>(zeros.size(), want - have)));
      if (k <= 0) break;
      have += static_cast<std::uint64_t>(k);
    }
    ::sync();  // the disk idle and the spare clean before the run
    const std::uint64_t size0 = file_size(spare_);
    feeder_ = std::thread([this, size0] {
      std::uint64_t cur = size0;
      while (!stop_.load()) {
        const std::uint64_t used = file_size(path_) + kMargin;
        const std::uint64_t target = used >= size0 ? 0 : size0 - used;
        if (target < cur && ::ftruncate(spare_fd_, static_cast<off_t>(target)) == 0) cur = target;
        const Cpu t = cpu_now(RUSAGE_THREAD);
        feeder_user_s_.store(t.user_s);
        feeder_sys_s_.store(t.sys_s);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  ~Target() { release(); }
  const std::string& path() const { return path_; }
  // CPU time of the feeder thread so far (to subtract from the process's).
  Cpu feeder_cpu() const { return {feeder_user_s_.load(), feeder_sys_s_.load()}; }
  // After the measured run: stops the feeder, deletes the spare, keeps this run's file as the
  // next run's spare.
  void release() {
    if (released_) return;
    released_ = true;
    stop_.store(true);
    if (feeder_.joinable()) feeder_.join();
    if (spare_fd_ >= 0) ::close(spare_fd_);
    if (!spare_.empty()) ::unlink(spare_.c_str());
    if (!g_spare.empty()) ::unlink(g_spare.c_str());
    g_spare = path_;
  }

 private:
  std::string path_, spare_;
  int spare_fd_ = -1;
  std::thread feeder_;
  std::atomic<bool> stop_{false};
  std::atomic<double> feeder_user_s_{0}, feeder_sys_s_{0};
  bool released_ = false;
};

// --- part 0: per-byte costs ---------------------------------------------------------------------

struct Costs {
  double memcpy_mb_s = 0, crc32_mb_s = 0, lz4_mb_s = 0, zstd_mb_s = 0;
  double lz4_ratio = 0, zstd_ratio = 0;  // uncompressed / compressed
};

Costs measure_costs(const std::vector<Tensor>& frames) {
  // A chunk of two frames, as the recorder's 4 MB chunks hold.
  const std::size_t chunk = 2 * kFrameBytes;
  std::vector<std::string> chunks(4);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    chunks[i].resize(chunk);
    std::memcpy(chunks[i].data(), frames[2 * i].raw_data(), kFrameBytes);
    std::memcpy(chunks[i].data() + kFrameBytes, frames[2 * i + 1].raw_data(), kFrameBytes);
  }
  auto bytes = [](const std::string& s) { return std::span<const std::byte>(reinterpret_cast<const std::byte*>(s.data()), s.size()); };
  constexpr int kRounds = 24;
  const double total = static_cast<double>(chunk) * kRounds;
  Costs c;
  std::string dst(chunk, '\0');
  std::int64_t t0 = steady_now_ns();
  for (int i = 0; i < kRounds; ++i) std::memcpy(dst.data(), chunks[i % chunks.size()].data(), chunk);
  c.memcpy_mb_s = mb(total) / seconds_since(t0);
  std::uint32_t crc = 0;
  t0 = steady_now_ns();
  for (int i = 0; i < kRounds; ++i) crc = mcap::crc32(bytes(chunks[i % chunks.size()]), crc);
  c.crc32_mb_s = mb(total) / seconds_since(t0);
  if (crc == 0x12345678) std::printf(" ");  // keep the loop
  for (auto kind : {mcap::Compression::kLz4, mcap::Compression::kZstd}) {
    mcap::Compressor comp(kind);
    (void)comp.compress(bytes(chunks[0]));  // warm the context
    double compressed = 0;
    t0 = steady_now_ns();
    for (int i = 0; i < kRounds / 2; ++i) {
      auto out = comp.compress(bytes(chunks[i % chunks.size()]));
      compressed += out ? static_cast<double>(out->size()) : 0.0;
    }
    const double speed = mb(total / 2) / seconds_since(t0);
    const double ratio = total / 2 / compressed;
    if (kind == mcap::Compression::kLz4) {
      c.lz4_mb_s = speed;
      c.lz4_ratio = ratio;
    } else {
      c.zstd_mb_s = speed;
      c.zstd_ratio = ratio;
    }
  }
  return c;
}

// --- part 1: throughput --------------------------------------------------------------------------

struct Run {
  std::string what;  // "raw write" or "recorder none" ...
  EndPolicy policy = EndPolicy::kClose;
  Cache cache = Cache::kWarm;
  int rep = 0;
  double reported_mib = 0;  // guest memory handed back to the host during the run
  MachineCpu machine;       // system-wide CPU fractions over the run
  std::uint64_t payload_bytes = 0, file_bytes = 0;
  std::uint64_t messages = 0, written = 0, dropped = 0;
  double wall_s = 0, mb_s = 0;
  Cpu cpu;
};

Run run_raw(const Config& c, EndPolicy policy, Cache cache, const std::vector<Tensor>& frames, std::uint64_t n_frames) {
  // Blocks of two frames (~5.5 MB): the size of the recorder's chunk writes.
  std::vector<std::string> blocks(kDistinctFrames / 2);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    blocks[i].resize(2 * kFrameBytes);
    std::memcpy(blocks[i].data(), frames[2 * i].raw_data(), kFrameBytes);
    std::memcpy(blocks[i].data() + kFrameBytes, frames[2 * i + 1].raw_data(), kFrameBytes);
  }
  Target target(c, "raw.bin", n_frames * kFrameBytes, cache);
  const std::string& path = target.path();
  Run r{"raw write", policy, cache};
  const std::uint64_t rep0 = reported_kib();
  // Opened before the clock starts, as Recorder::start opens the bag before the first publish.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);  // as McapWriter
  if (fd < 0) {
    std::fprintf(stderr, "cannot create %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  const MachineCpu m0 = MachineCpu::now();
  const Cpu cpu0 = cpu_now(RUSAGE_SELF);
  const Cpu feeder0 = target.feeder_cpu();
  const std::int64_t t0 = steady_now_ns();
  std::uint64_t left = n_frames * kFrameBytes;
  for (std::size_t i = 0; left > 0; ++i) {
    const std::string& b = blocks[i % blocks.size()];
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, b.size()));
    std::size_t off = 0;
    while (off < want) {
      const ssize_t k = ::write(fd, b.data() + off, want - off);
      if (k < 0) {
        if (errno == EINTR) continue;
        std::fprintf(stderr, "write %s: %s\n", path.c_str(), std::strerror(errno));
        std::exit(1);
      }
      off += static_cast<std::size_t>(k);
    }
    left -= want;
  }
  if (policy == EndPolicy::kFdatasync) (void)::fdatasync(fd);
  ::close(fd);
  r.wall_s = seconds_since(t0);
  r.cpu = cpu_now(RUSAGE_SELF) - cpu0 - (target.feeder_cpu() - feeder0);
  r.machine = MachineCpu::now().since(m0);
  r.payload_bytes = n_frames * kFrameBytes;
  r.reported_mib = static_cast<double>(reported_kib() - rep0) / 1024;
  r.file_bytes = file_size(path);
  r.messages = r.written = n_frames;
  r.mb_s = mb(static_cast<double>(r.payload_bytes)) / r.wall_s;
  target.release();
  return r;
}

Run run_recorder(const Config& c, mcap::Compression comp, EndPolicy policy, Cache cache, const std::vector<Tensor>& frames,
                 std::uint64_t n_frames) {
  BusOptions bo;
  bo.domain = unique_domain("tp");
  RegistryDirCleanup cleanup{Registry::default_dir(bo.domain)};  // runs after the bus is gone
  bo.cross_process = false;  // in-process transport only: no I/O threads besides the recorder
  auto bus = std::move(*Bus::create(bo));
  Target target(c, "rec-" + compression_label(comp) + ".mcap", n_frames * kFrameBytes, cache);
  const std::string& path = target.path();
  bag::RecorderOptions ro;
  ro.output = path;
  ro.topics = {"/camera/0"};
  ro.compression = comp;
  // Every frame fits: the queue holds references to the kDistinctFrames shared buffers.
  ro.max_queue_bytes = static_cast<std::size_t>(n_frames * kFrameBytes) + (std::size_t{64} << 20);
  auto writer = *bus->advertise("/camera/0", "Image", "camera");
  auto rec = bag::Recorder::start(*bus, ro);
  if (!rec) {
    std::fprintf(stderr, "recorder: %s\n", rec.status().to_string().c_str());
    std::exit(1);
  }
  Run r{"recorder " + compression_label(comp), policy, cache};
  const std::uint64_t rep0 = reported_kib();
  const MachineCpu m0 = MachineCpu::now();
  const Cpu cpu0 = cpu_now(RUSAGE_SELF);
  const Cpu feeder0 = target.feeder_cpu();
  const std::int64_t t0 = steady_now_ns();
  for (std::uint64_t i = 0; i < n_frames; ++i) {
    (void)bus->publish(*writer, *msgs::Image::make(frames[i % frames.size()], "rgb8", "cam0"));
  }
  const Status s = (*rec)->stop();
  if (!s.is_ok()) std::fprintf(stderr, "recorder stop: %s\n", s.to_string().c_str());
  if (policy == EndPolicy::kFdatasync) fdatasync_path(path);
  r.wall_s = seconds_since(t0);
  r.cpu = cpu_now(RUSAGE_SELF) - cpu0 - (target.feeder_cpu() - feeder0);
  r.machine = MachineCpu::now().since(m0);
  const auto st = (*rec)->stats();
  r.messages = n_frames;
  r.written = st.written;
  r.dropped = st.dropped;
  r.payload_bytes = st.written * kFrameBytes;
  r.reported_mib = static_cast<double>(reported_kib() - rep0) / 1024;
  r.file_bytes = file_size(path);
  r.mb_s = mb(static_cast<double>(r.payload_bytes)) / r.wall_s;
  target.release();
  return r;
}

// --- part 2: cameras -------------------------------------------------------------------------------

struct CameraRun {
  std::string compression;
  Cache cache = Cache::kWarm;
  double reported_mib = 0;
  double duration_s = 0;
  std::vector<std::uint64_t> published, written, dropped, late;  // per camera
  std::uint64_t max_backlog_frames = 0;                           // sum over cameras, sampled
  std::uint64_t max_backlog_frames_one = 0;                       // largest single camera
  std::uint64_t written_at_publish_end = 0;                       // all cameras
  double mb_s_while_publishing = 0;                               // written by then / publishing time
  double wall_s = 0, drain_s = 0, fdatasync_s = 0, mb_s = 0, need_mb_s = 0;
  std::uint64_t file_bytes = 0;
  Cpu cpu_process, cpu_publishers;
  MachineCpu machine;  // fractions over the run
};

CameraRun run_cameras(const Config& c, mcap::Compression comp, Cache cache, const std::vector<Tensor>& frames) {
  BusOptions bo;
  bo.domain = unique_domain("cams");
  RegistryDirCleanup cleanup{Registry::default_dir(bo.domain)};  // runs after the bus is gone
  // Loans come from shared memory (a cross-process capable bus, as a robot process runs);
  // the pool covers the recorder's 5 x 512 MB queues so a backlog never falls back to the heap.
  bo.shm_pool_bytes = std::size_t{3} << 30;
  auto bus = std::move(*Bus::create(bo));
  const auto frames_per_camera = static_cast<std::uint64_t>(c.camera_s * kCameraHz);
  bag::RecorderOptions ro;  // default queues: 512 MB per topic
  ro.compression = comp;
  std::vector<std::shared_ptr<TopicWriter>> writers;
  for (int i = 0; i < kCameras; ++i) {
    const std::string topic = "/camera/" + std::to_string(i);
    ro.topics.push_back(topic);
    writers.push_back(*bus->advertise(topic, "Image", "camera" + std::to_string(i)));
  }
  // Warm the shared-memory pool (segments created and faulted once, as after a camera's first
  // seconds), outside the measurement: room for ~1.3 s of frames queued.
  {
    std::vector<Tensor> warm;
    for (int i = 0; i < 200; ++i) {
      Tensor t = *bus->loan(DType::kU8, Shape{kH, kW, kC});
      std::memset(t.raw_data(), 0, kFrameBytes);
      warm.push_back(std::move(t));
    }
  }
  Target target(c, "cams-" + compression_label(comp) + ".mcap", frames_per_camera * kCameras * kFrameBytes, cache);
  const std::string& path = target.path();
  ro.output = path;
  auto rec = std::move(*bag::Recorder::start(*bus, ro));
  const auto period_ns = static_cast<std::int64_t>(1e9 / kCameraHz);
  std::vector<std::atomic<std::uint64_t>> published(kCameras);
  std::vector<std::uint64_t> late(kCameras, 0);
  std::vector<Cpu> thread_cpu(kCameras);
  std::atomic<int> running{kCameras};
  CameraRun out;
  out.compression = compression_label(comp);
  out.cache = cache;
  const std::uint64_t rep0 = reported_kib();
  const MachineCpu m0 = MachineCpu::now();
  const Cpu cpu0 = cpu_now(RUSAGE_SELF);
  const Cpu feeder0 = target.feeder_cpu();
  const std::int64_t t0 = steady_now_ns() + 20'000'000;
  std::vector<std::thread> threads;
  for (int cam = 0; cam < kCameras; ++cam) {
    threads.emplace_back([&, cam] {
      std::int64_t next = t0;
      std::uint64_t n = 0;
      while (n < frames_per_camera) {
        sleep_until(next);
        Tensor t = *bus->loan(DType::kU8, Shape{kH, kW, kC});
        std::memcpy(t.raw_data(), frames[(n + 3 * static_cast<std::uint64_t>(cam)) % frames.size()].raw_data(),
                    kFrameBytes);
        (void)bus->publish(*writers[cam], *msgs::Image::make(std::move(t), "rgb8", "cam" + std::to_string(cam)));
        published[cam].fetch_add(1);
        ++n;
        next += period_ns;
        // A camera that fell behind skips the frames it missed rather than bursting.
        while (steady_now_ns() > next + period_ns && n < frames_per_camera) {
          next += period_ns;
          ++late[cam];
          ++n;
        }
      }
      thread_cpu[cam] = cpu_now(RUSAGE_THREAD);
      running.fetch_sub(1);
    });
  }
  // Backlog = published - written per camera, sampled from public counters.
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto st = rec->stats();
    std::uint64_t sum = 0;
    for (int cam = 0; cam < kCameras; ++cam) {
      const auto it = st.per_topic.find("/camera/" + std::to_string(cam));
      const std::uint64_t w = it == st.per_topic.end() ? 0 : it->second;
      const std::uint64_t p = published[cam].load();
      const std::uint64_t b = p > w ? p - w : 0;
      sum += b;
      out.max_backlog_frames_one = std::max(out.max_backlog_frames_one, b);
    }
    out.max_backlog_frames = std::max(out.max_backlog_frames, sum);
  }
  for (auto& t : threads) t.join();
  const std::int64_t t_pub = steady_now_ns();
  out.written_at_publish_end = rec->stats().written;
  (void)rec->stop();
  const std::int64_t t_stop = steady_now_ns();
  out.cpu_process = cpu_now(RUSAGE_SELF) - cpu0 - (target.feeder_cpu() - feeder0);
  out.machine = MachineCpu::now().since(m0);
  for (const auto& tc : thread_cpu) {
    out.cpu_publishers.user_s += tc.user_s;
    out.cpu_publishers.sys_s += tc.sys_s;
  }
  fdatasync_path(path);
  out.fdatasync_s = seconds_since(t_stop);
  const auto st = rec->stats();
  std::uint64_t written_total = 0;
  for (int cam = 0; cam < kCameras; ++cam) {
    const std::uint64_t p = published[cam].load();
    const std::uint64_t w = st.per_topic.at("/camera/" + std::to_string(cam));
    out.published.push_back(p);
    out.written.push_back(w);
    out.dropped.push_back(p - std::min(p, w));
    out.late.push_back(late[cam]);
    written_total += w;
  }
  out.duration_s = static_cast<double>(t_pub - t0) / 1e9;
  out.wall_s = static_cast<double>(t_stop - t0) / 1e9;
  out.drain_s = static_cast<double>(t_stop - t_pub) / 1e9;
  out.mb_s = mb(static_cast<double>(written_total * kFrameBytes)) / out.wall_s;
  out.mb_s_while_publishing = mb(static_cast<double>(out.written_at_publish_end * kFrameBytes)) / out.duration_s;
  out.need_mb_s = mb(static_cast<double>(kFrameBytes)) * kCameraHz * kCameras;
  out.file_bytes = file_size(path);
  out.reported_mib = static_cast<double>(reported_kib() - rep0) / 1024;
  target.release();
  return out;
}

// --- output ---------------------------------------------------------------------------------------

std::string num(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

struct Summary {
  std::string what;
  Cache cache;
  EndPolicy policy;
  int n = 0;
  double mean_mb_s = 0, min_mb_s = 0, max_mb_s = 0;
  double ratio = 0, ratio_min = 0, ratio_max = 0;  // against raw of the same rep, cache and policy
  double compression = 0;                           // payload / file bytes
  double cpu_per_s = 0;                             // process CPU seconds per wall second
  double sys_share = 0;                             // sys / (user + sys)
  double machine_busy = 0;                          // system-wide, fraction of both cores
  std::uint64_t dropped = 0;
};

std::vector<Summary> summarize(const std::vector<Run>& runs) {
  std::vector<Summary> out;
  for (Cache cache : {Cache::kWarm, Cache::kCold}) {
    for (EndPolicy p : {EndPolicy::kFdatasync, EndPolicy::kClose}) {
      for (const char* what : {"raw write", "recorder none", "recorder lz4", "recorder zstd"}) {
        Summary s{what, cache, p};
        double cpu = 0, wall = 0, sys = 0, payload = 0, file = 0;
        for (const Run& r : runs) {
          if (r.what != what || r.policy != p || r.cache != cache) continue;
          const Run* raw = nullptr;
          for (const Run& b : runs) {
            if (b.what == "raw write" && b.policy == p && b.cache == cache && b.rep == r.rep) raw = &b;
          }
          const double ratio = raw ? r.mb_s / raw->mb_s : 0;
          s.min_mb_s = s.n == 0 ? r.mb_s : std::min(s.min_mb_s, r.mb_s);
          s.max_mb_s = s.n == 0 ? r.mb_s : std::max(s.max_mb_s, r.mb_s);
          s.ratio_min = s.n == 0 ? ratio : std::min(s.ratio_min, ratio);
          s.ratio_max = s.n == 0 ? ratio : std::max(s.ratio_max, ratio);
          s.mean_mb_s += r.mb_s;
          s.ratio += ratio;
          cpu += r.cpu.total();
          sys += r.cpu.sys_s;
          wall += r.wall_s;
          payload += static_cast<double>(r.payload_bytes);
          file += static_cast<double>(r.file_bytes);
          s.dropped += r.dropped;
          s.machine_busy += r.machine.busy;
          ++s.n;
        }
        if (s.n == 0) continue;
        s.mean_mb_s /= s.n;
        s.ratio /= s.n;
        s.machine_busy /= s.n;
        s.cpu_per_s = cpu / wall;
        s.sys_share = cpu > 0 ? sys / cpu : 0;
        s.compression = file > 0 ? payload / file : 0;
        out.push_back(s);
      }
    }
  }
  return out;
}

std::string fs_description(const std::string& dir, bool* is_tmpfs) {
  struct statfs f{};
  if (::statfs(dir.c_str(), &f) != 0) return "unknown";
  *is_tmpfs = f.f_type == TMPFS_MAGIC;
  char other[32];
  std::snprintf(other, sizeof other, "fs 0x%llx", static_cast<unsigned long long>(f.f_type));
  const std::string kind = f.f_type == TMPFS_MAGIC       ? "tmpfs"
                           : f.f_type == EXT4_SUPER_MAGIC ? "ext4"
                           : f.f_type == XFS_SUPER_MAGIC  ? "xfs"
                           : f.f_type == BTRFS_SUPER_MAGIC ? "btrfs"
                                                          : other;
  struct stat st{};
  ::stat(dir.c_str(), &st);
  return dir + " (" + kind + ", device " + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) + ")";
}

}  // namespace
}  // namespace edgevla::bench

int main(int argc, char** argv) {
  using namespace edgevla;
  using namespace edgevla::bench;
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) c.dir = argv[++i];
    if (a == "--gb" && i + 1 < argc) c.gb = std::atof(argv[++i]);
    if (a == "--reps" && i + 1 < argc) c.reps = std::atoi(argv[++i]);
    if (a == "--cold-reps" && i + 1 < argc) c.cold_reps = std::atoi(argv[++i]);
    if (a == "--settle-s" && i + 1 < argc) c.settle_s = std::atof(argv[++i]);
    if (a == "--camera-cache" && i + 1 < argc) c.camera_cold = std::string(argv[++i]) == "cold";
    if (a == "--camera-s" && i + 1 < argc) c.camera_s = std::atof(argv[++i]);
    if (a == "--only" && i + 1 < argc) c.only = argv[++i];
    if (a == "--json" && i + 1 < argc) c.json = argv[++i];
    if (a == "--markdown" && i + 1 < argc) c.markdown = argv[++i];
  }
  auto want = [&](const char* part) { return c.only.empty() || c.only == part; };
  logger().set_level(spdlog::level::warn);
  bool tmpfs = false;
  const std::string fs = fs_description(c.dir, &tmpfs);
  if (tmpfs) {
    std::fprintf(stderr, "%s is a tmpfs (memory), not a disk: pass --dir on the disk under test\n", fs.c_str());
    return 2;
  }
  const std::int64_t start = steady_now_ns();
  const std::uint64_t n_frames = static_cast<std::uint64_t>(c.gb * 1e9 / static_cast<double>(kFrameBytes)) / 2 * 2;
  std::printf("machine: %s\noutput: %s\nframes: 1280x720x3 u8 (%.2f MB), %d distinct (gradient + objects + noise +-4)\n\n",
              machine_description().c_str(), fs.c_str(), mb(static_cast<double>(kFrameBytes)), kDistinctFrames);
  const std::vector<Tensor> frames = make_frames();

  Costs costs;
  if (want("costs")) {
    costs = measure_costs(frames);
    std::printf("single-thread costs on these frames: memcpy %.0f MB/s, zlib crc32 %.0f MB/s, lz4 %.0f MB/s (%.2fx), "
                "zstd-1 %.0f MB/s (%.2fx)\n\n",
                costs.memcpy_mb_s, costs.crc32_mb_s, costs.lz4_mb_s, costs.lz4_ratio, costs.zstd_mb_s, costs.zstd_ratio);
  }

  std::vector<Run> runs;
  if (want("throughput")) {
    std::printf("throughput: %llu frames (%.2f GB) per configuration, %d warm rep(s), %d cold rep(s)\n",
                static_cast<unsigned long long>(n_frames), static_cast<double>(n_frames * kFrameBytes) / 1e9, c.reps,
                c.cold_reps);
    std::printf("%-16s %-5s %-10s %4s %9s %8s %9s %8s %8s %8s %10s %9s\n", "config", "cache", "end", "rep", "MB/s", "wall s",
                "cpu s", "sys s", "drops", "x comp", "host MiB", "machine%");
    auto one = [&](int k, EndPolicy p, Cache cache, int rep) {
      Run r = k == 0 ? run_raw(c, p, cache, frames, n_frames)
                     : run_recorder(c, k == 1 ? mcap::Compression::kNone
                                              : k == 2 ? mcap::Compression::kLz4 : mcap::Compression::kZstd,
                                    p, cache, frames, n_frames);
      r.rep = rep;
      std::printf("%-16s %-5s %-10s %4d %9.0f %8.2f %9.2f %8.2f %8llu %8.2f %10.0f %9.0f\n", r.what.c_str(), cache_name(cache),
                  policy_name(p), rep, r.mb_s, r.wall_s, r.cpu.total(), r.cpu.sys_s,
                  static_cast<unsigned long long>(r.dropped),
                  r.file_bytes ? static_cast<double>(r.payload_bytes) / static_cast<double>(r.file_bytes) : 0.0,
                  r.reported_mib, 100 * r.machine.busy);
      std::fflush(stdout);
      runs.push_back(r);
    };
    for (int rep = 0; rep < c.reps; ++rep) {
      for (EndPolicy p : {EndPolicy::kFdatasync, EndPolicy::kClose}) {
        for (int k = 0; k < 4; ++k) one(k, p, Cache::kWarm, rep);
      }
    }
    for (int rep = 0; rep < c.cold_reps; ++rep) {
      for (int k = 0; k < 2; ++k) one(k, EndPolicy::kFdatasync, Cache::kCold, rep);
    }
    std::printf("\n");
  }
  const auto summary = summarize(runs);

  std::vector<CameraRun> cams;
  if (want("cameras")) {
    const Cache main_cache = c.camera_cold ? Cache::kCold : Cache::kWarm;
    std::vector<std::pair<mcap::Compression, Cache>> plan = {{mcap::Compression::kNone, main_cache},
                                                             {mcap::Compression::kLz4, main_cache}};
    if (c.cold_reps > 0 && main_cache == Cache::kWarm) plan.emplace_back(mcap::Compression::kNone, Cache::kCold);
    for (auto [comp, cache] : plan) {
      CameraRun r = run_cameras(c, comp, cache, frames);
      std::printf("cameras (%s, %s page cache): %d x 1280x720x3 @ %.0f Hz for %.1f s, need %.0f MB/s: written while "
                  "publishing %.0f MB/s, overall (to stop() returning) %.0f MB/s, backlog at last frame %llu frames, "
                  "drain %.2f s, fdatasync after stop %.2f s; machine CPU busy %.0f%% of 2 cores (iowait %.0f%%)\n",
                  r.compression.c_str(), cache_name(r.cache), kCameras, kCameraHz, r.duration_s, r.need_mb_s,
                  r.mb_s_while_publishing, r.mb_s,
                  static_cast<unsigned long long>(std::accumulate(r.published.begin(), r.published.end(), std::uint64_t{0}) -
                                                  r.written_at_publish_end),
                  r.drain_s, r.fdatasync_s, 100 * r.machine.busy, 100 * r.machine.iowait);
      for (int cam = 0; cam < kCameras; ++cam) {
        std::printf("  /camera/%d: published %llu, written %llu, dropped %llu, publisher late (skipped) %llu\n", cam,
                    static_cast<unsigned long long>(r.published[cam]), static_cast<unsigned long long>(r.written[cam]),
                    static_cast<unsigned long long>(r.dropped[cam]), static_cast<unsigned long long>(r.late[cam]));
      }
      std::printf("  backlog high-water: %llu frames in all (%.0f MB), %llu on one camera; CPU: process %.2f s "
                  "(user %.2f, sys %.2f) = %.2f cores, publishers %.2f s, recorder and the rest %.2f s; "
                  "host took back %.0f MiB\n",
                  static_cast<unsigned long long>(r.max_backlog_frames),
                  mb(static_cast<double>(r.max_backlog_frames * kFrameBytes)),
                  static_cast<unsigned long long>(r.max_backlog_frames_one), r.cpu_process.total(), r.cpu_process.user_s,
                  r.cpu_process.sys_s, r.cpu_process.total() / r.wall_s, r.cpu_publishers.total(),
                  r.cpu_process.total() - r.cpu_publishers.total(), r.reported_mib);
      std::fflush(stdout);
      cams.push_back(std::move(r));
    }
    std::printf("\n");
  }
  if (!g_spare.empty()) ::unlink(g_spare.c_str());
  const double total_s = seconds_since(start);

  // Markdown: the summary tables.
  std::ostringstream md;
  if (!summary.empty()) {
    md << "Throughput: " << n_frames << " frames (" << num("%.2f", static_cast<double>(n_frames * kFrameBytes) / 1e9)
       << " GB of tensor payload) per run; MB/s = payload / (first publish .. stop() returned, + fdatasync of the file "
          "for end = fdatasync). Ratio = recorder / raw write of the same rep, page-cache state and end policy "
          "(mean [min-max] over reps).\n\n";
    md << "| page cache | end of run | config | reps | MB/s (mean) | [min-max] | / raw write | process CPU s per s | "
          "sys share | machine CPU busy (2 cores) | payload / file | drops |\n";
    md << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& s : summary) {
      md << "| " << cache_name(s.cache) << " | " << policy_name(s.policy) << " | " << s.what << " | " << s.n << " | "
         << num("%.0f", s.mean_mb_s) << " | " << num("%.0f", s.min_mb_s) << "-" << num("%.0f", s.max_mb_s) << " | "
         << (s.what == "raw write" ? std::string("1 (baseline)")
                                   : num("%.2f", s.ratio) + " [" + num("%.2f", s.ratio_min) + "-" +
                                         num("%.2f", s.ratio_max) + "]")
         << " | " << num("%.2f", s.cpu_per_s) << " | " << num("%.0f%%", 100 * s.sys_share) << " | "
         << num("%.0f%%", 100 * s.machine_busy) << " | " << num("%.2f", s.compression) << " | " << s.dropped << " |\n";
    }
    md << "\n";
  }
  if (costs.memcpy_mb_s > 0) {
    md << "Single-thread costs on the same frames (5.5 MB chunks): memcpy " << num("%.0f", costs.memcpy_mb_s)
       << " MB/s, zlib crc32 " << num("%.0f", costs.crc32_mb_s) << " MB/s, lz4 " << num("%.0f", costs.lz4_mb_s)
       << " MB/s (" << num("%.2f", costs.lz4_ratio) << "x), zstd-1 " << num("%.0f", costs.zstd_mb_s) << " MB/s ("
       << num("%.2f", costs.zstd_ratio) << "x).\n\n";
  }
  if (!cams.empty()) {
    md << "Cameras: " << kCameras << " x 1280x720x3 u8 @ 30 Hz (" << num("%.0f", cams[0].need_mb_s)
       << " MB/s), loaned from the bus, for " << num("%.1f", c.camera_s)
       << " s; recorder with default queues (512 MB per topic), close only (fdatasync timed after).\n\n";
    md << "| compression | page cache | published | written | dropped (per camera) | publisher skipped (late) | "
          "MB/s written while publishing | MB/s to stop() | backlog at last frame (frames) | drain (s) | "
          "backlog high-water (frames / MB) | CPU cores (process) | user / sys s | publishers CPU s | "
          "fdatasync after stop (s) | machine CPU busy (2 cores) |\n";
    md << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : cams) {
      std::uint64_t p = 0, w = 0, d = 0, l = 0;
      std::string per;
      for (int cam = 0; cam < kCameras; ++cam) {
        p += r.published[cam];
        w += r.written[cam];
        d += r.dropped[cam];
        l += r.late[cam];
        per += (cam ? "/" : "") + std::to_string(r.dropped[cam]);
      }
      md << "| " << r.compression << " | " << cache_name(r.cache) << " | " << p << " | " << w << " | " << d << " (" << per << ") | " << l << " | "
         << num("%.0f", r.mb_s_while_publishing) << " | " << num("%.0f", r.mb_s) << " | "
         << (p - r.written_at_publish_end) << " | " << num("%.2f", r.drain_s) << " | " << r.max_backlog_frames << " / "
         << num("%.0f", mb(static_cast<double>(r.max_backlog_frames * kFrameBytes))) << " | "
         << num("%.2f", r.cpu_process.total() / r.wall_s) << " | " << num("%.1f", r.cpu_process.user_s) << " / "
         << num("%.1f", r.cpu_process.sys_s) << " | " << num("%.2f", r.cpu_publishers.total()) << " | "
         << num("%.2f", r.fdatasync_s) << " | " << num("%.0f%%", 100 * r.machine.busy) << " |\n";
    }
    md << "\n";
  }
  md << "Whole bench: " << num("%.0f", total_s) << " s.\n";
  std::printf("%s", md.str().c_str());

  if (!c.markdown.empty()) {
    std::FILE* f = std::fopen(c.markdown.c_str(), "w");
    std::fprintf(f, "machine: %s  \noutput directory: %s\n\n%s", machine_description().c_str(), fs.c_str(), md.str().c_str());
    std::fclose(f);
  }
  if (!c.json.empty()) {
    std::FILE* f = std::fopen(c.json.c_str(), "w");
    std::fprintf(f, "{\n  \"machine\": \"%s\",\n  \"output\": \"%s\",\n  \"frame_bytes\": %zu,\n", machine_description().c_str(),
                 fs.c_str(), kFrameBytes);
    std::fprintf(f, "  \"costs_mb_s\": {\"memcpy\": %.0f, \"crc32\": %.0f, \"lz4\": %.0f, \"zstd\": %.0f, \"lz4_ratio\": %.3f, \"zstd_ratio\": %.3f},\n",
                 costs.memcpy_mb_s, costs.crc32_mb_s, costs.lz4_mb_s, costs.zstd_mb_s, costs.lz4_ratio, costs.zstd_ratio);
    std::fprintf(f, "  \"throughput_runs\": [\n");
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const Run& r = runs[i];
      std::fprintf(f,
                   "    {\"config\": \"%s\", \"cache\": \"%s\", \"end\": \"%s\", \"rep\": %d, \"payload_bytes\": %llu, "
                   "\"file_bytes\": %llu, \"messages\": %llu, \"written\": %llu, \"dropped\": %llu, \"wall_s\": %.3f, "
                   "\"mb_s\": %.1f, \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, \"host_reported_mib\": %.0f, "
                   "\"machine_busy\": %.3f, \"machine_iowait\": %.3f}%s\n",
                   r.what.c_str(), cache_name(r.cache), policy_name(r.policy), r.rep,
                   static_cast<unsigned long long>(r.payload_bytes), static_cast<unsigned long long>(r.file_bytes),
                   static_cast<unsigned long long>(r.messages), static_cast<unsigned long long>(r.written),
                   static_cast<unsigned long long>(r.dropped), r.wall_s, r.mb_s, r.cpu.user_s, r.cpu.sys_s,
                   r.reported_mib, r.machine.busy, r.machine.iowait, i + 1 < runs.size() ? "," : "");
    }
    std::fprintf(f, "  ],\n  \"throughput_summary\": [\n");
    for (std::size_t i = 0; i < summary.size(); ++i) {
      const Summary& s = summary[i];
      std::fprintf(f,
                   "    {\"config\": \"%s\", \"cache\": \"%s\", \"end\": \"%s\", \"reps\": %d, \"mb_s_mean\": %.1f, "
                   "\"mb_s_min\": %.1f, \"mb_s_max\": %.1f, \"ratio_to_raw\": %.3f, \"ratio_min\": %.3f, "
                   "\"ratio_max\": %.3f, \"cpu_per_s\": %.3f, \"payload_per_file_byte\": %.3f, \"dropped\": %llu}%s\n",
                   s.what.c_str(), cache_name(s.cache), policy_name(s.policy), s.n, s.mean_mb_s, s.min_mb_s, s.max_mb_s,
                   s.ratio, s.ratio_min, s.ratio_max, s.cpu_per_s, s.compression,
                   static_cast<unsigned long long>(s.dropped), i + 1 < summary.size() ? "," : "");
    }
    std::fprintf(f, "  ],\n  \"cameras\": [\n");
    for (std::size_t i = 0; i < cams.size(); ++i) {
      const CameraRun& r = cams[i];
      auto list = [](const std::vector<std::uint64_t>& v) {
        std::string s = "[";
        for (std::size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
        return s + "]";
      };
      std::fprintf(f,
                   "    {\"compression\": \"%s\", \"cache\": \"%s\", \"cameras\": %d, \"hz\": %.0f, \"duration_s\": %.3f, "
                   "\"need_mb_s\": %.1f, \"recorded_mb_s\": %.1f, \"published\": %s, \"written\": %s, \"dropped\": %s, "
                   "\"publisher_skipped\": %s, \"backlog_high_water_frames\": %llu, "
                   "\"backlog_high_water_one_camera\": %llu, \"drain_s\": %.3f, \"fdatasync_after_stop_s\": %.3f, "
                   "\"file_bytes\": %llu, \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, \"cpu_publishers_s\": %.3f, "
                   "\"wall_s\": %.3f, \"host_reported_mib\": %.0f, \"written_at_publish_end\": %llu, "
                   "\"mb_s_while_publishing\": %.1f, \"machine_busy\": %.3f, \"machine_iowait\": %.3f}%s\n",
                   r.compression.c_str(), cache_name(r.cache), kCameras, kCameraHz, r.duration_s, r.need_mb_s, r.mb_s,
                   list(r.published).c_str(), list(r.written).c_str(), list(r.dropped).c_str(), list(r.late).c_str(),
                   static_cast<unsigned long long>(r.max_backlog_frames),
                   static_cast<unsigned long long>(r.max_backlog_frames_one), r.drain_s, r.fdatasync_s,
                   static_cast<unsigned long long>(r.file_bytes), r.cpu_process.user_s, r.cpu_process.sys_s,
                   r.cpu_publishers.total(), r.wall_s, r.reported_mib,
                   static_cast<unsigned long long>(r.written_at_publish_end), r.mb_s_while_publishing, r.machine.busy,
                   r.machine.iowait, i + 1 < cams.size() ? "," : "");
    }
    std::fprintf(f, "  ],\n  \"bench_s\": %.1f\n}\n", total_s);
    std::fclose(f);
  }
  return 0;
}
