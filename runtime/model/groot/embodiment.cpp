#include "runtime/model/groot/embodiment.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// numpy.isclose(a, b) with its default tolerances (rtol 1e-5, atol 1e-8).
bool is_close(double a, double b) { return std::abs(a - b) <= 1e-8 + 1e-5 * std::abs(b); }

void rot6d_to_matrix(const double* r, double m[3][3]) {
  double a[3] = {r[0], r[1], r[2]}, b[3] = {r[3], r[4], r[5]};
  const double na = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
  for (double& x : a) x /= na;
  const double d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  for (int i = 0; i < 3; ++i) b[i] -= d * a[i];
  const double nb = std::sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
  for (double& x : b) x /= nb;
  const double c[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
  for (int j = 0; j < 3; ++j) {
    m[0][j] = a[j];
    m[1][j] = b[j];
    m[2][j] = c[j];
  }
}

// Rodrigues' formula (second order near zero).
void rotvec_to_matrix(const double* r, double m[3][3]) {
  const double theta = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  const double k[3][3] = {{0, -r[2], r[1]}, {r[2], 0, -r[0]}, {-r[1], r[0], 0}};
  double kk[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      kk[i][j] = 0;
      for (int l = 0; l < 3; ++l) kk[i][j] += k[i][l] * k[l][j];
    }
  const bool small = theta < 1e-8;
  const double s = small ? 1.0 : std::sin(theta) / theta;
  const double c = small ? 0.5 : (1 - std::cos(theta)) / (theta * theta);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m[i][j] = (i == j ? 1.0 : 0.0) + s * k[i][j] + c * kk[i][j];
}

// Through the unit quaternion with w >= 0: the rotation vector of angle in [0, pi].
void matrix_to_rotvec(const double m[3][3], double out[3]) {
  const double tr = m[0][0] + m[1][1] + m[2][2];
  double w = 0, q[3] = {0, 0, 0};
  if (tr > std::max({m[0][0], m[1][1], m[2][2]})) {
    w = std::sqrt(1 + tr) / 2;
    q[0] = (m[2][1] - m[1][2]) / (4 * w);
    q[1] = (m[0][2] - m[2][0]) / (4 * w);
    q[2] = (m[1][0] - m[0][1]) / (4 * w);
  } else {
    int i = 0;
    if (m[1][1] > m[i][i]) i = 1;
    if (m[2][2] > m[i][i]) i = 2;
    const int j = (i + 1) % 3, k = (i + 2) % 3;
    q[i] = std::sqrt(1 + m[i][i] - m[j][j] - m[k][k]) / 2;
    q[j] = (m[j][i] + m[i][j]) / (4 * q[i]);
    q[k] = (m[k][i] + m[i][k]) / (4 * q[i]);
    w = (m[k][j] - m[j][k]) / (4 * q[i]);
  }
  if (w < 0) {
    w = -w;
    for (double& x : q) x = -x;
  }
  const double s = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
  const double f = s < 1e-12 ? 2 / std::max(w, 1e-12) : 2 * std::atan2(s, w) / s;
  for (int i = 0; i < 3; ++i) out[i] = f * q[i];
}

}  // namespace

std::int64_t eef_width(EefFormat format) {
  switch (format) {
    case EefFormat::kXyzRot6d: return 9;
    case EefFormat::kXyzRotvec: return 6;
    case EefFormat::kDefault: return 16;
  }
  return 0;
}

void eef_to_matrix(std::span<const double> v, EefFormat format, double out[16]) {
  if (format == EefFormat::kDefault) {
    std::copy_n(v.begin(), 16, out);
    return;
  }
  double r[3][3];
  if (format == EefFormat::kXyzRot6d) {
    rot6d_to_matrix(v.data() + 3, r);
  } else {
    rotvec_to_matrix(v.data() + 3, r);
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) out[i * 4 + j] = r[i][j];
    out[i * 4 + 3] = v[static_cast<std::size_t>(i)];
  }
  out[12] = out[13] = out[14] = 0;
  out[15] = 1;
}

