// Seeded checkpoints in openpi's PyTorch format (docs/checkpoint.md §3), so tests, benchmarks and
// the demo run offline: config.json, model.safetensors with every key openpi writes, norm stats
// for an 8-dimensional robot, and a SentencePiece tokenizer.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/dtype.hpp"
#include "runtime/model/pi0/config.hpp"

namespace edgevla {
class Progress;
}

namespace edgevla::model {

struct GenerateOptions {
  ModelConfig config;
  std::uint64_t seed = 0;
  DType dtype = DType::kF32;  // f32, bf16 or f16 for every tensor
  // Leave the weight bytes as a hole of zeros (a sparse file): loader tests at real sizes.
  bool sparse = false;
  // Dimensions of the generated norm stats (the robot's joints + gripper); 0: 8 (7 joints and a
  // gripper), or the model's action_dim when that is smaller. More than action_dim is refused.
  int robot_dim = 0;
  // Told the weights' total and advanced as they are written (`edgevla model init`).
  Progress* progress = nullptr;
};

// Writes the folder `out_dir` (created if needed). Same options, same bytes.
Status generate_checkpoint(const GenerateOptions& options, const std::string& out_dir);

// The value generator of one tensor: a stable function of (seed, tensor name).
std::uint64_t tensor_seed(std::uint64_t seed, std::string_view name);

}  // namespace edgevla::model
