// edgevla's cuda backend on a pi0 / pi0.5 checkpoint, end to end (backbone + action head, inputs
// on the device, the cache handed over on the device), per stage, and the device memory it holds
// after activate against the bf16 weight bytes. Prints one JSON line per view count; run it
// beside bench/torch_pi0_cuda.py on the same checkpoint for the PyTorch baselines and the floor.
//
//   edgevla_bench_cuda_pi0 --checkpoint DIR [--views 1,3] [--tokens 200] [--steps 10]
//                          [--repeat 50] [--warmup 10] [--precision bf16|f32] [--log-level debug]
//                          [--profile-last 1] [--overlap-probe 1] [--stages-alone 1]
//                          [--timeline N [--timeline-csv PREFIX]]
// --overlap-probe 1 also times, per view count, the backbone and the action head run at once from
// two host threads (each engine on its own stream, the head reading the cache of the run before):
// how much of a head step the device could hide under the backbone if the head's first step
// followed the backbone layer by layer. The head's numbers in those runs are not checked (it reads
// a cache the backbone is rewriting); only the times mean something.
// With layer fences (EDGEVLA_CUDA_LAYER_FENCES, on by default) the backbone returns once its graph
// is queued and the head's first step follows it layer by layer: backbone_ms is then the host's
// part only and action_head_ms includes the wait for the backbone; e2e_ms is the measure.
// --stages-alone 1 also times, per view count, the backbone to the end of its device work and then
// the head alone on the finished cache, at the asked steps and at twice them: the difference is
// the asked steps alone (what the head's weight-read floor is about), the rest its once-a-chunk work.
// --timeline N instead runs, after the warm-up, N chunks with CUPTI recording the device's work
// (builds with CUPTI only) and prints where the GPU sat idle inside each (bench/timeline.hpp);
// nothing else is timed. --timeline-csv PREFIX also writes the recorded runs' records to
// PREFIX_<views>v.csv.
// --profile-last 1 brackets the last run with cudaProfilerStart/Stop (for ncu
// --profile-from-start off; bench/kernel_breakdown.py reads what it writes).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "bench/cuda_timeline.hpp"
#include "runtime/backends/backend.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/pi0/pi0_family.hpp"

using namespace edgevla;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double median = 0, p90 = 0, min = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  s.median = v[v.size() / 2];
  s.p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  s.min = v.front();
  return s;
}

