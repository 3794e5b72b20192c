// GPU tensor hand-over on the bus, 1 KB -> 256 MB (a GPU machine; see bench/results/issue10):
//   same process: a device tensor published and taken by a subscriber of the same bus (the
//     subscriber gets the device buffer itself), against cudaMemcpy device-to-device of the
//     same bytes (what a copying hand-over would cost at least);
//   another bus over ipc (another process's view), a device tensor of the producer's own: it
//     arrives as a host copy in shared memory and the consumer puts it back on its device,
//     against the same round trip done by hand (device -> host -> shared -> host -> device);
//   another bus, the producer's loan (Bus::loan_for): a device block of the shared pool, which
//     the consumer maps on the device and reads in place (its descriptor imported once per
//     block), against the same hand round trip and cudaMemcpy device-to-device.
// p50 / p90 µs per size; one JSON line per (path, size).
//   edgevla_bench_gpu_handover [--reps 50]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/cuda_check.hpp"
#include "msgs/types.hpp"
#include "runtime/backends/backend.hpp"
#include "runtime/bus/bus.hpp"

using namespace edgevla;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Stats {
  double p50 = 0, p90 = 0;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 9 / 10)]};
}

void line(const char* path, std::size_t bytes, Stats s, const char* baseline, Stats b) {
  std::printf(
      "{\"bench\": \"gpu_handover\", \"path\": \"%s\", \"bytes\": %zu, \"p50_us\": %.1f, "
      "\"p90_us\": %.1f, "
      "\"baseline\": \"%s\", \"baseline_p50_us\": %.1f, \"baseline_p90_us\": %.1f, \"ratio_p50\": "
      "%.3f}\n",
      path, bytes, s.p50, s.p90, baseline, b.p50, b.p90, b.p50 / s.p50);
  std::fflush(stdout);
}

