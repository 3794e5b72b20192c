// GR00T N1.6 action head on the GPU (notes/groot-n16.md §3, §8), the same contract as the CPU engine
// (runtime/backends/cpu/groot/action_head_engine.cpp): vlln over the attended backbone tokens (text and
// image ones packed apart), the cross blocks' keys|values of them, the per-embodiment state encoder, then
// num_steps Euler steps from t = 0 to 1, each: the action encoder at the step's timestep bucket plus the
// position table, the DiT over [state; actions] (AdaLN-modulated LayerNorm, self-attention in odd blocks,
// cross-attention to the text or the image tokens in even ones, GELU-tanh feed-forward), the output AdaLN
// and proj_out_2, the action decoder, a += velocity / num_steps.
// What depends only on the step count (the timestep embedding, every block's scale|shift, the action
// encoder's sinusoid) is computed once per num_steps, outside the loop. The category-specific linears keep
// every embodiment's slot on the device as stored ([in, out]); the run's embodiment is transposed into one
// [out, in] slot when it changes. The per-chunk work and the whole Euler loop are one CUDA graph per
// (num_steps, text and image token buckets, feature dtype); token counts are read on the device.
#include "runtime/backends/cuda/groot/action_head_engine.hpp"

#include <optional>

namespace edgevla::backends::cuda::groot {
namespace action_head {

Status ActionHeadEngine::load_category(const mg::Checkpoint& ck, const std::string& name,
                                       CategoryDev& c, WeightPlan& wp) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor w, cpu::weight(ck, name + ".W"));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor b, cpu::weight(ck, name + ".b"));
  if (w.rank() != 3 || b.rank() != 2 || b.shape()[0] != w.shape()[0] ||
      b.shape()[1] != w.shape()[2]) {
    return invalid_argument("groot action_head: '" + name + ".W' " + w.shape().to_string() +
                            " and '" + name + ".b' " + b.shape().to_string() +
                            " are not [slots,in,out] and [slots,out]");
  }
  c.slots = w.shape()[0];
  c.in = w.shape()[1];
  c.out = w.shape()[2];
  wp.matrix(c.all_w, w.raw_data(), w.dtype(), c.slots * c.in, c.out);
  EDGEVLA_ASSIGN_OR_RETURN(c.host_b, cpu::weight_vec(ck, name + ".b"));
  wp.vector(c.all_b, c.host_b);
  c.sel.out = c.out;
  c.sel.in = c.in;
  c.sel.ld = c.in;
  return Status::ok();
}

