// Checks of the groot stages' inputs that every backend makes the same way (the family's
// contract, groot_family.hpp), so an engine on any device refuses a bad prompt with the same
// words.
#pragma once

#include <cstdint>
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

}  // namespace edgevla::model::groot