// Takes the next message of `q`, waiting up to 10 s.
MessagePtr take(SubscriptionQueue& q) {
  const double until = now_us() + 10e6;
  while (now_us() < until) {
    if (MessagePtr m = q.pop()) return m;
    std::this_thread::yield();
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(5, std::atoi(argv[i + 1]));
  }
  auto backend = backends::make_backend("cuda");  // registers the cuda allocator
  if (!backend) {
    std::fprintf(stderr, "%s\n", backend.status().to_string().c_str());
    return 1;
  }
  BusOptions o;
  o.domain = "handover" + std::to_string(::getpid());
  auto pub = std::move(*Bus::create(o));
  auto other = std::move(*Bus::create(o));
  auto writer = *pub->advertise("/t", "ActionChunk", "producer");
  auto local = std::make_shared<SubscriptionQueue>("/t", "ActionChunk", QoS::keep_last(4).taking_device_tensors(), "local",
                                                   std::make_shared<Waker>());
  auto remote = std::make_shared<SubscriptionQueue>("/t", "ActionChunk", QoS::keep_last(4),
                                                    "remote", std::make_shared<Waker>());
  // Same process first, with no other subscriber (another bus would get host copies at send).
  if (!pub->attach(local).is_ok()) return 1;
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::size_t sizes[] = {std::size_t{1} << 10,  std::size_t{64} << 10,
                               std::size_t{1} << 20,  std::size_t{16} << 20,
                               std::size_t{64} << 20, std::size_t{256} << 20};
  auto remote_dev = std::make_shared<SubscriptionQueue>("/t", "ActionChunk", QoS::keep_last(4).taking_device_tensors(),
                                                       "remote_device", std::make_shared<Waker>());
  // Publishes small tensors until `q` (on the other bus) gets one: its subscription has reached
  // the publisher. `loaned`: the publisher's loans (device blocks) instead of its own tensors.
  const auto until_subscribed = [&](SubscriptionQueue& q, bool loaned) {
    const double until = now_us() + 10e6;
    bool up = false;
    while (!up && now_us() < until) {
      auto t = loaned ? pub->loan_for("/t", DType::kF32, Shape{1, 4}, Device::cuda(0))
                      : Tensor::empty(DType::kF32, Shape{1, 4}, Device::cuda(0));
      if (!t || !pub->publish(*writer, *msgs::ActionChunk::make(std::move(*t), 0.02)).is_ok()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      up = q.pop() != nullptr;
    }
    while (q.pop()) {
    }
    if (!up) std::fprintf(stderr, "the other bus never subscribed\n");
    return up;
  };
  for (int phase = 0; phase < 3; ++phase) {
    if (phase == 1) {
      pub->detach(local);
      if (!other->attach(remote).is_ok() || !until_subscribed(*remote, false)) return 1;
    }
    if (phase == 2) {
      other->detach(remote);
      if (!other->attach(remote_dev).is_ok() || !until_subscribed(*remote_dev, true)) return 1;
    }
    for (const std::size_t bytes : sizes) {
      const std::int64_t n = static_cast<std::int64_t>(bytes / 4);
      const int r = bytes >= (std::size_t{64} << 20) ? std::max(5, reps / 5) : reps;
      void* dst = nullptr;
      CHECK_CUDA(cudaMalloc(&dst, bytes));
      if (phase == 0) {
        std::vector<double> same, d2d;
        for (int i = 0; i < r + 2; ++i) {
          Tensor t = *Tensor::empty(DType::kF32, Shape{n / 4, 4}, Device::cuda(0));
          const double t0 = now_us();
          if (!pub->publish(*writer, *msgs::ActionChunk::make(std::move(t), 0.02)).is_ok())
            return 1;
          MessagePtr m = take(*local);
          const double t1 = now_us();
          if (!m || m->tensor("actions")->device().is_cpu()) {
            std::fprintf(stderr, "same process: no device tensor arrived at %zu bytes\n", bytes);
            return 1;
          }
          const double t2 = now_us();
          CHECK_CUDA(cudaMemcpyAsync(dst, m->tensor("actions")->raw_data(), bytes,
                                     cudaMemcpyDeviceToDevice, s));
          CHECK_CUDA(cudaStreamSynchronize(s));
          const double t3 = now_us();
          if (i >= 2) same.push_back(t1 - t0), d2d.push_back(t3 - t2);
        }
        line("same_process", bytes, stats(same), "cudaMemcpy_d2d", stats(d2d));
        CHECK_CUDA(cudaFree(dst));
        continue;
      }
      if (phase == 2) {
        // Another bus, a loan: the device block itself, read in place on the consumer's side.
        std::vector<double> cross, manual, d2d, loan_us, publish_us, alone;
        std::vector<char> host(bytes), shm(bytes);
        // First the hand-overs back to back, nothing else between them but a 4-byte device read
        // of the received block: the loop below interleaves the baselines, whose host copies of
        // up to 256 MB evict the CPU caches the bus's own data lives in.
        for (int i = 0; i < r + 2; ++i) {
          auto t = pub->loan_for("/t", DType::kF32, Shape{n / 4, 4}, Device::cuda(0));
          if (!t || t->device().is_cpu()) return 1;
          const double t0 = now_us();
          if (!pub->publish(*writer, *msgs::ActionChunk::make(std::move(*t), 0.02)).is_ok()) return 1;
          MessagePtr m = take(*remote_dev);
          const double t1 = now_us();
          if (!m) return 1;
          CHECK_CUDA(cudaMemcpyAsync(dst, m->tensor("actions")->raw_data(), 4, cudaMemcpyDeviceToDevice, s));
          CHECK_CUDA(cudaStreamSynchronize(s));
          if (i >= 2) alone.push_back(t1 - t0);
        }
        for (int i = 0; i < r + 2; ++i) {
          const double tl = now_us();
          auto t = pub->loan_for("/t", DType::kF32, Shape{n / 4, 4}, Device::cuda(0));
          const double tl1 = now_us();
          if (!t || t->device().is_cpu()) {
            std::fprintf(stderr, "device block loan: %s\n",
                         t ? "a host loan came back (the device cannot export memory)" : t.status().to_string().c_str());
            return 1;
          }
          const double t0 = now_us();
          if (!pub->publish(*writer, *msgs::ActionChunk::make(std::move(*t), 0.02)).is_ok()) return 1;
          const double tp = now_us();
          MessagePtr m = take(*remote_dev);
          const double t1 = now_us();
          if (i >= 2) loan_us.push_back(tl1 - tl), publish_us.push_back(tp - t0);
          if (!m || m->tensor("actions")->device().is_cpu()) {
            std::fprintf(stderr, "device block: no device tensor arrived at %zu bytes\n", bytes);
            return 1;
          }
          Tensor keep = *Tensor::empty(DType::kF32, Shape{n / 4, 4}, Device::cuda(0));
          const void* src = keep.raw_data();
          const double t2 = now_us();
          CHECK_CUDA(cudaMemcpy(host.data(), src, bytes, cudaMemcpyDeviceToHost));
          std::memcpy(shm.data(), host.data(), bytes);
          CHECK_CUDA(cudaMemcpy(dst, shm.data(), bytes, cudaMemcpyHostToDevice));
          const double t3 = now_us();
          CHECK_CUDA(cudaMemcpyAsync(dst, m->tensor("actions")->raw_data(), bytes, cudaMemcpyDeviceToDevice, s));
          CHECK_CUDA(cudaStreamSynchronize(s));
          const double t4 = now_us();
          if (i >= 2) cross.push_back(t1 - t0), manual.push_back(t3 - t2), d2d.push_back(t4 - t3);
        }
        line("another_bus_device_block_back_to_back", bytes, stats(alone), "d2h_shm_h2d_by_hand", stats(manual));
        line("another_bus_device_block", bytes, stats(cross), "d2h_shm_h2d_by_hand", stats(manual));
        line("another_bus_device_block", bytes, stats(cross), "cudaMemcpy_d2d_of_the_received_block", stats(d2d));
        // Where the hand-over's time goes: the loan (not in the hand-over) and publish() alone.
        line("another_bus_device_block", bytes, stats(cross), "loan_for_call", stats(loan_us));
        line("another_bus_device_block", bytes, stats(cross), "publish_call", stats(publish_us));
        // How the pool served the loans so far (blocks created vs recycled), on stderr.
        const std::string y = pub->stats_yaml();
        const auto at = y.find("shm_pool");
        std::fprintf(stderr, "after %zu bytes: %s\n", bytes, at == std::string::npos ? "?" : y.substr(at, 160).c_str());
        // The receiving bus's mapper: device imports (once per block and process when cached).
        const std::string ry = other->stats_yaml();
        for (const char* key : {"acquired", "device_imports", "vanished"}) {
          const auto k = ry.find(key);
          if (k != std::string::npos) std::fprintf(stderr, "  receiver %s\n", ry.substr(k, ry.find('\n', k) - k).c_str());
        }
        CHECK_CUDA(cudaFree(dst));
        continue;
      }
      // Another bus: host copy in shared memory, back to the device on the consumer's side.
      std::vector<double> cross, manual;
      std::vector<char> host(bytes), shm(bytes);
      for (int i = 0; i < r + 2; ++i) {
        Tensor t = *Tensor::empty(DType::kF32, Shape{n / 4, 4}, Device::cuda(0));
        const double t0 = now_us();
        if (!pub->publish(*writer, *msgs::ActionChunk::make(std::move(t), 0.02)).is_ok()) return 1;
        MessagePtr m = take(*remote);
        if (!m) {
          std::fprintf(stderr, "another bus: nothing arrived at %zu bytes\n", bytes);
          return 1;
        }
        CHECK_CUDA(cudaMemcpyAsync(dst, m->tensor("actions")->raw_data(), bytes,
                                   cudaMemcpyHostToDevice, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
        const double t1 = now_us();
        // By hand: device -> host -> shared -> host -> device.
        Tensor keep = *Tensor::empty(DType::kF32, Shape{n / 4, 4}, Device::cuda(0));
        const void* src = keep.raw_data();
        const double t2 = now_us();
        CHECK_CUDA(cudaMemcpy(host.data(), src, bytes, cudaMemcpyDeviceToHost));
        std::memcpy(shm.data(), host.data(), bytes);
        CHECK_CUDA(cudaMemcpy(dst, shm.data(), bytes, cudaMemcpyHostToDevice));
        const double t3 = now_us();
        if (i >= 2) cross.push_back(t1 - t0), manual.push_back(t3 - t2);
      }
      line("another_bus", bytes, stats(cross), "d2h_shm_h2d_by_hand", stats(manual));
      CHECK_CUDA(cudaFree(dst));
    }
  }
  return 0;
}
