// pi0 / pi0.5 action head on the GPU: loading, the time-only quantities, the Euler loop as one
// CUDA graph, and the run (the class and what it holds: action_head_engine.hpp).
#include "runtime/backends/cuda/pi0/action_head_engine.hpp"

namespace edgevla::backends::cuda::pi0 {

Status ActionHeadEngine::load(const model::pi0::Pi0Model& m, const EngineOptions& o) {
  const model::Checkpoint& ck = m.checkpoint();
  pi05_ = cfg_.type == model::ModelType::kPi05;
  const std::int64_t P = cfg_.prefix_len(), L = cfg_.expert.depth, A = cfg_.action_dim, Hz = cfg_.action_horizon;
  const std::int64_t S = cfg_.suffix_len(), E = cfg_.expert.width, F = cfg_.expert.mlp_dim;
  const std::int64_t H = cfg_.expert.num_heads, K = cfg_.expert.num_kv_heads, h = cfg_.expert.head_dim;
  const std::int64_t Q = (H + 2 * K) * h;
  EDGEVLA_ASSIGN_OR_RETURN(in_kv_, input_slot("kv"));
  EDGEVLA_ASSIGN_OR_RETURN(in_mask_, input_slot("mask"));
  EDGEVLA_ASSIGN_OR_RETURN(in_state_, input_slot("state"));
  EDGEVLA_ASSIGN_OR_RETURN(in_noise_, input_slot("noise"));
  EDGEVLA_ASSIGN_OR_RETURN(out_actions_, output_slot("actions"));
  EDGEVLA_ASSIGN_OR_RETURN(out_velocities_, output_slot("velocities"));
  outputs_[static_cast<std::size_t>(out_velocities_)].max_shape = Shape{max_steps_, Hz, A};
  // A cache the cuda backbone leaves on the device has its rows padded to the bucket.
  inputs_[static_cast<std::size_t>(in_kv_)].max_shape = Shape{L, 2, padded_rows(P), K, h};
  inputs_[static_cast<std::size_t>(in_kv_)].device = Device::cuda(info_.index);
  inputs_[static_cast<std::size_t>(in_mask_)].max_shape = Shape{padded_rows(P)};

  EDGEVLA_ASSIGN_OR_RETURN(cpu::TowerWeights tw, cpu::load_expert(ck));
  EDGEVLA_ASSIGN_OR_RETURN(cpu::HeadWeights hw, cpu::load_heads(ck));
  WeightPlan wp(act_);
  layers_.resize(tw.layers.size());
  for (std::size_t i = 0; i < tw.layers.size(); ++i) {
    const cpu::GemmaLayer& s = tw.layers[i];
    ExpertLayerDev& d = layers_[i];
    if (pi05_) {
      wp.linear(d.in_mod, {&s.in_mod});
      wp.linear(d.post_mod, {&s.post_mod});
    } else {
      wp.vector(d.in_norm, s.in_norm);
      wp.vector(d.post_norm, s.post_norm);
    }
    wp.linear(d.qkv, {&s.q, &s.k, &s.v});
    wp.linear(d.o, {&s.o});
    wp.linear(d.gate_up, {&s.gate, &s.up});
    wp.linear(d.down, {&s.down});
  }
  wp.linear(action_in_, {&hw.action_in});
  wp.linear(action_out_, {&hw.action_out});
  if (pi05_) {
    wp.linear(final_mod_, {&tw.final_mod});
    wp.linear(time_in_, {&hw.time_in});
    wp.linear(time_out_, {&hw.time_out});
  } else {
    wp.vector(final_norm_, tw.final_norm);
    wp.linear(state_proj_, {&hw.state_proj});
    wp.linear(action_time_in_, {&hw.action_time_in});
    wp.linear(action_time_out_, {&hw.action_time_out});
  }
  inv_freq_host_ = model::pi0::rope_inv_freq(h);
  wp.vector(inv_freq_, inv_freq_host_);
  wp.place(arena_);

  BufferPlan buf(arena_);
  buf(cache_own_, bytes_of(act_, L * 2 * P * K * h));
  buf(staging_, bytes_of(DType::kF32, L * 2 * P * K * h));
  buf(x_, bytes_of(DType::kF32, Hz * A));
  buf(vel_, bytes_of(DType::kF32, Hz * A));
  buf(vel_all_, bytes_of(DType::kF32, static_cast<std::int64_t>(max_steps_) * Hz * A));
  buf(xs_, bytes_of(DType::kF32, S * E));
  buf(parts_, bytes_of(DType::kF32, kMaxKParts * S * E));
  buf(state_, bytes_of(DType::kF32, A));
  buf(state_emb_, bytes_of(DType::kF32, E));
  buf(xa_, bytes_of(act_, std::max(Hz, S) * A));
  buf(sa_, bytes_of(act_, A));
  buf(ys_, bytes_of(act_, S * E));
  buf(qkv_, bytes_of(act_, S * Q));
  buf(o_, bytes_of(act_, S * H * h));
  buf(gu_, bytes_of(act_, S * 2 * F));
  // The chained gate|up GEMM may leave two f32 k parts (plan_chain): bf16, asked for only.
  if (act_ == DType::kBF16 && chain_asked()) buf(gu_parts_, bytes_of(DType::kF32, kGateUpParts * S * 2 * F));
  buf(g_, bytes_of(act_, S * F));
  plan_wgmma(tw);
  if (gemm_norm_) buf(norm_scratch_, wgmma_norm_scratch_bytes(E));
  if (w8_) buf(w8_buffer_, WgmmaW8Weights::bytes(w8_entries()));
  buf(at_, bytes_of(act_, Hz * E));
  buf(hid_, bytes_of(act_, Hz * E));
  buf(mods_, bytes_of(DType::kF32, static_cast<std::int64_t>(max_steps_) * (pi05_ ? (2 * L + 1) * 3 * E : E)));
  buf(temb_, bytes_of(act_, static_cast<std::int64_t>(max_steps_) * E));
  buf(temb_f32_, bytes_of(DType::kF32, static_cast<std::int64_t>(max_steps_) * E));
  buf(cond_, bytes_of(act_, static_cast<std::int64_t>(max_steps_) * E));
  buf(cond_f32_, bytes_of(DType::kF32, static_cast<std::int64_t>(max_steps_) * E));
  buf(n_dev_, 16);
  buf(b_limit_, bytes_of(DType::kI32, S));
  rope_in_attention_ = act_ == DType::kBF16 && !rope_in_qkv() && rope_in_attention_asked();
  if (rope_table_used()) buf(rope_table_, bytes_of(DType::kF32, S * h));
  AttentionArgs aa{act_, 1, S, H, K, h};
  aa.a_max = P;
  aa.b_len = S;
  scratch_bytes_ = attention_scratch_bytes(aa);
  buf(scratch_, scratch_bytes_);
  EDGEVLA_RETURN_IF_ERROR(plan_fused(padded_rows(P), buf));
  EDGEVLA_RETURN_IF_ERROR(allocate_and_upload(wp, m, o));
  buf.resolve();
  // The norm epilogue's counters start at zero (each call leaves them so).
  if (gemm_norm_) EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemset(norm_scratch_, 0, wgmma_norm_scratch_bytes(E)));
  plan_chain();
  // int8 copies from the row-major weights, before they are tiled in place.
  if (w8_) EDGEVLA_RETURN_IF_ERROR(w8_weights_.quantize(stream_.get(), w8_buffer_, w8_entries()));
  EDGEVLA_RETURN_IF_ERROR(tile_wgmma_weights());
  if (fused_) {
    std::vector<FusedExpertLayer> table(layers_.size());
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      table[i] = FusedExpertLayer{layers_[i].qkv.w, layers_[i].o.w, layers_[i].gate_up.w, layers_[i].down.w};
    }
    EDGEVLA_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(fused_layers_, table.data(), table.size() * sizeof(FusedExpertLayer), cudaMemcpyHostToDevice));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemset(fused_args_.barrier, 0, 64));
    fused_args_.layers = fused_layers_;
    fused_args_.x = xs_;
    fused_args_.ys = ys_;
    fused_args_.qkv = qkv_;
    fused_args_.o = o_;
    fused_args_.g = g_;
    fused_args_.prefix_len = n_dev_;
    fused_args_.inv_freq = inv_freq_;
    fused_args_.eps = kNormEps;
    fused_args_.scale = 1.0f / std::sqrt(static_cast<float>(h));
    const char* pf = std::getenv("EDGEVLA_CUDA_FUSED_PREFETCH");
    fused_args_.prefetch = pf != nullptr && std::string_view(pf) == "1";
  }
  {
    const char* fs = std::getenv("EDGEVLA_CUDA_FLOW_STEP");
    // Only while each block's read of both projections stays small (flow_step in kernels.hpp).
    const bool small = 2 * static_cast<std::size_t>(A * E) * dtype_size(act_) <= (std::size_t{256} << 10);
    flow_step_ = (fs == nullptr || std::string_view(fs) != "0") && E <= 8192 && A <= 256 && small;
  }
  // pi0: the state token sees the prefix and itself; action rows see every suffix key.
  std::vector<std::int32_t> limit(static_cast<std::size_t>(S), static_cast<std::int32_t>(S));
  if (!pi05_) limit[0] = 1;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy(b_limit_, limit.data(), limit.size() * 4, cudaMemcpyHostToDevice));
  // A pageable cudaMemcpy may return before its bytes land, and this engine's stream does not
  // wait for the legacy stream: the device finishes them before the first run.
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  // pi0: the halves of action_time_mlp_in [E, 2E]: columns [0, E) act on the action embedding,
  // [E, 2E) on the time embedding.
  if (!pi05_) {
    action_time_a_ = action_time_in_;
    action_time_a_.in = E;
    action_time_a_.ld = 2 * E;
    action_time_t_ = action_time_a_;
    action_time_t_.w = static_cast<std::byte*>(action_time_in_.w) + bytes_of(act_, E);
  }
  EDGEVLA_ASSIGN_OR_RETURN(actions_own_, Tensor::empty(DType::kF32, Shape{Hz, A}));
  EDGEVLA_ASSIGN_OR_RETURN(PinnedBuffer pinned, PinnedBuffer::allocate(64));
  pinned_ = std::make_unique<PinnedBuffer>(std::move(pinned));
  pinned_n_ = static_cast<std::int32_t*>(pinned_->get());
  return Status::ok();
}

