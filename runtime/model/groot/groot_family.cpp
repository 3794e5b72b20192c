#include "runtime/model/groot/groot_family.hpp"

#include "runtime/model/groot/preprocessor.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The model_type of <dir>/config.json, or "" when it cannot be read.
std::string model_type_of(const std::string& dir) {
  std::ifstream f(fs::path(dir) / "config.json", std::ios::binary);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  auto it = j.find("model_type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

Status check_variant(const ModelOpenOptions& o, const std::string& dir) {
  if (o.variant.empty() || o.variant == "auto" || o.variant == kVariant) return Status::ok();
  return invalid_argument("model_type is " + o.variant + " but '" + dir + "' holds a GR00T " + std::string(kVariant) +
                          " checkpoint (config.json model_type " + std::string(kModelType) +
                          "); set model_type: auto or " + std::string(kVariant));
}

// Checkpoint bytes and elements each stage reads; the unused vision pooling head and lm_head
// (tied to embed_tokens) are left out.
void add_stage_bytes(const SafetensorsFile& file, StageSpec& backbone, StageSpec& head) {
  const std::string pooling = std::string(kVisionPrefix) + "head.";
  for (const auto& e : file.entries()) {
    if (e.name == kLmHead || e.name.starts_with(pooling)) continue;
    StageSpec* s = e.name.starts_with("backbone.") ? &backbone : e.name.starts_with(kActionHeadPrefix) ? &head : nullptr;
    if (s == nullptr) continue;
    s->weight_bytes += static_cast<std::int64_t>(e.end - e.begin);
    s->weight_elements += e.shape.numel();
  }
}

class GrootDecoder final : public ActionDecoder {
 public:
  GrootDecoder(Embodiment e, std::int64_t out_dim) : e_(std::move(e)), out_dim_(out_dim) {}
  std::int64_t out_dim() const override { return out_dim_; }
  std::int64_t out_rows(std::int64_t) const override { return e_.horizon(); }

  Status decode(const Tensor& normalized, std::span<const std::pair<std::string, const Tensor*>> context,
                const Tensor& out) const override {
    const std::int64_t A = e_.max_action_dim(), He = e_.horizon();
    if (normalized.dtype() != DType::kF32 || normalized.shape().rank() != 2 || normalized.shape()[1] != A ||
        normalized.shape()[0] < He || !normalized.device().is_cpu()) {
      return invalid_argument("groot: actions to decode are " + normalized.describe() + ", expected host f32 [H," +
                              std::to_string(A) + "] with H >= " + std::to_string(He) + " (embodiment '" +
                              e_.tag() + "')");
    }
    if (out.dtype() != DType::kF32 || out.shape().rank() != 2 || out.shape()[0] != He || out.shape()[1] != out_dim_) {
      return invalid_argument("groot: decoded actions of embodiment '" + e_.tag() + "' need f32 [" +
                              std::to_string(He) + "," + std::to_string(out_dim_) + "], got " + out.describe());
    }
    RawState raw;
    for (const auto& [name, t] : context) {
      if (name == "embodiment_id") {
        const bool int_scalar = t->numel() == 1 && (t->dtype() == DType::kI32 || t->dtype() == DType::kI64);
        const std::int64_t id = !int_scalar                   ? -1
                                : t->dtype() == DType::kI32 ? *t->data<std::int32_t>()
                                                            : *t->data<std::int64_t>();
        if (id != e_.id()) {
          return invalid_argument("groot: the chunk was made for embodiment id " +
                                  (int_scalar ? std::to_string(id) : t->describe()) + " but the decoder is set up for '" +
                                  e_.tag() + "' (id " + std::to_string(e_.id()) +
                                  "); give the action head the embodiment of the pre-processing");
        }
        continue;
      }
      if (!name.starts_with(kRawStatePrefix)) continue;
      if (t->dtype() != DType::kF32 || t->shape().rank() < 1 || t->shape().rank() > 2 || t->numel() == 0) {
        return invalid_argument("groot: context tensor '" + name + "' is " + t->describe() +
                                ", expected f32 [D] or [T,D] (the raw state group; its last step is used)");
      }
      const std::int64_t d = t->shape()[t->shape().rank() - 1];
      const float* last = t->data<float>() + (t->numel() - d);
      raw[name.substr(kRawStatePrefix.size())] = std::vector<float>(last, last + d);
    }
    std::vector<double> full(static_cast<std::size_t>(He * e_.action_dim()));
    EDGEVLA_RETURN_IF_ERROR(e_.decode_actions({normalized.data<float>(), static_cast<std::size_t>(normalized.numel())},
                                              normalized.shape()[0], raw, full));
    float* o = out.data<float>();
    for (std::int64_t r = 0; r < He; ++r) {
      for (std::int64_t c = 0; c < out_dim_; ++c) {
        o[r * out_dim_ + c] = static_cast<float>(full[static_cast<std::size_t>(r * e_.action_dim() + c)]);
      }
    }
    return Status::ok();
  }

 private:
  Embodiment e_;
  std::int64_t out_dim_;
};

class GrootFamily final : public Family {
 public:
  std::string_view name() const override { return kFamily; }
  bool recognizes(const std::string& dir) const override { return model_type_of(dir) == kModelType; }
  Expected<std::vector<StageSpec>> peek(const std::string& dir, const ModelOpenOptions& o) const override {
    if (!recognizes(dir)) return std::vector<StageSpec>{};
    EDGEVLA_RETURN_IF_ERROR(check_variant(o, dir));
    auto config = load_config(dir);
    if (!config) return std::vector<StageSpec>{};
    // Shard headers only (open() checks every tensor).
    std::vector<SafetensorsFile> shards;
    std::set<std::string> files;
    std::ifstream f(fs::path(dir) / "model.safetensors.index.json", std::ios::binary);
    if (f) {
      std::stringstream ss;
      ss << f.rdbuf();
      json j = json::parse(ss.str(), nullptr, false);
      if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) return std::vector<StageSpec>{};
      for (const auto& [key, file] : j["weight_map"].items()) {
        if (file.is_string()) files.insert(file.get<std::string>());
      }
    } else {
      files.insert("model.safetensors");
    }
    for (const std::string& file : files) {
      auto shard = SafetensorsFile::open((fs::path(dir) / file).string());
      if (!shard) return std::vector<StageSpec>{};
      shards.push_back(std::move(*shard));
    }
    return stage_specs(*config, &shards);
  }
  Expected<std::unique_ptr<model::Preprocessor>> make_preprocessor(const std::string& dir,
                                                                   const PreprocessorOptions& o) const override {
    return make_seam_preprocessor(dir, o);
  }
  Expected<std::shared_ptr<const Model>> open(const std::string& dir, const ModelOpenOptions& o) const override {
    EDGEVLA_RETURN_IF_ERROR(check_variant(o, dir));
    EDGEVLA_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::open(dir));
    return std::shared_ptr<const Model>(std::make_shared<GrootModel>(std::move(ck)));
  }
};

