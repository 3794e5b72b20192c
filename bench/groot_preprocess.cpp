// GR00T N1.6's per-frame preprocessing on the CPU (runtime/model/groot/image_pipeline.hpp: the
// eval transform, Eagle's smart_resize, Pillow's bicubic, normalisation to f32 CHW), the part
// of the preprocess node's work that grows with the camera's resolution. bench/groot_preprocess.py
// runs it beside the NumPy reference (tests/reference/groot/image_ref.py) on the same frames.
// One JSON line per frame size, median / p90 / min ms over --repeat runs (one thread):
//   edgevla_bench_groot_preprocess [--sizes 320x240,640x480,1280x720] [--repeat 50] [--letterbox 0|1]
//                                  [--threads 1,2,4] [--period-ms 0] [--checkpoint DIR [--embodiment gr1]]
// The C library's allocator is set up as the launched processes set it (runtime/util/heap.hpp).
// --threads: each count in turn, the passes in slices of rows over a pool of that many threads
// (the preprocess node's `threads` param; 1: the calling thread alone). Every count's frame is
// checked against the one-thread frame, byte for byte.
// --period-ms P > 0: each frame starts P ms after the one before (a camera's cadence: 33 is 30 Hz),
// so the pool's workers have gone to sleep in between, as in a launched graph; 0: back to back.
// With --checkpoint, also the whole Preprocessor::run per frame size (every view of the
// embodiment fed that frame) split into its parts: the frame pipeline and normalisation of
// each view, the instruction's cleaning, the chat prompt and the Qwen tokenizer, the state.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/model/groot/config.hpp"
#include "runtime/model/groot/image_pipeline.hpp"
#include "runtime/model/groot/preprocessor.hpp"
#include "runtime/model/groot/tokenizer.hpp"
#include "runtime/util/heap.hpp"
#include "runtime/util/thread_pool.hpp"

namespace mg = edgevla::model::groot;

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Waits until the next frame is due, `period_ms` after the last one (0: returns at once).
class Cadence {
 public:
  explicit Cadence(double period_ms)
      : period_(std::chrono::microseconds(static_cast<std::int64_t>(period_ms * 1000))), next_(Clock::now()) {}
  void wait() {
    if (period_.count() <= 0) return;
    std::this_thread::sleep_until(next_);
    next_ += period_;
  }