Status ActionHeadEngine::prepare_steps(int steps) {
  const std::int64_t L = cfg_.expert.depth, E = cfg_.expert.width;
  cudaStream_t s = stream_.get();
  // Sin-cos time embedding per step, in float64 as the reference, t accumulated in float32.
  const std::int64_t half = E / 2;
  std::vector<float> temb(static_cast<std::size_t>(steps * E));
  const float dt = -1.0f / static_cast<float>(steps);
  float t = 1.0f;
  for (int i = 0; i < steps; ++i, t += dt) {
    for (std::int64_t k = 0; k < half; ++k) {
      const double f = half > 1 ? static_cast<double>(k) / static_cast<double>(half - 1) : 0.0;
      const double omega = 1.0 / (4e-3 * std::pow(4.0 / 4e-3, f)) * 2.0 * std::numbers::pi;
      const double a = omega * static_cast<double>(t);
      temb[static_cast<std::size_t>(i * E + k)] = static_cast<float>(std::sin(a));
      temb[static_cast<std::size_t>(i * E + half + k)] = static_cast<float>(std::cos(a));
    }
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(temb_f32_, temb.data(), temb.size() * 4, cudaMemcpyHostToDevice, s));
  EDGEVLA_RETURN_IF_ERROR(convert(s, temb_f32_, DType::kF32, temb_, act_, steps * E));
  const Gemm mm = gemm();
  if (pi05_) {
    // cond = silu(time_out(silu(time_in(temb)))), then every norm's scale | shift | gate.
    EDGEVLA_RETURN_IF_ERROR(mm(temb_, steps, E, time_in_, cond_, act_, E));
    EDGEVLA_RETURN_IF_ERROR(silu(s, cond_, act_, steps * E));
    EDGEVLA_RETURN_IF_ERROR(mm(cond_, steps, E, time_out_, cond_f32_, DType::kF32, E));
    EDGEVLA_RETURN_IF_ERROR(silu(s, cond_f32_, DType::kF32, steps * E));
    EDGEVLA_RETURN_IF_ERROR(convert(s, cond_f32_, DType::kF32, cond_, act_, steps * E));
    const std::int64_t per_step = (2 * L + 1) * 3 * E;
    for (std::int64_t l = 0; l < L; ++l) {
      const ExpertLayerDev& w = layers_[static_cast<std::size_t>(l)];
      EDGEVLA_RETURN_IF_ERROR(mm(cond_, steps, E, w.in_mod, mods_ + (2 * l) * 3 * E, DType::kF32, per_step));
      EDGEVLA_RETURN_IF_ERROR(mm(cond_, steps, E, w.post_mod, mods_ + (2 * l + 1) * 3 * E, DType::kF32, per_step));
    }
    EDGEVLA_RETURN_IF_ERROR(mm(cond_, steps, E, final_mod_, mods_ + 2 * L * 3 * E, DType::kF32, per_step));
  } else {
    // The time half of action_time_mlp_in plus its bias: one bias row per step.
    EDGEVLA_RETURN_IF_ERROR(mm(temb_, steps, E, action_time_t_, mods_, DType::kF32, E));
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  prepared_steps_ = steps;
  return Status::ok();
}

// One evaluation of the velocity field for step i, then the Euler update of x.
Status ActionHeadEngine::step(int i, int steps, float dt, const void* cache, std::int64_t cache_rows,
                              std::int64_t attend_rows, float* velocity_out) {
  const std::int64_t L = cfg_.expert.depth, A = cfg_.action_dim, Hz = cfg_.action_horizon;
  const std::int64_t S = cfg_.suffix_len(), E = cfg_.expert.width, F = cfg_.expert.mlp_dim;
  const std::int64_t H = cfg_.expert.num_heads, K = cfg_.expert.num_kv_heads, h = cfg_.expert.head_dim;
  const std::int64_t Q = (H + 2 * K) * h;
  const std::size_t es = dtype_size(act_);
  cudaStream_t s = stream_.get();
  const Gemm mm = gemm();
  const float* mods = mods_ + static_cast<std::int64_t>(i) * (pi05_ ? (2 * L + 1) * 3 * E : E);

  const bool fused_layers = fused_ && cache_rows <= fused_max_rows_;
  const bool flow = flow_step_ && !fused_layers;
  // The previous step's flow_step wrote this step's action input projection (pi0.5: into xs_;
  // pi0: into at_).
  const bool input_ready = flow && i > 0;
  if (!input_ready) EDGEVLA_RETURN_IF_ERROR(convert(s, x_, DType::kF32, xa_, act_, Hz * A));
  if (pi05_) {
    if (!input_ready) EDGEVLA_RETURN_IF_ERROR(mm(xa_, Hz, A, action_in_, xs_, DType::kF32, E));
  } else {
    // Row 0: the state token (embedded once before the loop; the layers overwrite the row).
    // Action rows: action_time_mlp_out(silu(W_a · action_in(x) + W_t · temb + b)).
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(xs_, state_emb_, bytes_of(DType::kF32, E), cudaMemcpyDeviceToDevice, s));
    if (!input_ready) EDGEVLA_RETURN_IF_ERROR(mm(xa_, Hz, A, action_in_, at_, act_, E));
    EDGEVLA_RETURN_IF_ERROR(mm(at_, Hz, E, action_time_a_, hid_, act_, E, 0.0f, Epilogue::kNone, mods));
    EDGEVLA_RETURN_IF_ERROR(silu(s, hid_, act_, Hz * E));
    EDGEVLA_RETURN_IF_ERROR(mm(hid_, Hz, E, action_time_out_, xs_ + E, DType::kF32, E));
  }
  // The first step follows the producer's layers (layer_waits_).
  const LayerEvents* waits = i == 0 ? layer_waits_.get() : nullptr;
  if (fused_layers) {
    // Every layer and the final norm in one kernel; then the output head and the Euler update.
    if (waits != nullptr) {
      for (std::size_t l = 0; l < waits->size(); ++l) EDGEVLA_RETURN_IF_ERROR(waits->wait(l, s));
    }
    FusedExpertArgs fa = fused_args_;
    fa.mods = mods;
    fa.cache = cache;
    fa.shape.max_prefix = cache_rows;
    EDGEVLA_RETURN_IF_ERROR(fused_expert(s, fa));
    EDGEVLA_RETURN_IF_ERROR(mm(ys_, Hz, E, action_out_, vel_, DType::kF32, A));
    return euler_step(s, x_, vel_, dt, Hz * A, velocity_out);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  // The o and down projections leave their k parts for the norm after them to add to the
  // residual stream (Gemm::parts). pi0.5: that norm also applies the residual's gate (`pending`
  // is the down projection's gate; its parts wait in parts_).
  const float* pending = nullptr;
  ResidualParts down_parts{0, 0, nullptr};  // count 0: no down projection pending yet
  bool normed = false;  // ys_ already holds the next norm's output (gemm_norm_)
  // From the first norm to the final one, each kernel is chained to the one before it.
  const DependentLaunchScope chained((chain_ && chain_launch_ == ChainLaunch::kAll) || wgmma_chain_);
  // Kernels a profiling build may leave out (Ablation): norm, qkv, rope, attention, o, gate_up, down.
  const Ablation& ab = ablation_;
  for (std::int64_t l = 0; l < L; ++l) {
    const ExpertLayerDev& w = layers_[static_cast<std::size_t>(l)];
    const float* mod_in = mods + (2 * l) * 3 * E;
    const float* mod_post = mods + (2 * l + 1) * 3 * E;
    const bool in_normed = normed;
    normed = false;
    if (ab.skip("norm") || in_normed) {
      // The down projection before wrote this layer's normalised rows (gemm_norm_).
    } else if (pi05_ && pending != nullptr) {
      EDGEVLA_RETURN_IF_ERROR(gated_add_ada_rms_norm(s, xs_, parts_, DType::kF32, S, E, pending, mod_in, mod_in + E,
                                                     kNormEps, ys_, act_, down_parts));
    } else if (pi05_) {
      EDGEVLA_RETURN_IF_ERROR(ada_rms_norm(s, xs_, S, E, mod_in, mod_in + E, kNormEps, ys_, act_));
    } else if (down_parts.count > 0) {
      EDGEVLA_RETURN_IF_ERROR(
          rms_norm(s, xs_, parts_, DType::kF32, S, E, w.in_norm, kNormEps, ys_, act_, down_parts));
    } else {
      EDGEVLA_RETURN_IF_ERROR(rms_norm(s, xs_, nullptr, DType::kF32, S, E, w.in_norm, kNormEps, ys_, act_));
    }
    if (!ab.skip("qkv")) EDGEVLA_RETURN_IF_ERROR(layer_gemm(kChainQkv, mm, ys_, E, w.qkv, qkv_, Q, 1).status());
    auto* q = static_cast<std::byte*>(qkv_);
    // q and k side by side in the row: one launch rotates both (or q|k|v's epilogue did, or the
    // attention rotates them as it loads them).
    const bool rope_inside = rope_in_attention();
    if (!rope_in_qkv() && !rope_inside && !ab.skip("rope")) {
      EDGEVLA_RETURN_IF_ERROR(rope(s, q, act_, S, H + K, h, Q, n_dev_, inv_freq_));
    }
    const auto* kc = static_cast<const std::byte*>(cache) + static_cast<std::size_t>((2 * l) * cache_rows * K * h) * es;
    const auto* vc = static_cast<const std::byte*>(cache) + static_cast<std::size_t>((2 * l + 1) * cache_rows * K * h) * es;
    AttentionArgs a{act_, 1, S, H, K, h, scale};
    a.q = q;
    a.ldq = Q;
    a.out = o_;
    a.ldo = H * h;
    a.a = KvBlock{kc, vc, K * h, 0};
    a.a_len = n_dev_;
    a.a_max = attend_rows;
    a.b = KvBlock{q + H * h * es, q + (H + K) * h * es, Q, 0};
    a.b_len = S;
    a.b_limit = pi05_ ? nullptr : b_limit_;
    a.scratch = scratch_;
    a.scratch_bytes = scratch_bytes_;
    a.a_constant = true;  // the prefix cache is written before the loop
    if (rope_inside) a.rope = rope_table_;
    int o_parts = 1;  // left out (Ablation), the norm reads one stale part
    {
      // The attention's blocks release the o projection as they start: its weights are read
      // while the attention runs (the chain's point, launch.cuh).
      const DependentLaunchScope narrow(narrow_chain(kChainO));
      if (waits != nullptr) {
        // Layer l of the cache written: this attention then starts as a plain launch behind that
        // wait (not released early by the kernel before it); the chain resumes after it.
        EDGEVLA_RETURN_IF_ERROR(waits->wait(static_cast<std::size_t>(l), s));
        const ChainPause plain;
        if (!ab.skip("attention")) EDGEVLA_RETURN_IF_ERROR(attention(s, a));
      } else if (!ab.skip("attention")) {
        EDGEVLA_RETURN_IF_ERROR(attention(s, a));
      }
      if (ab.skip("o")) {
      } else if (gemm_norm_) {
        // x += o (+ bias) (· gate), and the post-attention norm, in o's GEMM.
        EDGEVLA_RETURN_IF_ERROR(layer_gemm_norm(o_, H * h, w.o, pi05_ ? mod_in + 2 * E : nullptr,
                                                pi05_ ? mod_post : w.post_norm));
      } else {
        EDGEVLA_ASSIGN_OR_RETURN(o_parts, layer_gemm(kChainO, mm, o_, H * h, w.o, parts_, E, kMaxKParts));
      }
    }
    const ResidualParts o_layout{o_parts, S * E, w.o.bias};
    if (ab.skip("norm") || gemm_norm_) {
    } else if (pi05_) {
      EDGEVLA_RETURN_IF_ERROR(gated_add_ada_rms_norm(s, xs_, parts_, DType::kF32, S, E, mod_in + 2 * E, mod_post,
                                                     mod_post + E, kNormEps, ys_, act_, o_layout));
    } else {
      EDGEVLA_RETURN_IF_ERROR(
          rms_norm(s, xs_, parts_, DType::kF32, S, E, w.post_norm, kNormEps, ys_, act_, o_layout));
    }
    int count = 1;  // as o_parts
    if (on_wgmma(kChainGateUp)) {
      // gate|up and its GeGLU in one launch, into g_.
      if (!ab.skip("gate_up")) EDGEVLA_RETURN_IF_ERROR(layer_gemm(kChainGateUp, mm, ys_, E, w.gate_up, g_, F, 1).status());
      // With gemm_norm_, down's GEMM also adds into the residual stream and writes the next norm's
      // rows: the next layer's input norm, or pi0.5's final norm (pi0's final norm covers the
      // action rows only and stays a kernel).
      const bool last = l + 1 == L;
      if (ab.skip("down")) {
      } else if (gemm_norm_ && (pi05_ || !last)) {
        const float* next = pi05_ ? mods + (2 * (l + 1)) * 3 * E : layers_[static_cast<std::size_t>(l + 1)].in_norm;
        EDGEVLA_RETURN_IF_ERROR(layer_gemm_norm(g_, F, w.down, pi05_ ? mod_post + 2 * E : nullptr, next));
        normed = true;
        continue;
      } else {
        EDGEVLA_ASSIGN_OR_RETURN(count, layer_gemm(kChainDown, mm, g_, F, w.down, parts_, E, kMaxKParts));
      }
    } else {
      // The chained gate|up GEMM writes bf16 or k parts (into gu_parts_) that the GeGLU sums.
      const bool gu_chained = (chain_gemms_ & kChainGateUp) != 0;
      void* gu = gu_chained ? static_cast<void*>(gu_parts_) : gu_;
      EDGEVLA_ASSIGN_OR_RETURN(const int gp, layer_gemm(kChainGateUp, mm, ys_, E, w.gate_up, gu, 2 * F,
                                                        gu_chained ? gate_up_parts(w) : 1));
      const DependentLaunchScope narrow(narrow_chain(kChainDown));
      if (gp == 1) {
        EDGEVLA_RETURN_IF_ERROR(geglu(s, gu, S, F, g_, act_));
      } else {
        EDGEVLA_RETURN_IF_ERROR(geglu_parts(s, gu_parts_, gp, S * 2 * F, S, F, g_, act_));
      }
      EDGEVLA_ASSIGN_OR_RETURN(count, layer_gemm(kChainDown, mm, g_, F, w.down, parts_, E, kMaxKParts));
    }
    down_parts = ResidualParts{count, S * E, w.down.bias};
    if (pi05_) pending = mod_post + 2 * E;
  }
  // Final norm over the action rows only, then the output head and the Euler update.
  if (normed) {
    // pi0.5: the last down projection's GEMM wrote it (gemm_norm_).
  } else if (pi05_) {
    // pi0.5's suffix is the action rows only (S == H): the last gated residual and the final
    // norm in one pass.
    const float* mod = mods + 2 * L * 3 * E;
    EDGEVLA_RETURN_IF_ERROR(gated_add_ada_rms_norm(s, xs_, parts_, DType::kF32, S, E, pending, mod, mod + E, kNormEps,
                                                   ys_, act_, down_parts));
  } else {
    // The last down projection's parts are added over the action rows only (the state row is
    // not read again), the sum written back to those rows as the norm reads them.
    const std::int64_t skip = (S - Hz) * E;
    EDGEVLA_RETURN_IF_ERROR(rms_norm(s, xs_ + skip, parts_ + skip, DType::kF32, Hz, E, final_norm_, kNormEps, ys_,
                                     act_, down_parts));
  }
  if (flow) {
    FlowStepArgs f;
    f.act = act_;
    f.rows = Hz, f.width = E, f.action_dim = A;
    f.y = ys_, f.ldy = E;
    f.w_out = action_out_.w, f.ld_out = action_out_.ld, f.b_out = action_out_.bias;
    f.x = x_, f.dt = dt, f.v_out = velocity_out;
    if (i + 1 < steps) {
      f.w_in = action_in_.w, f.ld_in = action_in_.ld, f.b_in = action_in_.bias;
      f.next_width = E, f.ld_next = E;
      f.next = pi05_ ? static_cast<void*>(xs_) : at_;
      f.next_type = pi05_ ? DType::kF32 : act_;
    }
    return flow_step(s, f);
  }
  EDGEVLA_RETURN_IF_ERROR(mm(ys_, Hz, E, action_out_, vel_, DType::kF32, A));
  return euler_step(s, x_, vel_, dt, Hz * A, velocity_out);
}

Status ActionHeadEngine::loop(int steps, const void* cache, std::int64_t cache_rows, std::int64_t attend_rows,
                              float* velocities) {
  const std::int64_t A = cfg_.action_dim, Hz = cfg_.action_horizon, E = cfg_.expert.width;
  if (!pi05_) {
    EDGEVLA_RETURN_IF_ERROR(convert(stream_.get(), state_, DType::kF32, sa_, act_, A));
    EDGEVLA_RETURN_IF_ERROR(gemm()(sa_, 1, A, state_proj_, state_emb_, DType::kF32, E));
  }
  if (rope_table_used()) {
    // The action rows' positions follow the prefix: the same angles every layer and step.
    EDGEVLA_RETURN_IF_ERROR(rope_table(stream_.get(), cfg_.suffix_len(), cfg_.expert.head_dim / 2, n_dev_, inv_freq_,
                                       rope_table_));
  }
  const float dt = -1.0f / static_cast<float>(steps);
  for (int i = 0; i < steps; ++i) {
    float* v = velocities != nullptr ? velocities + i * Hz * A : nullptr;
    EDGEVLA_RETURN_IF_ERROR(step(i, steps, dt, cache, cache_rows, attend_rows, v));
  }
  return Status::ok();
}

Status ActionHeadEngine::run(const RunOptions& options) {
  const NvtxRange nvtx(family(), stage());
  const auto t0 = std::chrono::steady_clock::now();
  timings_ = {};
  const std::int64_t P = cfg_.prefix_len(), L = cfg_.expert.depth, A = cfg_.action_dim, Hz = cfg_.action_horizon;
  const std::int64_t K = cfg_.expert.num_kv_heads, h = cfg_.expert.head_dim;
  cudaStream_t s = stream_.get();
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaSetDevice(info_.index));
  // Inputs still being written by queued device work: this stream waits for it, on the device. A
  // cache from another process is waited for on the host before the first device work, so the
  // host work up to there overlaps the backbone's.
  // A cache on this device with its producer's per-layer events is waited for layer by layer in
  // the first step (step()); the other inputs here.
  std::vector<const Tensor*> waited = bound_inputs();
  layer_waits_ = nullptr;
  if (const Tensor* kv = bound_input(in_kv_); kv != nullptr) {
    auto layers = layer_events_of(*kv, info_.index);
    if (layers != nullptr && static_cast<std::int64_t>(layers->size()) == cfg_.expert.depth &&
        kv->dtype() == act_) {
      layer_waits_ = std::move(layers);
      std::erase(waited, kv);
    }
  }
  EDGEVLA_ASSIGN_OR_RETURN(InputWait input_wait, wait_for_inputs(waited, s, info_.index, /*defer_host_waits=*/true));
  // Followed layer by layer, the cache's backbone still counts as the producer it is: this run's
  // time up to the backbone's end is the backbone's in the stage timings (input_wait_ms).
  if (layer_waits_ != nullptr) EDGEVLA_RETURN_IF_ERROR(input_wait.time_producer(*bound_input(in_kv_), s, info_.index));
  if (options.num_steps < 1 || options.num_steps > max_steps_) {
    return out_of_range("action_head num_steps " + std::to_string(options.num_steps) + " is outside 1.." +
                        std::to_string(max_steps_) + " (raise the engine's max_steps to allow more)");
  }
  const Tensor* kv = bound_input(in_kv_);
  const Tensor* mask = bound_input(in_mask_);
  if (kv == nullptr || mask == nullptr) return invalid_argument("action_head needs the prefix 'kv' and 'mask' bound");
  if (!mask->device().is_cpu()) return invalid_argument("action_head 'mask' must be a host tensor");
  const Tensor* noise = bound_input(in_noise_);
  if (noise == nullptr || !(noise->shape() == Shape{Hz, A})) {
    return invalid_argument("action_head needs 'noise' [" + std::to_string(Hz) + "," + std::to_string(A) + "]");
  }
  const Tensor* state = bound_input(in_state_);
  if (!pi05_ && (state == nullptr || state->numel() != A)) {
    return invalid_argument("action_head (pi0) needs 'state' [" + std::to_string(A) +
                            "]: the normalized state padded to action_dim");
  }
  if (kv->shape()[0] != L || kv->shape()[1] != 2 || kv->shape()[3] != K || kv->shape()[4] != h) {
    return invalid_argument("action_head 'kv' is " + kv->shape().to_string() + " but this model needs [" +
                            std::to_string(L) + ",2,n," + std::to_string(K) + "," + std::to_string(h) +
                            "] (backbone and action head must load the same checkpoint)");
  }
  const std::int64_t rows = kv->shape()[2];
  if (mask->numel() != rows) {
    return invalid_argument("action_head 'kv' has " + std::to_string(rows) + " prefix rows but the mask has " +
                            std::to_string(mask->numel()));
  }
  // Valid tokens must come first (a backend's compact cache, or this backend's padded one);
  // a cache with holes is compacted through the host.
  const bool* m = mask->data<bool>();
  std::int64_t n = 0;
  while (n < rows && m[n]) ++n;
  bool holes = false;
  for (std::int64_t i = n; i < rows; ++i) holes = holes || m[i];
  if (n == 0 && !holes) return invalid_argument("action_head prefix mask has no valid token");

  const void* cache = nullptr;
  std::int64_t cache_rows = 0;
  const std::size_t row_elems = static_cast<std::size_t>(K * h);
  if (!kv->device().is_cpu() && kv->dtype() == act_ && !holes) {
    cache = kv->raw_data();  // the backbone's device cache, read in place
    cache_rows = rows;
  } else if (kv->device().is_cpu()) {
    if (rows > P) return invalid_argument("action_head 'kv' has more prefix rows than this model's " + std::to_string(P));
    // Host cache: valid rows of each layer half to the device, converted to the compute dtype.
    const std::size_t es = dtype_size(kv->dtype());
    std::int64_t valid = 0;
    for (std::int64_t lj = 0; lj < L * 2; ++lj) {
      const std::byte* src = kv->raw_data() + static_cast<std::size_t>(lj * rows) * row_elems * es;
      auto* dst = static_cast<std::byte*>(staging_) + static_cast<std::size_t>(lj * P) * row_elems * es;
      valid = 0;
      if (!holes) {
        EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * row_elems * es,
                                                     cudaMemcpyHostToDevice, s));
        valid = n;
      } else {
        for (std::int64_t i = 0; i < rows; ++i) {
          if (!m[i]) continue;
          EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst + static_cast<std::size_t>(valid) * row_elems * es,
                                                       src + static_cast<std::size_t>(i) * row_elems * es, row_elems * es,
                                                       cudaMemcpyHostToDevice, s));
          ++valid;
        }
      }
    }
    n = valid;
    EDGEVLA_RETURN_IF_ERROR(convert(s, staging_, kv->dtype(), cache_own_, act_, L * 2 * P * static_cast<std::int64_t>(row_elems)));
    cache = cache_own_;
    cache_rows = P;
  } else {
    return invalid_argument("action_head 'kv' on " + kv->device().to_string() + " as " +
                            std::string(dtype_name(kv->dtype())) + " with invalid rows cannot be read in place; "
                            "hand it over compact or in host memory");
  }
  // Nothing goes to the device before the producer in another process is done: queued work of
  // this process would make the GPU switch to it mid-way through the producer's (time slices).
  EDGEVLA_RETURN_IF_ERROR(input_wait.finish_host_waits());
  *pinned_n_ = static_cast<std::int32_t>(n);
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(n_dev_, pinned_n_, 4, cudaMemcpyHostToDevice, s));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(x_, noise->raw_data(), static_cast<std::size_t>(Hz * A) * 4,
                                               noise->device().is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, s));
  if (state != nullptr) {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(state_, state->raw_data(), static_cast<std::size_t>(A) * 4,
                                                 state->device().is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, s));
  }
  const Tensor* velocities = bound_output(out_velocities_);
  if (velocities != nullptr && (velocities->shape()[0] < options.num_steps || velocities->shape()[1] != Hz ||
                                velocities->shape()[2] != A)) {
    return invalid_argument("action_head output 'velocities' " + velocities->shape().to_string() + " must be [>= " +
                            std::to_string(options.num_steps) + "," + std::to_string(Hz) + "," + std::to_string(A) + "]");
  }
  if (prepared_steps_ != options.num_steps) {
    EDGEVLA_RETURN_IF_ERROR(prepare_steps(options.num_steps));
    graphs_.clear();
  }
  // The loop always writes every step's velocity to the device buffer (one graph for both).
  const std::int64_t attend_rows =
      std::min(cache_rows, (n + kAttendBucket - 1) / kAttendBucket * kAttendBucket);
  auto key = std::make_tuple(options.num_steps, cache, attend_rows, layer_waits_);
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    // First run of this key: eager (plans the GEMMs), then captured for the next runs.
    EDGEVLA_RETURN_IF_ERROR(loop(options.num_steps, cache, cache_rows, attend_rows, vel_all_));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    // Capturing records without running: x keeps this run's result.
    EDGEVLA_ASSIGN_OR_RETURN(Graph g, Graph::capture(s, [&] {
                               return loop(options.num_steps, cache, cache_rows, attend_rows, vel_all_);
                             }));
    log_plans();
    // One graph per cache block a producer hands over (a pool's few blocks) and prefix bucket;
    // should they keep changing, old graphs are dropped rather than kept without bound.
    if (graphs_.size() >= 32) graphs_.clear();
    graphs_.emplace(key, std::move(g));
  } else {
    EDGEVLA_RETURN_IF_ERROR(it->second.launch(s));
  }
  const Tensor* bound_actions = bound_output(out_actions_);
  const Tensor& actions = bound_actions ? *bound_actions : actions_own_;
  if (!(actions.shape() == Shape{Hz, A}) || !actions.device().is_cpu()) {
    return invalid_argument("action_head output 'actions' must be a host f32 [H, A]");
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(actions.raw_data(), x_, actions.nbytes(), cudaMemcpyDeviceToHost, s));
  if (velocities != nullptr) {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(velocities->raw_data(), vel_all_,
                                                 static_cast<std::size_t>(options.num_steps * Hz * A) * 4,
                                                 cudaMemcpyDeviceToHost, s));
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  set_produced(out_actions_, actions);
  if (velocities != nullptr) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor vv, velocities->slice(0, 0, options.num_steps));
    set_produced(out_velocities_, std::move(vv));
  } else {
    set_produced(out_velocities_, Tensor());
  }
  if (fused_trace_ != nullptr && ++runs_ % 20 == 0) {
    std::vector<unsigned long long> tr(static_cast<std::size_t>(fused_expert_trace_slots(fused_args_.shape)) *
                                       static_cast<std::size_t>(fused_args_.grid + 1));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy(tr.data(), fused_trace_, tr.size() * sizeof(tr[0]), cudaMemcpyDeviceToHost));
    spdlog::info("action_head (cuda): {}", fused_expert_trace_report(fused_args_.shape, fused_args_.grid, tr.data()));
  }
  EDGEVLA_ASSIGN_OR_RETURN(timings_.input_wait_ms, input_wait.waited_ms());
  timings_.inputs_ready_ns = input_wait.host_ready_ns();
  timings_.total_ms = ms_since(t0);
  timings_.parts = {{"steps_gpu", timings_.total_ms}};
  return Status::ok();
}

namespace {
const bool kActionHeadRegistered = register_engine("cuda", std::string(model::pi0::kFamily),
                                                   std::string(model::kActionHead), ActionHeadEngine::create);
}  // namespace

}  // namespace edgevla::backends::cuda::pi0
