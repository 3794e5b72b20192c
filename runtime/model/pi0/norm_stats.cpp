#include "runtime/model/pi0/norm_stats.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace edgevla::model {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// openpi's epsilon in both normalizations (model.md §9.3).
constexpr double kEps = 1e-6;

// Reads stats.<key>: a list of finite numbers; null or absent gives an empty vector when
// `optional`, an error otherwise.
Status read_array(const Json& obj, const std::string& key, const std::string& where,
                  bool optional, std::vector<double>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (optional) return Status::ok();
    return invalid_argument(where + "." + key + " is missing (norm stats need mean and std)");
  }
  if (!it->is_array()) {
    return invalid_argument(where + "." + key + " must be a list of numbers, got " +
                            std::string(it->type_name()));
  }
  out.clear();
  out.reserve(it->size());
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& v = (*it)[i];
    if (!v.is_number()) {
      return invalid_argument(where + "." + key + "[" + std::to_string(i) + "] is " + v.dump() +
                              ", not a number");
    }
    const double d = v.get<double>();
    if (!std::isfinite(d)) {
      return invalid_argument(where + "." + key + "[" + std::to_string(i) +
                              "] is not finite; recompute the norm stats");
    }
    out.push_back(d);
  }
  if (out.empty()) return invalid_argument(where + "." + key + " is an empty list");
  return Status::ok();
}

Status read_stats(const Json& parent, const std::string& key, const std::string& origin,
                  Stats& s) {
  const std::string where = origin + ": norm_stats." + key;
  auto it = parent.find(key);
  if (it == parent.end()) {
    return invalid_argument(where + " is missing (openpi's norm_stats.json holds 'state' and "
                            "'actions')");
  }
  if (!it->is_object()) return invalid_argument(where + " must be an object");
  EDGEVLA_RETURN_IF_ERROR(read_array(*it, "mean", where, false, s.mean));
  EDGEVLA_RETURN_IF_ERROR(read_array(*it, "std", where, false, s.std));
  EDGEVLA_RETURN_IF_ERROR(read_array(*it, "q01", where, true, s.q01));
  EDGEVLA_RETURN_IF_ERROR(read_array(*it, "q99", where, true, s.q99));
  if (s.q01.empty() != s.q99.empty()) {
    return invalid_argument(where + " has only one of q01/q99 (give both, or neither)");
  }
  auto check_len = [&](const std::vector<double>& v, const char* name) -> Status {
    if (!v.empty() && v.size() != s.mean.size()) {
      return invalid_argument(where + "." + name + " has " + std::to_string(v.size()) +
                              " entries but mean has " + std::to_string(s.mean.size()));
    }
    return Status::ok();
  };
  EDGEVLA_RETURN_IF_ERROR(check_len(s.std, "std"));
  EDGEVLA_RETURN_IF_ERROR(check_len(s.q01, "q01"));
  EDGEVLA_RETURN_IF_ERROR(check_len(s.q99, "q99"));
  return Status::ok();
}

Json stats_json(const Stats& s) {
  Json j = Json::object();
  j["mean"] = s.mean;
  j["std"] = s.std;
  j["q01"] = s.q01.empty() ? Json(nullptr) : Json(s.q01);
  j["q99"] = s.q99.empty() ? Json(nullptr) : Json(s.q99);
  return j;
}

Status check_sizes(std::size_t in, std::size_t out) {
  if (in != out) {
    return invalid_argument("normalization output has " + std::to_string(out) +
                            " entries for an input of " + std::to_string(in));
  }
  return Status::ok();
}

Status need_quantiles(const Stats& s) {
  if (!s.has_quantiles()) {
    return failed_precondition(
        "quantile normalization (pi0.5) needs q01 and q99 in the norm stats, but they are null "
        "or absent; recompute the stats with openpi's compute_norm_stats (it writes quantiles)");
  }
  return Status::ok();
}

}  // namespace