 private:
  Clock::duration period_;
  Clock::time_point next_;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Preprocessor::run on `frame` for every view, and its parts timed one after the other.
int whole_preprocess(const std::string& dir, const std::string& tag, const mg::Frame& frame, bool letterbox,
                     int repeat, int threads, double period_ms) {
  auto pre = mg::Preprocessor::load(dir, tag, letterbox ? mg::Letterbox::kOn : mg::Letterbox::kOff);
  if (pre) pre->use_threads(threads);
  auto cfg = mg::load_config(dir);
  if (!pre || !cfg) {
    std::fprintf(stderr, "%s\n", (!pre ? pre.status() : cfg.status()).to_string().c_str());
    return 1;
  }
  auto tok = mg::Tokenizer::load(cfg->eagle_dir);
  if (!tok) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  const mg::Embodiment& emb = pre->embodiment();
  const std::vector<mg::Frame> frames(emb.views().size(), frame);
  mg::RawState state;
  for (const auto& g : emb.state_groups()) state[g.key] = std::vector<float>(static_cast<std::size_t>(std::max<std::int64_t>(g.dim, 1)), 0.1f);
  const std::string instruction = "pick the pear from the counter and place it in the plate";
  std::vector<double> whole, frames_ms, text_ms, tok_ms, state_ms;
  std::size_t tokens = 0;
  Cadence cadence(period_ms);
  for (int r = 0; r < repeat + 3; ++r) {
    cadence.wait();
    const auto t0 = Clock::now();
    auto in = pre->run(frames, instruction, state, std::nullopt);
    const auto t1 = Clock::now();
    if (!in) {
      std::fprintf(stderr, "%s\n", in.status().to_string().c_str());
      return 1;
    }
    tokens = in->input_ids.size();
    // The parts again, one by one.
    mg::FrameOptions fo;
    fo.letterbox = letterbox;
    edgevla::ThreadPool pool(threads, mg::kFramePoolSpin);
    fo.pool = threads > 1 ? &pool : nullptr;
    std::vector<int> per_view;
    const auto p0 = Clock::now();
    for (const mg::Frame& f : frames) {
      auto out = mg::preprocess_frame(f, fo);
      std::vector<float> px(static_cast<std::size_t>(out->height) * static_cast<std::size_t>(out->width) * 3);
      mg::normalize_pixels(*out, px.data(), fo.pool);
      per_view.push_back(mg::vision_tokens(*out));
    }
    const auto p1 = Clock::now();
    auto clean = mg::formalize_language(instruction);
    const std::string prompt = mg::render_prompt(*clean, per_view);
    const auto p2 = Clock::now();
    auto ids = tok->encode(prompt);
    const auto p3 = Clock::now();
    std::vector<float> st(static_cast<std::size_t>(emb.max_state_dim()), 0.0f);
    (void)emb.normalize_state(state, st);
    const auto p4 = Clock::now();
    if (r < 3 || !ids) continue;
    whole.push_back(ms_between(t0, t1));
    frames_ms.push_back(ms_between(p0, p1));
    text_ms.push_back(ms_between(p1, p2));
    tok_ms.push_back(ms_between(p2, p3));
    state_ms.push_back(ms_between(p3, p4));
  }
  std::printf("{\"impl\": \"edgevla\", \"part\": \"Preprocessor::run\", \"embodiment\": \"%s\", \"views\": %zu, "
              "\"threads\": %d, "
              "\"width\": %d, \"height\": %d, \"tokens\": %zu, \"ms\": {\"whole\": %.4f, \"frames\": %.4f, "
              "\"instruction_and_prompt\": %.4f, \"tokenizer\": %.4f, \"state\": %.4f}, \"repeat\": %d}\n",
              tag.c_str(), frames.size(), threads, frame.width, frame.height, tokens, median_of(whole), median_of(frames_ms),
              median_of(text_ms), median_of(tok_ms), median_of(state_ms), repeat);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The allocator set up as in the launched graph's processes (intermediate frames reused, not
  // mapped and zero-faulted anew each frame).
  edgevla::configure_process_heap();
  std::string sizes = "320x240,640x480,1280x720";
  int repeat = 50;
  bool letterbox = false;
  std::string checkpoint, embodiment = "gr1";
  std::vector<int> thread_counts = {1};
  double period_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--sizes") == 0) sizes = argv[i + 1];
    else if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(3, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--letterbox") == 0) letterbox = std::atoi(argv[i + 1]) != 0;
    else if (std::strcmp(argv[i], "--checkpoint") == 0) checkpoint = argv[i + 1];
    else if (std::strcmp(argv[i], "--embodiment") == 0) embodiment = argv[i + 1];
    else if (std::strcmp(argv[i], "--period-ms") == 0) period_ms = std::max(0.0, std::atof(argv[i + 1]));
    else if (std::strcmp(argv[i], "--threads") == 0) {
      thread_counts.clear();
      for (const char* p = argv[i + 1]; *p;) {
        char* end = nullptr;
        const long n = std::strtol(p, &end, 10);
        if (end == p || n < 1 || n > 256) {
          std::fprintf(stderr, "bad --threads '%s' (a comma list of counts from 1)\n", argv[i + 1]);
          return 2;
        }
        thread_counts.push_back(static_cast<int>(n));
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr, "unknown option %s (--sizes WxH,..., --repeat N, --letterbox 0|1, --threads N,..., --period-ms P)\n", argv[i]);
      return 2;
    }
  }
  std::size_t at = 0;
  while (at < sizes.size()) {
    std::size_t comma = sizes.find(',', at);
    if (comma == std::string::npos) comma = sizes.size();
    const std::string s = sizes.substr(at, comma - at);
    at = comma + 1;
    int w = 0, h = 0;
    if (std::sscanf(s.c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1) {
      std::fprintf(stderr, "bad size '%s' (WxH)\n", s.c_str());
      return 2;
    }
    // The same seeded frame as bench/groot_preprocess.py makes (row-major RGB, seed w*h).
    mg::Frame frame{h, w, mg::Pixels(static_cast<std::size_t>(w) * h * 3, 0)};
    std::mt19937 rng(static_cast<std::uint32_t>(w * h));
    for (auto& b : frame.rgb) b = static_cast<std::uint8_t>(rng() & 0xff);
    mg::Pixels single;  // the one-thread frame, for the byte check
    for (const int threads : thread_counts) {
      edgevla::ThreadPool pool(threads, mg::kFramePoolSpin);
      mg::FrameOptions o;
      o.letterbox = letterbox;
      o.pool = threads > 1 ? &pool : nullptr;
      std::vector<double> ms;
      int out_h = 0, out_w = 0;
      std::vector<float> px;
      mg::Pixels last;
      Cadence cadence(period_ms);
      for (int r = 0; r < repeat + 3; ++r) {
        cadence.wait();
        const auto t0 = std::chrono::steady_clock::now();
        auto f = mg::preprocess_frame(frame, o);
        if (!f) {
          std::fprintf(stderr, "%s\n", f.status().to_string().c_str());
          return 1;
        }
        px.resize(static_cast<std::size_t>(f->height) * f->width * 3);
        mg::normalize_pixels(*f, px.data(), o.pool);
        const auto t1 = std::chrono::steady_clock::now();
        if (o.pool) o.pool->park();  // as Preprocessor::run does
        out_h = f->height, out_w = f->width;
        if (r >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        last = std::move(f->rgb);
      }
      if (single.empty()) {
        single = last;
      } else if (last != single) {
        std::fprintf(stderr, "%dx%d on %d threads: the frame differs from the first count's\n", w, h, threads);
        return 1;
      }
      std::sort(ms.begin(), ms.end());
      std::printf("{\"impl\": \"edgevla\", \"width\": %d, \"height\": %d, \"letterbox\": %d, \"threads\": %d, "
                  "\"out\": [%d, %d], \"ms\": {\"median\": %.4f, \"p90\": %.4f, \"min\": %.4f}, \"repeat\": %d}\n",
                  w, h, letterbox ? 1 : 0, threads, out_h, out_w, ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.front(),
                  repeat);
      std::fflush(stdout);
      if (!checkpoint.empty() && whole_preprocess(checkpoint, embodiment, frame, letterbox, repeat, threads, period_ms) != 0) return 1;
    }
  }
  return 0;
}