void matrix_to_eef(const double m[16], EefFormat format, std::span<double> out) {
  if (format == EefFormat::kDefault) {
    std::copy_n(m, 16, out.begin());
    return;
  }
  for (int i = 0; i < 3; ++i) out[static_cast<std::size_t>(i)] = m[i * 4 + 3];
  if (format == EefFormat::kXyzRot6d) {
    for (int j = 0; j < 3; ++j) {
      out[static_cast<std::size_t>(3 + j)] = m[j];
      out[static_cast<std::size_t>(6 + j)] = m[4 + j];
    }
    return;
  }
  const double r[3][3] = {{m[0], m[1], m[2]}, {m[4], m[5], m[6]}, {m[8], m[9], m[10]}};
  double v[3];
  matrix_to_rotvec(r, v);
  std::copy_n(v, 3, out.begin() + 3);
}

Expected<Embodiment> Embodiment::resolve(const ProcessorConfig& p, const Statistics& stats, const EmbodimentIds& ids,
                                         std::string_view tag, const EmbodimentLimits& limits) {
  const std::string t(tag);
  auto mod = p.modalities.find(tag);
  if (mod == p.modalities.end()) {
    return not_found("groot: embodiment '" + t + "' is not in " + p.path + " (it has " + join(p.tags()) +
                     "); set the embodiment to one of those");
  }
  auto st = stats.embodiments.find(tag);
  if (st == stats.embodiments.end()) {
    return not_found("groot: embodiment '" + t + "' has no statistics in " + stats.path +
                     " (its statistics cover the checkpoint's embodiments only); use a statistics file that has "
                     "it, or another embodiment");
  }
  auto id = ids.find(tag);
  if (id == ids.end()) {
    return not_found("groot: embodiment '" + t +
                     "' has no projector index in the checkpoint's embodiment_id.json nor among the built-in tags; "
                     "add it to embodiment_id.json");
  }
  if (id->second >= limits.max_num_embodiments) {
    return out_of_range("groot: embodiment '" + t + "' has id " + std::to_string(id->second) +
                        " but the model has " + std::to_string(limits.max_num_embodiments) +
                        " embodiment slots (config.json max_num_embodiments); fix embodiment_id.json");
  }
  const EmbodimentModalities& m = mod->second;
  const EmbodimentStats& es = st->second;
  Embodiment e;
  e.tag_ = t;
  e.origin_ = stats.path;
  e.id_ = id->second;
  e.views_ = m.video.keys;
  e.limits_ = limits;
  e.clip_ = p.clip_outliers;
  const std::string where = "groot: " + stats.path + ": embodiment '" + t + "': ";

  // The bounds of a group (percentiles when the processor says so).
  auto bounds = [&](const GroupStats& g, const std::string& what, std::vector<double>& lo,
                    std::vector<double>& hi) -> Status {
    if (!p.use_percentiles) {
      lo = g.min;
      hi = g.max;
      return Status::ok();
    }
    if (g.q01.empty() || g.q99.empty()) {
      return invalid_argument(where + what + " has no q01 / q99, which " + p.path +
                              " asks for (use_percentiles); add them or set use_percentiles false");
    }
    lo = g.q01;
    hi = g.q99;
    return Status::ok();
  };

  std::int64_t state_width = 0;
  for (const std::string& key : m.state.keys) {
    StateGroup g;
    g.key = key;
    auto s = es.state.find(key);
    if (p.apply_sincos_state_encoding && m.state.has_sin_cos(key)) {
      g.norm = StateNorm::kSinCos;
      g.dim = s == es.state.end() ? 0 : s->second.dim;
      state_width += 2 * g.dim;
      e.state_.push_back(std::move(g));
      continue;
    }
    if (s == es.state.end()) {
      return not_found(where + "state group '" + key + "' has no statistics (" + p.path +
                       " lists it among the state keys); add state." + key + " to the statistics");
    }
    if (s->second.rows != 0) {
      return invalid_argument(where + "state." + key + " holds per-step statistics; a state group needs [D] arrays");
    }
    g.norm = m.state.has_mean_std(key) ? StateNorm::kMeanStd : StateNorm::kMinMax;
    g.dim = s->second.dim;
    EDGEVLA_RETURN_IF_ERROR(bounds(s->second, "state." + key, g.lo, g.hi));
    g.mean = s->second.mean;
    g.std = s->second.std;
    state_width += g.dim;
    e.state_.push_back(std::move(g));
  }
  if (state_width > limits.max_state_dim) {
    return out_of_range(where + "the normalised state has " + std::to_string(state_width) +
                        " values but the model takes " + std::to_string(limits.max_state_dim) +
                        " (config.json max_state_dim); this embodiment does not fit the checkpoint");
  }

  e.horizon_ = static_cast<std::int64_t>(m.action.delta_indices.size());
  if (e.horizon_ < 1 || e.horizon_ > limits.action_horizon) {
    return out_of_range("groot: " + p.path + ": embodiment '" + t + "' has " + std::to_string(e.horizon_) +
                        " action delta_indices; the model predicts 1.." + std::to_string(limits.action_horizon) +
                        " steps (config.json action_horizon)");
  }
  std::int64_t column = 0;
  for (std::size_t i = 0; i < m.action.keys.size(); ++i) {
    ActionGroup g;
    g.key = m.action.keys[i];
    auto s = es.action.find(g.key);
    if (s == es.action.end()) {
      return not_found(where + "action group '" + g.key + "' has no statistics (" + p.path +
                       " lists it among the action keys); add action." + g.key + " to the statistics");
    }
    if (s->second.rows != 0) {
      return invalid_argument(where + "action." + g.key + " holds per-step statistics; it needs [D] arrays");
    }
    g.dim = s->second.dim;
    g.column = column;
    column += g.dim;
    g.mean_std = m.action.has_mean_std(g.key);
    if (!m.action.action_configs.empty()) g.config = m.action.action_configs[i];
    g.relative = g.config.rep == ActionRep::kRelative && p.use_relative_action;
    if (g.relative) {
      auto r = es.relative_action.find(g.key);
      if (r == es.relative_action.end()) {
        return not_found(where + "RELATIVE action group '" + g.key +
                         "' has no relative_action statistics; add relative_action." + g.key +
                         " ([H][D] per step) or set use_relative_action false in " + p.path);
      }
      if (r->second.rows != e.horizon_ || r->second.dim != g.dim) {
        return invalid_argument(where + "relative_action." + g.key + " is [" + std::to_string(r->second.rows) + "][" +
                                std::to_string(r->second.dim) + "], expected [" + std::to_string(e.horizon_) + "][" +
                                std::to_string(g.dim) + "] (the action horizon by the group's width)");
      }
      g.stat_rows = r->second.rows;
      g.lo = r->second.min;
      g.hi = r->second.max;
      g.mean = r->second.mean;
      g.std = r->second.std;
      const std::string sk = g.state_key();
      auto ref = std::find_if(e.state_.begin(), e.state_.end(), [&](const StateGroup& sg) { return sg.key == sk; });
      if (ref == e.state_.end()) {
        return not_found("groot: " + p.path + ": embodiment '" + t + "': relative action group '" + g.key +
                         "' is made absolute against state group '" + sk + "', which is not a state key (" +
                         join(m.state.keys) + "); fix its state_key");
      }
      const std::int64_t want = g.config.type == ActionType::kEef ? eef_width(g.config.format) : g.dim;
      if (g.config.type == ActionType::kEef && g.dim != want) {
        return invalid_argument(where + "EEF action group '" + g.key + "' has " + std::to_string(g.dim) +
                                " values but its format needs " + std::to_string(want));
      }
      if (ref->dim != 0 && ref->dim != want) {
        return invalid_argument(where + "state group '" + sk + "' has " + std::to_string(ref->dim) +
                                " values but relative action group '" + g.key + "' needs " + std::to_string(want) +
                                " as its reference");
      }
    } else {
      EDGEVLA_RETURN_IF_ERROR(bounds(s->second, "action." + g.key, g.lo, g.hi));
      g.mean = s->second.mean;
      g.std = s->second.std;
    }
    e.actions_.push_back(std::move(g));
  }
  if (column > limits.max_action_dim) {
    return out_of_range(where + "the action groups have " + std::to_string(column) +
                        " columns but the model predicts " + std::to_string(limits.max_action_dim) +
                        " (config.json max_action_dim)");
  }
  return e;
}

