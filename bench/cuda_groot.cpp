// GR00T N1.6 on edgevla's cuda backend: backbone, action head (num_steps Euler steps) and end to
// end per chunk, for the comparison with bench/torch_groot.py --device cuda on the same
// checkpoint, views, image size, instruction and embodiment (the same token counts), in the same
// run. Inputs go through edgevla's own preprocess (frame pipeline, prompt, tokenizer), which is
// not timed (the PyTorch bench does not time it either); the pixels are handed to the backbone
// on the device and the backbone features to the action head on the device, as a GPU graph
// would. Also: the device memory the two engines hold after activate, and the weight bytes.
// One JSON line per view count:
//   edgevla_bench_cuda_groot --checkpoint DIR [--views 1,2] [--image-size 256x256]
//       [--embodiment gr1] [--steps 4] [--repeat 50] [--warmup 10] [--precision bf16|f32]
//       [--log-level info] [--profile-last 1] [--stages-alone 1] [--timeline N [--timeline-csv P]]
// --stages-alone 1 also times the action head alone (bindings of the last run) at the asked steps
// and at twice them: the difference is the asked steps alone (what the head's weight-read floor
// is about), the rest its once-a-chunk work (packing, vlln, the cross blocks' keys|values, the
// state encoder).
// --timeline N instead runs, after the warm-up, N chunks end to end with CUPTI recording the
// device's work (builds with CUPTI only; bench/cuda_timeline.hpp) and prints, for each, where the
// GPU sat idle inside it (bench/timeline.hpp); nothing else is timed. --timeline-csv PREFIX also
// writes the recorded runs' kernels, copies and memsets to PREFIX_<views>v.csv.
// --profile-last 1 brackets the last run with cudaProfilerStart/Stop (for ncu
// --profile-from-start off; bench/kernel_breakdown.py reads what it writes).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "bench/cuda_timeline.hpp"
#include "bench/groot_inputs.hpp"
#include "runtime/backends/backend.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/preprocessor.hpp"

using namespace edgevla;
namespace mg = edgevla::model::groot;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double median = 0, p90 = 0, min = 0;
};

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  s.min = v.front();
  return s;
}

int fail(const Status& s) {
  std::fprintf(stderr, "cuda_groot: %s\n", s.to_string().c_str());
  return 1;
}

// A device tensor over cudaMalloc'ed memory (freed by the caller's list).
Expected<Tensor> device_tensor(DType dtype, const Shape& shape, std::vector<void*>& owned) {
  void* d = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  if (cudaMalloc(&d, bytes) != cudaSuccess)
    return resource_exhausted("cudaMalloc of " + std::to_string(bytes) + " bytes");
  owned.push_back(d);
  Buffer::Options o;
  o.device = Device::cuda(0);
  o.kind = BufferKind::kDevice;
  o.writable = true;
  return Tensor::from_buffer(std::make_shared<Buffer>(static_cast<std::byte*>(d), bytes, o), dtype,
                             shape);
}

}  // namespace

