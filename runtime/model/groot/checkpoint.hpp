// A GR00T N1.6 checkpoint folder in the published layout (notes/groot-n16.md §5, §8):
// config.json, model.safetensors.index.json + model-0000k-of-0000n.safetensors (or one
// model.safetensors), and the Eagle folder with the backbone config and tokenizer files. Every
// tensor the model reads is checked by name and shape against the sizes of the configs. Weights
// stay memory-mapped; tensors handed out view the mapping.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/groot/config.hpp"
#include "runtime/model/safetensors.hpp"

namespace edgevla::model::groot {

// Key prefixes of the Gr00tN1d6 module tree.
inline constexpr std::string_view kVisionPrefix = "backbone.model.vision_model.vision_model.";
inline constexpr std::string_view kLanguagePrefix = "backbone.model.language_model.";
inline constexpr std::string_view kMlp1Prefix = "backbone.model.mlp1.";
inline constexpr std::string_view kActionHeadPrefix = "action_head.";
inline constexpr std::string_view kDitPrefix = "action_head.model.";
inline constexpr std::string_view kEmbedTokens =
    "backbone.model.language_model.model.embed_tokens.weight";
inline constexpr std::string_view kLmHead = "backbone.model.language_model.lm_head.weight";

struct WeightSpec {
  std::string name;
  Shape shape;
  bool required = true;  // false: in the published files but never read at inference
};

// Every tensor of a model with these sizes, in the published key names and shapes. The vision
// tower's pooling head (<vision>head.*) is unused and not listed; open() accepts its keys.
std::vector<WeightSpec> expected_weights(const GrootConfig& config);

struct OpenOptions {
  std::string eagle_dir;  // empty: <checkpoint>/<basename of config.json's model_name>
};

class Checkpoint {
 public:
  // Reads both configs, maps the shards named by model.safetensors.index.json (or
  // model.safetensors), checks that the index and the shards agree, and that every tensor of
  // expected_weights() is there with its shape and a float dtype (f32, bf16, f16). Missing,
  // misshaped or unexpected tensors are one error listing them with the expected shapes.
  static Expected<Checkpoint> open(const std::string& dir, const OpenOptions& options = {});

  const GrootConfig& config() const { return config_; }
  // A weight by its published name; not_found names the checkpoint.
  Expected<Tensor> weight(std::string_view name) const;
  bool has(std::string_view name) const { return where_.find(name) != where_.end(); }
  // Bytes of the weights the model reads.
  std::uint64_t weight_bytes() const { return weight_bytes_; }
  // The mapped shard files, in file-name order.
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // False when the checkpoint holds an lm_head that differs from embed_tokens (the text config
  // ties them; edgevla embeds with embed_tokens and logs a warning at open).
  bool lm_head_tied() const { return lm_head_tied_; }

 private:
  GrootConfig config_;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, std::size_t, std::less<>> where_;  // tensor -> shard
  std::uint64_t weight_bytes_ = 0;
  bool lm_head_tied_ = true;
};

}  // namespace edgevla::model::groot
