#include "runtime/model/groot/processor.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::string_view kFix =
    "copy the checkpoint's file again (huggingface.co/nvidia/GR00T-N1.6-3B or the fine-tune's "
    "folder) or regenerate the checkpoint (`edgevla model init --family groot`)";

Status bad(const std::string& where, const std::string& what) {
  return invalid_argument("groot: " + where + " " + what + "; " + std::string(kFix));
}

Expected<std::string> read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("groot: '" + path + "' does not exist; " + std::string(kFix));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Expected<json> parse_json(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return data_loss("groot: '" + origin + "' is not valid JSON (" + e.what() +
                     "): it is truncated or corrupt; " + std::string(kFix));
  }
}

// A list of strings; null (or absent when `optional`) gives an empty list.
Status strings(const json& obj, const std::string& key, const std::string& where, bool optional,
               std::vector<std::string>& out) {
  out.clear();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (optional) return Status::ok();
    return bad(where, "has no '" + key + "'");
  }
  if (!it->is_array()) return bad(where + "." + key, "must be a list of strings, got " + it->dump());
  for (const json& v : *it) {
    if (!v.is_string()) return bad(where + "." + key, "holds " + v.dump() + ", not a string");
    out.push_back(v.get<std::string>());
  }
  return Status::ok();
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Status action_config(const json& j, const std::string& where, ActionGroupConfig& out) {
  if (!j.is_object()) return bad(where, "must be an object {rep, type, format, state_key}");
  auto text = [&](const char* key, const char* fallback) -> Expected<std::string> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (fallback != nullptr) return std::string(fallback);
      return bad(where, std::string("has no '") + key + "'");
    }
    if (!it->is_string()) return bad(where + "." + key, "must be a string, got " + it->dump());
    return it->get<std::string>();
  };
  EDGEVLA_ASSIGN_OR_RETURN(std::string rep, text("rep", nullptr));
  if (upper(rep) == "RELATIVE") {
    out.rep = ActionRep::kRelative;
  } else if (upper(rep) == "ABSOLUTE") {
    out.rep = ActionRep::kAbsolute;
  } else {
    return bad(where + ".rep", "is '" + rep + "', not RELATIVE or ABSOLUTE");
  }
  EDGEVLA_ASSIGN_OR_RETURN(std::string type, text("type", "NON_EEF"));
  if (upper(type) == "EEF") {
    out.type = ActionType::kEef;
  } else if (upper(type) == "NON_EEF") {
    out.type = ActionType::kNonEef;
  } else {
    return bad(where + ".type", "is '" + type + "', not EEF or NON_EEF");
  }
  EDGEVLA_ASSIGN_OR_RETURN(std::string format, text("format", "DEFAULT"));
  if (upper(format) == "DEFAULT") {
    out.format = EefFormat::kDefault;
  } else if (upper(format) == "XYZ_ROT6D") {
    out.format = EefFormat::kXyzRot6d;
  } else if (upper(format) == "XYZ_ROTVEC") {
    out.format = EefFormat::kXyzRotvec;
  } else {
    return bad(where + ".format", "is '" + format +
                                      "', not one edgevla implements (DEFAULT, XYZ_ROT6D, XYZ_ROTVEC)");
  }
  auto sk = j.find("state_key");
  if (sk != j.end() && !sk->is_null()) {
    if (!sk->is_string()) return bad(where + ".state_key", "must be a string or null, got " + sk->dump());
    out.state_key = sk->get<std::string>();
  }
  return Status::ok();
}