const bool kRegistered = register_family(std::make_unique<GrootFamily>());

}  // namespace

EmbodimentLimits embodiment_limits(const GrootConfig& c) {
  return {c.max_state_dim, c.max_action_dim, c.action_horizon, c.max_num_embodiments};
}

std::vector<StageSpec> stage_specs(const GrootConfig& c, const std::vector<SafetensorsFile>* shards) {
  const std::int64_t V = kMaxViews, E = kMaxImageEdge, W = c.text.hidden_size;
  // Image tokens of the largest view: patches of the pixel grid merged by the unshuffle.
  const std::int64_t merge = std::int64_t{c.vision.patch_size} * c.unshuffle_factor;
  const std::int64_t N = (E / merge) * (E / merge);
  const std::int64_t L = kMaxTextTokens + V * N;
  const std::int64_t S = c.max_state_dim, H = c.action_horizon, A = c.max_action_dim;
  const std::vector<DType> floats = {DType::kF32, DType::kBF16, DType::kF16};
  StageSpec bb{std::string(kBackbone), {}, {}, 0};
  for (int k = 0; k < V; ++k) {
    bb.inputs.push_back({"image." + std::to_string(k), DType::kF32, Shape{3, E, E}, k == 0,
                         "view " + std::to_string(k) +
                             " in the embodiment's video key order: pixels after the eval transform, (x - 127.5) / "
                             "127.5, RGB, [3,h,w] with h, w multiples of " +
                             std::to_string(merge) + "; absent = fewer views",
                         {DType::kBF16}});
  }
  bb.inputs.push_back({"input_ids", DType::kI32, Shape{L}, true,
                       "prompt token ids (chat text with one <img> + n x <IMG_CONTEXT> + </img> per view), left-padded",
                       {}});
  bb.inputs.push_back({"attention_mask", DType::kBool, Shape{L}, true, "true for real (not padding) tokens", {}});
  bb.outputs.push_back({"backbone_features", DType::kF32, Shape{L, W}, true,
                        "final-norm output of the first select_layer LLM layers", {}});
  bb.outputs.push_back({"attention_mask", DType::kBool, Shape{L}, true, "the prompt's attention mask", {}});
  bb.outputs.push_back({"image_mask", DType::kBool, Shape{L}, true, "<IMG_CONTEXT> token positions", {}});
  bb.outputs.push_back({"image_embeds", DType::kF32, Shape{V * N, W}, false,
                        "mlp1 outputs spliced into the prompt, view after view (diagnostic)", {}});
  StageSpec head{std::string(kActionHead), {}, {}, 0};
  head.inputs.push_back({"backbone_features", DType::kF32, Shape{L, W}, true, "the backbone's features", floats});
  head.inputs.push_back({"attention_mask", DType::kBool, Shape{L}, true, "the prompt's attention mask", {}});
  head.inputs.push_back({"image_mask", DType::kBool, Shape{L}, true,
                         "<IMG_CONTEXT> positions (image blocks attend to these, text blocks to the rest)", {}});
  head.inputs.push_back({"state", DType::kF32, Shape{S}, true, "state normalised per embodiment, zero-padded", {}});
  head.inputs.push_back({"embodiment_id", DType::kI32, Shape{1}, true,
                         "the robot's projector index (embodiment_id.json)", {}});
  head.inputs.push_back({"noise", DType::kF32, Shape{H, A}, true, "actions at t = 0 (standard normal)", {}});
  head.outputs.push_back({"actions", DType::kF32, Shape{H, A}, true, "actions at t = 1 (normalized)", {}});
  head.outputs.push_back({"velocities", DType::kF32, Shape{1, H, A}, false,
                          "velocity of every step (diagnostic; [steps, H, A])", {}});
  if (shards != nullptr) {
    for (const SafetensorsFile& f : *shards) add_stage_bytes(f, bb, head);
  }
  return {std::move(bb), std::move(head)};
}

