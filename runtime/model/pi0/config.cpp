#include "runtime/model/pi0/config.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace edgevla::model {
namespace {

using Json = nlohmann::json;

std::string where(const std::string& origin, std::string_view key) {
  return origin + ": '" + std::string(key) + "'";
}

// Reads an integer member in [lo, hi]; absent keeps `out`.
Status read_int(const Json& obj, std::string_view key, const std::string& origin, int lo,
                std::int64_t hi, auto& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::ok();
  if (!it->is_number_integer()) {
    return invalid_argument(where(origin, key) + " must be an integer, got " + it->dump());
  }
  const std::int64_t v = it->get<std::int64_t>();
  if (v < lo || v > hi) {
    return out_of_range(where(origin, key) + " = " + std::to_string(v) + " is outside " +
                        std::to_string(lo) + ".." + std::to_string(hi));
  }
  out = static_cast<std::remove_reference_t<decltype(out)>>(v);
  return Status::ok();
}

Status check_keys(const Json& obj, const std::set<std::string, std::less<>>& known,
                  const std::string& origin) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!known.contains(it.key())) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return invalid_argument(where(origin, it.key()) + " is not a known config key (known: " +
                              list + ")");
    }
  }
  return Status::ok();
}

Status read_gemma(const Json& obj, const std::string& origin, GemmaDims& g, bool with_vocab) {
  if (!obj.is_object()) return invalid_argument(origin + " must be an object");
  std::set<std::string, std::less<>> known = {"width",        "depth",    "mlp_dim", "num_heads",
                                              "num_kv_heads", "head_dim"};
  if (with_vocab) known.insert("vocab_size");
  EDGEVLA_RETURN_IF_ERROR(check_keys(obj, known, origin));
  for (const auto& k : known) {
    if (!obj.contains(k)) {
      return invalid_argument(where(origin, k) + " is missing (a custom size needs all of width, "
                              "depth, mlp_dim, num_heads, num_kv_heads, head_dim" +
                              std::string(with_vocab ? ", vocab_size)" : ")"));
    }
  }
  EDGEVLA_RETURN_IF_ERROR(read_int(obj, "width", origin, 1, 1 << 16, g.width));
  EDGEVLA_RETURN_IF_ERROR(read_int(obj, "depth", origin, 1, 1024, g.depth));
  EDGEVLA_RETURN_IF_ERROR(read_int(obj, "mlp_dim", origin, 1, 1 << 20, g.mlp_dim));
  EDGEVLA_RETURN_IF_ERROR(read_int(obj, "num_heads", origin, 1, 1024, g.num_heads));
  EDGEVLA_RETURN_IF_ERROR(read_int(obj, "num_kv_heads", origin, 1, 1024, g.num_kv_heads));
  EDGEVLA_RETURN_IF_ERROR(read_int(obj, "head_dim", origin, 2, 4096, g.head_dim));
  if (with_vocab) {
    EDGEVLA_RETURN_IF_ERROR(read_int(obj, "vocab_size", origin, 4, std::int64_t{1} << 24, g.vocab_size));
  }
  g.variant = "custom";
  return Status::ok();
}

Json gemma_json(const GemmaDims& g, bool with_vocab) {
  Json j = {{"width", g.width},         {"depth", g.depth},
            {"mlp_dim", g.mlp_dim},     {"num_heads", g.num_heads},
            {"num_kv_heads", g.num_kv_heads}, {"head_dim", g.head_dim}};
  if (with_vocab) j["vocab_size"] = g.vocab_size;
  return j;
}

}  // namespace

std::string_view model_type_name(ModelType type) { return type == ModelType::kPi0 ? "pi0" : "pi05"; }

Expected<ModelType> parse_model_type(std::string_view name) {
  if (name == "pi0") return ModelType::kPi0;
  if (name == "pi05" || name == "pi0.5") return ModelType::kPi05;
  return invalid_argument("model type '" + std::string(name) + "' is unknown (use pi0 or pi05)");
}

Expected<GemmaDims> gemma_variant(std::string_view name) {
  GemmaDims g;
  g.variant = std::string(name);
  if (name == "gemma_2b" || name == "gemma_2b_lora") {
    g.width = 2048, g.depth = 18, g.mlp_dim = 16384, g.num_heads = 8, g.num_kv_heads = 1,
    g.head_dim = 256, g.vocab_size = 257152;
    return g;
  }
  if (name == "gemma_300m" || name == "gemma_300m_lora") {
    g.width = 1024, g.depth = 18, g.mlp_dim = 4096, g.num_heads = 8, g.num_kv_heads = 1,
    g.head_dim = 256, g.vocab_size = 257152;
    return g;
  }
  return invalid_argument("Gemma variant '" + std::string(name) +
                          "' is unknown (use gemma_2b, gemma_300m, their _lora forms, or "
                          "'custom' with explicit sizes)");
}

