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
// Page cache "warm" / "cold": see Target (bench/bag_bench.hpp). Warm runs are interleaved per rep (raw,
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

#include <cstdio>
#include <cstring>
#include <numeric>
#include <sstream>

#include "bench/bag_bench.hpp"
#include "bench/bench_common.hpp"
#include "msgs/types.hpp"
#include "runtime/bag/compression.hpp"
#include "runtime/bag/mcap_records.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::bench {
namespace {

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
