// Checks of the groot stages' inputs that every backend makes the same way (the family's
// contract, groot_family.hpp), so an engine on any device refuses a bad prompt with the same
// words.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/core/tensor.hpp"

namespace edgevla::model::groot {

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