Status ModelConfig::validate() const {
  auto bad = [](std::string m) { return invalid_argument("model config: " + std::move(m)); };
  if (vision.image_size % vision.patch_size != 0) {
    return bad("vision.image_size " + std::to_string(vision.image_size) +
               " is not a multiple of vision.patch_size " + std::to_string(vision.patch_size));
  }
  if (vision.width % vision.num_heads != 0) {
    return bad("vision.width " + std::to_string(vision.width) + " is not divisible by "
               "vision.num_heads " + std::to_string(vision.num_heads));
  }
  if (vlm.depth != expert.depth) {
    return bad("vlm.depth " + std::to_string(vlm.depth) + " != expert.depth " +
               std::to_string(expert.depth) + " (the towers share every layer's attention)");
  }
  if (vlm.num_heads != expert.num_heads || vlm.num_kv_heads != expert.num_kv_heads ||
      vlm.head_dim != expert.head_dim) {
    return bad("heads differ between vlm and expert (num_heads, num_kv_heads and head_dim "
               "must be equal)");
  }
  if (vlm.num_heads % vlm.num_kv_heads != 0) {
    return bad("num_heads " + std::to_string(vlm.num_heads) + " is not divisible by num_kv_heads " +
               std::to_string(vlm.num_kv_heads));
  }
  if (vlm.head_dim % 2 != 0) return bad("head_dim must be even (rotary embedding)");
  if (expert.width % 2 != 0) return bad("expert.width must be even (sin-cos time embedding)");
  if (cameras.empty()) return bad("'cameras' is empty");
  if (action_dim < 1 || action_horizon < 1) return bad("action_dim and action_horizon must be >= 1");
  if (num_steps < 1) return bad("num_steps must be >= 1");
  return Status::ok();
}

Expected<ModelConfig> parse_config(const std::string& json_text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    return invalid_argument(origin + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) return invalid_argument(origin + " must hold a JSON object");
  EDGEVLA_RETURN_IF_ERROR(check_keys(
      j,
      {"action_dim", "action_horizon", "paligemma_variant", "action_expert_variant", "precision",
       "model_type", "max_token_len", "discrete_state_input", "num_steps", "asset_id", "cameras",
       "vision", "vlm", "expert"},
      origin));

  ModelConfig c;
  EDGEVLA_RETURN_IF_ERROR(read_int(j, "action_dim", origin, 1, 4096, c.action_dim));
  EDGEVLA_RETURN_IF_ERROR(read_int(j, "action_horizon", origin, 1, 4096, c.action_horizon));
  EDGEVLA_RETURN_IF_ERROR(read_int(j, "max_token_len", origin, 1, 1 << 16, c.max_token_len));
  EDGEVLA_RETURN_IF_ERROR(read_int(j, "num_steps", origin, 1, 10000, c.num_steps));

  auto str = [&](std::string_view key, std::string& out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return Status::ok();
    if (!it->is_string()) return invalid_argument(where(origin, key) + " must be a string");
    out = it->get<std::string>();
    return Status::ok();
  };
  EDGEVLA_RETURN_IF_ERROR(str("precision", c.precision));
  EDGEVLA_RETURN_IF_ERROR(str("asset_id", c.asset_id));
  if (c.precision != "float32" && c.precision != "bfloat16" && c.precision != "float16") {
    return invalid_argument(where(origin, "precision") + " = '" + c.precision +
                            "' (use float32, bfloat16 or float16)");
  }
  if (auto it = j.find("model_type"); it != j.end()) {
    if (!it->is_string()) return invalid_argument(where(origin, "model_type") + " must be a string");
    auto t = parse_model_type(it->get<std::string>());
    if (!t) return t.status().with_context(origin);
    c.type = *t;
    c.model_type_given = true;
  }
  if (auto it = j.find("discrete_state_input"); it != j.end()) {
    if (!it->is_boolean()) {
      return invalid_argument(where(origin, "discrete_state_input") + " must be true or false");
    }
    c.discrete_state_input = it->get<bool>() ? 1 : 0;
  }
  if (auto it = j.find("cameras"); it != j.end()) {
    if (!it->is_array() || it->empty()) {
      return invalid_argument(where(origin, "cameras") + " must be a non-empty list of names");
    }
    c.cameras.clear();
    for (const auto& name : *it) {
      if (!name.is_string()) return invalid_argument(where(origin, "cameras") + " must hold strings");
      c.cameras.push_back(name.get<std::string>());
    }
  }

  // Towers: a named variant, or "custom" with an explicit object (which may also refine a
  // named variant when both are given).
  auto tower = [&](std::string_view variant_key, std::string_view dims_key, std::string_view def,
                   GemmaDims& out, bool with_vocab) -> Status {
    std::string variant(def);
    EDGEVLA_RETURN_IF_ERROR(str(variant_key, variant));
    const bool has_dims = j.contains(dims_key);
    if (variant == "custom") {
      if (!has_dims) {
        return invalid_argument(where(origin, variant_key) + " is 'custom' but '" +
                                std::string(dims_key) + "' gives no sizes");
      }
      return read_gemma(j[std::string(dims_key)], origin + ": '" + std::string(dims_key) + "'", out,
                        with_vocab);
    }
    auto g = gemma_variant(variant);
    if (!g) return g.status().with_context(where(origin, variant_key));
    out = *g;
    if (has_dims) {
      return invalid_argument(where(origin, dims_key) + " is given but " +
                              std::string(variant_key) + " is '" + variant +
                              "' (set it to 'custom' to use explicit sizes)");
    }
    return Status::ok();
  };
  EDGEVLA_RETURN_IF_ERROR(tower("paligemma_variant", "vlm", "gemma_2b", c.vlm, true));
  EDGEVLA_RETURN_IF_ERROR(tower("action_expert_variant", "expert", "gemma_300m", c.expert, false));

  if (auto it = j.find("vision"); it != j.end()) {
    const std::string o = origin + ": 'vision'";
    if (!it->is_object()) return invalid_argument(o + " must be an object");
    EDGEVLA_RETURN_IF_ERROR(check_keys(
        *it, {"image_size", "patch_size", "width", "depth", "mlp_dim", "num_heads"}, o));
    EDGEVLA_RETURN_IF_ERROR(read_int(*it, "image_size", o, 1, 8192, c.vision.image_size));
    EDGEVLA_RETURN_IF_ERROR(read_int(*it, "patch_size", o, 1, 8192, c.vision.patch_size));
    EDGEVLA_RETURN_IF_ERROR(read_int(*it, "width", o, 1, 1 << 16, c.vision.width));
    EDGEVLA_RETURN_IF_ERROR(read_int(*it, "depth", o, 1, 1024, c.vision.depth));
    EDGEVLA_RETURN_IF_ERROR(read_int(*it, "mlp_dim", o, 1, 1 << 20, c.vision.mlp_dim));
    EDGEVLA_RETURN_IF_ERROR(read_int(*it, "num_heads", o, 1, 1024, c.vision.num_heads));
  }
  if (Status s = c.validate(); !s.is_ok()) return s.with_context(origin);
  return c;
}

