// One robot (embodiment) of a GR00T N1.6 checkpoint: its projector index, views, state and
// action groups, and the normalisation of notes/groot-n16.md §4 and §8, resolved once from
// processor_config.json, statistics.json and embodiment_id.json:
//   state   per group in key order: [sin x, cos x] (sin/cos keys, when the processor applies
//           them), (x - mean) / std (mean/std keys; std == 0 passes x through), else
//           2 (x - min) / (max - min) - 1, 0 where max and min are close, clipped to [-1, 1] when
//           clip_outliers; q01 / q99 replace min / max with use_percentiles. float32 results of
//           float64 arithmetic, zero-padded to the model's max_state_dim.
//   actions rows [:H_e] of the normalized chunk, the group's columns in key order; mean/std
//           groups (the action config's list) y·std + mean, others (clip(y, ±1) + 1) / 2 ·
//           (max - min) + min; RELATIVE groups use their per-step relative_action statistics
//           and are then made absolute against the raw last state step of their state_key:
//           ref + rel for joints, T_ref · T_rel for EEF poses. float64 throughout.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/groot/processor.hpp"

namespace edgevla::model::groot {

// The raw state of one step: {group: values} (the last step of each group).
using RawState = std::map<std::string, std::vector<float>, std::less<>>;

// The model sizes an embodiment must fit (config.json).
struct EmbodimentLimits {
  int max_state_dim = 0;
  int max_action_dim = 0;
  int action_horizon = 0;
  int max_num_embodiments = 0;
};

enum class StateNorm { kSinCos, kMeanStd, kMinMax };

struct StateGroup {
  std::string key;
  StateNorm norm = StateNorm::kMinMax;
  std::int64_t dim = 0;    // raw values (0: a sin/cos group without statistics takes any width)
  std::vector<double> lo, hi, mean, std;  // min/max (or q01/q99), mean, std: [dim]
};

struct ActionGroup {
  std::string key;
  std::int64_t dim = 0;     // columns (the absolute statistics' width)
  std::int64_t column = 0;  // first column in the normalized chunk
  bool mean_std = false;
  ActionGroupConfig config;
  bool relative = false;     // RELATIVE and the processor's use_relative_action
  std::int64_t stat_rows = 0;  // 0: per-dim statistics; else per step (H_e rows)
  std::vector<double> lo, hi, mean, std;
  std::string state_key() const { return config.state_key.empty() ? key : config.state_key; }
};

class Embodiment {
 public:
  // Resolves `tag`; an unknown tag lists the known ones, a missing statistics group names the
  // file, the embodiment and the group.
  static Expected<Embodiment> resolve(const ProcessorConfig& processor, const Statistics& statistics,
                                      const EmbodimentIds& ids, std::string_view tag,
                                      const EmbodimentLimits& limits);
  // The three files of checkpoint folder `dir`; `statistics_path` overrides statistics.json.
  static Expected<Embodiment> load(const std::string& dir, std::string_view tag, const EmbodimentLimits& limits,
                                   const std::string& statistics_path = "");

  const std::string& tag() const { return tag_; }
  int id() const { return id_; }
  const std::vector<std::string>& views() const { return views_; }
  const std::vector<StateGroup>& state_groups() const { return state_; }
  const std::vector<ActionGroup>& action_groups() const { return actions_; }
  // Rows of a decoded chunk (H_e, the action modality's delta indices).
  std::int64_t horizon() const { return horizon_; }
  // Columns of a decoded chunk: the action groups' widths summed.
  std::int64_t action_dim() const;
  int max_state_dim() const { return limits_.max_state_dim; }
  int max_action_dim() const { return limits_.max_action_dim; }

  // Raw state -> the normalised state, zero-padded: `out` has max_state_dim() values.
  Status normalize_state(const RawState& raw, std::span<float> out) const;
  // Normalized chunk [rows, width] (rows >= horizon(), width = max_action_dim()) and the raw
  // state -> the robot's actions [horizon(), action_dim()], groups in key order. A non-finite
  // input or result is a data_loss error naming the step and the group.
  Status decode_actions(std::span<const float> normalized, std::int64_t rows, const RawState& raw,
                        std::span<double> out) const;

 private:
  std::string tag_, origin_;
  int id_ = 0;
  std::vector<std::string> views_;
  std::vector<StateGroup> state_;
  std::vector<ActionGroup> actions_;
  std::int64_t horizon_ = 0;
  EmbodimentLimits limits_;
  bool clip_ = true;
};

// EEF pose helpers (4x4 row-major, float64), as the reference composes them.
void eef_to_matrix(std::span<const double> values, EefFormat format, double out[16]);
void matrix_to_eef(const double m[16], EefFormat format, std::span<double> out);
// Values an EEF group of `format` holds (DEFAULT 16, XYZ_ROT6D 9, XYZ_ROTVEC 6).
std::int64_t eef_width(EefFormat format);

}  // namespace edgevla::model::groot
