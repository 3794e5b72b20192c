// The checks of a cuda GR00T action head run's bound inputs: the family's (stage_inputs.hpp: names,
// shapes, the embodiment id, finite state and noise; each failure names the input and the fix),
// then where the features may live; and the once-a-chunk work on them ahead of the Euler steps.
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

// The attended tokens packed apart (text, image), vlln, then every cross block's keys|values (one
// GEMM for the text blocks, one for the image blocks), the state token and W2's τ half. With the
// overlap on (EDGEVLA_CUDA_GROOT_OVERLAP=1) the text ones run on a side stream beside the image ones
// and the state encoder: each GEMM reads its blocks' weights (100 MB at full size), and side by
// side they share the device's bandwidth instead of taking turns; joined before the first step. At
// 2 (default) the state token and τ product go first on the side stream, under the image GEMM,
// instead of after it on the main stream.
// (The image ones beside step 0's blocks up to the first image block instead, joined there, ran no
// faster: bench/results/issue9_h200 run 60 call 3.)
// Profiling builds: `cross_kv` leaves the two GEMMs out (what they cost ahead of the first step).
Status ActionHeadEngine::chunk_work(int steps, std::int64_t text_rows, std::int64_t image_rows,
                                    DType feature_type) {
  const std::int64_t W = cfg_.backbone_embedding_dim, E = E_, L = max_tokens_, Sd = cfg_.max_state_dim;
  const std::int64_t hs = cfg_.hidden_size;
  cudaStream_t s = stream_.get();
  const Gemm mm = gemm();
  struct TokenSet {
    const std::int32_t* idx;
    std::int64_t rows;
    float* f32;
    void* normed;
    CrossKv& kv;
  };
  TokenSet text{ints_ + 2, text_rows, vl_text_f32_, vl_text_, text_kv_};
  TokenSet image{ints_ + 2 + L, image_rows, vl_f32_, vl_image_, image_kv_};
  const auto keys_values = [&](cudaStream_t st, const Gemm& g, TokenSet& t) -> Status {
    EDGEVLA_RETURN_IF_ERROR(
        gather_rows(st, feat_stage_, feature_type, W, t.idx, t.rows, W, t.f32, DType::kF32, W, true));
    EDGEVLA_RETURN_IF_ERROR(count_nonfinite(st, t.f32, t.rows * W, bad_));
    EDGEVLA_RETURN_IF_ERROR(layer_norm(st, t.f32, t.rows, W, vlln_w_, vlln_b_, kVllnEps, t.normed, act_));
    if (ablation_.skip("cross_kv")) return Status::ok();
    return g(t.normed, t.rows, W, t.kv.w, t.kv.kv, act_, t.kv.w.out);
  };
  // Outside capture (the pass that plans each GEMM shape on first use), the side stream's work is
  // done before the main stream's next GEMM is planned: plans are timed on an otherwise idle device.
  const auto join_side_if_eager = [&]() -> Status {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(s, &capture));
    if (capture == cudaStreamCaptureStatusNone) EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(side_.get()));
    return Status::ok();
  };
  // The state token (relu between the layers), and W2's τ half plus its bias per step.
  const auto state_and_tau = [&](cudaStream_t st, const Gemm& g) -> Status {
    EDGEVLA_RETURN_IF_ERROR(convert(st, state_, DType::kF32, state_act_, act_, Sd));
    EDGEVLA_RETURN_IF_ERROR(g(state_act_, 1, Sd, state1_.sel, st_hid_, act_, hs));
    EDGEVLA_RETURN_IF_ERROR(bias_activation(st, st_hid_, act_, 1, hs, hs, nullptr, Activation::kRelu));
    EDGEVLA_RETURN_IF_ERROR(g(st_hid_, 1, hs, state2_.sel, state_feat_, DType::kF32, E));
    return g(tau_, steps, E, act2_t_, tau_bias_, DType::kF32, E);
  };
  if (overlap_ == 0) {
    EDGEVLA_RETURN_IF_ERROR(keys_values(s, mm, text));
    EDGEVLA_RETURN_IF_ERROR(keys_values(s, mm, image));
    return state_and_tau(s, mm);
  }
  cudaStream_t side = side_.get();
  const Gemm side_mm{side_blas_.get(), side, act_, info_.multiprocessors};
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(side_fork_.get(), s));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(side, side_fork_.get(), 0));
  if (overlap_ == 2) EDGEVLA_RETURN_IF_ERROR(state_and_tau(side, side_mm));
  EDGEVLA_RETURN_IF_ERROR(keys_values(side, side_mm, text));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(side_join_.get(), side));
  EDGEVLA_RETURN_IF_ERROR(join_side_if_eager());
  EDGEVLA_RETURN_IF_ERROR(keys_values(s, mm, image));
  if (overlap_ != 2) EDGEVLA_RETURN_IF_ERROR(state_and_tau(s, mm));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s, side_join_.get(), 0));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda::groot::action_head
