#include "runtime/model/groot/checkpoint.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "runtime/util/log.hpp"

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::string_view kFix =
    "download the checkpoint again (huggingface.co/nvidia/GR00T-N1.6-3B) or regenerate it "
    "(tests/reference/groot/make_checkpoint.py)";

std::string k(std::string_view prefix, const std::string& rest) {
  return std::string(prefix) + rest;
}

bool is_weight_dtype(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16; }

}  // namespace

std::vector<WeightSpec> expected_weights(const GrootConfig& c) {
  std::vector<WeightSpec> out;
  auto linear = [&](const std::string& name, std::int64_t o, std::int64_t i, bool bias = true) {
    out.push_back({name + ".weight", Shape{o, i}});
    if (bias) out.push_back({name + ".bias", Shape{o}});
  };
  auto layer_norm = [&](const std::string& name, std::int64_t w) {
    out.push_back({name + ".weight", Shape{w}});
    out.push_back({name + ".bias", Shape{w}});
  };

  // SigLIP2: the patch embedding is a Linear over (py, px, c) patches, with a bias (§8).
  const VisionConfig& v = c.vision;
  const std::int64_t dv = v.hidden_size;
  linear(k(kVisionPrefix, "embeddings.patch_embedding"), dv, v.patch_dim());
  out.push_back(
      {k(kVisionPrefix, "embeddings.position_embedding.weight"), Shape{v.num_patches, dv}});
  for (int i = 0; i < v.num_layers; ++i) {
    const std::string l = k(kVisionPrefix, "encoder.layers." + std::to_string(i) + ".");
    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"})
      linear(l + "self_attn." + p, dv, dv);
    layer_norm(l + "layer_norm1", dv);
    layer_norm(l + "layer_norm2", dv);
    linear(l + "mlp.fc1", v.intermediate_size, dv);
    linear(l + "mlp.fc2", dv, v.intermediate_size);
  }
  layer_norm(k(kVisionPrefix, "post_layernorm"), dv);

  // mlp1: LayerNorm over the unshuffled channels, Linear, GELU, Linear.
  const std::int64_t dt = c.text.hidden_size;
  layer_norm(k(kMlp1Prefix, "0"), c.mlp1_in());
  linear(k(kMlp1Prefix, "1"), dt, c.mlp1_in());
  linear(k(kMlp1Prefix, "3"), dt, dt);

  // Qwen3, the first select_layer layers.
  const TextConfig& t = c.text;
  const std::int64_t q = std::int64_t{t.num_heads} * t.head_dim,
                     kv = std::int64_t{t.num_kv_heads} * t.head_dim;
  out.push_back({std::string(kEmbedTokens), Shape{t.vocab_size, dt}});
  for (int i = 0; i < c.select_layer; ++i) {
    const std::string l = k(kLanguagePrefix, "model.layers." + std::to_string(i) + ".");
    linear(l + "self_attn.q_proj", q, dt, false);
    linear(l + "self_attn.k_proj", kv, dt, false);
    linear(l + "self_attn.v_proj", kv, dt, false);
    linear(l + "self_attn.o_proj", dt, q, false);
    out.push_back({l + "self_attn.q_norm.weight", Shape{t.head_dim}});
    out.push_back({l + "self_attn.k_norm.weight", Shape{t.head_dim}});
    linear(l + "mlp.gate_proj", t.intermediate_size, dt, false);
    linear(l + "mlp.up_proj", t.intermediate_size, dt, false);
    linear(l + "mlp.down_proj", dt, t.intermediate_size, false);
    out.push_back({l + "input_layernorm.weight", Shape{dt}});
    out.push_back({l + "post_attention_layernorm.weight", Shape{dt}});
  }
  out.push_back({k(kLanguagePrefix, "model.norm.weight"), Shape{dt}});
  out.push_back({std::string(kLmHead), Shape{t.vocab_size, dt}, false});

  // Action head: category-specific linears hold W [embodiments, in, out] and b [embodiments, out].
  const std::int64_t n = c.max_num_embodiments, hs = c.hidden_size, ei = c.input_embedding_dim;
  auto category = [&](const std::string& name, std::int64_t in, std::int64_t o) {
    out.push_back({k(kActionHeadPrefix, name + ".W"), Shape{n, in, o}});
    out.push_back({k(kActionHeadPrefix, name + ".b"), Shape{n, o}});
  };
  category("state_encoder.layer1", c.max_state_dim, hs);
  category("state_encoder.layer2", hs, ei);
  category("action_encoder.W1", c.max_action_dim, ei);
  category("action_encoder.W2", 2 * ei, ei);
  category("action_encoder.W3", ei, ei);
  category("action_decoder.layer1", hs, hs);
  category("action_decoder.layer2", hs, c.max_action_dim);
  layer_norm(k(kActionHeadPrefix, "vlln"), c.backbone_embedding_dim);
  out.push_back({k(kActionHeadPrefix, "position_embedding.weight"), Shape{c.max_seq_len, ei}});

  // DiT: odd blocks self-attend over the action tokens; even blocks cross-attend to the
  // backbone features, so their K/V read backbone_embedding_dim.
  const std::int64_t e = c.dit.inner_dim();
  linear(k(kDitPrefix, "timestep_encoder.timestep_embedder.linear_1"), e, 256);
  linear(k(kDitPrefix, "timestep_encoder.timestep_embedder.linear_2"), e, e);
  for (int i = 0; i < c.dit.num_layers; ++i) {
    const std::string b = k(kDitPrefix, "transformer_blocks." + std::to_string(i) + ".");
    const std::int64_t kv_in = i % 2 == 1 ? e : c.backbone_embedding_dim;
    linear(b + "norm1.linear", 2 * e, e);
    linear(b + "attn1.to_q", e, e);
    linear(b + "attn1.to_k", e, kv_in);
    linear(b + "attn1.to_v", e, kv_in);
    linear(b + "attn1.to_out.0", e, e);
    linear(b + "ff.net.0.proj", c.ff_dim(), e);
    linear(b + "ff.net.2", e, c.ff_dim());
  }
  linear(k(kDitPrefix, "proj_out_1"), 2 * e, e);
  linear(k(kDitPrefix, "proj_out_2"), c.dit.output_dim, e);
  return out;
}

