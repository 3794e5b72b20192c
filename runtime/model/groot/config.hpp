// GrootConfig: every size and switch of one GR00T N1.6 checkpoint (notes/groot-n16.md §2, §3,
// §5, §8), read from the checkpoint's config.json (the Gr00tN1d6 fields) and from the Eagle
// folder's config.json (the SigLIP2 and Qwen3 architecture, which the published checkpoint takes
// from the GR00T source, not from its own files). Sizes are never defaulted: a missing one is an
// error naming the file and the key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/core/status.hpp"

namespace edgevla::model::groot {

// config.json's model_type (and architectures entry) of a GR00T N1.6 checkpoint.
inline constexpr std::string_view kModelType = "Gr00tN1d6";

struct VisionConfig {  // SigLIP2 (Eagle config.json vision_config)
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int intermediate_size = 0;
  int patch_size = 0;
  int num_patches = 0;  // learned position table: a square grid of this many entries
  int num_channels = 0;
  double layer_norm_eps = 0;

  int head_dim() const { return hidden_size / num_heads; }
  int position_grid() const;  // sqrt(num_patches)
  int patch_dim() const { return num_channels * patch_size * patch_size; }
};

struct TextConfig {  // Qwen3 (Eagle config.json text_config)
  int hidden_size = 0;
  int num_layers = 0;  // the whole LLM as vendored; GR00T keeps select_layer of them
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int intermediate_size = 0;
  std::int64_t vocab_size = 0;
  double rms_norm_eps = 0;
  double rope_theta = 0;
  bool tie_word_embeddings = false;
};

struct DitConfig {  // diffusion_model_cfg
  int num_layers = 0;
  int num_heads = 0;
  int head_dim = 0;
  int output_dim = 0;

  int inner_dim() const { return num_heads * head_dim; }
};

struct GrootConfig {
  std::string dir;         // the checkpoint folder
  std::string eagle_dir;   // where the backbone config and tokenizer files are
  std::string model_name;  // "nvidia/Eagle-Block2A-2B-v2"

  VisionConfig vision;
  TextConfig text;
  int select_layer = 0;      // LLM layers kept (0..select_layer-1)
  int unshuffle_factor = 0;  // 1 / downsample_ratio
  std::int64_t image_token_id = 0;

  // Action head.
  int backbone_embedding_dim = 0;
  int hidden_size = 0;
  int input_embedding_dim = 0;
  int max_state_dim = 0;
  int max_action_dim = 0;
  int action_horizon = 0;
  int max_num_embodiments = 0;
  int max_seq_len = 0;
  DitConfig dit;
  int attend_text_every_n_blocks = 0;
  int num_inference_timesteps = 0;
  int num_timestep_buckets = 0;

  // Pre-processing switches.
  int shortest_image_edge = 0;
  double crop_fraction = 0;
  bool formalize_language = true;
  bool apply_sincos_state_encoding = false;
  bool use_relative_action = false;

  int mlp1_in() const { return vision.hidden_size * unshuffle_factor * unshuffle_factor; }
  int ff_dim() const { return 4 * dit.inner_dim(); }

  // The rules the model relies on (divisibility, matching widths, depth within the LLM...),
  // each broken one an error naming the keys.
  Status validate() const;
};

// Parses the two config.json texts; `origin` / `eagle_origin` name them in errors.
Expected<GrootConfig> parse_config(const std::string& config_text, const std::string& origin,
                                   const std::string& eagle_text, const std::string& eagle_origin);

// Reads <dir>/config.json and the Eagle folder's config.json (`eagle_dir`, default
// <dir>/<basename of model_name>). Another family's or version's checkpoint is an error saying
// which it is.
Expected<GrootConfig> load_config(const std::string& dir, const std::string& eagle_dir = "");

}  // namespace edgevla::model::groot
