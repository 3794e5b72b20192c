// ModelConfig: the sizes and conventions of one pi0 / pi0.5 checkpoint, read from its
// config.json (openpi's keys plus edgevla's optional ones, docs/checkpoint.md §2) or built
// from a preset of `edgevla model init` (§3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::model {

enum class ModelType { kPi0, kPi05 };

std::string_view model_type_name(ModelType type);  // "pi0" / "pi05"
Expected<ModelType> parse_model_type(std::string_view name);

struct VisionDims {
  int image_size = 224;
  int patch_size = 14;
  int width = 1152;
  int depth = 27;
  int mlp_dim = 4304;
  int num_heads = 16;

  int head_dim() const { return width / num_heads; }
  int grid() const { return image_size / patch_size; }
  int tokens() const { return grid() * grid(); }
  bool operator==(const VisionDims&) const = default;
};

struct GemmaDims {
  std::string variant = "custom";  // openpi's variant name, or "custom"
  int width = 0;
  int depth = 0;
  int mlp_dim = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  std::int64_t vocab_size = 0;  // the VLM's token table; unused for the expert

  bool operator==(const GemmaDims&) const = default;
};

// openpi's named variants ("gemma_2b", "gemma_300m", their "_lora" twins).
Expected<GemmaDims> gemma_variant(std::string_view name);

struct ModelConfig {
  // Inferred from the weight set when absent from config.json; `model_type_given` records
  // whether the file said so (then the weights must agree).
  ModelType type = ModelType::kPi05;
  bool model_type_given = false;
  VisionDims vision;
  GemmaDims vlm;
  GemmaDims expert;
  int action_dim = 32;
  int action_horizon = 50;
  int max_token_len = 0;            // 0: the model type's default (200 pi05, 48 pi0)
  int discrete_state_input = -1;    // -1: the model type's default (pi05 yes, pi0 no)
  int num_steps = 10;
  std::string precision = "float32";
  std::string asset_id;             // empty: the only norm-stats folder under assets/
  std::vector<std::string> cameras = {"base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb"};

  int token_len() const { return max_token_len > 0 ? max_token_len : (type == ModelType::kPi05 ? 200 : 48); }
  bool state_in_prompt() const {
    return discrete_state_input >= 0 ? discrete_state_input != 0 : type == ModelType::kPi05;
  }
  int num_cameras() const { return static_cast<int>(cameras.size()); }
  // Prefix length before dropping invalid tokens: cameras·tokens + token_len.
  int prefix_len() const { return num_cameras() * vision.tokens() + token_len(); }
  // Suffix tokens per denoising step: H (+1 state token for pi0).
  int suffix_len() const { return action_horizon + (type == ModelType::kPi0 ? 1 : 0); }

  // Checks the rules of docs/checkpoint.md §2 (equal depths and heads, divisibility...).
  Status validate() const;
};

// Parses config.json text. `origin` names the file in errors.
Expected<ModelConfig> parse_config(const std::string& json_text, const std::string& origin);
Expected<ModelConfig> load_config(const std::string& path);
// The config.json edgevla writes: openpi's keys, plus edgevla's for anything openpi's
// defaults would not reproduce.
std::string config_to_json(const ModelConfig& config);

// Presets of `edgevla model init`: "tiny", "small", "pi0", "pi05"; `type` picks pi0 / pi05
// for the size presets (the "pi0"/"pi05" presets fix it).
Expected<ModelConfig> preset_config(std::string_view name, ModelType type);

}  // namespace edgevla::model
