#include "runtime/model/groot/stage_inputs.hpp"

#include <string>

namespace edgevla::model::groot {

Status check_backbone_view(std::size_t k, const Tensor& t, std::size_t first_missing, const GrootConfig& config,
                           std::int64_t max_edge) {
  const std::string name = "image." + std::to_string(k);
  if (first_missing < k) {
    return invalid_argument("groot backbone: " + name + " is bound but image." + std::to_string(first_missing) +
                            " is not; bind the views in order from image.0 (one per video key of the embodiment)");
  }
  const std::int64_t merge = std::int64_t{config.vision.patch_size} * config.unshuffle_factor;
  const std::int64_t c = t.shape()[0], h = t.shape()[1], w = t.shape()[2];
  if (c != config.vision.num_channels || h <= 0 || w <= 0 || h % merge != 0 || w % merge != 0 || h > max_edge ||
      w > max_edge) {
    return invalid_argument("groot backbone: " + name + " is " + t.shape().to_string() + ", expected [" +
                            std::to_string(config.vision.num_channels) + ",h,w] with h and w positive multiples of " +
                            std::to_string(merge) + " (patch " + std::to_string(config.vision.patch_size) +
                            " x unshuffle " + std::to_string(config.unshuffle_factor) + ") up to " +
                            std::to_string(max_edge) +
                            "; pre-process the frame with the groot image transform (smart_resize)");
  }
  return Status::ok();
}

Expected<std::int64_t> check_backbone_prompt(const Tensor& ids, const Tensor& mask, std::int64_t max_tokens,
                                             std::int64_t vocab, std::int64_t image_token_id,
                                             std::span<const BoundView> views) {
  const std::int64_t L = ids.shape()[0];
  if (L == 0 || mask.shape()[0] != L) {
    return invalid_argument("groot backbone: input_ids " + ids.shape().to_string() + " and attention_mask " +
                            mask.shape().to_string() + " must have the same, non-zero length");
  }
  if (L > max_tokens) {
    return invalid_argument("groot backbone: the prompt has " + std::to_string(L) + " tokens, more than the " +
                            std::to_string(max_tokens) +
                            " this model is sized for; shorten the instruction or use fewer or smaller views");
  }
  const std::int32_t* id = ids.data<std::int32_t>();
  const bool* valid = mask.data<bool>();
  bool any = false;
  for (std::int64_t i = 0; i < L; ++i) {
    if (id[i] < 0 || id[i] >= vocab) {
      return invalid_argument("groot backbone: input_ids[" + std::to_string(i) + "] = " + std::to_string(id[i]) +
                              " is outside the vocabulary [0, " + std::to_string(vocab) +
                              "); tokenize with this checkpoint's tokenizer");
    }
    any = any || valid[i];
  }
  if (!any) return invalid_argument("groot backbone: attention_mask has no real token (all padding)");
  // One run of <IMG_CONTEXT> per view, each as long as that view's merged tokens.
  std::size_t runs = 0;
  std::int64_t image_tokens = 0;
  for (std::int64_t i = 0; i < L;) {
    if (id[i] != image_token_id) {
      ++i;
      continue;
    }
    std::int64_t j = i;
    while (j < L && id[j] == image_token_id) ++j;
    if (runs < views.size() && j - i != views[runs].tokens) {
      return invalid_argument("groot backbone: image." + std::to_string(runs) + " " +
                              views[runs].pixels->shape().to_string() + " gives " +
                              std::to_string(views[runs].tokens) + " image tokens but the prompt's image block " +
                              std::to_string(runs) + " holds " + std::to_string(j - i) +
                              " <IMG_CONTEXT> tokens; build the prompt from the same pre-processed frames");
    }
    image_tokens += j - i;
    ++runs;
    i = j;
  }
  if (runs != views.size()) {
    return invalid_argument("groot backbone: the prompt holds " + std::to_string(runs) + " image block(s) but " +
                            std::to_string(views.size()) +
                            " view(s) are bound; give one view per <img> block (the embodiment's video keys)");
  }
  return image_tokens;
}

}  // namespace edgevla::model::groot