Expected<Embodiment> Embodiment::load(const std::string& dir, std::string_view tag, const EmbodimentLimits& limits,
                                      const std::string& statistics_path) {
  const fs::path root(dir);
  EDGEVLA_ASSIGN_OR_RETURN(ProcessorConfig p, load_processor_config((root / "processor_config.json").string()));
  EDGEVLA_ASSIGN_OR_RETURN(
      Statistics s, load_statistics(statistics_path.empty() ? (root / "statistics.json").string() : statistics_path));
  EDGEVLA_ASSIGN_OR_RETURN(EmbodimentIds ids, load_embodiment_ids((root / "embodiment_id.json").string()));
  return resolve(p, s, ids, tag, limits);
}

std::int64_t Embodiment::action_dim() const {
  std::int64_t n = 0;
  for (const ActionGroup& g : actions_) n += g.dim;
  return n;
}

Status Embodiment::normalize_state(const RawState& raw, std::span<float> out) const {
  if (out.size() != static_cast<std::size_t>(limits_.max_state_dim)) {
    return invalid_argument("groot: the normalised state needs " + std::to_string(limits_.max_state_dim) +
                            " values, the buffer holds " + std::to_string(out.size()));
  }
  std::vector<std::string> keys;
  for (const StateGroup& g : state_) keys.push_back(g.key);
  std::size_t at = 0;
  for (const StateGroup& g : state_) {
    auto it = raw.find(g.key);
    if (it == raw.end()) {
      return invalid_argument("groot: embodiment '" + tag_ + "': state group '" + g.key +
                              "' is missing from the input (it needs " + join(keys) + ")");
    }
    const std::vector<float>& x = it->second;
    if (g.dim != 0 && static_cast<std::int64_t>(x.size()) != g.dim) {
      return invalid_argument("groot: embodiment '" + tag_ + "': state group '" + g.key + "' has " +
                              std::to_string(x.size()) + " values, the statistics say " + std::to_string(g.dim));
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i])) {
        return invalid_argument("groot: embodiment '" + tag_ + "': state group '" + g.key + "' value " +
                                std::to_string(i) + " is not finite");
      }
    }
    const std::size_t width = g.norm == StateNorm::kSinCos ? 2 * x.size() : x.size();
    if (at + width > out.size()) {
      return invalid_argument("groot: embodiment '" + tag_ + "': the normalised state passes the model's " +
                              std::to_string(out.size()) + " values at group '" + g.key + "'");
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      switch (g.norm) {
        case StateNorm::kSinCos:
          out[at + i] = std::sin(x[i]);
          out[at + x.size() + i] = std::cos(x[i]);
          break;
        case StateNorm::kMeanStd:
          out[at + i] = g.std[i] != 0 ? static_cast<float>((v - g.mean[i]) / g.std[i]) : x[i];
          break;
        case StateNorm::kMinMax: {
          float y = 0.0f;
          if (!is_close(g.hi[i], g.lo[i])) {
            const auto t = static_cast<float>((v - g.lo[i]) / (g.hi[i] - g.lo[i]));
            y = 2.0f * t - 1.0f;
          }
          out[at + i] = clip_ ? std::clamp(y, -1.0f, 1.0f) : y;
          break;
        }
      }
    }
    at += width;
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(at), out.end(), 0.0f);
  return Status::ok();
}

