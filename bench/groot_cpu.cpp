// GR00T N1.6 on edgevla's CPU backend: backbone and action head latency per chunk, for the
// comparison with bench/torch_groot.py --device cpu on the same checkpoint, views, image size,
// instruction and thread count (the same token counts). Inputs go through edgevla's own
// preprocess (frame pipeline, prompt, tokenizer); preprocessing is not timed (the PyTorch
// bench does not time it either). One JSON line per view count:
//   edgevla_bench_groot_cpu --checkpoint DIR [--views 1,2] [--image-size 256x256]
//       [--embodiment gr1] [--threads 2] [--steps N] [--repeat 20] [--warmup 2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int fail(const Status& s) {
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string checkpoint, views_arg = "1,2", size = "256x256", embodiment = "gr1",
                          instruction = "pick the pear from the counter and place it in the plate";
  int threads = 2, steps = 0, repeat = 20, warmup = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--checkpoint") checkpoint = v;
    else if (a == "--views") views_arg = v;
    else if (a == "--image-size") size = v;
    else if (a == "--embodiment") embodiment = v;
    else if (a == "--instruction") instruction = v;
    else if (a == "--threads") threads = std::stoi(v);
    else if (a == "--steps") steps = std::stoi(v);
    else if (a == "--repeat") repeat = std::max(1, std::stoi(v));
    else if (a == "--warmup") warmup = std::max(0, std::stoi(v));
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (checkpoint.empty()) {
    std::fprintf(stderr, "usage: edgevla_bench_groot_cpu --checkpoint DIR [options] (see the source's header)\n");
    return 2;
  }
  const int h = std::stoi(size.substr(0, size.find('x'))), w = std::stoi(size.substr(size.find('x') + 1));
  auto opened = mg::Checkpoint::open(checkpoint);
  if (!opened) return fail(opened.status());
  auto model = std::make_shared<mg::GrootModel>(std::move(*opened));
  const mg::GrootConfig& cfg = model->config();
  auto backend = backends::make_backend("cpu");
  if (!backend) return fail(backend.status());
  backends::EngineOptions o;
  o.threads = threads;
  auto bb = (*backend)->create(*model, model::kBackbone, o);
  if (!bb) return fail(bb.status());
  auto head = (*backend)->create(*model, model::kActionHead, o);
  if (!head) return fail(head.status());
  auto tokenizer = mg::Tokenizer::load(cfg.eagle_dir);
  if (!tokenizer) return fail(tokenizer.status());
  auto emb = model->embodiment(embodiment);
  if (!emb) return fail(emb.status());
  const int n_steps = steps > 0 ? steps : model->default_num_steps();

  std::size_t at = 0;
  while (at < views_arg.size()) {
    const std::size_t comma = views_arg.find(',', at);
    const int views = std::stoi(views_arg.substr(at, comma - at));
    at = comma == std::string::npos ? views_arg.size() : comma + 1;
    // Inputs: every view through the frame pipeline, the prompt with its image tokens.
    auto in = bench::groot_inputs(cfg, *tokenizer, emb->id(), views, h, w, instruction);
    if (!in) return fail(in.status());
    const std::int64_t L = in->ids.shape()[0];

    std::vector<double> t_bb, t_head;
    for (int r = 0; r < warmup + repeat; ++r) {
      for (int k = 0; k < views; ++k) {
        if (Status s = (*bb)->bind("image." + std::to_string(k), in->pixels[static_cast<std::size_t>(k)]); !s.is_ok()) return fail(s);
      }
      if (Status s = (*bb)->bind("input_ids", in->ids); !s.is_ok()) return fail(s);
      if (Status s = (*bb)->bind("attention_mask", in->mask); !s.is_ok()) return fail(s);
      auto t0 = std::chrono::steady_clock::now();
      if (Status s = (*bb)->run({}); !s.is_ok()) return fail(s);
      const double bb_ms = ms_since(t0);
      for (const char* name : {"backbone_features", "attention_mask", "image_mask"}) {
        auto out = (*bb)->output(name);
        if (!out) return fail(out.status());
        if (Status s = (*head)->bind(name, *out); !s.is_ok()) return fail(s);
      }
      if (Status s = (*head)->bind("state", in->state); !s.is_ok()) return fail(s);
      if (Status s = (*head)->bind("embodiment_id", in->embodiment_id); !s.is_ok()) return fail(s);
      if (Status s = (*head)->bind("noise", in->noise); !s.is_ok()) return fail(s);
      t0 = std::chrono::steady_clock::now();
      if (Status s = (*head)->run(backends::RunOptions{n_steps}); !s.is_ok()) return fail(s);
      const double head_ms = ms_since(t0);
      if (r >= warmup) t_bb.push_back(bb_ms), t_head.push_back(head_ms);
    }
    std::vector<double> total(t_bb.size());
    for (std::size_t i = 0; i < total.size(); ++i) total[i] = t_bb[i] + t_head[i];
    std::printf(
        "{\"bench\": \"edgevla_groot_cpu\", \"machine\": \"%s\", \"threads\": %d, \"views\": %d, \"image_size\": [%d, %d], "
        "\"tokens\": %lld, \"steps\": %d, \"embodiment\": \"%s\", \"repeat\": %d, \"e2e_ms\": %.3f, \"backbone_ms\": %.3f, "
        "\"head_ms\": %.3f}\n",
        bench::machine_description().c_str(), threads, views, h, w, static_cast<long long>(L), n_steps, embodiment.c_str(),
        repeat, median(total), median(t_bb), median(t_head));
    std::fflush(stdout);
  }
  return 0;
}
