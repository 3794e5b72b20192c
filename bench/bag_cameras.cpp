// edgevla_bench_bag, part 2 (cameras): see bag_throughput.cpp.
#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bench/bag_bench.hpp"
#include "msgs/types.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::bench {

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

}  // namespace edgevla::bench
