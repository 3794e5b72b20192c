// The GR00T benches' inputs (bench/groot_cpu.cpp, bench/cuda_groot.cpp), made the same way for
// both so that their figures compare: seeded camera frames through the frame pipeline, the
// prompt with one image-token run per view, a zero state, the embodiment's id and seeded noise.
// Host tensors; the cuda bench copies the pixels to its device.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/preprocessor.hpp"

namespace edgevla::bench {

// A seeded frame: smooth colour plus noise.
inline model::groot::Frame seeded_frame(int h, int w, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 12.0f);
  model::groot::Frame f{h, w, model::groot::Pixels(static_cast<std::size_t>(h) * static_cast<std::size_t>(w) * 3, 0)};
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

struct GrootInputs {
  std::vector<Tensor> pixels;  // f32 [3, h, w] a view, normalised
  Tensor ids, mask;            // the prompt: i32 [L], bool [L]
  Tensor state, embodiment_id, noise;
};

// `views` frames of h x w (seeds 7, 8, ...) and `instruction`, for the embodiment `embodiment_id`.
inline Expected<GrootInputs> groot_inputs(const model::groot::GrootConfig& cfg, const model::groot::Tokenizer& tokenizer,
                                          std::int32_t embodiment_id, int views, int h, int w,
                                          const std::string& instruction) {
  namespace mg = model::groot;
  GrootInputs in;
  std::vector<int> per_view;
  for (int k = 0; k < views; ++k) {
    EDGEVLA_ASSIGN_OR_RETURN(mg::Frame f,
                             mg::preprocess_frame(seeded_frame(h, w, 7u + static_cast<std::uint32_t>(k))));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(DType::kF32, Shape{3, f.height, f.width}));
    mg::normalize_pixels(f, t.data<float>());
    in.pixels.push_back(std::move(t));
    per_view.push_back(mg::vision_tokens(f));
  }
  EDGEVLA_ASSIGN_OR_RETURN(std::string clean, mg::formalize_language(instruction));
  EDGEVLA_ASSIGN_OR_RETURN(std::vector<std::int32_t> ids, tokenizer.encode(mg::render_prompt(clean, per_view)));
  const auto L = static_cast<std::int64_t>(ids.size());
  EDGEVLA_ASSIGN_OR_RETURN(in.ids, Tensor::empty(DType::kI32, Shape{L}));
  std::memcpy(in.ids.raw_data(), ids.data(), ids.size() * sizeof(std::int32_t));
  EDGEVLA_ASSIGN_OR_RETURN(in.mask, Tensor::empty(DType::kBool, Shape{L}));
  std::fill_n(in.mask.data<bool>(), L, true);
  EDGEVLA_ASSIGN_OR_RETURN(in.state, Tensor::empty(DType::kF32, Shape{cfg.max_state_dim}));
  std::fill_n(in.state.data<float>(), cfg.max_state_dim, 0.0f);
  EDGEVLA_ASSIGN_OR_RETURN(in.embodiment_id, Tensor::empty(DType::kI32, Shape{1}));
  in.embodiment_id.data<std::int32_t>()[0] = embodiment_id;
  EDGEVLA_ASSIGN_OR_RETURN(in.noise, Tensor::empty(DType::kF32, Shape{cfg.action_horizon, cfg.max_action_dim}));
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (std::int64_t i = 0; i < in.noise.numel(); ++i) in.noise.data<float>()[i] = nd(rng);
  return in;
}

}  // namespace edgevla::bench
