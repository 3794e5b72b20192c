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
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
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

// Seeded frames: smooth colour plus noise.
mg::Frame frame(int h, int w, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 12.0f);
  mg::Frame f{h, w, std::vector<std::uint8_t>(static_cast<std::size_t>(h) * static_cast<std::size_t>(w) * 3)};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        const float v = 127.0f + 100.0f * std::sin(0.02f * static_cast<float>(x * (c + 1) + y)) + noise(rng);
        f.rgb[(static_cast<std::size_t>(y) * w + x) * 3 + c] = static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
    }
  }
  return f;
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
    std::vector<Tensor> pixels;
    std::vector<int> per_view;
    for (int k = 0; k < views; ++k) {
      auto f = mg::preprocess_frame(frame(h, w, 7u + static_cast<std::uint32_t>(k)));
      if (!f) return fail(f.status());
      auto t = Tensor::empty(DType::kF32, Shape{3, f->height, f->width});
      mg::normalize_pixels(*f, t->data<float>());
      pixels.push_back(std::move(*t));
      per_view.push_back(mg::vision_tokens(*f));
    }
    auto clean = mg::formalize_language(instruction);
    if (!clean) return fail(clean.status());
    auto ids = tokenizer->encode(mg::render_prompt(*clean, per_view));
    if (!ids) return fail(ids.status());
    const auto L = static_cast<std::int64_t>(ids->size());
    Tensor ids_t = *Tensor::empty(DType::kI32, Shape{L});
    std::memcpy(ids_t.raw_data(), ids->data(), ids->size() * sizeof(std::int32_t));
    Tensor mask_t = *Tensor::empty(DType::kBool, Shape{L});
    std::fill_n(mask_t.data<bool>(), L, true);
    Tensor state = *Tensor::empty(DType::kF32, Shape{cfg.max_state_dim});
    std::fill_n(state.data<float>(), cfg.max_state_dim, 0.0f);
    Tensor eid = *Tensor::empty(DType::kI32, Shape{1});
    eid.data<std::int32_t>()[0] = emb->id();
    Tensor noise = *Tensor::empty(DType::kF32, Shape{cfg.action_horizon, cfg.max_action_dim});
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (std::int64_t i = 0; i < noise.numel(); ++i) noise.data<float>()[i] = nd(rng);

    std::vector<double> t_bb, t_head;
    for (int r = 0; r < warmup + repeat; ++r) {
      for (int k = 0; k < views; ++k) {
        if (Status s = (*bb)->bind("image." + std::to_string(k), pixels[static_cast<std::size_t>(k)]); !s.is_ok()) return fail(s);
      }
      if (Status s = (*bb)->bind("input_ids", ids_t); !s.is_ok()) return fail(s);
      if (Status s = (*bb)->bind("attention_mask", mask_t); !s.is_ok()) return fail(s);
      auto t0 = std::chrono::steady_clock::now();
      if (Status s = (*bb)->run({}); !s.is_ok()) return fail(s);
      const double bb_ms = ms_since(t0);
      for (const char* name : {"backbone_features", "attention_mask", "image_mask"}) {
        auto out = (*bb)->output(name);
        if (!out) return fail(out.status());
        if (Status s = (*head)->bind(name, *out); !s.is_ok()) return fail(s);
      }
      if (Status s = (*head)->bind("state", state); !s.is_ok()) return fail(s);
      if (Status s = (*head)->bind("embodiment_id", eid); !s.is_ok()) return fail(s);
      if (Status s = (*head)->bind("noise", noise); !s.is_ok()) return fail(s);
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
