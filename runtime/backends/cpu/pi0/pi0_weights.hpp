// The checkpoint's tensors arranged for the CPU kernels: matrices stay in the memory-mapped
// file (f32 used in place, bf16/f16 converted panel by panel while multiplying); only vectors
// (biases, norm weights) are converted to small f32 copies.
#pragma once

#include <vector>

#include "runtime/backends/cpu/kernels.hpp"
#include "runtime/backends/cpu/weight_views.hpp"
#include "runtime/model/pi0/checkpoint.hpp"

namespace edgevla::backends::cpu {

struct VisionWeights {
  Linear patch;                  // [width, 3·p·p]
  std::vector<float> position;   // [tokens, width]
  std::vector<VisionLayer> layers;
  std::vector<float> post_w, post_b;
  Linear projector;              // [vlm width, vision width]
};

// One Gemma layer of either tower. Plain norms hold a weight vector; pi0.5's expert norms hold
// a modulation Linear [3·width, width] instead.
struct GemmaLayer {
  std::vector<float> in_norm, post_norm;
  Linear in_mod, post_mod;
  Linear q, k, v, o, gate, up, down;
};

struct TowerWeights {
  std::vector<GemmaLayer> layers;
  std::vector<float> final_norm;
  Linear final_mod;
};

struct Embedding {
  const void* table = nullptr;
  DType dtype = DType::kF32;
  std::int64_t vocab = 0;
  std::int64_t width = 0;
};

struct HeadWeights {
  Linear action_in, action_out;
  Linear state_proj, action_time_in, action_time_out;  // pi0
  Linear time_in, time_out;                            // pi0.5
};

Expected<VisionWeights> load_vision(const model::Checkpoint& ck);
Expected<Embedding> load_embedding(const model::Checkpoint& ck);
Expected<TowerWeights> load_vlm(const model::Checkpoint& ck);
Expected<TowerWeights> load_expert(const model::Checkpoint& ck);
Expected<HeadWeights> load_heads(const model::Checkpoint& ck);

}  // namespace edgevla::backends::cpu
