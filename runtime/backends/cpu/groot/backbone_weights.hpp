// The GR00T N1.6 backbone's tensors arranged for the CPU kernels (notes/groot-n16.md §2, §5, §8):
// matrices stay in the memory-mapped shards (f32 used in place, bf16/f16 converted panel by
// panel while multiplying, so no f32 copy of a reduced-precision checkpoint ever exists); norm
// weights, biases and the position table become small f32 copies at load.
#pragma once

#include <string>
#include <vector>

#include "runtime/backends/cpu/kernels.hpp"
#include "runtime/backends/cpu/weight_views.hpp"
#include "runtime/model/groot/checkpoint.hpp"

namespace edgevla::backends::cpu::groot_backbone {

using SiglipLayer = VisionLayer;  // the same encoder layer as pi0's tower (weight_views.hpp)

struct SiglipWeights {
  Linear patch;                 // [width, patch·patch·channels], patches flattened (py, px, c)
  std::vector<float> position;  // [grid·grid, width], the learned table before interpolation
  std::vector<SiglipLayer> layers;
  std::vector<float> post_w, post_b;
};

// Pixel-unshuffled vision tokens to LLM width: LayerNorm, Linear, GELU (erf), Linear.
struct Mlp1Weights {
  std::vector<float> ln_w, ln_b;
  Linear fc1, fc2;
};

struct Qwen3Layer {
  std::vector<float> in_norm, post_norm, q_norm, k_norm;
  Linear q, k, v, o, gate, up, down;
};

struct TokenTable {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  std::int64_t vocab = 0;
  std::int64_t width = 0;
};

struct Qwen3Weights {
  TokenTable embed;
  std::vector<Qwen3Layer> layers;  // the kept ones (select_layer)
  std::vector<float> final_norm;
};

Expected<SiglipWeights> load_siglip(const model::groot::Checkpoint& ck);
Expected<Mlp1Weights> load_mlp1(const model::groot::Checkpoint& ck);
Expected<Qwen3Weights> load_qwen3(const model::groot::Checkpoint& ck);

}  // namespace edgevla::backends::cpu::groot_backbone
