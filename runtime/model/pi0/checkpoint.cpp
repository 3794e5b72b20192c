#include "runtime/model/pi0/checkpoint.hpp"

#include <filesystem>
#include <map>
#include <set>

namespace edgevla::model {
namespace {

std::string key(std::string_view prefix, std::string_view rest) {
  return std::string(prefix) + std::string(rest);
}

void add_gemma_layers(std::vector<WeightSpec>& out, std::string_view prefix, const GemmaDims& g,
                      bool adaptive) {
  const std::int64_t q = std::int64_t{g.num_heads} * g.head_dim;
  const std::int64_t kv = std::int64_t{g.num_kv_heads} * g.head_dim;
  const std::int64_t w = g.width;
  auto norm = [&](const std::string& name) {
    if (adaptive) {
      out.push_back({name + ".dense.weight", Shape{3 * w, w}});
      out.push_back({name + ".dense.bias", Shape{3 * w}});
    } else {
      out.push_back({name + ".weight", Shape{w}});
    }
  };
  for (int i = 0; i < g.depth; ++i) {
    const std::string l = key(prefix, "layers." + std::to_string(i) + ".");
    norm(l + "input_layernorm");
    out.push_back({l + "self_attn.q_proj.weight", Shape{q, w}});
    out.push_back({l + "self_attn.k_proj.weight", Shape{kv, w}});
    out.push_back({l + "self_attn.v_proj.weight", Shape{kv, w}});
    out.push_back({l + "self_attn.o_proj.weight", Shape{w, q}});
    norm(l + "post_attention_layernorm");
    out.push_back({l + "mlp.gate_proj.weight", Shape{g.mlp_dim, w}});
    out.push_back({l + "mlp.up_proj.weight", Shape{g.mlp_dim, w}});
    out.push_back({l + "mlp.down_proj.weight", Shape{w, g.mlp_dim}});
  }
  norm(key(prefix, "norm"));
}

bool is_weight_dtype(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16; }

}  // namespace

Expected<ModelType> variant_of(const SafetensorsFile& f) {
  const bool pi0 = f.find("state_proj.weight") != nullptr || f.find("action_time_mlp_in.weight") != nullptr;
  const bool pi05 = f.find("time_mlp_in.weight") != nullptr ||
                    f.find(key(kExpertPrefix, "layers.0.input_layernorm.dense.weight")) != nullptr;
  if (pi0 == pi05) {
    return invalid_argument(f.path() + " holds " + std::string(pi0 ? "both pi0 and pi0.5" : "neither pi0 nor pi0.5") +
                            " head weights (pi0 has state_proj.* and action_time_mlp_*, pi0.5 has "
                            "time_mlp_* and adaptive expert norms); it is not a pi0/pi0.5 checkpoint");
  }
  return pi05 ? ModelType::kPi05 : ModelType::kPi0;
}

std::vector<WeightSpec> expected_weights(const ModelConfig& c) {
  std::vector<WeightSpec> out;
  const VisionDims& v = c.vision;
  const std::int64_t vw = v.width;
  const std::string vp(kVisionPrefix);
  out.push_back({vp + "embeddings.patch_embedding.weight", Shape{vw, 3, v.patch_size, v.patch_size}});
  out.push_back({vp + "embeddings.patch_embedding.bias", Shape{vw}});
  out.push_back({vp + "embeddings.position_embedding.weight", Shape{v.tokens(), vw}});
  for (int i = 0; i < v.depth; ++i) {
    const std::string l = vp + "encoder.layers." + std::to_string(i) + ".";
    out.push_back({l + "layer_norm1.weight", Shape{vw}});
    out.push_back({l + "layer_norm1.bias", Shape{vw}});
    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      out.push_back({l + "self_attn." + p + ".weight", Shape{vw, vw}});
      out.push_back({l + "self_attn." + p + ".bias", Shape{vw}});
    }
    out.push_back({l + "layer_norm2.weight", Shape{vw}});
    out.push_back({l + "layer_norm2.bias", Shape{vw}});
    out.push_back({l + "mlp.fc1.weight", Shape{v.mlp_dim, vw}});
    out.push_back({l + "mlp.fc1.bias", Shape{v.mlp_dim}});
    out.push_back({l + "mlp.fc2.weight", Shape{vw, v.mlp_dim}});
    out.push_back({l + "mlp.fc2.bias", Shape{vw}});
  }
  out.push_back({vp + "post_layernorm.weight", Shape{vw}});
  out.push_back({vp + "post_layernorm.bias", Shape{vw}});
  out.push_back({key(kProjector, "weight"), Shape{c.vlm.width, vw}});
  out.push_back({key(kProjector, "bias"), Shape{c.vlm.width}});

  out.push_back({std::string(kEmbedding), Shape{c.vlm.vocab_size, c.vlm.width}});
  add_gemma_layers(out, kVlmPrefix, c.vlm, false);
  // The VLM's final norm exists in openpi's files; inference never applies it (model.md §6.5).
  out.back().required = false;
  const bool pi05 = c.type == ModelType::kPi05;
  add_gemma_layers(out, kExpertPrefix, c.expert, pi05);
  // The expert's output head is saved by openpi but never used (model.md §3.3).
  out.push_back({std::string(kExpertLmHead), Shape{c.vlm.vocab_size, c.expert.width}, false});

