#include "runtime/model/groot/config.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::string_view kConfigFix =
    "a GR00T N1.6 checkpoint's config.json has it: copy the published config.json again or "
    "regenerate the checkpoint (tests/reference/groot/make_checkpoint.py)";
constexpr std::string_view kEagleFix =
    "copy gr00t/model/modules/nvidia/Eagle-Block2A-2B-v2 of the GR00T source there (the "
    "published checkpoint takes its backbone config and tokenizer from it)";

// A JSON object and the words that locate it in messages ("<file>: 'text_config'").
struct Obj {
  const json& j;
  std::string where;
  std::string_view fix;

  Status missing(std::string_view key) const {
    return invalid_argument(where + ": '" + std::string(key) + "' is missing; " + std::string(fix));
  }

  Status integer(std::string_view key, std::int64_t lo, std::int64_t hi, auto& out) const {
    auto it = j.find(key);
    if (it == j.end()) return missing(key);
    if (!it->is_number_integer()) {
      return invalid_argument(where + ": '" + std::string(key) + "' must be an integer, got " +
                              it->dump());
    }
    const auto v = it->get<std::int64_t>();
    if (v < lo || v > hi) {
      return out_of_range(where + ": '" + std::string(key) + "' = " + std::to_string(v) +
                          " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    }
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return Status::ok();
  }

  Status number(std::string_view key, double lo, double hi, double& out) const {
    auto it = j.find(key);
    if (it == j.end()) return missing(key);
    if (!it->is_number())
      return invalid_argument(where + ": '" + std::string(key) + "' must be a number, got " +
                              it->dump());
    const double v = it->get<double>();
    if (!(v > lo && v <= hi)) {
      return out_of_range(where + ": '" + std::string(key) + "' = " + it->dump() + " is outside (" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    out = v;
    return Status::ok();
  }

  // Absent keeps `out` (switches whose N1.6 value the model is written for).
  Status flag(std::string_view key, bool& out) const {
    auto it = j.find(key);
    if (it == j.end()) return Status::ok();
    if (!it->is_boolean())
      return invalid_argument(where + ": '" + std::string(key) + "' must be true or false, got " +
                              it->dump());
    out = it->get<bool>();
    return Status::ok();
  }

  // A setting the model is written for: absent is fine, another value is an error.
  Status expect(std::string_view key, const json& value) const {
    auto it = j.find(key);
    if (it == j.end() || *it == value) return Status::ok();
    return invalid_argument(where + ": '" + std::string(key) + "' is " + it->dump() +
                            "; GR00T N1.6 as edgevla runs it needs " + value.dump() +
                            " (is this a GR00T N1.6 checkpoint?)");
  }

  Expected<Obj> child(std::string_view key) const {
    auto it = j.find(key);
    if (it == j.end()) return missing(key);
    if (!it->is_object())
      return invalid_argument(where + ": '" + std::string(key) + "' must be an object");
    return Obj{*it, where + ": '" + std::string(key) + "'", fix};
  }
};

Expected<json> read_json(const std::string& path, std::string_view fix) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("groot: '" + path + "' does not exist; " + std::string(fix));
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {  // parse errors and numbers out of range (1e400)
    return data_loss("groot: '" + path + "' is not valid JSON (" + e.what() +
                     "): it is truncated or corrupt; " + std::string(fix));
  }
}

// Tells another family or GR00T version apart before any size is read.
Status check_family(const json& j, const std::string& origin) {
  if (!j.is_object())
    return invalid_argument("groot: " + origin + " does not hold a JSON object; " +
                            std::string(kConfigFix));
  auto it = j.find("model_type");
  if (it == j.end() || !it->is_string()) {
    if (j.contains("paligemma_variant") || j.contains("action_expert_variant")) {
      return invalid_argument("groot: " + origin +
                              " is a pi0 / pi0.5 checkpoint's config (openpi keys), not GR00T: "
                              "run it with family pi0");
    }
    return invalid_argument("groot: " + origin +
                            " has no model_type; a GR00T N1.6 config.json says model_type \"" +
                            std::string(kModelType) + "\"; " + std::string(kConfigFix));
  }
  const std::string type = it->get<std::string>();
  if (type == kModelType) return Status::ok();
  std::string lower;
  for (char c : type) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("n1_5") != std::string::npos || lower.find("n1.5") != std::string::npos ||
      lower.find("n1d5") != std::string::npos) {
    return invalid_argument("groot: " + origin + " is a GR00T N1.5 checkpoint (model_type \"" +
                            type + "\"); edgevla's groot family runs N1.6 (\"" +
                            std::string(kModelType) +
                            "\"): use a GR00T-N1.6 checkpoint such as nvidia/GR00T-N1.6-3B");
  }
  return invalid_argument("groot: " + origin + " has model_type \"" + type +
                          "\", not GR00T N1.6's \"" + std::string(kModelType) +
                          "\": point the groot family at a GR00T N1.6 checkpoint");
}

constexpr std::int64_t kBig = 1 << 20;

Status read_vision(const Obj& v, VisionConfig& c) {
  EDGEVLA_RETURN_IF_ERROR(v.integer("hidden_size", 1, kBig, c.hidden_size));
  EDGEVLA_RETURN_IF_ERROR(v.integer("num_hidden_layers", 1, 1024, c.num_layers));
  EDGEVLA_RETURN_IF_ERROR(v.integer("num_attention_heads", 1, 4096, c.num_heads));
  EDGEVLA_RETURN_IF_ERROR(v.integer("intermediate_size", 1, kBig, c.intermediate_size));
  EDGEVLA_RETURN_IF_ERROR(v.integer("patch_size", 1, 1024, c.patch_size));
  EDGEVLA_RETURN_IF_ERROR(v.integer("num_patches", 1, kBig, c.num_patches));
  EDGEVLA_RETURN_IF_ERROR(v.integer("num_channels", 1, 16, c.num_channels));
  EDGEVLA_RETURN_IF_ERROR(v.number("layer_norm_eps", 0.0, 1.0, c.layer_norm_eps));
  EDGEVLA_RETURN_IF_ERROR(v.expect("hidden_act", "gelu_pytorch_tanh"));
  EDGEVLA_RETURN_IF_ERROR(v.expect("use_rope", false));
  EDGEVLA_RETURN_IF_ERROR(v.expect("use_windows_attn", false));
  return Status::ok();
}

Status read_text(const Obj& t, TextConfig& c) {
  EDGEVLA_RETURN_IF_ERROR(t.integer("hidden_size", 1, kBig, c.hidden_size));
  EDGEVLA_RETURN_IF_ERROR(t.integer("num_hidden_layers", 1, 1024, c.num_layers));
  EDGEVLA_RETURN_IF_ERROR(t.integer("num_attention_heads", 1, 4096, c.num_heads));
  EDGEVLA_RETURN_IF_ERROR(t.integer("num_key_value_heads", 1, 4096, c.num_kv_heads));
  EDGEVLA_RETURN_IF_ERROR(t.integer("head_dim", 1, 4096, c.head_dim));
  EDGEVLA_RETURN_IF_ERROR(t.integer("intermediate_size", 1, kBig, c.intermediate_size));
  EDGEVLA_RETURN_IF_ERROR(t.integer("vocab_size", 1, std::int64_t{1} << 24, c.vocab_size));
  EDGEVLA_RETURN_IF_ERROR(t.number("rms_norm_eps", 0.0, 1.0, c.rms_norm_eps));
  EDGEVLA_RETURN_IF_ERROR(t.number("rope_theta", 0.0, 1e12, c.rope_theta));
  EDGEVLA_RETURN_IF_ERROR(t.flag("tie_word_embeddings", c.tie_word_embeddings));
  EDGEVLA_RETURN_IF_ERROR(t.expect("hidden_act", "silu"));
  EDGEVLA_RETURN_IF_ERROR(t.expect("attention_bias", false));
  EDGEVLA_RETURN_IF_ERROR(t.expect("rope_scaling", nullptr));
  return Status::ok();
}

}  // namespace

int VisionConfig::position_grid() const {
  const int g = static_cast<int>(std::lround(std::sqrt(static_cast<double>(num_patches))));
  return g * g == num_patches ? g : 0;
}

Status GrootConfig::validate() const {
  std::vector<std::string> broken;
  auto rule = [&](bool ok, const std::string& what) {
    if (!ok) broken.push_back(what);
  };
  rule(vision.hidden_size % vision.num_heads == 0,
       "vision_config hidden_size " + std::to_string(vision.hidden_size) +
           " must split into num_attention_heads " + std::to_string(vision.num_heads));
  rule(
      vision.position_grid() > 0,
      "vision_config num_patches " + std::to_string(vision.num_patches) + " must be a square grid");
  rule(text.num_heads % text.num_kv_heads == 0,
       "text_config num_attention_heads " + std::to_string(text.num_heads) +
           " must group over num_key_value_heads " + std::to_string(text.num_kv_heads));
  rule(select_layer >= 1 && select_layer <= text.num_layers,
       "select_layer " + std::to_string(select_layer) + " must be within the LLM's 1.." +
           std::to_string(text.num_layers) + " layers");
  rule(backbone_embedding_dim == text.hidden_size,
       "backbone_embedding_dim " + std::to_string(backbone_embedding_dim) +
           " must equal the LLM width (text_config hidden_size " +
           std::to_string(text.hidden_size) + ")");
  rule(dit.inner_dim() == input_embedding_dim,
       "diffusion_model_cfg num_attention_heads x attention_head_dim = " +
           std::to_string(dit.inner_dim()) + " must equal input_embedding_dim " +
           std::to_string(input_embedding_dim));
  rule(dit.output_dim == hidden_size, "diffusion_model_cfg output_dim " +
                                          std::to_string(dit.output_dim) +
                                          " must equal hidden_size " + std::to_string(hidden_size) +
                                          " (the action decoder reads the DiT output)");
  rule(attend_text_every_n_blocks == 2, "attend_text_every_n_blocks " +
                                            std::to_string(attend_text_every_n_blocks) +
                                            " is not 2 (N1.6's text / image alternation of "
                                            "cross-attention blocks, the one implemented)");
  rule(dit.num_layers % 4 == 0, "diffusion_model_cfg num_layers " + std::to_string(dit.num_layers) +
                                    " must be a multiple of 4 (self, text, self, image blocks)");
  rule(max_seq_len >= action_horizon, "max_seq_len " + std::to_string(max_seq_len) +
                                          " must cover action_horizon " +
                                          std::to_string(action_horizon));
  rule(image_token_id >= 0 && image_token_id < text.vocab_size,
       "image_token_index " + std::to_string(image_token_id) + " must be inside the vocabulary (" +
           std::to_string(text.vocab_size) + ")");
  if (broken.empty()) return Status::ok();
  std::string msg = "groot: the config" + (dir.empty() ? std::string() : " of '" + dir + "'") +
                    " breaks " + std::to_string(broken.size()) + " rule(s):";
  for (const auto& b : broken) msg += "\n  " + b;
  return invalid_argument(
      msg +
      "\n(correct these sizes in config.json or the Eagle folder's config.json, or "
      "regenerate the checkpoint with tests/reference/groot/make_checkpoint.py)");
}

namespace {

Expected<GrootConfig> parse(const json& j, const std::string& origin, const json& e,
                            const std::string& eagle_origin) {
  EDGEVLA_RETURN_IF_ERROR(check_family(j, origin));
  if (!e.is_object())
    return invalid_argument("groot: " + eagle_origin + " does not hold a JSON object; " +
                            std::string(kEagleFix));
  GrootConfig c;
  const Obj top{j, "groot: " + origin, kConfigFix};
  const Obj eagle{e, "groot: " + eagle_origin, kEagleFix};
  if (auto it = j.find("model_name"); it != j.end() && it->is_string())
    c.model_name = it->get<std::string>();

  EDGEVLA_ASSIGN_OR_RETURN(Obj vision, eagle.child("vision_config"));
  EDGEVLA_RETURN_IF_ERROR(read_vision(vision, c.vision));
  EDGEVLA_ASSIGN_OR_RETURN(Obj text, eagle.child("text_config"));
  EDGEVLA_RETURN_IF_ERROR(read_text(text, c.text));
  EDGEVLA_RETURN_IF_ERROR(
      eagle.integer("image_token_index", 0, std::int64_t{1} << 24, c.image_token_id));
  EDGEVLA_RETURN_IF_ERROR(eagle.expect("use_pixel_shuffle", true));
  double ratio = 0;
  EDGEVLA_RETURN_IF_ERROR(eagle.number("downsample_ratio", 0.0, 1.0, ratio));
  c.unshuffle_factor = static_cast<int>(std::lround(1.0 / ratio));
  if (c.unshuffle_factor < 1 || std::abs(ratio * c.unshuffle_factor - 1.0) > 1e-9) {
    return invalid_argument(
        "groot: " + eagle_origin + ": 'downsample_ratio' " + std::to_string(ratio) +
        " is not 1/n (the pixel unshuffle merges n x n tokens); " + std::string(kEagleFix));
  }

  EDGEVLA_RETURN_IF_ERROR(top.integer("select_layer", 1, 1024, c.select_layer));
  EDGEVLA_RETURN_IF_ERROR(top.integer("backbone_embedding_dim", 1, kBig, c.backbone_embedding_dim));
  EDGEVLA_RETURN_IF_ERROR(top.integer("hidden_size", 1, kBig, c.hidden_size));
  EDGEVLA_RETURN_IF_ERROR(top.integer("input_embedding_dim", 1, kBig, c.input_embedding_dim));
  EDGEVLA_RETURN_IF_ERROR(top.integer("max_state_dim", 1, kBig, c.max_state_dim));
  EDGEVLA_RETURN_IF_ERROR(top.integer("max_action_dim", 1, kBig, c.max_action_dim));
  EDGEVLA_RETURN_IF_ERROR(top.integer("action_horizon", 1, kBig, c.action_horizon));
  EDGEVLA_RETURN_IF_ERROR(top.integer("max_num_embodiments", 1, 4096, c.max_num_embodiments));
  EDGEVLA_RETURN_IF_ERROR(top.integer("max_seq_len", 1, kBig, c.max_seq_len));
  EDGEVLA_RETURN_IF_ERROR(
      top.integer("attend_text_every_n_blocks", 1, 1024, c.attend_text_every_n_blocks));
  EDGEVLA_RETURN_IF_ERROR(
      top.integer("num_inference_timesteps", 1, 10000, c.num_inference_timesteps));
  EDGEVLA_RETURN_IF_ERROR(top.integer("num_timestep_buckets", 1, 1 << 24, c.num_timestep_buckets));
  EDGEVLA_RETURN_IF_ERROR(top.integer("shortest_image_edge", 1, 1 << 16, c.shortest_image_edge));
  EDGEVLA_RETURN_IF_ERROR(top.number("crop_fraction", 0.0, 1.0, c.crop_fraction));
  EDGEVLA_RETURN_IF_ERROR(top.flag("formalize_language", c.formalize_language));
  EDGEVLA_RETURN_IF_ERROR(top.flag("apply_sincos_state_encoding", c.apply_sincos_state_encoding));
  EDGEVLA_RETURN_IF_ERROR(top.flag("use_relative_action", c.use_relative_action));
  EDGEVLA_RETURN_IF_ERROR(top.expect("backbone_model_type", "eagle"));
  EDGEVLA_RETURN_IF_ERROR(top.expect("use_vlln", true));
  EDGEVLA_RETURN_IF_ERROR(top.expect("add_pos_embed", true));
  EDGEVLA_RETURN_IF_ERROR(top.expect("use_alternate_vl_dit", true));
  EDGEVLA_ASSIGN_OR_RETURN(Obj dit, top.child("diffusion_model_cfg"));
  EDGEVLA_RETURN_IF_ERROR(dit.integer("num_layers", 1, 1024, c.dit.num_layers));
  EDGEVLA_RETURN_IF_ERROR(dit.integer("num_attention_heads", 1, 4096, c.dit.num_heads));
  EDGEVLA_RETURN_IF_ERROR(dit.integer("attention_head_dim", 1, 4096, c.dit.head_dim));
  EDGEVLA_RETURN_IF_ERROR(dit.integer("output_dim", 1, kBig, c.dit.output_dim));
  EDGEVLA_RETURN_IF_ERROR(dit.expect("norm_type", "ada_norm"));
  EDGEVLA_RETURN_IF_ERROR(dit.expect("interleave_self_attention", true));
  EDGEVLA_RETURN_IF_ERROR(dit.expect("positional_embeddings", nullptr));
  return c;
}

Expected<json> parse_text(const std::string& text, const std::string& origin,
                          std::string_view fix) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse errors and numbers out of range (1e400)
    return data_loss("groot: " + origin + " is not valid JSON (" + e.what() + "); " +
                     std::string(fix));
  }
}

}  // namespace

