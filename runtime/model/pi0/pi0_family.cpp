#include "runtime/model/pi0/pi0_family.hpp"

#include "runtime/model/pi0/preprocessor.hpp"

#include <cmath>
#include <filesystem>
#include <tuple>

namespace edgevla::model::pi0 {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kInitHint = "`edgevla model init --config small --out DIR` makes a checkpoint with them";

// Bytes of the weights `stage` reads from `file`: the prefix model's tensors for the backbone,
// the rest for the action head (heads saved but never used are left out).
// Checkpoint bytes and elements of the stage's tensors.
std::pair<std::int64_t, std::int64_t> stage_bytes(const SafetensorsFile& file, std::string_view stage) {
  constexpr std::string_view kPrefixModel = "paligemma_with_expert.paligemma.";
  std::int64_t bytes = 0, elements = 0;
  for (const auto& e : file.entries()) {
    if (e.name == kExpertLmHead) continue;
    if (e.name.starts_with(kPrefixModel) == (stage == kBackbone)) {
      bytes += static_cast<std::int64_t>(e.end - e.begin);
      elements += e.shape.numel();
    }
  }
  return {bytes, elements};
}

class Pi0Decoder final : public ActionDecoder {
 public:
  Pi0Decoder(NormStats stats, NormKind kind, std::int64_t width, std::int64_t out_dim)
      : stats_(std::move(stats)), kind_(kind), width_(width), out_dim_(out_dim) {}
  std::int64_t out_dim() const override { return out_dim_; }
  std::int64_t out_rows(std::int64_t horizon) const override { return horizon; }
  Status decode(const Tensor& normalized, std::span<const std::pair<std::string, const Tensor*>>,
                const Tensor& out) const override {
    if (normalized.dtype() != DType::kF32 || normalized.shape().rank() != 2 || normalized.shape()[1] != width_) {
      return invalid_argument("actions to decode are " + normalized.describe() + ", expected f32 [H," +
                              std::to_string(width_) + "]");
    }
    const std::int64_t rows = normalized.shape()[0];
    if (out.dtype() != DType::kF32 || out.numel() != rows * out_dim_) {
      return invalid_argument("decoded actions need f32 [" + std::to_string(rows) + "," + std::to_string(out_dim_) + "]");
    }
    return unnormalize_chunk({normalized.data<float>(), static_cast<std::size_t>(rows * width_)}, width_,
                             stats_.actions, kind_, out_dim_,
                             {out.data<float>(), static_cast<std::size_t>(rows * out_dim_)});
  }

 private:
  NormStats stats_;
  NormKind kind_;
  std::int64_t width_, out_dim_;
};

class Pi0Family final : public Family {
 public:
  std::string_view name() const override { return kFamily; }
  // Its weight set, or (a folder without weights, e.g. for preprocessing alone) its config.json.
  bool recognizes(const std::string& dir) const override {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(dir) / "model.safetensors", ec)) {
      auto file = SafetensorsFile::open((fs::path(dir) / "model.safetensors").string());
      if (file && variant_of(*file).has_value()) return true;
    }
    return load_config((fs::path(dir) / "config.json").string()).has_value();
  }
  Expected<std::vector<StageSpec>> peek(const std::string& dir, const ModelOpenOptions& o) const override {
    auto config = load_config((fs::path(dir) / "config.json").string());
    const auto weights = fs::path(dir) / "model.safetensors";
    auto file = SafetensorsFile::open(weights.string());
    if (!file) return std::vector<StageSpec>{};
    auto variant = variant_of(*file);
    if (!variant) return std::vector<StageSpec>{};
    const ModelType found = *variant;
    if (!o.variant.empty() && o.variant != "auto" && model_type_name(found) != o.variant) {
      const bool is_pi0 = found == ModelType::kPi0;
      return invalid_argument("model_type is " + o.variant + " but " + weights.string() + " holds a " +
                              (is_pi0 ? "pi0" : "pi0.5") + " checkpoint (" +
                              (is_pi0 ? "state_proj.weight" : "time_mlp_in.weight") + "); point 'checkpoint' at a " +
                              (o.variant == "pi0" ? "pi0" : "pi0.5") + " folder or set model_type: auto");
    }
    if (!config) return std::vector<StageSpec>{};
    config->type = found;
    return stage_specs(*config, &*file);
  }
  Expected<std::shared_ptr<const Model>> open(const std::string& dir, const ModelOpenOptions& o) const override {
    OpenOptions oo;
    if (!o.variant.empty() && o.variant != "auto") {
      EDGEVLA_ASSIGN_OR_RETURN(oo.expect_type, parse_model_type(o.variant));
    }
    EDGEVLA_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::open(dir, oo));
    return std::shared_ptr<const Model>(std::make_shared<Pi0Model>(std::move(ck)));
  }
  Expected<std::unique_ptr<Preprocessor>> make_preprocessor(const std::string& dir,
                                                            const PreprocessorOptions& o) const override {
    return pi0::make_preprocessor(dir, o);
  }
};