Expected<ModelConfig> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return not_found("model config '" + path + "' cannot be opened (a checkpoint folder holds "
                     "config.json next to model.safetensors)");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

std::string config_to_json(const ModelConfig& c) {
  Json j;
  j["action_dim"] = c.action_dim;
  j["action_horizon"] = c.action_horizon;
  j["paligemma_variant"] = c.vlm.variant;
  j["action_expert_variant"] = c.expert.variant;
  j["precision"] = c.precision;
  j["model_type"] = std::string(model_type_name(c.type));
  if (c.max_token_len > 0) j["max_token_len"] = c.max_token_len;
  if (c.discrete_state_input >= 0) j["discrete_state_input"] = c.discrete_state_input != 0;
  if (c.num_steps != 10) j["num_steps"] = c.num_steps;
  if (!c.asset_id.empty()) j["asset_id"] = c.asset_id;
  if (c.cameras != ModelConfig{}.cameras) j["cameras"] = c.cameras;
  if (!(c.vision == VisionDims{})) {
    j["vision"] = {{"image_size", c.vision.image_size}, {"patch_size", c.vision.patch_size},
                   {"width", c.vision.width},           {"depth", c.vision.depth},
                   {"mlp_dim", c.vision.mlp_dim},       {"num_heads", c.vision.num_heads}};
  }
  if (c.vlm.variant == "custom") j["vlm"] = gemma_json(c.vlm, true);
  if (c.expert.variant == "custom") j["expert"] = gemma_json(c.expert, false);
  return j.dump(2) + "\n";
}

Expected<ModelConfig> preset_config(std::string_view name, ModelType type) {
  ModelConfig c;
  c.type = type;
  c.model_type_given = true;
  if (name == "pi0" || name == "pi05") {
    c.type = name == "pi0" ? ModelType::kPi0 : ModelType::kPi05;
    c.vlm = *gemma_variant("gemma_2b");
    c.expert = *gemma_variant("gemma_300m");
    c.action_horizon = 50;
    return c;
  }
  auto gemma = [](int width, int depth, int mlp, int heads, int kv, int hd, std::int64_t vocab) {
    GemmaDims g;
    g.width = width, g.depth = depth, g.mlp_dim = mlp, g.num_heads = heads, g.num_kv_heads = kv,
    g.head_dim = hd, g.vocab_size = vocab;
    return g;
  };
  if (name == "tiny") {
    c.vision = VisionDims{224, 14, 32, 2, 64, 2};
    c.vlm = gemma(64, 2, 128, 2, 1, 16, 1024);
    c.expert = gemma(32, 2, 64, 2, 1, 16, 0);
    c.action_horizon = 10;
    c.max_token_len = 48;
  } else if (name == "small") {
    c.vision = VisionDims{224, 14, 256, 4, 1024, 4};
    c.vlm = gemma(512, 6, 2048, 8, 1, 64, 4096);
    c.expert = gemma(256, 6, 1024, 8, 1, 64, 0);
    c.action_horizon = 50;
    c.max_token_len = 64;
  } else {
    return invalid_argument("model preset '" + std::string(name) +
                            "' is unknown (use tiny, small, pi0, pi05, or a config.json path)");
  }
  EDGEVLA_RETURN_IF_ERROR(c.validate());
  return c;
}

}  // namespace edgevla::model