Status modality(const json& parent, const char* name, const std::string& where, bool optional,
                ModalityConfig& out) {
  auto it = parent.find(name);
  if (it == parent.end() || it->is_null()) {
    if (optional) return Status::ok();
    return bad(where, std::string("has no '") + name + "' modality config");
  }
  const std::string w = where + "." + name;
  if (!it->is_object()) return bad(w, "must be an object");
  EDGEVLA_RETURN_IF_ERROR(strings(*it, "modality_keys", w, false, out.keys));
  auto di = it->find("delta_indices");
  if (di == it->end() || !di->is_array()) return bad(w, "has no 'delta_indices' list");
  for (const json& v : *di) {
    if (!v.is_number_integer()) return bad(w + ".delta_indices", "holds " + v.dump() + ", not an integer");
    out.delta_indices.push_back(v.get<int>());
  }
  EDGEVLA_RETURN_IF_ERROR(strings(*it, "sin_cos_embedding_keys", w, true, out.sin_cos_keys));
  EDGEVLA_RETURN_IF_ERROR(strings(*it, "mean_std_embedding_keys", w, true, out.mean_std_keys));
  auto ac = it->find("action_configs");
  if (ac != it->end() && !ac->is_null()) {
    if (!ac->is_array() || ac->size() != out.keys.size()) {
      return bad(w + ".action_configs", "must be a list with one entry per modality key (" +
                                            std::to_string(out.keys.size()) + ")");
    }
    for (std::size_t i = 0; i < ac->size(); ++i) {
      ActionGroupConfig c;
      EDGEVLA_RETURN_IF_ERROR(action_config((*ac)[i], w + ".action_configs[" + std::to_string(i) + "]", c));
      out.action_configs.push_back(std::move(c));
    }
  }
  return Status::ok();
}

// Flattens a list of numbers ([D]) or of equal-length lists ([H][D]); rows = 0 for [D].
Status numbers(const json& v, const std::string& where, std::vector<double>& out, std::int64_t& rows,
               std::int64_t& dim) {
  out.clear();
  rows = 0;
  if (!v.is_array() || v.empty()) return bad(where, "must be a non-empty list of numbers");
  auto push = [&](const json& x, const std::string& at) -> Status {
    if (!x.is_number()) return bad(at, "is " + x.dump() + ", not a number");
    const double d = x.get<double>();
    if (!std::isfinite(d)) return bad(at, "is not finite");
    out.push_back(d);
    return Status::ok();
  };
  if (v.front().is_array()) {
    rows = static_cast<std::int64_t>(v.size());
    dim = static_cast<std::int64_t>(v.front().size());
    for (std::size_t r = 0; r < v.size(); ++r) {
      const std::string at = where + "[" + std::to_string(r) + "]";
      if (!v[r].is_array() || static_cast<std::int64_t>(v[r].size()) != dim) {
        return bad(at, "must be a list of " + std::to_string(dim) + " numbers like row 0");
      }
      for (std::size_t c = 0; c < v[r].size(); ++c) {
        EDGEVLA_RETURN_IF_ERROR(push(v[r][c], at + "[" + std::to_string(c) + "]"));
      }
    }
    return Status::ok();
  }
  dim = static_cast<std::int64_t>(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) EDGEVLA_RETURN_IF_ERROR(push(v[i], where + "[" + std::to_string(i) + "]"));
  return Status::ok();
}

Status group_stats(const json& j, const std::string& where, GroupStats& out) {
  if (!j.is_object()) return bad(where, "must be an object {min, max, mean, std, q01, q99}");
  struct Field {
    const char* name;
    std::vector<double>* values;
    bool required;
  };
  const Field fields[] = {{"min", &out.min, true},   {"max", &out.max, true}, {"mean", &out.mean, true},
                          {"std", &out.std, true},   {"q01", &out.q01, false}, {"q99", &out.q99, false}};
  bool first = true;
  for (const Field& f : fields) {
    auto it = j.find(f.name);
    if (it == j.end() || it->is_null()) {
      if (f.required) return bad(where, std::string("has no '") + f.name + "'");
      continue;
    }
    std::int64_t rows = 0, dim = 0;
    EDGEVLA_RETURN_IF_ERROR(numbers(*it, where + "." + f.name, *f.values, rows, dim));
    if (first) {
      out.rows = rows;
      out.dim = dim;
      first = false;
    } else if (rows != out.rows || dim != out.dim) {
      auto shape = [](std::int64_t r, std::int64_t d) {
        return r > 0 ? "[" + std::to_string(r) + "][" + std::to_string(d) + "]" : "[" + std::to_string(d) + "]";
      };
      return bad(where + "." + f.name, "is " + shape(rows, dim) + " but min is " + shape(out.rows, out.dim));
    }
  }
  return Status::ok();
}

