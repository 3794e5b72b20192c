// One pass of the model on pre-processed inputs through a backend's two engines, with the
// diagnostics the reference comparison needs, and the inference I/O file of
// docs/checkpoint.md §5 that carries inputs and outputs between edgevla and the NumPy reference.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/backends/backend.hpp"
#include "runtime/model/pi0/config.hpp"

namespace edgevla::model {

struct ForwardInputs {
  std::vector<Tensor> images;  // per camera slot: f32 [3,S,S], or undefined when masked
  Tensor tokens;               // i32 [T]
  Tensor token_mask;           // bool [T]
  Tensor state;                // f32 [A]
  Tensor noise;                // f32 [H,A]
  int num_steps = 10;
};

struct ForwardOutputs {
  Tensor actions;              // f32 [H,A], normalized
  // Diagnostics (filled when asked for).
  Tensor vision_embeddings;    // f32 [C,N,D]
  Tensor prefix_k, prefix_v;   // f32 [L,P,K,h], rows of invalid tokens zero
  Tensor prefix_mask;          // u8 [P]
  Tensor velocities;           // f32 [steps,H,A]
  double backbone_ms = 0, action_head_ms = 0;
  std::vector<std::pair<std::string, double>> parts;
};

// Runs backbone then action head. With `diagnostics`, binds and collects the diagnostic
// outputs (and scatters the compact cache back to full prefix positions).
Expected<ForwardOutputs> run_forward(backends::Engine& backbone, backends::Engine& action_head,
                                     const ModelConfig& config, const ForwardInputs& inputs,
                                     bool diagnostics);

// Seeded random inputs: uniform images in [-1,1] (cameras listed in `masked` absent), a prompt
// of `prompt_tokens` random ids then padding, a normal state and noise.
Expected<ForwardInputs> random_inputs(const ModelConfig& config, std::uint64_t seed,
                                      const std::vector<int>& masked, int prompt_tokens);

Expected<ForwardInputs> read_io_inputs(const std::string& path, const ModelConfig& config);
// Writes inputs and (when given) outputs under the names of docs/checkpoint.md §5.
Status write_io_file(const std::string& path, const ModelConfig& config, const ForwardInputs& inputs,
                     const ForwardOutputs* outputs);

}  // namespace edgevla::model