Expected<NormStats> parse_norm_stats(const std::string& json_text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for 1e999
    std::string hint;
    if (json_text.find("NaN") != std::string::npos ||
        json_text.find("Infinity") != std::string::npos) {
      hint = " (it holds NaN or Infinity, which JSON cannot carry: recompute the norm stats)";
    }
    return invalid_argument(origin + " is not valid JSON" + hint + ": " + e.what());
  }
  if (!j.is_object() || !j.contains("norm_stats") || !j["norm_stats"].is_object()) {
    return invalid_argument(origin + ": expected an object with key 'norm_stats' (openpi's "
                            "format, docs/model.md §10)");
  }
  const Json& ns = j["norm_stats"];
  NormStats out;
  EDGEVLA_RETURN_IF_ERROR(read_stats(ns, "state", origin, out.state));
  EDGEVLA_RETURN_IF_ERROR(read_stats(ns, "actions", origin, out.actions));
  return out;
}

Expected<NormStats> load_norm_stats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return not_found("norm stats '" + path + "' cannot be opened (a checkpoint keeps them at "
                     "assets/<asset_id>/norm_stats.json; set the preprocess node's norm_stats "
                     "param to another file)");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_norm_stats(ss.str(), path);
}

Status write_norm_stats(const NormStats& stats, const std::string& path) {
  Json j;
  j["norm_stats"]["state"] = stats_json(stats.state);
  j["norm_stats"]["actions"] = stats_json(stats.actions);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return not_found("cannot write norm stats to '" + path + "'");
  out << j.dump(2) << "\n";
  out.close();
  if (!out) return data_loss("writing norm stats to '" + path + "' failed");
  return Status::ok();
}

Expected<std::string> find_norm_stats(const std::string& checkpoint_dir,
                                      const std::string& asset_id) {
  const fs::path assets = fs::path(checkpoint_dir) / "assets";
  std::vector<std::string> found;  // asset ids, relative to assets/
  std::error_code ec;
  if (fs::is_directory(assets, ec)) {
    for (auto it = fs::recursive_directory_iterator(
             assets, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() == "norm_stats.json" && it->is_regular_file(ec)) {
        found.push_back(it->path().parent_path().lexically_relative(assets).generic_string());
      }
    }
  }
  std::sort(found.begin(), found.end());
  std::string list;
  for (const auto& f : found) list += (list.empty() ? "" : ", ") + ("'" + f + "'");

  if (!asset_id.empty()) {
    const fs::path p = assets / asset_id / "norm_stats.json";
    if (fs::is_regular_file(p, ec)) return p.string();
    return not_found("norm stats for asset_id '" + asset_id + "' not found: no " + p.string() +
                     (found.empty() ? std::string(" (no norm_stats.json under ") +
                                          assets.string() + ")"
                                    : " (asset ids found: " + list + ")") +
                     "; fix asset_id in config.json or set the preprocess node's norm_stats "
                     "param to the file");
  }
  if (found.size() == 1) return (assets / found[0] / "norm_stats.json").string();
  if (found.empty()) {
    return not_found("no norm_stats.json under " + assets.string() +
                     " (openpi's conversion script may leave assets/ out: copy "
                     "assets/<asset_id>/norm_stats.json from the training checkpoint, or set "
                     "the preprocess node's norm_stats param to the file)");
  }
  return invalid_argument("several norm stats under " + assets.string() + " (asset ids " + list +
                          "); set asset_id in config.json or the preprocess node's norm_stats "
                          "param to pick one");
}

NormKind norm_kind_for(ModelType type) {
  return type == ModelType::kPi0 ? NormKind::kZScore : NormKind::kQuantile;
}

std::string_view norm_kind_name(NormKind kind) {
  return kind == NormKind::kZScore ? "z-score" : "quantile";
}

Status normalize(std::span<const double> x, const Stats& s, NormKind kind,
                 std::span<double> out) {
  EDGEVLA_RETURN_IF_ERROR(check_sizes(x.size(), out.size()));
  if (kind == NormKind::kQuantile) EDGEVLA_RETURN_IF_ERROR(need_quantiles(s));
  if (x.size() > s.size()) {
    return invalid_argument("a vector of " + std::to_string(x.size()) +
                            " values cannot be normalized with stats of " +
                            std::to_string(s.size()) + " (the stats must cover every dim)");
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (kind == NormKind::kZScore) {
      out[i] = (x[i] - s.mean[i]) / (s.std[i] + kEps);
    } else {
      out[i] = (x[i] - s.q01[i]) / (s.q99[i] - s.q01[i] + kEps) * 2.0 - 1.0;
    }
  }
  return Status::ok();
}

