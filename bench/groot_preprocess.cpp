// GR00T N1.6's per-frame preprocessing on the CPU (runtime/model/groot/image_pipeline.hpp: the
// eval transform, Eagle's smart_resize, Pillow's bicubic, normalisation to f32 CHW), the part
// of the preprocess node's work that grows with the camera's resolution. bench/groot_preprocess.py
// runs it beside the NumPy reference (tests/reference/groot/image_ref.py) on the same frames.
// One JSON line per frame size, median / p90 / min ms over --repeat runs (one thread):
//   edgevla_bench_groot_preprocess [--sizes 320x240,640x480,1280x720] [--repeat 50] [--letterbox 0|1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/model/groot/image_pipeline.hpp"

namespace mg = edgevla::model::groot;

int main(int argc, char** argv) {
  std::string sizes = "320x240,640x480,1280x720";
  int repeat = 50;
  bool letterbox = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--sizes") == 0) sizes = argv[i + 1];
    else if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(3, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--letterbox") == 0) letterbox = std::atoi(argv[i + 1]) != 0;
    else {
      std::fprintf(stderr, "unknown option %s (--sizes WxH,..., --repeat N, --letterbox 0|1)\n", argv[i]);
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
    mg::Frame frame{h, w, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3)};
    std::mt19937 rng(static_cast<std::uint32_t>(w * h));
    for (auto& b : frame.rgb) b = static_cast<std::uint8_t>(rng() & 0xff);
    mg::FrameOptions o;
    o.letterbox = letterbox;
    std::vector<double> ms;
    int out_h = 0, out_w = 0;
    std::vector<float> px;
    for (int r = 0; r < repeat + 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto f = mg::preprocess_frame(frame, o);
      if (!f) {
        std::fprintf(stderr, "%s\n", f.status().to_string().c_str());
        return 1;
      }
      px.resize(static_cast<std::size_t>(f->height) * f->width * 3);
      mg::normalize_pixels(*f, px.data());
      const auto t1 = std::chrono::steady_clock::now();
      out_h = f->height, out_w = f->width;
      if (r >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("{\"impl\": \"edgevla\", \"width\": %d, \"height\": %d, \"letterbox\": %d, \"out\": [%d, %d], "
                "\"ms\": {\"median\": %.4f, \"p90\": %.4f, \"min\": %.4f}, \"repeat\": %d}\n",
                w, h, letterbox ? 1 : 0, out_h, out_w, ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.front(), repeat);
    std::fflush(stdout);
  }
  return 0;
}