GrootModel::GrootModel(Checkpoint checkpoint)
    : checkpoint_(std::move(checkpoint)), stages_(stage_specs(checkpoint_.config(), &checkpoint_.shards())) {}

Expected<std::string> embodiment_tag(const std::string& dir, std::string_view tag) {
  if (!tag.empty()) return std::string(tag);
  EDGEVLA_ASSIGN_OR_RETURN(ProcessorConfig p, load_processor_config((fs::path(dir) / "processor_config.json").string()));
  const std::vector<std::string> tags = p.tags();
  if (tags.size() != 1) {
    std::string list;
    for (const auto& x : tags) list += (list.empty() ? "" : ", ") + x;
    return invalid_argument("groot: checkpoint '" + dir + "' has " + std::to_string(tags.size()) + " embodiments (" +
                            list + "); set the embodiment to one of them");
  }
  return tags.front();
}

Expected<Embodiment> GrootModel::embodiment(std::string_view tag, const std::string& statistics_path) const {
  EDGEVLA_ASSIGN_OR_RETURN(const std::string t, embodiment_tag(dir(), tag));
  return Embodiment::load(dir(), t, embodiment_limits(config()), statistics_path);
}

Expected<std::unique_ptr<ActionDecoder>> GrootModel::make_action_decoder(const DecoderOptions& o) const {
  EDGEVLA_ASSIGN_OR_RETURN(Embodiment e, embodiment(o.embodiment, o.norm_stats));
  const std::int64_t out_dim = o.output_dim > 0 ? o.output_dim : e.action_dim();
  if (out_dim > e.action_dim()) {
    return invalid_argument("output_dim " + std::to_string(out_dim) + " exceeds embodiment '" + e.tag() + "''s " +
                            std::to_string(e.action_dim()) + " action dims");
  }
  return std::unique_ptr<ActionDecoder>(std::make_unique<GrootDecoder>(std::move(e), out_dim));
}

Expected<const GrootModel*> as_groot(const Model& model) {
  const auto* m = dynamic_cast<const GrootModel*>(&model);
  if (m == nullptr) {
    return internal_error("a groot engine was asked to run a '" + std::string(model.family()) + "' model");
  }
  return m;
}

}  // namespace edgevla::model::groot
