// pi0 / pi0.5 as a model family ("pi0"): its stages and their tensors, its action decoder, and
// the one place that finds and loads a checkpoint's assets (norm stats, tokenizer).
//
// Stages (C cameras, S image size, T tokens, L layers, P prefix tokens at most, K kv heads,
// h head dim, H horizon, A action dim):
//   backbone     in:  image.<camera> f32 [3,S,S] (absent = camera masked), tokens i32 [T],
//                     token_mask bool [T]
//                out: kv [L,2,n,K,h] (per layer the keys after RoPE and the values of the n
//                     valid prefix tokens: invalid ones are dropped), mask bool [n];
//                     vision_embeddings f32 [C,N,D] (diagnostic, rows of masked cameras zero)
//   action_head  in:  kv [L,2,n,K,h] (f32/bf16/f16), mask bool [n], state f32 [A] (pi0),
//                     noise f32 [H,A]
//                out: actions f32 [H,A] (normalized), velocities f32 [steps,H,A] (diagnostic)
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/model/family.hpp"
#include "runtime/model/pi0/checkpoint.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/pi0/tokenizer.hpp"

namespace edgevla::model::pi0 {

inline constexpr std::string_view kFamily = "pi0";

// The stage specs of a model of this config; `file` (when given) sizes weight_bytes.
std::vector<StageSpec> stage_specs(const ModelConfig& config, const SafetensorsFile* file);

class Pi0Model final : public Model {
 public:
  explicit Pi0Model(Checkpoint checkpoint);
  std::string_view family() const override { return kFamily; }
  std::string_view variant() const override { return model_type_name(checkpoint_.config().type); }
  const std::string& dir() const override { return checkpoint_.dir(); }
  const std::vector<StageSpec>& stages() const override { return stages_; }
  int default_num_steps() const override { return checkpoint_.config().num_steps; }
  std::int64_t weight_bytes() const override { return static_cast<std::int64_t>(checkpoint_.weight_bytes()); }
  Expected<std::unique_ptr<ActionDecoder>> make_action_decoder(const DecoderOptions& options) const override;

  const Checkpoint& checkpoint() const { return checkpoint_; }
  const SafetensorsFile& file() const { return checkpoint_.file(); }
  const ModelConfig& config() const { return checkpoint_.config(); }

 private:
  Checkpoint checkpoint_;
  std::vector<StageSpec> stages_;
};

// The pi0 model behind a family-neutral one; an internal error when it is another family's.
Expected<const Pi0Model*> as_pi0(const Model& model);

// The backbone's prompt inputs checked and compacted, for every backend: tokens i32 [T] and
// token_mask bool [T] (host tensors, equal shapes, ids of valid tokens inside the vocabulary);
// `ids` receives the valid ids in order. Errors name the input and the fix.
Status valid_prompt_ids(const Tensor* tokens, const Tensor* token_mask, std::int64_t vocab,
                        std::vector<std::int32_t>& ids);

// RoPE's inverse frequencies for head dim h, in float32 as the reference computes them:
// 1 / 10000^(2k/h), k < h/2. Every backend's engines use these.
std::vector<float> rope_inv_freq(std::int64_t h);

// Assets of a checkpoint folder. Norm stats: `override_path`, else
// <dir>/assets/<asset_id>/norm_stats.json; checked to hold the quantiles the model type
// normalizes with (`need` says for which quantities: "state", "actions" or "state and actions").
Expected<NormStats> load_norm_stats_for(const std::string& dir, const ModelConfig& config,
                                        const std::string& override_path, std::string_view need);
// Tokenizer: `override_path`, else <dir>/tokenizer.model; checked against the model's vocabulary.
Expected<Tokenizer> load_tokenizer_for(const std::string& dir, const ModelConfig& config,
                                       const std::string& override_path);

}  // namespace edgevla::model::pi0