Status unnormalize(std::span<const double> x, const Stats& s, NormKind kind,
                   std::span<double> out) {
  EDGEVLA_RETURN_IF_ERROR(check_sizes(x.size(), out.size()));
  if (kind == NormKind::kQuantile) EDGEVLA_RETURN_IF_ERROR(need_quantiles(s));
  if (s.size() > x.size()) {
    return invalid_argument("norm stats of " + std::to_string(s.size()) +
                            " dims are longer than the vector to unnormalize (" +
                            std::to_string(x.size()) + ")");
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool has = i < s.size();
    if (kind == NormKind::kZScore) {
      // Padding: mean 0, std 1 (so the value is still scaled by 1 + 1e-6).
      const double mean = has ? s.mean[i] : 0.0;
      const double std = has ? s.std[i] : 1.0;
      out[i] = x[i] * (std + kEps) + mean;
    } else {
      out[i] = has ? (x[i] + 1.0) / 2.0 * (s.q99[i] - s.q01[i] + kEps) + s.q01[i] : x[i];
    }
  }
  return Status::ok();
}

namespace {

using DoubleFn = Status (*)(std::span<const double>, const Stats&, NormKind, std::span<double>);

// Runs the double version on widened inputs and rounds the results to float.
Status via_double(DoubleFn fn, std::span<const float> x, const Stats& s, NormKind kind,
                  std::span<float> out) {
  EDGEVLA_RETURN_IF_ERROR(check_sizes(x.size(), out.size()));
  std::vector<double> in(x.begin(), x.end());
  std::vector<double> res(x.size());
  EDGEVLA_RETURN_IF_ERROR(fn(in, s, kind, res));
  std::transform(res.begin(), res.end(), out.begin(), [](double v) { return static_cast<float>(v); });
  return Status::ok();
}

}  // namespace

Status normalize(std::span<const float> x, const Stats& s, NormKind kind, std::span<float> out) {
  return via_double(static_cast<DoubleFn>(&normalize), x, s, kind, out);
}

Status unnormalize(std::span<const float> x, const Stats& s, NormKind kind,
                   std::span<float> out) {
  return via_double(static_cast<DoubleFn>(&unnormalize), x, s, kind, out);
}

Status unnormalize_chunk(std::span<const float> chunk, std::int64_t width, const Stats& stats,
                         NormKind kind, std::int64_t out_dim, std::span<float> out) {
  if (width <= 0 || out_dim < 0 || out_dim > width || chunk.size() % static_cast<std::size_t>(width) != 0) {
    return invalid_argument("unnormalize_chunk: " + std::to_string(chunk.size()) + " values are not rows of " +
                            std::to_string(width) + " (keeping " + std::to_string(out_dim) + ")");
  }
  const std::size_t w = static_cast<std::size_t>(width), keep = static_cast<std::size_t>(out_dim);
  const std::size_t rows = chunk.size() / w;
  if (out.size() != rows * keep) {
    return invalid_argument("unnormalize_chunk: output holds " + std::to_string(out.size()) + " values, not " +
                            std::to_string(rows * keep));
  }
  std::vector<float> row(w);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::span<const float> src = chunk.subspan(r * w, w);
    EDGEVLA_RETURN_IF_ERROR(unnormalize(src, stats, kind, row));
    for (std::size_t d = 0; d < w; ++d) {
      if (!std::isfinite(src[d]) || (d < keep && !std::isfinite(row[d]))) {
        return data_loss("the action chunk holds a non-finite value at step " + std::to_string(r) + ", dim " +
                         std::to_string(d) + " (the prefix cache, the checkpoint or its norm stats hold NaN/Inf)");
      }
    }
    std::copy_n(row.begin(), keep, out.begin() + static_cast<std::ptrdiff_t>(r * keep));
  }
  return Status::ok();
}

}  // namespace edgevla::model
