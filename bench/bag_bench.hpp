// Shared pieces of edgevla_bench_bag (bag_throughput.cpp: parts 0 and 1, output, main;
// bag_cameras.cpp: part 2). See bag_throughput.cpp for what the bench measures.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bag/compression.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::bench {

inline constexpr int kH = 720, kW = 1280, kC = 3;
inline constexpr std::size_t kFrameBytes = std::size_t{kH} * kW * kC;
inline constexpr int kDistinctFrames = 16;
inline constexpr int kCameras = 5;
inline constexpr double kCameraHz = 30.0;

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
inline const char* policy_name(EndPolicy p) { return p == EndPolicy::kClose ? "close" : "fdatasync"; }

inline std::string compression_label(mcap::Compression c) {
  switch (c) {
    case mcap::Compression::kNone: return "none";
    case mcap::Compression::kLz4: return "lz4";
    case mcap::Compression::kZstd: return "zstd";
  }
  return "?";
}

inline double mb(double bytes) { return bytes / 1e6; }

// --- frames --------------------------------------------------------------------------------

inline void fill_frame(std::uint8_t* p, int index) {
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

inline std::vector<Tensor> make_frames() {
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

inline Cpu cpu_now(int who) {
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

inline double seconds_since(std::int64_t t0) { return static_cast<double>(steady_now_ns() - t0) / 1e9; }

inline void sleep_until(std::int64_t steady_ns) {
  for (std::int64_t now = steady_now_ns(); now < steady_ns; now = steady_now_ns()) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(steady_ns - now));
  }
}

inline std::string unique_path(const Config& c, const std::string& tag) {
  static int n = 0;
  return c.dir + "/edgevla-bench-bag-" + std::to_string(::getpid()) + "-" + std::to_string(++n) + "-" + tag;
}

inline std::string unique_domain(const std::string& tag) {
  static int n = 0;
  return "bench-bag-" + std::to_string(::getpid()) + "-" + std::to_string(++n) + "-" + tag;
}

// Removes the (empty) registry directory a bench bus left behind.
struct RegistryDirCleanup {
  std::string dir;
  ~RegistryDirCleanup() { ::rmdir(dir.c_str()); }
};

inline std::uint64_t file_size(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// Flushes the file's data to the disk (the recorder closed its descriptor; fdatasync on a new
// one writes back the same inode's dirty pages).
inline void fdatasync_path(const std::string& path) {
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
inline const char* cache_name(Cache k) { return k == Cache::kWarm ? "warm" : "cold"; }

inline std::string g_spare;  // the previous run's file, kept for recycling

inline std::uint64_t reported_kib() {
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

CameraRun run_cameras(const Config& c, mcap::Compression comp, Cache cache, const std::vector<Tensor>& frames);

}  // namespace edgevla::bench
