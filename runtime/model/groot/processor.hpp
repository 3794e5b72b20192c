// The per-robot files of a GR00T N1.6 checkpoint (notes/groot-n16.md §4, §8):
//   processor_config.json  Gr00tN1d6Processor's kwargs: the modality configs of every embodiment
//                          (keys, delta indices, sin/cos and mean/std key lists, action configs)
//                          and the normalisation switches;
//   statistics.json        {tag: {state|action: {group: {min, max, mean, std, q01, q99: [D]}},
//                          relative_action: {group: {...: [H][D]}}}};
//   embodiment_id.json     {tag: projector index}, extending the built-in tags.
// Readers only: every error names the file, the key path and what to do. Embodiment
// (embodiment.hpp) combines them into one robot's normalisation.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::model::groot {

enum class ActionRep { kAbsolute, kRelative };
enum class ActionType { kNonEef, kEef };
// How an EEF group's values encode a pose: a flattened 4x4 matrix (DEFAULT), xyz + the first
// two rows of the rotation matrix (XYZ_ROT6D), xyz + a rotation vector (XYZ_ROTVEC).
enum class EefFormat { kDefault, kXyzRot6d, kXyzRotvec };

struct ActionGroupConfig {
  ActionRep rep = ActionRep::kAbsolute;
  ActionType type = ActionType::kNonEef;
  EefFormat format = EefFormat::kDefault;
  std::string state_key;  // empty: the action key itself
};

struct ModalityConfig {
  std::vector<std::string> keys;  // modality_keys, in the order the model sees them
  std::vector<int> delta_indices;
  std::vector<std::string> sin_cos_keys;   // sin_cos_embedding_keys (null: none)
  std::vector<std::string> mean_std_keys;  // mean_std_embedding_keys (null: none)
  std::vector<ActionGroupConfig> action_configs;  // action modality: one per key, or empty

  bool has_sin_cos(std::string_view key) const;
  bool has_mean_std(std::string_view key) const;
};

struct EmbodimentModalities {
  ModalityConfig video, state, action, language;
};

struct ProcessorConfig {
  std::string path;  // for messages
  std::map<std::string, EmbodimentModalities, std::less<>> modalities;  // by embodiment tag
  // Absent switches take upstream's defaults (the reference's too); sizes are required.
  bool use_albumentations = false;
  std::optional<bool> letter_box_transform;
  int shortest_image_edge = 256;
  double crop_fraction = 0.95;
  bool formalize_language = true;
  int max_state_dim = 0;
  int max_action_dim = 0;
  int max_action_horizon = 0;
  bool use_percentiles = false;
  bool clip_outliers = true;
  bool apply_sincos_state_encoding = false;
  bool use_relative_action = false;

  std::vector<std::string> tags() const;  // sorted
};

Expected<ProcessorConfig> parse_processor_config(const std::string& text, const std::string& origin);
Expected<ProcessorConfig> load_processor_config(const std::string& path);

// Statistics of one state or action group. Per-dimension groups have rows == 0 and arrays of
// `dim` values; per-step (relative_action) groups have rows > 0 and arrays of rows x dim values,
// row-major. q01 / q99 are empty when the file lacks them.
struct GroupStats {
  std::int64_t dim = 0;
  std::int64_t rows = 0;
  std::vector<double> min, max, mean, std, q01, q99;
};

struct EmbodimentStats {
  std::map<std::string, GroupStats, std::less<>> state, action, relative_action;
};

struct Statistics {
  std::string path;  // for messages
  std::map<std::string, EmbodimentStats, std::less<>> embodiments;
};

Expected<Statistics> parse_statistics(const std::string& text, const std::string& origin);
Expected<Statistics> load_statistics(const std::string& path);

// The projector index of each embodiment tag.
using EmbodimentIds = std::map<std::string, int, std::less<>>;
// Upstream's built-in tags (spec §1).
EmbodimentIds builtin_embodiment_ids();
// The built-in tags updated by the file's (the file wins); an absent file gives the built-ins.
Expected<EmbodimentIds> load_embodiment_ids(const std::string& path);
Expected<EmbodimentIds> parse_embodiment_ids(const std::string& text, const std::string& origin);

}  // namespace edgevla::model::groot