Status Embodiment::decode_actions(std::span<const float> normalized, std::int64_t rows, const RawState& raw,
                                  std::span<double> out) const {
  const std::int64_t width = limits_.max_action_dim, adim = action_dim();
  if (rows < horizon_ || static_cast<std::int64_t>(normalized.size()) != rows * width) {
    return invalid_argument("groot: embodiment '" + tag_ + "' decodes a normalized chunk of at least " +
                            std::to_string(horizon_) + " rows of " + std::to_string(width) + " values; got " +
                            std::to_string(normalized.size()) + " values in " + std::to_string(rows) + " rows");
  }
  if (static_cast<std::int64_t>(out.size()) != horizon_ * adim) {
    return invalid_argument("groot: embodiment '" + tag_ + "' decodes into [" + std::to_string(horizon_) + "," +
                            std::to_string(adim) + "]; the buffer holds " + std::to_string(out.size()) + " values");
  }
  std::int64_t out_col = 0;
  std::vector<double> a;
  for (const ActionGroup& g : actions_) {
    const auto d = static_cast<std::size_t>(g.dim);
    a.assign(static_cast<std::size_t>(horizon_) * d, 0.0);
    for (std::int64_t r = 0; r < horizon_; ++r) {
      for (std::size_t c = 0; c < d; ++c) {
        const float f = normalized[static_cast<std::size_t>(r * width + g.column) + c];
        if (!std::isfinite(f)) {
          return data_loss("groot: the action chunk holds a non-finite value at step " + std::to_string(r) +
                           ", group '" + g.key + "' dim " + std::to_string(c) +
                           " (the backbone features or the checkpoint hold NaN/Inf)");
        }
        const double y = f;
        const std::size_t s = g.stat_rows > 0 ? static_cast<std::size_t>(r) * d + c : c;
        double v;
        if (g.mean_std) {
          v = g.std[s] != 0 ? y * g.std[s] + g.mean[s] : y;
        } else {
          v = (std::clamp(y, -1.0, 1.0) + 1.0) / 2.0 * (g.hi[s] - g.lo[s]) + g.lo[s];
        }
        a[static_cast<std::size_t>(r) * d + c] = v;
      }
    }
    if (g.relative) {
      const std::string sk = g.state_key();
      auto it = raw.find(sk);
      if (it == raw.end()) {
        return invalid_argument("groot: embodiment '" + tag_ + "': relative action group '" + g.key +
                                "' needs the raw state group '" + sk + "' to be made absolute; pass it");
      }
      std::vector<double> ref(it->second.begin(), it->second.end());
      const std::size_t want =
          g.config.type == ActionType::kEef ? static_cast<std::size_t>(eef_width(g.config.format)) : d;
      if (ref.size() != want) {
        return invalid_argument("groot: embodiment '" + tag_ + "': raw state group '" + sk + "' has " +
                                std::to_string(ref.size()) + " values; relative action group '" + g.key +
                                "' needs " + std::to_string(want));
      }
      if (g.config.type == ActionType::kEef) {
        double t_ref[16], t_rel[16], t[16];
        eef_to_matrix(ref, g.config.format, t_ref);
        for (std::int64_t r = 0; r < horizon_; ++r) {
          std::span<double> row(a.data() + static_cast<std::size_t>(r) * d, d);
          eef_to_matrix(row, g.config.format, t_rel);
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
              double sum = 0;
              for (int l = 0; l < 4; ++l) sum += t_ref[i * 4 + l] * t_rel[l * 4 + j];
              t[i * 4 + j] = sum;
            }
          matrix_to_eef(t, g.config.format, row);
        }
      } else {
        for (std::int64_t r = 0; r < horizon_; ++r)
          for (std::size_t c = 0; c < d; ++c) a[static_cast<std::size_t>(r) * d + c] += ref[c];
      }
    }
    for (std::int64_t r = 0; r < horizon_; ++r) {
      for (std::size_t c = 0; c < d; ++c) {
        const double v = a[static_cast<std::size_t>(r) * d + c];
        if (!std::isfinite(v)) {
          return data_loss("groot: decoding step " + std::to_string(r) + " of action group '" + g.key +
                           "' gave a non-finite value (its statistics or the raw state hold extreme values)");
        }
        out[static_cast<std::size_t>(r * adim + out_col) + c] = v;
      }
    }
    out_col += g.dim;
  }
  return Status::ok();
}

}  // namespace edgevla::model::groot