Expected<GrootConfig> parse_config(const std::string& config_text, const std::string& origin,
                                   const std::string& eagle_text, const std::string& eagle_origin) {
  EDGEVLA_ASSIGN_OR_RETURN(json j, parse_text(config_text, origin, kConfigFix));
  EDGEVLA_ASSIGN_OR_RETURN(json e, parse_text(eagle_text, eagle_origin, kEagleFix));
  EDGEVLA_ASSIGN_OR_RETURN(GrootConfig c, parse(j, origin, e, eagle_origin));
  EDGEVLA_RETURN_IF_ERROR(c.validate());
  return c;
}

Expected<GrootConfig> load_config(const std::string& dir, const std::string& eagle_dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return not_found("groot: checkpoint folder '" + dir +
                     "' does not exist (generate one with "
                     "tests/reference/groot/make_checkpoint.py, or download nvidia/GR00T-N1.6-3B)");
  }
  const std::string origin = (fs::path(dir) / "config.json").string();
  EDGEVLA_ASSIGN_OR_RETURN(json j, read_json(origin, kConfigFix));
  EDGEVLA_RETURN_IF_ERROR(check_family(j, origin));
  std::string eagle = eagle_dir;
  if (eagle.empty()) {
    auto it = j.find("model_name");
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
      return invalid_argument("groot: " + origin +
                              ": 'model_name' is missing, so the Eagle folder cannot be found; " +
                              std::string(kConfigFix));
    }
    eagle = (fs::path(dir) / fs::path(it->get<std::string>()).filename()).string();
  }
  if (!fs::is_directory(eagle, ec)) {
    return not_found("groot: the backbone folder '" + eagle + "' does not exist; " +
                     std::string(kEagleFix));
  }
  const std::string eagle_origin = (fs::path(eagle) / "config.json").string();
  EDGEVLA_ASSIGN_OR_RETURN(json e, read_json(eagle_origin, kEagleFix));
  EDGEVLA_ASSIGN_OR_RETURN(GrootConfig c, parse(j, origin, e, eagle_origin));
  c.dir = dir;
  c.eagle_dir = eagle;
  EDGEVLA_RETURN_IF_ERROR(c.validate());
  return c;
}

}  // namespace edgevla::model::groot