Status ActionHeadEngine::load(const mg::Checkpoint& ck, const EngineOptions& o) {
  EDGEVLA_ASSIGN_OR_RETURN(in_features_, input_slot("backbone_features"));
  EDGEVLA_ASSIGN_OR_RETURN(in_mask_, input_slot("attention_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(in_image_, input_slot("image_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(in_state_, input_slot("state"));
  EDGEVLA_ASSIGN_OR_RETURN(in_embodiment_, input_slot("embodiment_id"));
  EDGEVLA_ASSIGN_OR_RETURN(in_noise_, input_slot("noise"));
  EDGEVLA_ASSIGN_OR_RETURN(out_actions_, output_slot("actions"));
  EDGEVLA_ASSIGN_OR_RETURN(out_velocities_, output_slot("velocities"));
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim, Sd = cfg_.max_state_dim;
  const std::int64_t W = cfg_.backbone_embedding_dim, hs = cfg_.hidden_size, F = cfg_.ff_dim();
  E_ = cfg_.input_embedding_dim;
  S_ = Hz + 1;
  B_ = cfg_.dit.num_layers;
  const std::int64_t E = E_, S = S_, B = B_, hd = cfg_.dit.head_dim, out_dim = cfg_.dit.output_dim;
  if (hd % 8 != 0 || hd > 256 || E != cfg_.dit.inner_dim()) {
    return invalid_argument(
        "groot action_head (cuda): DiT head size " + std::to_string(hd) +
        " must be a multiple of 8 up to 256, and input_embedding_dim the DiT's width");
  }
  max_tokens_ = inputs_[static_cast<std::size_t>(in_features_)].max_shape[0];
  outputs_[static_cast<std::size_t>(out_velocities_)].max_shape = Shape{max_steps_, Hz, A};
  inputs_[static_cast<std::size_t>(in_features_)].device = Device::cuda(info_.index);

  const std::string p(mg::kDitPrefix), h(mg::kActionHeadPrefix);
  WeightPlan wp(act_);
  auto lin = [&](const std::string& name) { return cpu::weight_lin(ck, name, true); };
  EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear t1, lin(p + "timestep_encoder.timestep_embedder.linear_1"));
  EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear t2, lin(p + "timestep_encoder.timestep_embedder.linear_2"));
  wp.linear(t1_, {&t1});
  wp.linear(t2_, {&t2});
  // Every block's norm1.linear [scale, shift] and proj_out_1 [shift, scale] as one GEMM; each
  // scale's bias carries the 1 of (1 + scale), so the modulation is a LayerNorm's weight as is.
  std::vector<cpu::Linear> mod_parts, text_kv_parts, image_kv_parts;
  mod_parts.reserve(static_cast<std::size_t>(B + 1));
  blocks_.resize(static_cast<std::size_t>(B));
  const int every = std::max(1, cfg_.attend_text_every_n_blocks);
  for (std::int64_t i = 0; i < B; ++i) {
    const std::string b = p + "transformer_blocks." + std::to_string(i) + ".";
    BlockDev& d = blocks_[static_cast<std::size_t>(i)];
    d.cross = i % 2 == 0;
    d.text = d.cross && i % (2 * every) == 0;
    EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear norm1, lin(b + "norm1.linear"));
    for (std::int64_t c = 0; c < E; ++c) norm1.bias[static_cast<std::size_t>(c)] += 1.0f;
    mod_parts.push_back(std::move(norm1));
    EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear q, lin(b + "attn1.to_q"));
    EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear k, lin(b + "attn1.to_k"));
    EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear v, lin(b + "attn1.to_v"));
    EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear out, lin(b + "attn1.to_out.0"));
    EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear ff1, lin(b + "ff.net.0.proj"));
    EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear ff2, lin(b + "ff.net.2"));
    if (d.cross) {
      wp.linear(d.qkv, {&q});
      std::vector<cpu::Linear>& parts = d.text ? text_kv_parts : image_kv_parts;
      d.kv_column = static_cast<std::int64_t>(parts.size()) * E;
      parts.push_back(std::move(k));
      parts.push_back(std::move(v));
    } else {
      wp.linear(d.qkv, {&q, &k, &v});
    }
    wp.linear(d.out, {&out});
    wp.linear(d.ff1, {&ff1});
    wp.linear(d.ff2, {&ff2});
  }
  EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear po1, lin(p + "proj_out_1"));
  for (std::int64_t c = E; c < 2 * E; ++c) po1.bias[static_cast<std::size_t>(c)] += 1.0f;
  mod_parts.push_back(std::move(po1));
  auto fused = [&](DevLinear& dst, const std::vector<cpu::Linear>& parts) {
    std::vector<const cpu::Linear*> ptrs;
    for (const cpu::Linear& l : parts) ptrs.push_back(&l);
    wp.linear(dst, ptrs);
  };
  fused(mods_lin_, mod_parts);
  if (text_kv_parts.empty() || image_kv_parts.empty()) {
    return invalid_argument(
        "groot action_head (cuda): the DiT needs text and image cross-attention blocks (" +
        std::to_string(B) + " blocks, attend_text_every_n_blocks " + std::to_string(every) + ")");
  }
  fused(text_kv_.w, text_kv_parts);
  fused(image_kv_.w, image_kv_parts);
  EDGEVLA_ASSIGN_OR_RETURN(cpu::Linear po2, lin(p + "proj_out_2"));
  wp.linear(proj_out_2_, {&po2});
  EDGEVLA_RETURN_IF_ERROR(load_category(ck, h + "state_encoder.layer1", state1_, wp));
  EDGEVLA_RETURN_IF_ERROR(load_category(ck, h + "state_encoder.layer2", state2_, wp));
  EDGEVLA_RETURN_IF_ERROR(load_category(ck, h + "action_encoder.W1", act1_, wp));
  EDGEVLA_RETURN_IF_ERROR(load_category(ck, h + "action_encoder.W2", act2_, wp));
  EDGEVLA_RETURN_IF_ERROR(load_category(ck, h + "action_encoder.W3", act3_, wp));
  EDGEVLA_RETURN_IF_ERROR(load_category(ck, h + "action_decoder.layer1", dec1_, wp));
  EDGEVLA_RETURN_IF_ERROR(load_category(ck, h + "action_decoder.layer2", dec2_, wp));
  if (act2_.in != 2 * E || act2_.out != E) {
    return invalid_argument("groot action_head: action_encoder.W2 is [" + std::to_string(act2_.in) +
                            "," + std::to_string(act2_.out) + "] per slot, expected [" +
                            std::to_string(2 * E) + "," + std::to_string(E) + "]");
  }
  EDGEVLA_ASSIGN_OR_RETURN(vlln_w_host_, cpu::weight_vec(ck, h + "vlln.weight"));
  EDGEVLA_ASSIGN_OR_RETURN(vlln_b_host_, cpu::weight_vec(ck, h + "vlln.bias"));
  EDGEVLA_ASSIGN_OR_RETURN(pos_host_, cpu::weight_vec(ck, h + "position_embedding.weight"));
  if (static_cast<std::int64_t>(pos_host_.size()) < Hz * E) {
    return invalid_argument(
        "groot action_head: position_embedding has fewer than action_horizon rows");
  }
  pos_host_.resize(static_cast<std::size_t>(Hz * E));
  ones_host_.assign(static_cast<std::size_t>(E), 1.0f);
  zeros_host_.assign(static_cast<std::size_t>(E), 0.0f);
  wp.vector(vlln_w_, vlln_w_host_);
  wp.vector(vlln_b_, vlln_b_host_);
  wp.vector(pos_, pos_host_);
  wp.vector(ones_, ones_host_);
  wp.vector(zeros_, zeros_host_);
  EDGEVLA_ASSIGN_OR_RETURN(
      mg::EmbodimentIds ids,
      mg::load_embodiment_ids((std::filesystem::path(cfg_.dir) / "embodiment_id.json").string()));
  for (const auto& [tag, id] : ids) known_ids_.insert(id);
  wp.place(arena_);

  const std::int64_t L = max_tokens_, T = max_steps_;
  wgmma_ = wgmma_choice(act_, "", "groot action_head (cuda)");
  // The step's edges on the warpgroup GEMM when every one of their products fits it.
  wg_edges_ = wgmma_.on && wgmma_.asked("edges") && act1_.in == A && act1_.out == E && act3_.in == E &&
              act3_.out == E && dec1_.in == out_dim && dec1_.out == hs && dec2_.in == hs && dec2_.out == A &&
              Hz * A <= S * E && wgmma_gemm_fits(Hz, E, A, WgmmaEpilogue::kNone) &&
              wgmma_gemm_fits(Hz, E, E, WgmmaEpilogue::kSilu) && wgmma_gemm_fits(Hz, out_dim, E, WgmmaEpilogue::kNone) &&
              wgmma_gemm_fits(Hz, hs, out_dim, WgmmaEpilogue::kRelu) &&
              wgmma_gemm_fits(Hz, A, hs, WgmmaEpilogue::kF32Parts);
  BufferPlan buf(arena_);
  for (CategoryDev* c : categories()) {
    buf(c->sel.w, bytes_of(act_, c->in * c->out));
    buf(c->sel.bias, bytes_of(DType::kF32, c->out));
  }
  if (wg_edges_) {
    buf(act1_wg_.w, wgmma_tiled_bytes(E, A));
    buf(act2_wg_.w, wgmma_tiled_bytes(E, E));
    buf(act3_wg_.w, wgmma_tiled_bytes(E, E));
    buf(dec1_wg_.w, wgmma_tiled_bytes(hs, out_dim));
    buf(dec2_wg_.w, wgmma_tiled_bytes(A, hs));
  }
  buf(text_kv_.kv, bytes_of(act_, L * text_kv_.w.out));
  buf(image_kv_.kv, bytes_of(act_, L * image_kv_.w.out));
  buf(feat_stage_, static_cast<std::size_t>(L * W) * 4);
  buf(vl_f32_, bytes_of(DType::kF32, L * W));
  buf(vl_text_f32_, bytes_of(DType::kF32, L * W));
  buf(vl_text_, bytes_of(act_, L * W));
  buf(vl_image_, bytes_of(act_, L * W));
  buf(x_, bytes_of(DType::kF32, S * E));
  buf(parts_, bytes_of(DType::kF32, kMaxKParts * S * E));
  buf(a_, bytes_of(DType::kF32, Hz * A));
  buf(vel_all_, bytes_of(DType::kF32, T * Hz * A));
  buf(state_, bytes_of(DType::kF32, Sd));
  buf(state_feat_, bytes_of(DType::kF32, E));
  buf(tau_bias_, bytes_of(DType::kF32, T * E));
  buf(mods_, bytes_of(DType::kF32, T * (B + 1) * 2 * E));
  buf(sinus_f32_, bytes_of(DType::kF32, T * kTimestepChannels));
  buf(tau_f32_, bytes_of(DType::kF32, T * E));
  buf(h_, bytes_of(act_, S * E));
  buf(qkv_, bytes_of(act_, S * 3 * E));
  buf(o_, bytes_of(act_, S * E));
  buf(ff_, bytes_of(act_, S * F));
  buf(a_act_, bytes_of(act_, Hz * A));
  buf(a_emb_, bytes_of(act_, Hz * E));
  buf(enc_, bytes_of(act_, Hz * E));
  buf(dit_out_, bytes_of(act_, Hz * out_dim));
  buf(dec_hid_, bytes_of(act_, Hz * hs));
  buf(state_act_, bytes_of(act_, Sd));
  buf(st_hid_, bytes_of(act_, hs));
  buf(sinus_, bytes_of(act_, T * kTimestepChannels));
  buf(temb1_, bytes_of(act_, T * E));
  buf(temb_, bytes_of(act_, T * E));
  buf(tau_, bytes_of(act_, T * E));
  buf(ints_, bytes_of(DType::kI32, 2 + 2 * L));
  buf(bad_, 16);
  AttentionArgs sa{act_, 1, S, cfg_.dit.num_heads, cfg_.dit.num_heads, hd};
  sa.a_max = S;
  AttentionArgs ca = sa;
  ca.a_max = L;
  scratch_bytes_ = std::max(attention_scratch_bytes(sa), attention_scratch_bytes(ca));
  buf(scratch_, scratch_bytes_);
  if (wgmma_.on && wgmma_.w8) buf(w8_buffer_, WgmmaW8Weights::bytes(w8_entries()));
  EDGEVLA_RETURN_IF_ERROR(allocate_and_upload(wp, ck, o));
  buf.resolve();
  EDGEVLA_RETURN_IF_ERROR(plan_wgmma());
  // W2's halves of the selected slot [E, 2E]: columns [0, E) act on the action embedding,
  // [E, 2E) on τ (whose projection, plus W2's bias, is one bias row per step).
  act2_a_ = act2_.sel;
  act2_a_.in = E;
  act2_a_.ld = 2 * E;
  act2_a_.bias = nullptr;
  act2_t_ = act2_a_;
  act2_t_.w = static_cast<std::byte*>(act2_.sel.w) + bytes_of(act_, E);
  act2_t_.bias = act2_.sel.bias;
  if (wg_edges_) {
    auto view = [](DevLinear& d, const DevLinear& sel, std::int64_t in) {
      d.bias = sel.bias, d.out = sel.out, d.in = in, d.ld = in;
    };
    view(act1_wg_, act1_.sel, A);
    view(act2_wg_, act2_.sel, E);  // the action-embedding half; its bias is the step's τ row
    act2_wg_.bias = nullptr;
    view(act3_wg_, act3_.sel, E);
    view(dec1_wg_, dec1_.sel, out_dim);
    view(dec2_wg_, dec2_.sel, hs);
  }
  // Rows of the packed token buffers past this chunk's count are read by the bucketed GEMMs.
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(vl_f32_, 0, bytes_of(DType::kF32, L * W), stream_.get()));
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(vl_text_f32_, 0, bytes_of(DType::kF32, L * W), stream_.get()));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_.get()));
  if (overlap_ > 0) {
    EDGEVLA_ASSIGN_OR_RETURN(side_, Stream::create());
    EDGEVLA_ASSIGN_OR_RETURN(side_blas_, Blas::create());
    EDGEVLA_ASSIGN_OR_RETURN(side_fork_, Event::create());
    EDGEVLA_ASSIGN_OR_RETURN(side_join_, Event::create());
  }
  EDGEVLA_ASSIGN_OR_RETURN(PinnedBuffer pinned,
                           PinnedBuffer::allocate(bytes_of(DType::kI32, 3 + 2 * L)));
  pinned_ints_ = std::make_unique<PinnedBuffer>(std::move(pinned));
  EDGEVLA_ASSIGN_OR_RETURN(actions_own_, Tensor::empty(DType::kF32, Shape{Hz, A}));
  return prepare_steps(std::clamp(cfg_.num_inference_timesteps, 1, max_steps_));
}