int fail(const Status& s) {
  std::fprintf(stderr, "cuda_pi0: %s\n", s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, precision = "bf16", views_arg = "1,3";
  int tokens = 200, steps = 10, repeat = 50, warmup = 10;
  bool profile_last = false, overlap_probe = false, stages_alone = false;
  int timeline_runs = 0;
  std::string timeline_csv;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--checkpoint") dir = v;
    else if (k == "--views") views_arg = v;
    else if (k == "--tokens") tokens = std::atoi(v.c_str());
    else if (k == "--steps") steps = std::atoi(v.c_str());
    else if (k == "--repeat") repeat = std::max(1, std::atoi(v.c_str()));
    else if (k == "--warmup") warmup = std::atoi(v.c_str());
    else if (k == "--precision") precision = v;
    else if (k == "--profile-last") profile_last = v != "0";
    else if (k == "--overlap-probe") overlap_probe = v != "0";
    else if (k == "--stages-alone") stages_alone = v != "0";
    else if (k == "--timeline") timeline_runs = std::max(0, std::atoi(v.c_str()));
    else if (k == "--timeline-csv") timeline_csv = v;
    else if (k == "--log-level") spdlog::set_level(spdlog::level::from_str(v));
    else return fail(invalid_argument("unknown option " + k));
  }
  if (dir.empty()) return fail(invalid_argument("--checkpoint DIR is required"));
  std::size_t free0 = 0, total = 0;
  // Timeline mode records from before the engines exist (their graphs included) and times nothing
  // else: recording slows the work a little.
  bench::DeviceTimeline timeline;
  if (timeline_runs > 0) {
    if (std::string e = timeline.start(); !e.empty()) return fail(Status(StatusCode::kUnavailable, e));
  }
  cudaSetDevice(0);
  cudaMemGetInfo(&free0, &total);
  auto ck = model::Checkpoint::open(dir);
  if (!ck) return fail(ck.status());
  const model::pi0::Pi0Model pm(std::move(*ck));
  const model::ModelConfig& c = pm.config();
  auto backend = backends::make_backend("cuda");
  if (!backend) return fail(backend.status());
  backends::EngineOptions eo;
  eo.device = "cuda:0";
  auto prec = backends::parse_precision(precision);
  if (!prec) return fail(prec.status());
  eo.precision = *prec;
  const auto t_act = std::chrono::steady_clock::now();
  auto bb = (*backend)->create(pm, model::kBackbone, eo);
  if (!bb) return fail(bb.status());
  auto head = (*backend)->create(pm, model::kActionHead, eo);
  if (!head) return fail(head.status());
  const double activate_ms = ms_since(t_act);
  std::size_t free1 = 0;
  cudaMemGetInfo(&free1, &total);
  // bf16 bytes of the weights the two stages read.
  std::int64_t weight_elems = 0;
  for (const auto& s : pm.stages()) weight_elems += s.weight_bytes;  // stored bytes
  const std::int64_t device_bytes = (*bb)->device_bytes() + (*head)->device_bytes();

  std::vector<int> views;
  for (std::size_t p = 0; p < views_arg.size();) {
    const std::size_t q = views_arg.find(',', p);
    views.push_back(std::atoi(views_arg.substr(p, q - p).c_str()));
    p = q == std::string::npos ? views_arg.size() : q + 1;
  }
  for (int nv : views) {
    std::vector<int> masked;
    for (int s = nv; s < c.num_cameras(); ++s) masked.push_back(s);
    auto in = model::random_inputs(c, 1, masked, std::min(tokens, c.token_len()));
    if (!in) return fail(in.status());
    in->num_steps = steps;
    // Images on the device, as a camera pipeline on the GPU would hand them over.
    std::vector<void*> dev_images;
    for (Tensor& img : in->images) {
      if (!img.defined()) continue;
      void* d = nullptr;
      cudaMalloc(&d, img.nbytes());
      cudaMemcpy(d, img.raw_data(), img.nbytes(), cudaMemcpyHostToDevice);
      Buffer::Options o;
      o.device = Device::cuda(0);
      auto t = Tensor::from_buffer(std::make_shared<Buffer>(static_cast<std::byte*>(d), img.nbytes(), o), DType::kF32,
                                   img.shape());
      if (!t) return fail(t.status());
      img = *t;
      dev_images.push_back(d);
    }
    if (timeline_runs > 0) {
      // End-to-end chunks as below after the warm-up, recorded: the device's idle time inside each.
      const auto chunk = [&]() -> std::string {
        auto out = model::run_forward(**bb, **head, c, *in, false);
        return out ? "" : out.status().to_string();
      };
      const std::string e = bench::record_chunks(timeline, "edgevla_cuda_pi0", nv, warmup, timeline_runs, chunk, timeline_csv);
      if (!e.empty()) return fail(Status(StatusCode::kUnavailable, e));
      for (void* d : dev_images) cudaFree(d);
      continue;
    }
    std::vector<double> e2e, tb, th;
    for (int i = 0; i < warmup + repeat; ++i) {
      const bool profiled = profile_last && i == warmup + repeat - 1;
      if (profiled) cudaProfilerStart();
      const auto t0 = std::chrono::steady_clock::now();
      auto out = model::run_forward(**bb, **head, c, *in, false);
      const double ms = ms_since(t0);
      if (profiled) cudaProfilerStop();
      if (!out) return fail(out.status());
      if (i >= warmup) {
        e2e.push_back(ms);
        tb.push_back(out->backbone_ms);
        th.push_back(out->action_head_ms);
      }
    }
    const Stats e = stats(e2e), b = stats(tb), h = stats(th);
    std::printf("{\"bench\": \"edgevla_cuda_pi0\", \"model\": \"%s\", \"precision\": \"%s\", \"views\": %d, "
                "\"tokens\": %d, \"steps\": %d, \"horizon\": %d, \"repeat\": %d, "
                "\"e2e_ms\": {\"median\": %.3f, \"p90\": %.3f, \"min\": %.3f}, "
                "\"backbone_ms\": {\"median\": %.3f, \"p90\": %.3f}, \"action_head_ms\": {\"median\": %.3f, \"p90\": %.3f}, "
                "\"activate_ms\": %.0f, \"device_bytes_engines\": %lld, \"device_bytes_used_after_activate\": %lld, "
                "\"checkpoint_weight_bytes\": %lld}\n",
                std::string(pm.variant()).c_str(), precision.c_str(), nv, tokens, steps, c.action_horizon, repeat,
                e.median, e.p90, e.min, b.median, b.p90, h.median, h.p90, activate_ms,
                static_cast<long long>(device_bytes), static_cast<long long>(free0 - free1),
                static_cast<long long>(weight_elems));
    std::fflush(stdout);
    if (stages_alone) {
      // Each stage timed with nothing beside it: the backbone to the end of its device work, then
      // the head on the finished cache (bindings from the last forward; with layer fences its
      // first step still holds the per-layer waits, all met). Against EDGEVLA_CUDA_LAYER_FENCES=0,
      // what the layered hand-over's event records and waits cost where nothing overlaps.
      backends::RunOptions ro;
      ro.num_steps = steps;
      std::vector<double> alone_b, alone_h;
      for (int i = 0; i < warmup + repeat; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        if (Status st = (*bb)->run({}); !st.is_ok()) return fail(st);
        cudaDeviceSynchronize();
        const double b_ms = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        if (Status st = (*head)->run(ro); !st.is_ok()) return fail(st);
        const double h_ms = ms_since(t0);
        if (i >= warmup) {
          alone_b.push_back(b_ms);
          alone_h.push_back(h_ms);
        }
      }
      // The head's steps alone, without its once-a-chunk work: the head at twice the steps
      // (re-captured once, then timed) minus the head at the asked steps.
      ro.num_steps = 2 * steps;
      std::vector<double> alone_h2;
      for (int i = 0; i < warmup + repeat; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        if (Status st = (*head)->run(ro); !st.is_ok()) return fail(st);
        if (i >= warmup) alone_h2.push_back(ms_since(t0));
      }
      const Stats sb = stats(alone_b), sh = stats(alone_h), sh2 = stats(alone_h2);
      std::printf("{\"bench\": \"edgevla_cuda_pi0_stages_alone\", \"views\": %d, \"backbone_synced_ms\": %.3f, "
                  "\"head_after_ms\": %.3f, \"head_after_ms_twice_the_steps\": %.3f, \"head_steps_alone_ms\": %.3f, "
                  "\"head_once_ms\": %.3f}\n",
                  nv, sb.median, sh.median, sh2.median, sh2.median - sh.median, 2 * sh.median - sh2.median);
      std::fflush(stdout);
    }
    if (overlap_probe) {
      // Bindings stay from the last forward: the head reads the backbone engine's cache in place.
      for (int hs : {1, 2, steps}) {
        backends::RunOptions ro;
        ro.num_steps = hs;
        std::vector<double> alone_b, alone_h, both;
        for (int i = 0; i < warmup + repeat; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          if (Status st = (*bb)->run({}); !st.is_ok()) return fail(st);
          const double b_ms = ms_since(t0);
          t0 = std::chrono::steady_clock::now();
          if (Status st = (*head)->run(ro); !st.is_ok()) return fail(st);
          const double h_ms = ms_since(t0);
          Status sb = Status::ok();
          t0 = std::chrono::steady_clock::now();
          std::thread tb_thread([&] { sb = (*bb)->run({}); });
          const Status sh = (*head)->run(ro);
          tb_thread.join();
          const double both_ms = ms_since(t0);
          if (!sb.is_ok()) return fail(sb);
          if (!sh.is_ok()) return fail(sh);
          if (i >= warmup) {
            alone_b.push_back(b_ms);
            alone_h.push_back(h_ms);
            both.push_back(both_ms);
          }
        }
        const Stats sb = stats(alone_b), sh = stats(alone_h), s2 = stats(both);
        std::printf("{\"bench\": \"edgevla_cuda_pi0_overlap_probe\", \"views\": %d, \"head_steps\": %d, "
                    "\"backbone_ms\": %.3f, \"head_ms\": %.3f, \"sum_ms\": %.3f, \"both_at_once_ms\": %.3f, "
                    "\"hidden_ms\": %.3f}\n",
                    nv, hs, sb.median, sh.median, sb.median + sh.median, s2.median,
                    sb.median + sh.median - s2.median);
        std::fflush(stdout);
      }
    }
    for (void* d : dev_images) cudaFree(d);
  }
  return 0;
}