  const std::int64_t e = c.expert.width, a = c.action_dim;
  auto linear = [&](const std::string& name, std::int64_t o, std::int64_t i) {
    out.push_back({name + ".weight", Shape{o, i}});
    out.push_back({name + ".bias", Shape{o}});
  };
  linear("action_in_proj", e, a);
  linear("action_out_proj", a, e);
  if (pi05) {
    linear("time_mlp_in", e, e);
    linear("time_mlp_out", e, e);
  } else {
    linear("state_proj", e, a);
    linear("action_time_mlp_in", e, 2 * e);
    linear("action_time_mlp_out", e, e);
  }
  return out;
}

Expected<Checkpoint> Checkpoint::open(const std::string& dir, const OpenOptions& options) {
  namespace fs = std::filesystem;
  Checkpoint ck;
  ck.dir_ = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return not_found("checkpoint folder '" + dir + "' does not exist (make one with `edgevla model "
                     "init --config small --out " + dir + "`, or point to an openpi PyTorch "
                     "checkpoint folder)");
  }
  auto config = load_config((fs::path(dir) / "config.json").string());
  if (!config) return config.status();
  ck.config_ = std::move(*config);
  const std::string weights_path = (fs::path(dir) / "model.safetensors").string();
  if (!fs::exists(weights_path, ec)) {
    return not_found("checkpoint '" + dir + "' has no model.safetensors (it needs config.json "
                     "and model.safetensors side by side)");
  }
  auto file = SafetensorsFile::open(weights_path);
  if (!file) return file.status();
  ck.file_ = std::move(*file);

  // Which variant do the weights hold?
  auto variant = variant_of(ck.file_);
  if (!variant) return variant.status().with_context("checkpoint '" + dir + "'");
  const ModelType found = *variant;
  if (ck.config_.model_type_given && ck.config_.type != found) {
    return invalid_argument("checkpoint '" + dir + "': config.json says model_type " +
                            std::string(model_type_name(ck.config_.type)) + " but the weights are " +
                            std::string(model_type_name(found)) + " (fix or remove model_type)");
  }
  ck.config_.type = found;
  if (options.expect_type && *options.expect_type != found) {
    return invalid_argument("checkpoint '" + dir + "' is a " + std::string(model_type_name(found)) +
                            " model but this stage is set up for " +
                            std::string(model_type_name(*options.expect_type)) +
                            " (point it at a " + std::string(model_type_name(*options.expect_type)) +
                            " checkpoint or set model_type to auto)");
  }

  // Compare the file with the expected weight set.
  std::vector<WeightSpec> expected = expected_weights(ck.config_);
  std::set<std::string, std::less<>> expected_names;
  std::vector<std::string> problems;
  std::size_t missing = 0, misshaped = 0, extra = 0, bad_dtype = 0;
  for (const WeightSpec& w : expected) {
    expected_names.insert(w.name);
    const SafetensorsEntry* e = ck.file_.find(w.name);
    if (e == nullptr && w.name == kEmbedding) e = ck.file_.find(kEmbeddingAlias);
    if (e == nullptr) {
      if (!w.required) continue;
      ++missing;
      problems.push_back("missing " + w.name + " (expected " + w.shape.to_string() + ")");
      continue;
    }
    if (!(e->shape == w.shape)) {
      ++misshaped;
      problems.push_back(w.name + " is " + e->shape.to_string() + ", expected " + w.shape.to_string());
    } else if (!is_weight_dtype(e->dtype)) {
      ++bad_dtype;
      problems.push_back(w.name + " is " + std::string(dtype_name(e->dtype)) +
                         " (weights must be f32, bf16 or f16)");
    } else if (w.required) {
      ck.weight_bytes_ += e->end - e->begin;
    }
  }
  expected_names.insert(std::string(kEmbeddingAlias));
  for (const SafetensorsEntry& e : ck.file_.entries()) {
    if (!expected_names.contains(e.name)) {
      ++extra;
      problems.push_back("unexpected " + e.name + " " + e.shape.to_string());
    }
  }
  if (!problems.empty()) {
    std::string msg = "checkpoint '" + dir + "' does not match a " +
                      std::string(model_type_name(found)) + " model with the sizes of its config.json (" +
                      std::to_string(missing) + " missing, " + std::to_string(misshaped) +
                      " misshaped, " + std::to_string(bad_dtype) + " of a wrong dtype, " +
                      std::to_string(extra) + " unexpected):";
    constexpr std::size_t kShown = 8;
    for (std::size_t i = 0; i < problems.size() && i < kShown; ++i) msg += "\n  " + problems[i];
    if (problems.size() > kShown) msg += "\n  ... and " + std::to_string(problems.size() - kShown) + " more";
    msg += "\n(check config.json's sizes — paligemma_variant, action_expert_variant, action_dim, "
           "vision/vlm/expert — against the file)";
    return invalid_argument(msg);
  }
  return ck;
}

Expected<Tensor> Checkpoint::weight(std::string_view name) const {
  if (name == kEmbedding && file_.find(kEmbedding) == nullptr) return file_.tensor(kEmbeddingAlias);
  return file_.tensor(name);
}

}  // namespace edgevla::model