Status ActionHeadEngine::prepare_steps(int steps) {
  const std::int64_t E = E_;
  cudaStream_t s = stream_.get();
  std::vector<float> sinus, tau;
  timestep_tables(steps, cfg_.num_timestep_buckets, kTimestepChannels, E, sinus, tau);
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(sinus_f32_, sinus.data(), sinus.size() * 4, cudaMemcpyHostToDevice, s));
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(tau_f32_, tau.data(), tau.size() * 4, cudaMemcpyHostToDevice, s));
  EDGEVLA_RETURN_IF_ERROR(
      convert(s, sinus_f32_, DType::kF32, sinus_, act_, steps * kTimestepChannels));
  EDGEVLA_RETURN_IF_ERROR(convert(s, tau_f32_, DType::kF32, tau_, act_, steps * E));
  // temb = silu(linear_2(silu(linear_1(sinusoid)))), then every modulation in one GEMM.
  const Gemm mm = gemm();
  EDGEVLA_RETURN_IF_ERROR(mm(sinus_, steps, kTimestepChannels, t1_, temb1_, act_, E));
  EDGEVLA_RETURN_IF_ERROR(
      bias_activation(s, temb1_, act_, steps, E, E, nullptr, Activation::kSilu));
  EDGEVLA_RETURN_IF_ERROR(mm(temb1_, steps, E, t2_, temb_, act_, E));
  EDGEVLA_RETURN_IF_ERROR(bias_activation(s, temb_, act_, steps, E, E, nullptr, Activation::kSilu));
  EDGEVLA_RETURN_IF_ERROR(mm(temb_, steps, E, mods_lin_, mods_, DType::kF32, (B_ + 1) * 2 * E));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  prepared_steps_ = steps;
  return Status::ok();
}