namespace {

// {file name: [tensor names]} from model.safetensors.index.json, and its total_size (-1 absent).
struct Index {
  std::map<std::string, std::vector<std::string>> files;
  std::int64_t total_size = -1;
};

Expected<Index> read_index(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("groot: cannot open '" + path + "'; " + std::string(kFix));
  std::stringstream ss;
  ss << f.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::exception& e) {  // parse errors and numbers out of range (1e400)
    return data_loss("groot: '" + path + "' is not valid JSON (" + e.what() +
                     "): it is truncated or corrupt; " + std::string(kFix));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    return data_loss("groot: '" + path + "' has no \"weight_map\" object; " + std::string(kFix));
  }
  Index index;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        fs::path(file.get<std::string>()).filename().string() != file.get<std::string>()) {
      return data_loss("groot: '" + path + "' maps '" + name + "' to " + file.dump() +
                       ", not a file name in the checkpoint folder; " + std::string(kFix));
    }
    index.files[file.get<std::string>()].push_back(name);
  }
  if (auto m = j.find("metadata"); m != j.end() && m->is_object()) {
    if (auto t = m->find("total_size"); t != m->end() && t->is_number_integer())
      index.total_size = t->get<std::int64_t>();
  }
  return index;
}

}  // namespace

Expected<Checkpoint> Checkpoint::open(const std::string& dir, const OpenOptions& options) {
  Checkpoint ck;
  EDGEVLA_ASSIGN_OR_RETURN(ck.config_, load_config(dir, options.eagle_dir));
  const fs::path root(dir);
  const std::string index_path = (root / "model.safetensors.index.json").string();
  const std::string single_path = (root / "model.safetensors").string();
  std::error_code ec;
  std::vector<std::string> problems;
  std::uint64_t stored_bytes = 0;
  if (fs::exists(index_path, ec)) {
    EDGEVLA_ASSIGN_OR_RETURN(Index index, read_index(index_path));
    for (const auto& [file, names] : index.files) {
      const std::string shard_path = (root / file).string();
      if (!fs::exists(shard_path, ec)) {
        return not_found("groot: shard '" + shard_path + "' (named by " + index_path + " for " +
                         std::to_string(names.size()) + " tensors, e.g. '" + names.front() +
                         "') is missing; " + std::string(kFix));
      }
      EDGEVLA_ASSIGN_OR_RETURN(SafetensorsFile shard, SafetensorsFile::open(shard_path));
      const std::size_t at = ck.shards_.size();
      std::set<std::string, std::less<>> listed(names.begin(), names.end());
      for (const std::string& name : names) {
        if (shard.find(name) == nullptr) {
          problems.push_back(name + " is mapped to " + file +
                             " by the index, which does not hold it");
        }
      }
      for (const SafetensorsEntry& entry : shard.entries()) {
        stored_bytes += entry.end - entry.begin;
        if (!listed.contains(entry.name)) {
          problems.push_back(entry.name + " is in " + file + " but the index does not list it");
        } else {
          ck.where_[entry.name] = at;
        }
      }
      ck.shards_.push_back(std::move(shard));
    }
    if (index.total_size >= 0 && problems.empty() &&
        static_cast<std::uint64_t>(index.total_size) != stored_bytes) {
      problems.push_back("the index's total_size is " + std::to_string(index.total_size) +
                         " bytes but its shards hold " + std::to_string(stored_bytes));
    }
  } else if (fs::exists(single_path, ec)) {
    EDGEVLA_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(single_path));
    for (const SafetensorsEntry& entry : file.entries()) ck.where_[entry.name] = 0;
    ck.shards_.push_back(std::move(file));
  } else {
    return not_found("groot: checkpoint '" + dir +
                     "' has neither model.safetensors.index.json (with its shards) nor "
                     "model.safetensors; " +
                     std::string(kFix));
  }

  // The file set against the weights the configs imply.
  std::size_t missing = 0, misshaped = 0, bad_dtype = 0, extra = 0;
  std::set<std::string, std::less<>> expected_names;
  for (const WeightSpec& w : expected_weights(ck.config_)) {
    expected_names.insert(w.name);
    auto it = ck.where_.find(w.name);
    if (it == ck.where_.end()) {
      if (!w.required) continue;
      ++missing;
      problems.push_back("missing " + w.name + " (expected " + w.shape.to_string() + ")");
      continue;
    }
    const SafetensorsEntry* e = ck.shards_[it->second].find(w.name);
    if (!(e->shape == w.shape)) {
      ++misshaped;
      problems.push_back(w.name + " is " + e->shape.to_string() + ", expected " +
                         w.shape.to_string());
    } else if (!is_weight_dtype(e->dtype)) {
      ++bad_dtype;
      problems.push_back(w.name + " is " + std::string(dtype_name(e->dtype)) +
                         " (weights must be f32, bf16 or f16)");
    } else if (w.required) {
      ck.weight_bytes_ += e->end - e->begin;
    }
  }
  const std::string head = k(kVisionPrefix, "head.");
  for (const auto& [name, shard] : ck.where_) {
    if (!expected_names.contains(name) && !name.starts_with(head)) {
      ++extra;
      problems.push_back("unexpected " + name + " " +
                         ck.shards_[shard].find(name)->shape.to_string());
    }
  }
  if (!problems.empty()) {
    const GrootConfig& c = ck.config_;
    std::string msg = "groot: checkpoint '" + dir +
                      "' does not match a GR00T N1.6 model with the sizes of its configs (" +
                      std::to_string(missing) + " missing, " + std::to_string(misshaped) +
                      " misshaped, " + std::to_string(bad_dtype) + " of a wrong dtype, " +
                      std::to_string(extra) + " unexpected):";
    constexpr std::size_t kShown = 8;
    for (std::size_t i = 0; i < problems.size() && i < kShown; ++i) msg += "\n  " + problems[i];
    if (problems.size() > kShown)
      msg += "\n  ... and " + std::to_string(problems.size() - kShown) + " more";
    msg += "\n(sizes from " + (fs::path(dir) / "config.json").string() + " and " +
           (fs::path(c.eagle_dir) / "config.json").string() + ": select_layer " +
           std::to_string(c.select_layer) + ", vision " + std::to_string(c.vision.num_layers) +
           " x " + std::to_string(c.vision.hidden_size) + ", LLM width " +
           std::to_string(c.text.hidden_size) + ", DiT " + std::to_string(c.dit.num_layers) +
           " x " + std::to_string(c.dit.inner_dim()) + "; if they are right, " + std::string(kFix) +
           ")";
    return invalid_argument(msg);
  }

  // The text config ties lm_head to embed_tokens; the checkpoint holds both (§8).
  if (ck.has(kLmHead)) {
    auto embed = ck.weight(kEmbedTokens);
    auto lm_head = ck.weight(kLmHead);
    if (!embed) return embed.status();
    if (!lm_head) return lm_head.status();
    const std::span<const std::byte> a = embed->bytes(), b = lm_head->bytes();
    ck.lm_head_tied_ = embed->dtype() == lm_head->dtype() && a.size() == b.size() &&
                       std::memcmp(a.data(), b.data(), a.size()) == 0;
    if (!ck.lm_head_tied_) {
      logger().warn(
          "groot: checkpoint '{}': lm_head.weight differs from embed_tokens.weight although the "
          "text config "
          "ties them; edgevla embeds with embed_tokens",
          dir);
    }
  }
  return ck;
}

Expected<Tensor> Checkpoint::weight(std::string_view name) const {
  auto it = where_.find(name);
  if (it == where_.end()) {
    return not_found("groot: checkpoint '" + config_.dir + "' has no tensor '" + std::string(name) +
                     "'");
  }
  return shards_[it->second].tensor(name);
}

}  // namespace edgevla::model::groot
