// Checks of the groot stages' inputs that every backend makes the same way (the family's
// contract, groot_family.hpp), so an engine on any device refuses a bad prompt with the same
// words.
#pragma once

#include <cstdint>
#include <set>
#include <span>

#include "runtime/core/tensor.hpp"
#include "runtime/model/groot/config.hpp"

namespace edgevla::model::groot {

// The backbone's bound view `k` (`t`): bound in order from image.0 (`first_missing`, the first
// unbound index seen before it, is not below k) and [channels, h, w] with h and w positive
// multiples of patch x unshuffle, up to `max_edge`.
Status check_backbone_view(std::size_t k, const Tensor& t, std::size_t first_missing, const GrootConfig& config,
                           std::int64_t max_edge);

// One bound view of the backbone: its pixel tensor (for messages) and the image tokens it gives.
struct BoundView {
  const Tensor* pixels = nullptr;
  std::int64_t tokens = 0;
};

// The backbone's host `input_ids` / `attention_mask` against the bound views: the same non-zero
// length, at most `max_tokens`, ids inside [0, vocab), at least one real token, and one run of
// `image_token_id` per view, as long as that view's tokens. Returns the image tokens in total.
Expected<std::int64_t> check_backbone_prompt(const Tensor& ids, const Tensor& mask, std::int64_t max_tokens,
                                             std::int64_t vocab, std::int64_t image_token_id,
                                             std::span<const BoundView> views);

// The action head's bound inputs (null where unbound).
struct ActionHeadInputs {
  const Tensor* features = nullptr;
  const Tensor* attention_mask = nullptr;
  const Tensor* image_mask = nullptr;
  const Tensor* state = nullptr;
  const Tensor* embodiment_id = nullptr;
  const Tensor* noise = nullptr;
};

// What a run's inputs say: the backbone features' rows and the embodiment id.
struct ActionHeadRun {
  std::int64_t rows = 0;
  std::int64_t embodiment = 0;
};

// A GR00T action head run's inputs against the checkpoint: num_steps in 1..max_steps; every input
// bound, all but the features on the host; backbone_features [L, backbone_embedding_dim], L >= 1;
// both masks of L rows with at least one attended image token; state [max_state_dim] and noise
// [action_horizon, max_action_dim], finite; an embodiment id among `known_ids` below `slots`.
// Where the features live and their values are the engine's to check.
Expected<ActionHeadRun> check_action_head_inputs(const ActionHeadInputs& in, const GrootConfig& config,
                                                 int num_steps, int max_steps, std::int64_t slots,
                                                 const std::set<std::int64_t>& known_ids);

// Whether every one of the `n` values of `dtype` at host memory `p` is finite (f32, bf16, f16;
// other dtypes: true), and the same for a host tensor.
bool all_finite(DType dtype, const std::byte* p, std::int64_t n);
bool all_finite(const Tensor& t);

}  // namespace edgevla::model::groot