Status ActionHeadEngine::select_embodiment(std::int64_t e) {
  if (e == selected_) return Status::ok();
  cudaStream_t s = stream_.get();
  for (CategoryDev* c : categories()) {
    const auto* w = static_cast<const std::byte*>(c->all_w) + bytes_of(act_, e * c->in * c->out);
    EDGEVLA_RETURN_IF_ERROR(transpose(s, w, c->in, c->out, c->sel.w, act_));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(c->sel.bias, c->all_b + e * c->out,
                                                 bytes_of(DType::kF32, c->out),
                                                 cudaMemcpyDeviceToDevice, s));
  }
  EDGEVLA_RETURN_IF_ERROR(tile_edges());
  selected_ = e;
  return Status::ok();
}

Status ActionHeadEngine::tile_edges() {
  if (!wg_edges_) return Status::ok();
  cudaStream_t s = stream_.get();
  const struct {
    const DevLinear& src;
    DevLinear& dst;
    WgmmaEpilogue epi;
  } edges[] = {{act1_.sel, act1_wg_, WgmmaEpilogue::kNone},
               {act2_a_, act2_wg_, WgmmaEpilogue::kSilu},
               {act3_.sel, act3_wg_, WgmmaEpilogue::kF32},
               {dec1_.sel, dec1_wg_, WgmmaEpilogue::kRelu},
               {dec2_.sel, dec2_wg_, WgmmaEpilogue::kF32Parts}};
  for (const auto& t : edges) {
    EDGEVLA_RETURN_IF_ERROR(wgmma_tile_weight(s, t.src.w, t.dst.out, t.dst.in, t.src.ld, t.epi, t.dst.w));
  }
  return Status::ok();
}

