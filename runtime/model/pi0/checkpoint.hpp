// A pi0 / pi0.5 checkpoint folder (docs/checkpoint.md): config.json + model.safetensors, checked
// against the weight set the config implies. Weights stay memory-mapped; tensors handed out
// view the mapping.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/model/pi0/config.hpp"
#include "runtime/model/safetensors.hpp"

namespace edgevla::model {

// Key prefixes of openpi's PyTorch module tree.
inline constexpr std::string_view kVisionPrefix =
    "paligemma_with_expert.paligemma.model.vision_tower.vision_model.";
inline constexpr std::string_view kProjector =
    "paligemma_with_expert.paligemma.model.multi_modal_projector.linear.";
inline constexpr std::string_view kVlmPrefix = "paligemma_with_expert.paligemma.model.language_model.";
inline constexpr std::string_view kExpertPrefix = "paligemma_with_expert.gemma_expert.model.";
inline constexpr std::string_view kEmbedding = "paligemma_with_expert.paligemma.lm_head.weight";
inline constexpr std::string_view kEmbeddingAlias =
    "paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight";
inline constexpr std::string_view kExpertLmHead = "paligemma_with_expert.gemma_expert.lm_head.weight";

struct WeightSpec {
  std::string name;
  Shape shape;
  bool required = true;  // false: present in openpi's files but never read at inference
};

// pi0 or pi0.5, from the weight set alone (pi0: state_proj / action_time_mlp; pi0.5: time_mlp /
// adaptive expert norms); reads only the file's header. An error when it holds both or neither.
Expected<ModelType> variant_of(const SafetensorsFile& file);

// Every tensor of a model with these sizes and type, in openpi's key names.
std::vector<WeightSpec> expected_weights(const ModelConfig& config);

struct OpenOptions {
  // When set, a checkpoint of the other variant is an error (a node configured for pi05 must
  // not silently run a pi0 checkpoint).
  std::optional<ModelType> expect_type;
};

class Checkpoint {
 public:
  // Reads <dir>/config.json, maps <dir>/model.safetensors, tells pi0 from pi0.5 by the weight
  // set, and checks every tensor: missing, extra or misshaped tensors and unsupported dtypes are
  // one error that lists them with their shapes and the expected ones.
  static Expected<Checkpoint> open(const std::string& dir, const OpenOptions& options = {});

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const SafetensorsFile& file() const { return file_; }
  // A weight by openpi name (the embedding accepts either of its two names).
  Expected<Tensor> weight(std::string_view name) const;
  // Bytes of the weights the model reads (what it maps and touches).
  std::uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  std::string dir_;
  ModelConfig config_;
  SafetensorsFile file_;
  std::uint64_t weight_bytes_ = 0;
};

}  // namespace edgevla::model
