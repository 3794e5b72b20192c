// The checks of a cuda GR00T action head run's bound inputs: the family's (stage_inputs.hpp: names,
// shapes, the embodiment id, finite state and noise; each failure names the input and the fix),
// then where the features may live.
#include "runtime/backends/cuda/groot/action_head_engine.hpp"
#include "runtime/model/groot/stage_inputs.hpp"

namespace edgevla::backends::cuda::groot::action_head {

Status ActionHeadEngine::check_inputs(const RunOptions& options, std::int64_t& n,
                                      std::int64_t& embodiment) {
  const Tensor* f = bound_input(in_features_);
  EDGEVLA_ASSIGN_OR_RETURN(
      const mg::ActionHeadRun run,
      mg::check_action_head_inputs(
          mg::ActionHeadInputs{f, bound_input(in_mask_), bound_input(in_image_), bound_input(in_state_),
                               bound_input(in_embodiment_), bound_input(in_noise_)},
          cfg_, options.num_steps, max_steps_, state1_.slots, known_ids_));
  n = run.rows;
  embodiment = run.embodiment;
  // The features may stay on this engine's device (the backbone's output); their values are
  // checked there (count_nonfinite in the forward pass).
  if (!f->device().is_cpu() && f->device() != Device::cuda(info_.index)) {
    return invalid_argument("groot action_head: 'backbone_features' is on " + f->device().to_string() +
                            ", not on cuda:" + std::to_string(info_.index) + " or the host");
  }
  return Status::ok();
}

}  // namespace edgevla::backends::cuda::groot::action_head
