#include "runtime/model/groot/stage_inputs.hpp"

#include <cmath>
#include <string>
#include <utility>

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

bool all_finite(DType dtype, const std::byte* p, std::int64_t n) {
  if (dtype == DType::kF32) {
    const auto* v = reinterpret_cast<const float*>(p);
    for (std::int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(v[i])) return false;
    }
  } else if (dtype == DType::kBF16 || dtype == DType::kF16) {
    const bool bf = dtype == DType::kBF16;
    const auto* v = reinterpret_cast<const std::uint16_t*>(p);
    for (std::int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(bf ? bfloat16_to_float(v[i]) : half_to_float(v[i]))) return false;
    }
  }
  return true;
}

bool all_finite(const Tensor& t) { return all_finite(t.dtype(), t.raw_data(), t.numel()); }

Expected<ActionHeadRun> check_action_head_inputs(const ActionHeadInputs& in, const GrootConfig& config,
                                                 int num_steps, int max_steps, std::int64_t slots,
                                                 const std::set<std::int64_t>& known_ids) {
  const std::string stage = "groot action_head";
  if (num_steps < 1 || num_steps > max_steps) {
    return out_of_range(stage + ": num_steps " + std::to_string(num_steps) + " is outside 1.." +
                        std::to_string(max_steps) + " (raise the engine's max_steps to allow more)");
  }
  const Tensor *f = in.features, *am = in.attention_mask, *im = in.image_mask, *st = in.state,
               *id = in.embodiment_id, *nz = in.noise;
  for (const auto& [t, name] : {std::pair{f, "backbone_features"}, std::pair{am, "attention_mask"},
                                std::pair{im, "image_mask"}, std::pair{st, "state"},
                                std::pair{id, "embodiment_id"}, std::pair{nz, "noise"}}) {
    if (t == nullptr) return invalid_argument(stage + " needs input '" + name + "' bound");
  }
  for (const auto& [t, name] : {std::pair{am, "attention_mask"}, std::pair{im, "image_mask"},
                                std::pair{st, "state"}, std::pair{id, "embodiment_id"}, std::pair{nz, "noise"}}) {
    if (!t->device().is_cpu()) {
      return invalid_argument(stage + ": '" + name + "' is on " + t->device().to_string() +
                              "; it must be a host tensor (the engine reads it on the host)");
    }
  }
  const std::int64_t W = config.backbone_embedding_dim, Hz = config.action_horizon, A = config.max_action_dim;
  ActionHeadRun run;
  const std::int64_t n = f->shape()[0];
  run.rows = n;
  if (f->shape()[1] != W || n < 1) {
    return invalid_argument(stage + ": 'backbone_features' is " + f->shape().to_string() + ", expected [L," +
                            std::to_string(W) +
                            "] with L >= 1 (backbone and action head must load the same checkpoint)");
  }
  if (am->shape()[0] != n || im->shape()[0] != n) {
    return invalid_argument(stage + ": 'attention_mask' " + am->shape().to_string() + " and 'image_mask' " +
                            im->shape().to_string() + " must both have the backbone features' " +
                            std::to_string(n) + " rows");
  }
  if (st->shape()[0] != config.max_state_dim) {
    return invalid_argument(stage + ": 'state' is " + st->shape().to_string() + ", expected [" +
                            std::to_string(config.max_state_dim) +
                            "] (the normalised state zero-padded to max_state_dim)");
  }
  if (!(nz->shape() == Shape{Hz, A})) {
    return invalid_argument(stage + ": 'noise' is " + nz->shape().to_string() + ", expected [" +
                            std::to_string(Hz) + "," + std::to_string(A) + "]");
  }
  if (id->numel() != 1) return invalid_argument(stage + ": 'embodiment_id' must hold one value");
  run.embodiment = *id->data<std::int32_t>();
  if (run.embodiment < 0 || run.embodiment >= slots || !known_ids.contains(run.embodiment)) {
    std::string known;
    for (std::int64_t k : known_ids) {
      if (k < slots) known += (known.empty() ? "" : ", ") + std::to_string(k);
    }
    return invalid_argument(stage + ": embodiment id " + std::to_string(run.embodiment) +
                            " is not one of the checkpoint's (" + known +
                            "; embodiment_id.json and the built-in tags, below max_num_embodiments " +
                            std::to_string(slots) + ")");
  }
  const bool* amv = am->data<bool>();
  const bool* imv = im->data<bool>();
  std::int64_t images = 0;
  for (std::int64_t i = 0; i < n; ++i) images += amv[i] && imv[i] ? 1 : 0;
  if (images == 0) {
    return invalid_argument(stage +
                            ": the prompt has no attended image token (image_mask & attention_mask is empty); the "
                            "image blocks would attend to nothing: give at least one view");
  }
  if (!all_finite(*st)) return invalid_argument(stage + ": 'state' holds a non-finite value");
  if (!all_finite(*nz)) return invalid_argument(stage + ": 'noise' holds a non-finite value");
  return run;
}

}  // namespace edgevla::model::groot