Status group_map(const json& parent, const char* kind, const std::string& where,
                 std::map<std::string, GroupStats, std::less<>>& out) {
  auto it = parent.find(kind);
  if (it == parent.end() || it->is_null()) return Status::ok();
  if (!it->is_object()) return bad(where + "." + kind, "must be an object {group: statistics}");
  for (const auto& [group, s] : it->items()) {
    EDGEVLA_RETURN_IF_ERROR(group_stats(s, where + "." + kind + "." + group, out[group]));
  }
  return Status::ok();
}

}  // namespace

bool ModalityConfig::has_sin_cos(std::string_view key) const {
  return std::find(sin_cos_keys.begin(), sin_cos_keys.end(), key) != sin_cos_keys.end();
}

bool ModalityConfig::has_mean_std(std::string_view key) const {
  return std::find(mean_std_keys.begin(), mean_std_keys.end(), key) != mean_std_keys.end();
}

std::vector<std::string> ProcessorConfig::tags() const {
  std::vector<std::string> out;
  for (const auto& [tag, m] : modalities) out.push_back(tag);
  return out;
}

Expected<ProcessorConfig> parse_processor_config(const std::string& text, const std::string& origin) {
  EDGEVLA_ASSIGN_OR_RETURN(json j, parse_json(text, origin));
  ProcessorConfig p;
  p.path = origin;
  if (!j.is_object() || !j.contains("processor_kwargs") || !j["processor_kwargs"].is_object()) {
    return bad("'" + origin + "'", "has no 'processor_kwargs' object (Gr00tN1d6Processor's settings)");
  }
  const json& k = j["processor_kwargs"];
  const std::string where = "'" + origin + "': processor_kwargs";
  auto flag = [&](const char* key, bool& out) -> Status {
    auto it = k.find(key);
    if (it == k.end() || it->is_null()) return Status::ok();
    if (!it->is_boolean()) return bad(where + "." + key, "must be true or false, got " + it->dump());
    out = it->get<bool>();
    return Status::ok();
  };
  auto size = [&](const char* key, int& out) -> Status {
    auto it = k.find(key);
    if (it == k.end() || it->is_null()) return bad(where, std::string("has no '") + key + "'");
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > (1 << 20)) {
      return bad(where + "." + key, "must be a positive integer, got " + it->dump());
    }
    out = it->get<int>();
    return Status::ok();
  };
  EDGEVLA_RETURN_IF_ERROR(flag("use_albumentations", p.use_albumentations));
  if (auto it = k.find("letter_box_transform"); it != k.end() && !it->is_null()) {
    bool lb = false;
    EDGEVLA_RETURN_IF_ERROR(flag("letter_box_transform", lb));
    p.letter_box_transform = lb;
  }
  if (auto it = k.find("shortest_image_edge"); it != k.end() && !it->is_null()) {
    EDGEVLA_RETURN_IF_ERROR(size("shortest_image_edge", p.shortest_image_edge));
  }
  if (auto it = k.find("crop_fraction"); it != k.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() > 0.0 && it->get<double>() <= 1.0)) {
      return bad(where + ".crop_fraction", "must be a number in (0, 1], got " + it->dump());
    }
    p.crop_fraction = it->get<double>();
  }
  EDGEVLA_RETURN_IF_ERROR(flag("formalize_language", p.formalize_language));
  EDGEVLA_RETURN_IF_ERROR(size("max_state_dim", p.max_state_dim));
  EDGEVLA_RETURN_IF_ERROR(size("max_action_dim", p.max_action_dim));
  EDGEVLA_RETURN_IF_ERROR(size("max_action_horizon", p.max_action_horizon));
  EDGEVLA_RETURN_IF_ERROR(flag("use_percentiles", p.use_percentiles));
  EDGEVLA_RETURN_IF_ERROR(flag("clip_outliers", p.clip_outliers));
  EDGEVLA_RETURN_IF_ERROR(flag("apply_sincos_state_encoding", p.apply_sincos_state_encoding));
  EDGEVLA_RETURN_IF_ERROR(flag("use_relative_action", p.use_relative_action));

  auto mc = k.find("modality_configs");
  if (mc == k.end() || !mc->is_object() || mc->empty()) {
    return bad(where, "has no 'modality_configs' object with one entry per embodiment");
  }
  for (const auto& [tag, m] : mc->items()) {
    const std::string w = where + ".modality_configs." + tag;
    if (!m.is_object()) return bad(w, "must be an object {video, state, action, language}");
    EmbodimentModalities e;
    EDGEVLA_RETURN_IF_ERROR(modality(m, "video", w, false, e.video));
    EDGEVLA_RETURN_IF_ERROR(modality(m, "state", w, false, e.state));
    EDGEVLA_RETURN_IF_ERROR(modality(m, "action", w, false, e.action));
    EDGEVLA_RETURN_IF_ERROR(modality(m, "language", w, true, e.language));
    p.modalities.emplace(tag, std::move(e));
  }
  return p;
}

