// pi0 / pi0.5's camera-frame resize with padding (runtime/model/image_ops.hpp: PIL's bilinear to
// the model's square, black bars; the part of the preprocess node's work that grows with the
// camera's resolution), with its horizontal pass in both forms of runtime/model/row_pass.hpp
// alternated in one process: the AVX2 shuffle form (the default where the CPU has it) and one
// value at a time. bench/pi0_resize.py runs it beside PIL itself on the same frames.
// One JSON line per frame size, encoding and form, median / p90 / min ms over --repeat runs:
//   edgevla_bench_pi0_resize [--sizes 320x240,640x480,1280x720] [--encodings rgb8,bgr8]
//                            [--size 224] [--repeat 200] [--rounds 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/model/image_ops.hpp"
#include "runtime/model/row_pass.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

struct Times {
  double median, p90, min;
};

Times times_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 9 / 10], v.front()};
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "320x240,640x480,1280x720", encodings = "rgb8,bgr8";
  int size = 224, repeat = 200, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--sizes") sizes = v;
    else if (a == "--encodings") encodings = v;
    else if (a == "--size") size = std::stoi(v);
    else if (a == "--repeat") repeat = std::stoi(v);
    else if (a == "--rounds") rounds = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown option %s (see the comment at the top of bench/pi0_resize.cpp)\n", a.c_str());
      return 2;
    }
  }
  const bool has_shuffle = edgevla::model::use_shuffle_passes(true);
  std::mt19937 rng(7);
  for (const std::string& wh : split(sizes)) {
    const auto x = wh.find('x');
    const int w = std::stoi(wh.substr(0, x)), h = std::stoi(wh.substr(x + 1));
    for (const std::string& enc : split(encodings)) {
      auto format = edgevla::model::parse_pixel_format(enc);
      if (!format) {
        std::fprintf(stderr, "%s\n", format.status().to_string().c_str());
        return 2;
      }
      const int c = enc == "rgba8" ? 4 : enc == "mono8" ? 1 : 3;
      std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * static_cast<std::size_t>(c));
      for (auto& b : px) b = static_cast<std::uint8_t>(rng());
      auto in = edgevla::Tensor::from_bytes(edgevla::DType::kU8, edgevla::Shape{h, w, c}, std::as_bytes(std::span(px)));
      auto out = edgevla::Tensor::empty(edgevla::DType::kU8, edgevla::Shape{size, size, 3});
      if (!in || !out) return 1;
      edgevla::model::ImageResizer resizer;
      std::vector<std::vector<double>> ms(2);
      std::vector<std::vector<std::uint8_t>> result(2);
      for (int r = 0; r < rounds; ++r) {
        for (int form = has_shuffle ? 0 : 1; form < 2; ++form) {
          edgevla::model::use_shuffle_passes(form == 0);
          for (int i = 0; i < repeat + 3; ++i) {
            const auto t0 = Clock::now();
            const edgevla::Status s = resizer.resize_with_pad(*in, *format, *out);
            const auto t1 = Clock::now();
            if (!s.is_ok()) {
              std::fprintf(stderr, "%s\n", s.to_string().c_str());
              return 1;
            }
            if (i >= 3) ms[static_cast<std::size_t>(form)].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          }
          const auto* o = out->data<std::uint8_t>();
          result[static_cast<std::size_t>(form)].assign(o, o + out->nbytes());
        }
      }
      edgevla::model::use_shuffle_passes(true);
      if (has_shuffle && result[0] != result[1]) {
        std::fprintf(stderr, "%s %s: the two forms gave different bytes\n", wh.c_str(), enc.c_str());
        return 1;
      }
      for (int form = has_shuffle ? 0 : 1; form < 2; ++form) {
        const Times t = times_of(ms[static_cast<std::size_t>(form)]);
        std::printf("{\"impl\": \"edgevla\", \"form\": \"%s\", \"width\": %d, \"height\": %d, \"encoding\": \"%s\", "
                    "\"size\": %d, \"ms\": {\"median\": %.4f, \"p90\": %.4f, \"min\": %.4f}, \"repeat\": %d, \"rounds\": %d}\n",
                    form == 0 ? "shuffle" : "scalar", w, h, enc.c_str(), size, t.median, t.p90, t.min, repeat, rounds);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