const bool kRegistered = register_family(std::make_unique<Pi0Family>());

}  // namespace

std::vector<StageSpec> stage_specs(const ModelConfig& c, const SafetensorsFile* file) {
  const std::int64_t C = c.num_cameras(), N = c.vision.tokens(), S = c.vision.image_size, T = c.token_len();
  const std::int64_t P = c.prefix_len(), L = c.vlm.depth, K = c.vlm.num_kv_heads, h = c.vlm.head_dim;
  const std::int64_t D = c.vlm.width, Hz = c.action_horizon, A = c.action_dim;
  const bool pi05 = c.type == ModelType::kPi05;
  const std::vector<DType> floats = {DType::kF32, DType::kBF16, DType::kF16};
  StageSpec bb{std::string(kBackbone), {}, {}, 0};
  for (const auto& cam : c.cameras) {
    bb.inputs.push_back({"image." + cam, DType::kF32, Shape{3, S, S}, false,
                         "camera '" + cam + "' pixels in [-1, 1], RGB; absent = masked", {}});
  }
  bb.inputs.push_back({"tokens", DType::kI32, Shape{T}, true, "prompt token ids", {}});
  bb.inputs.push_back({"token_mask", DType::kBool, Shape{T}, true, "true for real tokens", {}});
  bb.outputs.push_back({"kv", DType::kF32, Shape{L, 2, P, K, h}, true,
                        "per layer the keys (after RoPE) and values of the valid prefix tokens", {}});
  bb.outputs.push_back({"mask", DType::kBool, Shape{P}, true, "valid prefix tokens (all true)", {}});
  bb.outputs.push_back({"vision_embeddings", DType::kF32, Shape{C, N, D}, false,
                        "projector output per camera slot (diagnostic)", {}});
  StageSpec head{std::string(kActionHead), {}, {}, 0};
  head.inputs.push_back({"kv", DType::kF32, Shape{L, 2, P, K, h}, true, "the backbone's prefix keys and values", floats});
  head.inputs.push_back({"mask", DType::kBool, Shape{P}, true, "valid prefix tokens", {}});
  head.inputs.push_back({"state", DType::kF32, Shape{A}, !pi05, "normalized state padded to action_dim", {}});
  head.inputs.push_back({"noise", DType::kF32, Shape{Hz, A}, true, "x at t = 1 (standard normal)", {}});
  head.outputs.push_back({"actions", DType::kF32, Shape{Hz, A}, true, "x at t = 0 (normalized)", {}});
  head.outputs.push_back({"velocities", DType::kF32, Shape{1, Hz, A}, false,
                          "velocity of every step (diagnostic; [steps, H, A])", {}});
  if (file != nullptr) {
    std::tie(bb.weight_bytes, bb.weight_elements) = stage_bytes(*file, kBackbone);
    std::tie(head.weight_bytes, head.weight_elements) = stage_bytes(*file, kActionHead);
  }
  return {std::move(bb), std::move(head)};
}

Pi0Model::Pi0Model(Checkpoint checkpoint)
    : checkpoint_(std::move(checkpoint)), stages_(stage_specs(checkpoint_.config(), &checkpoint_.file())) {}

Expected<std::unique_ptr<ActionDecoder>> Pi0Model::make_action_decoder(const DecoderOptions& o) const {
  const ModelConfig& c = config();
  if (!o.embodiment.empty()) {
    return invalid_argument("embodiment '" + o.embodiment + "' is for checkpoints of several robots (GR00T); '" + dir() +
                            "' is a " + std::string(variant()) + " checkpoint of one robot: remove the param");
  }
  EDGEVLA_ASSIGN_OR_RETURN(NormStats stats, load_norm_stats_for(dir(), c, o.norm_stats, "actions"));
  const std::int64_t out_dim = o.output_dim > 0 ? o.output_dim : static_cast<std::int64_t>(stats.actions.size());
  if (out_dim > c.action_dim) {
    return invalid_argument("output_dim " + std::to_string(out_dim) + " exceeds the model's action_dim " +
                            std::to_string(c.action_dim));
  }
  return std::unique_ptr<ActionDecoder>(
      std::make_unique<Pi0Decoder>(std::move(stats), norm_kind_for(c.type), c.action_dim, out_dim));
}