int main(int argc, char** argv) {
  std::string checkpoint, views_arg = "1,2", size = "256x256", embodiment = "gr1",
                          precision = "bf16",
                          instruction = "pick the pear from the counter and place it in the plate";
  int steps = 0, repeat = 50, warmup = 10;
  bool profile_last = false, stages_alone = false;
  int timeline_runs = 0;
  std::string timeline_csv;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--checkpoint")
      checkpoint = v;
    else if (a == "--views")
      views_arg = v;
    else if (a == "--image-size")
      size = v;
    else if (a == "--embodiment")
      embodiment = v;
    else if (a == "--instruction")
      instruction = v;
    else if (a == "--steps")
      steps = std::stoi(v);
    else if (a == "--repeat")
      repeat = std::max(1, std::stoi(v));
    else if (a == "--warmup")
      warmup = std::max(0, std::stoi(v));
    else if (a == "--precision")
      precision = v;
    else if (a == "--profile-last")
      profile_last = v != "0";
    else if (a == "--stages-alone")
      stages_alone = v != "0";
    else if (a == "--timeline")
      timeline_runs = std::max(0, std::stoi(v));
    else if (a == "--timeline-csv")
      timeline_csv = v;
    else if (a == "--log-level")
      spdlog::set_level(spdlog::level::from_str(v));
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (checkpoint.empty()) {
    std::fprintf(
        stderr,
        "usage: edgevla_bench_cuda_groot --checkpoint DIR [options] (see the source's header)\n");
    return 2;
  }
  const int h = std::stoi(size.substr(0, size.find('x'))),
            w = std::stoi(size.substr(size.find('x') + 1));
  std::size_t free0 = 0, total = 0;
  // Timeline mode records from before the engines exist (their graphs included) and times nothing
  // else: recording slows the work a little.
  bench::DeviceTimeline timeline;
  if (timeline_runs > 0) {
    if (std::string e = timeline.start(); !e.empty()) return fail(Status(StatusCode::kUnavailable, e));
  }
  cudaSetDevice(0);
  cudaMemGetInfo(&free0, &total);
  auto opened = mg::Checkpoint::open(checkpoint);
  if (!opened) return fail(opened.status());
  auto model = std::make_shared<mg::GrootModel>(std::move(*opened));
  const mg::GrootConfig& cfg = model->config();
  auto backend = backends::make_backend("cuda");
  if (!backend) return fail(backend.status());
  backends::EngineOptions o;
  o.device = "cuda:0";
  auto prec = backends::parse_precision(precision);
  if (!prec) return fail(prec.status());
  o.precision = *prec;
  const auto t_act = std::chrono::steady_clock::now();
  auto bb = (*backend)->create(*model, model::kBackbone, o);
  if (!bb) return fail(bb.status());
  auto head = (*backend)->create(*model, model::kActionHead, o);
  if (!head) return fail(head.status());
  const double activate_ms = ms_since(t_act);
  std::size_t free1 = 0;
  cudaMemGetInfo(&free1, &total);
  std::int64_t weight_bytes = 0;
  for (const auto& s : model->stages()) weight_bytes += s.weight_bytes;
  const std::int64_t engine_bytes = (*bb)->device_bytes() + (*head)->device_bytes();
  auto tokenizer = mg::Tokenizer::load(cfg.eagle_dir);
  if (!tokenizer) return fail(tokenizer.status());
  auto emb = model->embodiment(embodiment);
  if (!emb) return fail(emb.status());
  const int n_steps = steps > 0 ? steps : model->default_num_steps();

  std::vector<void*> owned;
  std::size_t at = 0;
  while (at < views_arg.size()) {
    const std::size_t comma = views_arg.find(',', at);
    const int views = std::stoi(views_arg.substr(at, comma - at));
    at = comma == std::string::npos ? views_arg.size() : comma + 1;
    // Inputs: every view through the frame pipeline (then to the device), the prompt.
    auto in = bench::groot_inputs(cfg, *tokenizer, emb->id(), views, h, w, instruction);
    if (!in) return fail(in.status());
    const std::int64_t L = in->ids.shape()[0];
    std::vector<Tensor> pixels;
    for (const Tensor& t : in->pixels) {
      auto d = device_tensor(DType::kF32, t.shape(), owned);
      if (!d) return fail(d.status());
      cudaMemcpy(d->raw_data(), t.raw_data(), t.nbytes(), cudaMemcpyHostToDevice);
      pixels.push_back(std::move(*d));
    }
    auto features = device_tensor(DType::kF32, Shape{L, cfg.backbone_embedding_dim}, owned);
    if (!features) return fail(features.status());

    std::vector<double> t_bb, t_head, t_e2e;
    // One chunk: bind, backbone, head. With split the host waits for the backbone's device work
    // before the head starts (the per-stage split); else the backbone returns once its work is
    // queued (its features are a device output), as a GPU graph runs it.
    struct ChunkTimes {
      double bb_ms = 0, head_ms = 0, e2e_ms = 0;
    };
    const auto chunk = [&](bool split) -> Expected<ChunkTimes> {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < views; ++k) {
        EDGEVLA_RETURN_IF_ERROR((*bb)->bind("image." + std::to_string(k), pixels[static_cast<std::size_t>(k)]));
      }
      EDGEVLA_RETURN_IF_ERROR((*bb)->bind("input_ids", in->ids));
      EDGEVLA_RETURN_IF_ERROR((*bb)->bind("attention_mask", in->mask));
      EDGEVLA_RETURN_IF_ERROR((*bb)->bind("backbone_features", *features));
      EDGEVLA_RETURN_IF_ERROR((*bb)->run({}));
      if (split) cudaDeviceSynchronize();
      ChunkTimes c;
      c.bb_ms = ms_since(t0);
      const auto t1 = std::chrono::steady_clock::now();
      for (const char* name : {"backbone_features", "attention_mask", "image_mask"}) {
        auto out = (*bb)->output(name);
        if (!out) return out.status();
        EDGEVLA_RETURN_IF_ERROR((*head)->bind(name, *out));
      }
      EDGEVLA_RETURN_IF_ERROR((*head)->bind("state", in->state));
      EDGEVLA_RETURN_IF_ERROR((*head)->bind("embodiment_id", in->embodiment_id));
      EDGEVLA_RETURN_IF_ERROR((*head)->bind("noise", in->noise));
      EDGEVLA_RETURN_IF_ERROR((*head)->run(backends::RunOptions{n_steps}));
      c.head_ms = ms_since(t1);
      c.e2e_ms = ms_since(t0);
      return c;
    };
    if (timeline_runs > 0) {
      // End-to-end chunks as below (no split) after the warm-up, recorded: the device's idle time
      // inside each.
      const std::string e = bench::record_chunks(timeline, "edgevla_cuda_groot", views, warmup, timeline_runs, [&]() -> std::string {
        auto c = chunk(false);
        return c ? "" : c.status().to_string();
      }, timeline_csv);
      if (!e.empty()) return fail(Status(StatusCode::kUnavailable, e));
      continue;
    }
    for (int r = 0; r < 2 * (warmup + repeat); ++r) {
      const bool split = r >= warmup + repeat;
      const int rr = split ? r - (warmup + repeat) : r;
      const bool profiled = profile_last && r == warmup + repeat - 1;
      if (profiled) cudaProfilerStart();
      auto c = chunk(split);
      if (!c) return fail(c.status());
      if (profiled) cudaProfilerStop();
      if (rr >= warmup && split) t_bb.push_back(c->bb_ms), t_head.push_back(c->head_ms);
      if (rr >= warmup && !split) t_e2e.push_back(c->e2e_ms);
    }
    const Stats e = stats(t_e2e), b = stats(t_bb), hd = stats(t_head);
    std::printf(
        "{\"bench\": \"edgevla_cuda_groot\", \"machine\": \"%s\", \"precision\": \"%s\", "
        "\"views\": %d, "
        "\"image_size\": [%d, %d], \"tokens\": %lld, \"steps\": %d, \"embodiment\": \"%s\", "
        "\"repeat\": %d, "
        "\"e2e_ms\": {\"median\": %.3f, \"p90\": %.3f, \"min\": %.3f}, "
        "\"backbone_ms\": {\"median\": %.3f, \"p90\": %.3f, \"min\": %.3f}, "
        "\"action_head_ms\": {\"median\": %.3f, \"p90\": %.3f, \"min\": %.3f}, "
        "\"activate_ms\": %.0f, \"device_bytes_engines\": %lld, "
        "\"device_bytes_used_after_activate\": %lld, "
        "\"checkpoint_weight_bytes\": %lld, \"engines\": \"%s\"}\n",
        bench::machine_description().c_str(), precision.c_str(), views, h, w,
        static_cast<long long>(L), n_steps, embodiment.c_str(), repeat, e.median, e.p90, e.min,
        b.median, b.p90, b.min, hd.median, hd.p90, hd.min, activate_ms,
        static_cast<long long>(engine_bytes), static_cast<long long>(free0 - free1),
        static_cast<long long>(weight_bytes), (*head)->describe().c_str());
    std::fflush(stdout);
    if (stages_alone) {
      double med[2] = {0, 0};
      for (int twice = 0; twice < 2; ++twice) {
        std::vector<double> t;
        for (int r = 0; r < warmup + repeat; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          if (Status s = (*head)->run(backends::RunOptions{(1 + twice) * n_steps}); !s.is_ok()) return fail(s);
          if (r >= warmup) t.push_back(ms_since(t0));
        }
        med[twice] = stats(t).median;
      }
      std::printf("{\"bench\": \"edgevla_cuda_groot_stages_alone\", \"views\": %d, \"steps\": %d, "
                  "\"head_alone_ms\": %.3f, \"head_alone_ms_twice_the_steps\": %.3f, "
                  "\"head_steps_alone_ms\": %.3f, \"head_once_ms\": %.3f}\n",
                  views, n_steps, med[0], med[1], med[1] - med[0], 2 * med[0] - med[1]);
      std::fflush(stdout);
    }
  }
  for (void* d : owned) cudaFree(d);
  return 0;
}