Status ActionHeadEngine::encode_on_wgmma(int k) {
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim, E = E_;
  cudaStream_t s = stream_.get();
  // a_act_ holds this step's actions in bf16 (written before the loop, then by each step's end).
  EDGEVLA_RETURN_IF_ERROR(
      wgmma_linear(s, a_act_, Hz, A, act1_wg_, WgmmaEpilogue::kNone, a_emb_, E, 1, wgmma_launch_).status());
  DevLinear w2 = act2_wg_;
  w2.bias = tau_bias_ + static_cast<std::int64_t>(k) * E;  // W2's τ half and its bias, this step's
  EDGEVLA_RETURN_IF_ERROR(
      wgmma_linear(s, a_emb_, Hz, E, w2, WgmmaEpilogue::kSilu, enc_, E, 1, wgmma_launch_).status());
  // Rows 1.. of the residual stream: W3's product, its bias and the position table.
  return wgmma_linear(s, enc_, Hz, E, act3_wg_, WgmmaEpilogue::kF32, x_ + E, E, 1, wgmma_launch_, {}, pos_, E)
      .status();
}

Status ActionHeadEngine::decode_on_wgmma(int k, float dt) {
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim, E = E_, hs = cfg_.hidden_size;
  const std::int64_t out_dim = cfg_.dit.output_dim;
  cudaStream_t s = stream_.get();
  EDGEVLA_RETURN_IF_ERROR(
      wgmma_linear(s, h_, Hz, E, proj_out_2_, WgmmaEpilogue::kNone, dit_out_, out_dim, 1, wgmma_launch_).status());
  EDGEVLA_RETURN_IF_ERROR(
      wgmma_linear(s, dit_out_, Hz, out_dim, dec1_wg_, WgmmaEpilogue::kRelu, dec_hid_, hs, 1, wgmma_launch_).status());
  EDGEVLA_ASSIGN_OR_RETURN(
      const int parts, wgmma_linear(s, dec_hid_, Hz, hs, dec2_wg_, WgmmaEpilogue::kNone, parts_, A, kMaxKParts, wgmma_launch_));
  // v = Σ parts + bias; a += dt · v; the next step's bf16 actions and state row.
  float* vel = vel_all_ + static_cast<std::int64_t>(k) * Hz * A;
  return groot_step_end(s, parts_, parts, Hz * A, dec2_.sel.bias, Hz, A, dt, a_, vel, a_act_, act_, state_feat_, x_,
                        E);
}


