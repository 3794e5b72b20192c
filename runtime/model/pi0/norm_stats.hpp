// Normalization statistics of a checkpoint (openpi's assets/<asset_id>/norm_stats.json,
// docs/model.md §10) and the state/action (un)normalization of model.md §9.3.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "runtime/model/pi0/config.hpp"

namespace edgevla::model {

// Per-dimension statistics of one quantity. All non-empty arrays have one length; q01/q99
// are empty when the file has them null or absent (old openpi files).
struct Stats {
  std::vector<double> mean, std, q01, q99;

  std::size_t size() const { return mean.size(); }
  bool has_quantiles() const { return !q01.empty(); }
  bool operator==(const Stats&) const = default;
};

struct NormStats {
  Stats state, actions;
  bool operator==(const NormStats&) const = default;
};

// Reads openpi's format: {"norm_stats": {"state": {...}, "actions": {...}}}. Both keys are
// required (openpi unnormalizes both); other keys are ignored, as pydantic does. Errors name
// the file and the key: malformed JSON, a missing or non-numeric array, NaN/Inf, arrays of
// different lengths within one quantity.
Expected<NormStats> load_norm_stats(const std::string& path);
Expected<NormStats> parse_norm_stats(const std::string& json_text, const std::string& origin);
// Writes the same format (indent 2; empty q01/q99 as null).
Status write_norm_stats(const NormStats& stats, const std::string& path);

// The norm_stats.json of a checkpoint folder: <dir>/assets/<asset_id>/norm_stats.json, or with
// an empty asset_id the only norm_stats.json anywhere under <dir>/assets (asset ids may hold
// '/', e.g. physical-intelligence/libero). None, or several without an asset_id, is an error
// that lists what was found.
Expected<std::string> find_norm_stats(const std::string& checkpoint_dir, const std::string& asset_id);

enum class NormKind { kZScore, kQuantile };

// pi0 normalizes with z-scores, pi0.5 (every other model type) with quantiles (model.md §9.3).
NormKind norm_kind_for(ModelType type);
std::string_view norm_kind_name(NormKind kind);  // "z-score" / "quantile"

// x -> normalized, per model.md §9.3: z-score (x - mean) / (std + 1e-6); quantile
// (x - q01) / (q99 - q01 + 1e-6) * 2 - 1. Only the first x.size() entries of the stats are
// used (stats may be longer; shorter is an error). No clipping. `out` has x.size() entries
// and may alias `x`. The double overload is openpi's float64 arithmetic exactly; the float
// overload computes in double and rounds the results.
Status normalize(std::span<const double> x, const Stats& stats, NormKind kind,
                 std::span<double> out);
Status normalize(std::span<const float> x, const Stats& stats, NormKind kind,
                 std::span<float> out);

// normalized -> x for one vector (call once per row of an action chunk). z-score: the stats
// are padded to x.size() with mean 0 / std 1, then x * (std + 1e-6) + mean (so padded dims
// are scaled by 1 + 1e-6, as openpi does). quantile: the first n = len(q01) dims are
// (x + 1) / 2 * (q99 - q01 + 1e-6) + q01, dims >= n pass through unchanged. Stats longer than
// x are an error (openpi cannot broadcast them either).
Status unnormalize(std::span<const double> x, const Stats& stats, NormKind kind,
                   std::span<double> out);
Status unnormalize(std::span<const float> x, const Stats& stats, NormKind kind,
                   std::span<float> out);

// An action chunk [rows, width] (row-major) un-normalized row by row, keeping the first
// out_dim columns of each row in out [rows, out_dim]: what the action head publishes and
// `edgevla infer` prints. A non-finite value, in the chunk or its result, is a data_loss
// error naming the step and the dim.
Status unnormalize_chunk(std::span<const float> chunk, std::int64_t width, const Stats& stats,
                         NormKind kind, std::int64_t out_dim, std::span<float> out);

}  // namespace edgevla::model