Expected<ProcessorConfig> load_processor_config(const std::string& path) {
  EDGEVLA_ASSIGN_OR_RETURN(std::string text, read_text(path));
  return parse_processor_config(text, path);
}

Expected<Statistics> parse_statistics(const std::string& text, const std::string& origin) {
  EDGEVLA_ASSIGN_OR_RETURN(json j, parse_json(text, origin));
  if (!j.is_object() || j.empty()) {
    return bad("'" + origin + "'", "must be an object {embodiment tag: {state, action, relative_action}}");
  }
  Statistics s;
  s.path = origin;
  for (const auto& [tag, e] : j.items()) {
    const std::string where = "'" + origin + "': " + tag;
    if (!e.is_object()) return bad(where, "must be an object {state, action, relative_action}");
    EmbodimentStats es;
    EDGEVLA_RETURN_IF_ERROR(group_map(e, "state", where, es.state));
    EDGEVLA_RETURN_IF_ERROR(group_map(e, "action", where, es.action));
    EDGEVLA_RETURN_IF_ERROR(group_map(e, "relative_action", where, es.relative_action));
    s.embodiments.emplace(tag, std::move(es));
  }
  return s;
}

Expected<Statistics> load_statistics(const std::string& path) {
  EDGEVLA_ASSIGN_OR_RETURN(std::string text, read_text(path));
  return parse_statistics(text, path);
}

EmbodimentIds builtin_embodiment_ids() {
  return {{"oxe_google", 0},     {"oxe_widowx", 1},           {"libero_panda", 2},
          {"unitree_g1", 8},     {"new_embodiment", 10},      {"robocasa_panda_omron", 13},
          {"oxe_droid", 16},     {"gr1", 20},                 {"behavior_r1_pro", 24}};
}

Expected<EmbodimentIds> parse_embodiment_ids(const std::string& text, const std::string& origin) {
  EDGEVLA_ASSIGN_OR_RETURN(json j, parse_json(text, origin));
  if (!j.is_object()) return bad("'" + origin + "'", "must be an object {embodiment tag: id}");
  EmbodimentIds ids = builtin_embodiment_ids();
  for (const auto& [tag, id] : j.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > 4096) {
      return bad("'" + origin + "': " + tag, "must be a non-negative integer id, got " + id.dump());
    }
    ids[tag] = id.get<int>();
  }
  return ids;
}

Expected<EmbodimentIds> load_embodiment_ids(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return builtin_embodiment_ids();
  EDGEVLA_ASSIGN_OR_RETURN(std::string text, read_text(path));
  return parse_embodiment_ids(text, path);
}

}  // namespace edgevla::model::groot