Status ActionHeadEngine::step(int k, float dt, std::int64_t text_rows, std::int64_t image_rows) {
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim, hs = cfg_.hidden_size,
                     F = cfg_.ff_dim();
  const std::int64_t E = E_, S = S_, B = B_, heads = cfg_.dit.num_heads, hd = cfg_.dit.head_dim;
  const std::int64_t out_dim = cfg_.dit.output_dim;
  const std::size_t es = dtype_size(act_);
  cudaStream_t s = stream_.get();
  const Gemm mm = gemm();
  const float* mods = mods_ + static_cast<std::int64_t>(k) * (B + 1) * 2 * E;
  // Kernels a profiling build may leave out (Ablation): edges (this step's action encoder before
  // the DiT and its output norm and decoder after), norm, qkv (and cross q), attention, out, ff1,
  // ff2.
  const Ablation& ab = ablation_;
  float* rows = x_ + E;
  if (wg_edges_) {
    if (!ab.skip("edges")) {
      const DependentLaunchScope chained(wgmma_chain_);
      EDGEVLA_RETURN_IF_ERROR(encode_on_wgmma(k));
    }
  } else if (!ab.skip("edges")) {
    // Row 0: the state token; rows 1..: the action encoder at this step's bucket plus positions.
    EDGEVLA_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(x_, state_feat_, bytes_of(DType::kF32, E), cudaMemcpyDeviceToDevice, s));
    EDGEVLA_RETURN_IF_ERROR(convert(s, a_, DType::kF32, a_act_, act_, Hz * A));
    EDGEVLA_RETURN_IF_ERROR(mm(a_act_, Hz, A, act1_.sel, a_emb_, act_, E));
    EDGEVLA_RETURN_IF_ERROR(
        mm(a_emb_, Hz, E, act2_a_, enc_, act_, E, 0.0f, Epilogue::kNone, tau_bias_ + k * E));
    EDGEVLA_RETURN_IF_ERROR(bias_activation(s, enc_, act_, Hz, E, E, nullptr, Activation::kSilu));
    EDGEVLA_RETURN_IF_ERROR(mm(enc_, Hz, E, act3_.sel, rows, DType::kF32, E));
    EDGEVLA_RETURN_IF_ERROR(add_periodic_rows(s, rows, Hz, E, pos_, Hz));
  }

  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::int32_t* n_text = ints_;
  const std::int32_t* n_image = ints_ + 1;
  // The out and ff2 projections leave their k parts (and bias) for the LayerNorm after them to
  // add to the residual stream (Gemm::parts); the last ff2 adds its own, as no norm over all
  // rows follows it.
  ResidualParts ff2_parts{0, 0, nullptr};
  // One projection of the DiT: on the warpgroup GEMM when planned, else through Blas.
  auto bf16_linear = [&](bool wg, const DevLinear& w, WgmmaEpilogue epi, void* d, std::int64_t ldd) -> Status {
    if (wg && w8_weights_.has(w)) return w8_weights_.linear(s, h_, S, E, w, d, ldd, 1, wgmma_launch_).status();
    if (wg) return wgmma_linear(s, h_, S, E, w, epi, d, ldd, 1, wgmma_launch_).status();
    return mm(h_, S, E, w, d, act_, ldd, 0.0f, epi == WgmmaEpilogue::kGelu ? Epilogue::kGeluTanh : Epilogue::kNone);
  };
  auto parts_linear = [&](bool wg, const void* a, std::int64_t k_in, const DevLinear& w) -> Expected<int> {
    if (wg && w8_weights_.has(w)) return w8_weights_.linear(s, a, S, k_in, w, parts_, E, kMaxKParts, wgmma_launch_);
    if (wg) return wgmma_linear(s, a, S, k_in, w, WgmmaEpilogue::kNone, parts_, E, kMaxKParts, wgmma_launch_);
    return mm.parts(a, S, k_in, w, parts_, kMaxKParts);
  };
  // From the first LayerNorm to the output one, the DiT's kernels as one chain of launches.
  const DependentLaunchScope chained(wgmma_chain_);
  for (std::int64_t i = 0; i < B; ++i) {
    const BlockDev& b = blocks_[static_cast<std::size_t>(i)];
    const float* mod = mods + i * 2 * E;  // [1 + scale, shift]
    if (ab.skip("norm")) {
    } else if (ff2_parts.count > 0) {
      EDGEVLA_RETURN_IF_ERROR(add_layer_norm(s, x_, parts_, S, E, mod, mod + E, kBlockEps, h_, act_, ff2_parts));
    } else {
      EDGEVLA_RETURN_IF_ERROR(layer_norm(s, x_, S, E, mod, mod + E, kBlockEps, h_, act_));
    }
    AttentionArgs a{act_, 1, S, heads, heads, hd, scale};
    a.q = qkv_;
    a.out = o_;
    a.ldo = E;
    a.scratch = scratch_;
    a.scratch_bytes = scratch_bytes_;
    if (b.wg_heads) {
      // q|k|v (cross: q) and the attention as one kernel.
      WgmmaHeadsArgs ha;
      ha.mode = b.cross ? WgmmaHeadsMode::kCross : WgmmaHeadsMode::kSelf;
      ha.a = h_, ha.m = S, ha.k = E, ha.lda = E, ha.w_tiled = b.qkv.w, ha.bias = b.qkv.bias;
      ha.heads = heads, ha.head_dim = hd, ha.scale = scale, ha.out = o_, ha.ldo = E;
      if (b.cross) {
        const CrossKv& ck = b.text ? text_kv_ : image_kv_;
        auto* k = static_cast<std::byte*>(ck.kv) + static_cast<std::size_t>(b.kv_column) * es;
        ha.keys = k, ha.values = k + E * es, ha.ld_kv = ck.w.out, ha.key_count = b.text ? n_text : n_image;
      }
      if (!ab.skip("qkv") && !ab.skip("attention")) EDGEVLA_RETURN_IF_ERROR(wgmma_heads_attention(s, ha));
    } else if (b.cross) {
      if (!ab.skip("qkv")) EDGEVLA_RETURN_IF_ERROR(bf16_linear(b.wg_qkv, b.qkv, WgmmaEpilogue::kNone, qkv_, E));
      a.ldq = E;
      const CrossKv& ck = b.text ? text_kv_ : image_kv_;
      auto* k = static_cast<std::byte*>(ck.kv) + static_cast<std::size_t>(b.kv_column) * es;
      a.a = KvBlock{k, k + E * es, ck.w.out, 0};
      a.a_len = b.text ? n_text : n_image;
      a.a_max = b.text ? text_rows : image_rows;
    } else {
      if (!ab.skip("qkv")) EDGEVLA_RETURN_IF_ERROR(bf16_linear(b.wg_qkv, b.qkv, WgmmaEpilogue::kNone, qkv_, 3 * E));
      a.ldq = 3 * E;
      auto* q = static_cast<std::byte*>(qkv_);
      a.a = KvBlock{q + E * es, q + 2 * E * es, 3 * E, 0};
      a.a_max = S;
    }
    if (!b.wg_heads && !ab.skip("attention")) EDGEVLA_RETURN_IF_ERROR(attention(s, a));
    int out_parts = 1;
    if (!ab.skip("out")) {
      EDGEVLA_ASSIGN_OR_RETURN(out_parts, parts_linear(b.wg_out, o_, E, b.out));
    }
    if (!ab.skip("norm")) {
      EDGEVLA_RETURN_IF_ERROR(add_layer_norm(s, x_, parts_, S, E, ones_, zeros_, kBlockEps, h_, act_,
                                             ResidualParts{out_parts, S * E, b.out.bias}));
    }
    if (mlp_cluster_ > 0 && !ab.skip("ff1") && !ab.skip("ff2")) {
      // ff1 → GELU → ff2 as one kernel, its parts for the next norm.
      WgmmaMlpArgs ma;
      ma.x = h_, ma.m = S, ma.d = E, ma.ldx = E, ma.w1_tiled = b.ff1.w, ma.b1 = b.ff1.bias, ma.hidden = F;
      ma.w2_tiled = b.ff2.w, ma.n_out = E, ma.parts = static_cast<float*>(parts_), ma.ldp = E, ma.part_stride = S * E;
      ma.cluster = mlp_cluster_;
      EDGEVLA_RETURN_IF_ERROR(wgmma_mlp(s, ma));
      ff2_parts = ResidualParts{wgmma_mlp_parts(F, mlp_cluster_), S * E, b.ff2.bias};
      continue;
    }
    if (!ab.skip("ff1")) EDGEVLA_RETURN_IF_ERROR(bf16_linear(b.wg_ff1, b.ff1, WgmmaEpilogue::kGelu, ff_, F));
    if (ab.skip("ff2")) {
      ff2_parts = ResidualParts{0, 0, nullptr};
    } else if (i + 1 < B || b.wg_ff2) {
      // The last block's parts (on the warpgroup GEMM) go to the output norm below.
      EDGEVLA_ASSIGN_OR_RETURN(const int count, parts_linear(b.wg_ff2, ff_, F, b.ff2));
      ff2_parts = ResidualParts{count, S * E, b.ff2.bias};
    } else {
      EDGEVLA_RETURN_IF_ERROR(mm(ff_, S, F, b.ff2, x_, DType::kF32, E, 1.0f));
      ff2_parts = ResidualParts{0, 0, nullptr};
    }
  }
  // Output AdaLN over the action rows: proj_out_1 gives [shift, 1 + scale]; the last ff2's parts,
  // when it left them, added over those rows first (the state row is not read again).
  const float* om = mods + B * 2 * E;
  if (ab.skip("edges")) return Status::ok();
  if (ff2_parts.count > 0) {
    EDGEVLA_RETURN_IF_ERROR(add_layer_norm(s, rows, parts_ + (S - Hz) * E, Hz, E, om + E, om, kOutputEps, h_,
                                           act_, ff2_parts));
  } else {
    EDGEVLA_RETURN_IF_ERROR(layer_norm(s, rows, Hz, E, om + E, om, kOutputEps, h_, act_));
  }
  if (wg_edges_) return decode_on_wgmma(k, dt);
  EDGEVLA_RETURN_IF_ERROR(mm(h_, Hz, E, proj_out_2_, dit_out_, act_, out_dim));
  EDGEVLA_RETURN_IF_ERROR(mm(dit_out_, Hz, out_dim, dec1_.sel, dec_hid_, act_, hs));
  EDGEVLA_RETURN_IF_ERROR(
      bias_activation(s, dec_hid_, act_, Hz, hs, hs, nullptr, Activation::kRelu));
  float* vel = vel_all_ + static_cast<std::int64_t>(k) * Hz * A;
  EDGEVLA_RETURN_IF_ERROR(mm(dec_hid_, Hz, hs, dec2_.sel, vel, DType::kF32, A));
  return euler_step(s, a_, vel, dt, Hz * A, nullptr);
}