Expected<const Pi0Model*> as_pi0(const Model& model) {
  const auto* m = dynamic_cast<const Pi0Model*>(&model);
  if (m == nullptr) {
    return internal_error("a pi0 engine was asked to run a '" + std::string(model.family()) + "' model");
  }
  return m;
}

std::vector<float> rope_inv_freq(std::int64_t h) {
  std::vector<float> f;
  for (std::int64_t k = 0; k < h / 2; ++k) {
    f.push_back(static_cast<float>(1.0 / std::pow(10000.0, static_cast<double>(2 * k) / static_cast<double>(h))));
  }
  return f;
}

Status valid_prompt_ids(const Tensor* tokens, const Tensor* tmask, std::int64_t vocab, std::vector<std::int32_t>& ids) {
  ids.clear();
  if (tokens == nullptr || tmask == nullptr) {
    return invalid_argument("backbone needs 'tokens' and 'token_mask' bound (the Observation lacks a prompt)");
  }
  if (!tokens->device().is_cpu() || !tmask->device().is_cpu()) {
    return invalid_argument("backbone 'tokens' and 'token_mask' must be host tensors (they are checked on the host)");
  }
  if (!(tokens->shape() == tmask->shape())) {
    return invalid_argument("backbone 'tokens' " + tokens->shape().to_string() + " and 'token_mask' " +
                            tmask->shape().to_string() + " differ");
  }
  const auto* id = tokens->data<std::int32_t>();
  const auto* valid = tmask->data<bool>();
  for (std::int64_t i = 0; i < tokens->numel(); ++i) {
    if (!valid[i]) continue;
    if (id[i] < 0 || id[i] >= vocab) {
      return invalid_argument("backbone token " + std::to_string(id[i]) + " at position " + std::to_string(i) +
                              " is outside the vocabulary of " + std::to_string(vocab) +
                              " (the tokenizer does not belong to this checkpoint)");
    }
    ids.push_back(id[i]);
  }
  return Status::ok();
}

Expected<NormStats> load_norm_stats_for(const std::string& dir, const ModelConfig& c, const std::string& override_path,
                                        std::string_view need) {
  std::string path = override_path;
  if (path.empty()) {
    auto found = find_norm_stats(dir, c.asset_id);
    if (!found) {
      return not_found("checkpoint '" + dir + "' has no usable norm stats (" + found.status().message() + "); " +
                       std::string(kInitHint) + ", an openpi checkpoint carries them in assets/<asset_id>/norm_stats.json");
    }
    path = *found;
  }
  EDGEVLA_ASSIGN_OR_RETURN(NormStats stats, load_norm_stats(path));
  if (norm_kind_for(c.type) == NormKind::kQuantile) {
    const bool state_ok = need.find("state") == std::string_view::npos || stats.state.has_quantiles();
    const bool actions_ok = need.find("actions") == std::string_view::npos || stats.actions.has_quantiles();
    if (!state_ok || !actions_ok) {
      return failed_precondition(std::string(model_type_name(c.type)) + " normalizes with quantiles, but " + path +
                                 " has no q01/q99 for " + std::string(need) + "; recompute the stats with quantiles");
    }
  }
  if (stats.actions.size() > static_cast<std::size_t>(c.action_dim)) {
    return invalid_argument(path + " has " + std::to_string(stats.actions.size()) +
                            " action dims, more than the model's action_dim " + std::to_string(c.action_dim));
  }
  return stats;
}

Expected<Tokenizer> load_tokenizer_for(const std::string& dir, const ModelConfig& c, const std::string& override_path) {
  const std::string path = override_path.empty() ? (fs::path(dir) / "tokenizer.model").string() : override_path;
  auto loaded = Tokenizer::load(path);
  if (!loaded) {
    if (loaded.status().code() != StatusCode::kNotFound) return loaded.status();
    return not_found(loaded.status().message() + "; " + std::string(kInitHint));
  }
  Tokenizer tok = std::move(*loaded);
  if (c.vlm.vocab_size > 0 && tok.vocab_size() > c.vlm.vocab_size) {
    return invalid_argument("tokenizer " + path + " has " + std::to_string(tok.vocab_size()) +
                            " pieces but the model embeds " + std::to_string(c.vlm.vocab_size) +
                            " tokens; it does not belong to this checkpoint");
  }
  return tok;
}

}  // namespace edgevla::model::pi0
