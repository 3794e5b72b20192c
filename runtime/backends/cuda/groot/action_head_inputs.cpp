// The checks of a cuda GR00T action head run's bound inputs: names, shapes, dtypes, devices, the
// embodiment id and finite state and noise (each failure names the input and the fix).
#include "runtime/backends/cuda/groot/action_head_engine.hpp"

namespace edgevla::backends::cuda::groot::action_head {

Status ActionHeadEngine::check_inputs(const RunOptions& options, std::int64_t& n,
                                      std::int64_t& embodiment) {
  const std::string stage = "groot action_head";
  if (options.num_steps < 1 || options.num_steps > max_steps_) {
    return out_of_range(stage + ": num_steps " + std::to_string(options.num_steps) +
                        " is outside 1.." + std::to_string(max_steps_) +
                        " (raise the engine's max_steps to allow more)");
  }
  const Tensor* f = bound_input(in_features_);
  const Tensor* am = bound_input(in_mask_);
  const Tensor* im = bound_input(in_image_);
  const Tensor* st = bound_input(in_state_);
  const Tensor* id = bound_input(in_embodiment_);
  const Tensor* nz = bound_input(in_noise_);
  for (const auto& [t, name] : {std::pair{f, "backbone_features"}, std::pair{am, "attention_mask"},
                                std::pair{im, "image_mask"}, std::pair{st, "state"},
                                std::pair{id, "embodiment_id"}, std::pair{nz, "noise"}}) {
    if (t == nullptr) return invalid_argument(stage + " needs input '" + name + "' bound");
  }
  for (const auto& [t, name] :
       {std::pair{am, "attention_mask"}, std::pair{im, "image_mask"}, std::pair{st, "state"},
        std::pair{id, "embodiment_id"}, std::pair{nz, "noise"}}) {
    if (!t->device().is_cpu())
      return invalid_argument(stage + " (cuda): '" + name + "' must be a host tensor");
  }
  const std::int64_t W = cfg_.backbone_embedding_dim, Hz = cfg_.action_horizon,
                     A = cfg_.max_action_dim;
  n = f->shape()[0];
  if (f->shape()[1] != W || n < 1) {
    return invalid_argument(
        stage + ": 'backbone_features' is " + f->shape().to_string() + ", expected [L," +
        std::to_string(W) +
        "] with L >= 1 (backbone and action head must load the same checkpoint)");
  }
  if (!f->device().is_cpu() && f->device() != Device::cuda(info_.index)) {
    return invalid_argument(stage + ": 'backbone_features' is on " + f->device().to_string() +
                            ", not on cuda:" + std::to_string(info_.index) + " or the host");
  }
  if (am->shape()[0] != n || im->shape()[0] != n) {
    return invalid_argument(stage + ": 'attention_mask' " + am->shape().to_string() +
                            " and 'image_mask' " + im->shape().to_string() +
                            " must both have the backbone features' " + std::to_string(n) +
                            " rows");
  }
  if (st->shape()[0] != cfg_.max_state_dim) {
    return invalid_argument(stage + ": 'state' is " + st->shape().to_string() + ", expected [" +
                            std::to_string(cfg_.max_state_dim) +
                            "] (the normalised state zero-padded to max_state_dim)");
  }
  if (!(nz->shape() == Shape{Hz, A})) {
    return invalid_argument(stage + ": 'noise' is " + nz->shape().to_string() + ", expected [" +
                            std::to_string(Hz) + "," + std::to_string(A) + "]");
  }
  if (id->numel() != 1) return invalid_argument(stage + ": 'embodiment_id' must hold one value");
  embodiment = *id->data<std::int32_t>();
  if (embodiment < 0 || embodiment >= state1_.slots || !known_ids_.contains(embodiment)) {
    std::string known;
    for (std::int64_t k : known_ids_) {
      if (k < state1_.slots) known += (known.empty() ? "" : ", ") + std::to_string(k);
    }
    return invalid_argument(
        stage + ": embodiment id " + std::to_string(embodiment) +
        " is not one of the checkpoint's (" + known +
        "; embodiment_id.json and the built-in tags, below max_num_embodiments " +
        std::to_string(state1_.slots) + ")");
  }
  const bool* amv = am->data<bool>();
  const bool* imv = im->data<bool>();
  std::int64_t images = 0;
  for (std::int64_t i = 0; i < n; ++i) images += amv[i] && imv[i] ? 1 : 0;
  if (images == 0) {
    return invalid_argument(
        stage +
        ": the prompt has no attended image token (image_mask & attention_mask is empty); the "
        "image blocks would attend to nothing: give at least one view");
  }
  if (!all_finite(*st)) return invalid_argument(stage + ": 'state' holds a non-finite value");
  if (!all_finite(*nz)) return invalid_argument(stage + ": 'noise' holds a non-finite value");
  return Status::ok();
}

}  // namespace edgevla::backends::cuda::groot::action_head