Status ActionHeadEngine::forward(int steps, std::int64_t text_rows, std::int64_t image_rows,
                                 DType feature_type) {
  cudaStream_t s = stream_.get();
  const std::int64_t E = E_;
  EDGEVLA_RETURN_IF_ERROR(chunk_work(steps, text_rows, image_rows, feature_type));
  if (wg_edges_) {
    // The first step's state row and bf16 actions; each step's end writes the next one's.
    EDGEVLA_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(x_, state_feat_, bytes_of(DType::kF32, E), cudaMemcpyDeviceToDevice, s));
    EDGEVLA_RETURN_IF_ERROR(convert(s, a_, DType::kF32, a_act_, act_, cfg_.action_horizon * cfg_.max_action_dim));
  }
  const float dt = 1.0f / static_cast<float>(steps);
  for (int k = 0; k < steps; ++k) EDGEVLA_RETURN_IF_ERROR(step(k, dt, text_rows, image_rows));
  return Status::ok();
}

Status ActionHeadEngine::run(const RunOptions& options) {
  const NvtxRange nvtx(family(), stage());
  const auto t0 = std::chrono::steady_clock::now();
  timings_ = {};
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  cudaStream_t s = stream_.get();
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaSetDevice(info_.index));
  // Inputs still being written by queued device work: this stream waits for it, on the device.
  // Where the host inputs carry no fence (nothing queued writes them: the masks, state, noise and
  // embodiment as a node hands them over), their copies go first, so they are not queued behind
  // the features' producer; the wait comes before the features' copy.
  const auto unfenced_host = [&](int slot) {
    const Tensor* t = bound_input(slot);
    return t != nullptr && t->defined() && t->device().is_cpu() && !t->buffer()->ready();
  };
  const bool copies_first = overlap_ > 0 && unfenced_host(in_mask_) && unfenced_host(in_image_) &&
                            unfenced_host(in_state_) && unfenced_host(in_noise_) && unfenced_host(in_embodiment_);
  std::optional<InputWait> input_wait;
  const auto wait_inputs = [&]() -> Status {
    EDGEVLA_ASSIGN_OR_RETURN(InputWait w, wait_for_inputs(bound_inputs(), s, info_.index));
    input_wait.emplace(std::move(w));
    return Status::ok();
  };
  if (!copies_first) EDGEVLA_RETURN_IF_ERROR(wait_inputs());
  std::int64_t n = 0, embodiment = 0;
  EDGEVLA_RETURN_IF_ERROR(check_inputs(options, n, embodiment));
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim,
                     W = cfg_.backbone_embedding_dim;
  const std::int64_t L = max_tokens_;
  const Tensor* bound_actions = bound_output(out_actions_);
  const Tensor& actions = bound_actions ? *bound_actions : actions_own_;
  if (!(actions.shape() == Shape{Hz, A}) || !actions.device().is_cpu()) {
    return invalid_argument("groot action_head: output 'actions' is " + actions.describe() +
                            ", must be host f32 [" + std::to_string(Hz) + "," + std::to_string(A) +
                            "]");
  }
  const Tensor* velocities = bound_output(out_velocities_);
  if (velocities != nullptr &&
      (velocities->shape()[0] < options.num_steps || velocities->shape()[1] != Hz ||
       velocities->shape()[2] != A || !velocities->device().is_cpu())) {
    return invalid_argument("groot action_head: output 'velocities' " + velocities->describe() +
                            " must be host f32 [>= " + std::to_string(options.num_steps) + "," +
                            std::to_string(Hz) + "," + std::to_string(A) + "]");
  }

  // Inputs to the device: features as bound, the packed rows and counts, state and noise.
  const Tensor* f = bound_input(in_features_);
  const bool* am = bound_input(in_mask_)->data<bool>();
  const bool* im = bound_input(in_image_)->data<bool>();
  auto* ints = static_cast<std::int32_t*>(pinned_ints_->get());
  std::int32_t n_text = 0, n_image = 0;
  std::fill(ints, ints + 2 + 2 * L, -1);
  for (std::int64_t i = 0; i < n; ++i) {
    if (!am[i]) continue;
    if (im[i]) {
      ints[2 + L + n_image++] = static_cast<std::int32_t>(i);
    } else {
      ints[2 + n_text++] = static_cast<std::int32_t>(i);
    }
  }
  ints[0] = n_text;
  ints[1] = n_image;
  const std::int64_t text_rows = padded_rows(std::max<std::int64_t>(n_text, 1));
  const std::int64_t image_rows = padded_rows(n_image);
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(ints_, ints, bytes_of(DType::kI32, 2 + 2 * L), cudaMemcpyHostToDevice, s));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bad_, 0, 16, s));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(state_, bound_input(in_state_)->raw_data(),
                                               bytes_of(DType::kF32, cfg_.max_state_dim),
                                               cudaMemcpyHostToDevice, s));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(a_, bound_input(in_noise_)->raw_data(),
                                               bytes_of(DType::kF32, Hz * A),
                                               cudaMemcpyHostToDevice, s));
  if (!input_wait) EDGEVLA_RETURN_IF_ERROR(wait_inputs());
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(feat_stage_, f->raw_data(), bytes_of(f->dtype(), n * W),
                      f->device().is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, s));
  if (prepared_steps_ != options.num_steps) {
    EDGEVLA_RETURN_IF_ERROR(prepare_steps(options.num_steps));
    graphs_.clear();
  }
  EDGEVLA_RETURN_IF_ERROR(select_embodiment(embodiment));

  const auto key = std::make_tuple(options.num_steps, text_rows, image_rows, f->dtype());
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    // First run of this key: eager (plans the GEMMs), then captured for the next runs.
    EDGEVLA_RETURN_IF_ERROR(forward(options.num_steps, text_rows, image_rows, f->dtype()));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    EDGEVLA_ASSIGN_OR_RETURN(Graph g, Graph::capture(s, [&] {
                               return forward(options.num_steps, text_rows, image_rows, f->dtype());
                             }));
    log_plans();
    if (side_blas_) side_blas_->log_plans("groot action_head (cuda, side stream)");
    if (graphs_.size() >= 32) graphs_.clear();
    graphs_.emplace(key, std::move(g));
  } else {
    EDGEVLA_RETURN_IF_ERROR(it->second.launch(s));
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(actions.raw_data(), a_, actions.nbytes(), cudaMemcpyDeviceToHost, s));
  std::int32_t* bad = ints + 2 + 2 * L;
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(bad, bad_, sizeof(std::int32_t), cudaMemcpyDeviceToHost, s));
  if (velocities != nullptr) {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(velocities->raw_data(), vel_all_,
                                                 bytes_of(DType::kF32, options.num_steps * Hz * A),
                                                 cudaMemcpyDeviceToHost, s));
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  if (*bad > 0) {
    return invalid_argument("groot action_head: 'backbone_features' holds " + std::to_string(*bad) +
                            " non-finite value(s) in attended tokens");
  }
  set_produced(out_actions_, actions);
  if (velocities != nullptr) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor vv, velocities->slice(0, 0, options.num_steps));
    set_produced(out_velocities_, std::move(vv));
  } else {
    set_produced(out_velocities_, Tensor());
  }
  EDGEVLA_ASSIGN_OR_RETURN(timings_.input_wait_ms, input_wait->waited_ms());
  timings_.inputs_ready_ns = input_wait->host_ready_ns();
  timings_.total_ms = ms_since(t0);
  timings_.parts = {{"steps_gpu", timings_.total_ms}};
  return Status::ok();
}

}  // namespace action_head

const bool kGrootActionHeadRegistered =
    register_engine("cuda", std::string(action_head::mg::kFamily), std::string(model::kActionHead),
                    action_head::ActionHeadEngine::create);

}  // namespace edgevla::backends::cuda::groot
