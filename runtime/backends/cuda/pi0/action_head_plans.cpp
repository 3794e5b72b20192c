// pi0 / pi0.5 action head on the GPU: its optional ways to run the expert layers, both off by
// default (slower on the devices measured, bench/results/issue9_h200): every layer of a step
// as one persistent kernel (EDGEVLA_CUDA_FUSED_EXPERT=1), and GEMMs on chain_gemm launched as
// programmatic dependents (EDGEVLA_CUDA_CHAIN_GEMM).
#include "runtime/backends/cuda/pi0/action_head_engine.hpp"

namespace edgevla::backends::cuda::pi0 {

Status ActionHeadEngine::plan_fused(std::int64_t max_cache_rows, BufferPlan& buf) {
  // Off by default until it is faster end to end on the devices measured (bench/results/issue9_h200).
  const char* env = std::getenv("EDGEVLA_CUDA_FUSED_EXPERT");
  if (env == nullptr || std::string_view(env) != "1") {
    spdlog::info("action_head (cuda): expert layers as separate kernels (EDGEVLA_CUDA_FUSED_EXPERT=1 fuses them)");
    return Status::ok();
  }
  if (!pi05_ || act_ != DType::kBF16) return Status::ok();
  FusedExpertShape sh;
  sh.rows = static_cast<int>(cfg_.suffix_len());
  sh.width = static_cast<int>(cfg_.expert.width);
  sh.heads = static_cast<int>(cfg_.expert.num_heads);
  sh.kv_heads = static_cast<int>(cfg_.expert.num_kv_heads);
  sh.head_dim = static_cast<int>(cfg_.expert.head_dim);
  sh.mlp = static_cast<int>(cfg_.expert.mlp_dim);
  sh.layers = static_cast<int>(cfg_.expert.depth);
  sh.max_prefix = max_cache_rows;
  if (const std::string why = fused_expert_unsupported(sh); !why.empty()) {
    spdlog::info("action_head (cuda): expert layers as separate kernels ({})", why);
    return Status::ok();
  }
  std::size_t partial_bytes = 0, attn_bytes = 0;
  auto planned = fused_expert_plan(sh, info_.index, &partial_bytes, &attn_bytes);
  if (!planned.has_value()) {
    spdlog::info("action_head (cuda): expert layers as separate kernels ({})", planned.status().message());
    return Status::ok();
  }
  fused_args_ = *planned;
  fused_max_rows_ = max_cache_rows;
  fused_ = true;
  if (const char* tr = std::getenv("EDGEVLA_CUDA_FUSED_TRACE"); tr != nullptr && std::string_view(tr) == "1") {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&fused_trace_, sizeof(unsigned long long) *
                                                               static_cast<std::size_t>(fused_expert_trace_slots(sh)) *
                                                               static_cast<std::size_t>(fused_args_.grid + 1)));
    fused_args_.trace = fused_trace_;
  }
  buf(fused_args_.partials, partial_bytes);
  buf(fused_args_.attn, attn_bytes);
  buf(fused_args_.barrier, 64);
  buf(fused_layers_, sizeof(FusedExpertLayer) * layers_.size());
  const auto& a = fused_args_;
  spdlog::info("action_head (cuda): expert layers fused, one kernel per step ({} blocks; GEMM splits q|k|v {}x{}, o "
               "{}x{}, gate|up {}x{}, down {}x{} column groups x k shares)",
               a.grid, a.split_qkv.nb * 8, a.split_qkv.ks, a.split_o.nb * 8, a.split_o.ks, a.split_gate_up.nb * 8,
               a.split_gate_up.ks, a.split_down.nb * 8, a.split_down.ks);
  return Status::ok();
}

void ActionHeadEngine::plan_chain() {
  if (!chain_asked() || gu_parts_ == nullptr) return;  // the default: plain launches, GEMMs on Blas
  const std::string_view list(std::getenv("EDGEVLA_CUDA_CHAIN_GEMM"));
  if (act_ != DType::kBF16 || info_.major < 9) return;
  unsigned want = 0;
  for (std::string_view rest = list; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const unsigned bit = item == "qkv"       ? kChainQkv
                         : item == "o"       ? kChainO
                         : item == "gate_up" ? kChainGateUp
                         : item == "down"    ? kChainDown
                         : item == "all"     ? (kChainQkv | kChainO | kChainGateUp | kChainDown)
                                             : 0u;
    if (bit == 0) {
      spdlog::warn("action_head (cuda): EDGEVLA_CUDA_CHAIN_GEMM names '{}', which is not an expert GEMM; "
                   "use a comma list of qkv, o, gate_up, down, or all",
                   item);
    }
    want |= bit;
  }
  const std::int64_t S = cfg_.suffix_len(), E = cfg_.expert.width, F = cfg_.expert.mlp_dim;
  const std::int64_t H = cfg_.expert.num_heads, h = cfg_.expert.head_dim;
  const Gemm mm = gemm();
  for (const ExpertLayerDev& w : layers_) {
    if (!mm.chain_fits(S, E, w.qkv, 1)) want &= ~unsigned{kChainQkv};
    if (!mm.chain_fits(S, E, w.gate_up, gate_up_parts(w))) want &= ~unsigned{kChainGateUp};
    if (!mm.chain_fits(S, H * h, w.o, kMaxKParts)) want &= ~unsigned{kChainO};
    if (!mm.chain_fits(S, F, w.down, kMaxKParts)) want &= ~unsigned{kChainDown};
  }
  chain_ = true;
  chain_gemms_ = want;
  const char* launch_env = std::getenv("EDGEVLA_CUDA_CHAIN_LAUNCH");
  const std::string_view launch_mode = launch_env != nullptr ? std::string_view(launch_env) : std::string_view("gemms");
  chain_launch_ = launch_mode == "0" ? ChainLaunch::kNone : launch_mode == "all" ? ChainLaunch::kAll : ChainLaunch::kGemms;
  spdlog::info("action_head (cuda): expert layers as one chain of launches; chained GEMMs:{}{}{}{}{}",
               (want & kChainQkv) ? " qkv" : "", (want & kChainO) ? " o" : "", (want & kChainGateUp) ? " gate_up" : "",
               (want & kChainDown) ? " down" : "", want == 0 ? " none" : "");
}

Status ActionHeadEngine::layer_gemm_norm(const void* a, std::int64_t lda, const DevLinear& w, const float* gate,
                                         const float* weight) const {
  const std::int64_t E = cfg_.expert.width;
  WgmmaNorm nm;
  nm.kind = pi05_ ? WgmmaNormKind::kGatedAda : WgmmaNormKind::kRms;
  nm.x = xs_, nm.ldx = E;
  nm.gate = gate;
  nm.weight = weight;
  nm.shift = pi05_ ? weight + E : nullptr;
  nm.eps = kNormEps;
  nm.scratch = norm_scratch_;
  return wgmma_linear_norm(stream_.get(), a, cfg_.suffix_len(), lda, w, nm, ys_, E, kMaxKParts, wgmma_launch_,
                           norm_clusters_);
}

// The four projections of every layer, gate|up in its GeGLU form.
std::vector<WgmmaW8Weights::Entry> ActionHeadEngine::w8_entries() {
  std::vector<WgmmaW8Weights::Entry> entries;
  for (const ExpertLayerDev& l : layers_) {
    entries.push_back({&l.qkv, WgmmaW8Epilogue::kBf16});
    entries.push_back({&l.o, WgmmaW8Epilogue::kBf16});
    entries.push_back({&l.gate_up, WgmmaW8Epilogue::kGeglu});
    entries.push_back({&l.down, WgmmaW8Epilogue::kBf16});
  }
  return entries;
}

Expected<int> ActionHeadEngine::layer_gemm(ChainRole role, const Gemm& mm, const void* a, std::int64_t lda,
                                           const DevLinear& w, void* d, std::int64_t ldd, int max_parts) const {
  const std::int64_t S = cfg_.suffix_len();
  if (w8_ && on_wgmma(role)) return w8_weights_.linear(stream_.get(), a, S, lda, w, d, ldd, max_parts, wgmma_launch_);
  if (on_wgmma(role)) {
    const WgmmaEpilogue epi = max_parts > 1 ? WgmmaEpilogue::kF32Parts : wgmma_shape(role).epilogue;
    return wgmma_linear(stream_.get(), a, S, lda, w, epi, d, ldd, max_parts, wgmma_launch_,
                        epi == WgmmaEpilogue::kRope ? qkv_rope(n_dev_) : WgmmaRope{});
  }
  if ((chain_gemms_ & role) != 0) return mm.chained(a, S, lda, w, d, ldd, max_parts);
  if (max_parts > 1) return mm.parts(a, S, lda, w, static_cast<float*>(d), max_parts);
  EDGEVLA_RETURN_IF_ERROR(mm(a, S, lda, w, d, act_, ldd));
  return 1;
}

// The expert's GEMMs on the warpgroup GEMM (wgmma_plan.hpp: the default on compute capability 9.0
// in bf16; EDGEVLA_CUDA_WGMMA names them qkv, o, gate_up, down): q|k|v, o and down (f32 k
// parts), gate|up with its GeGLU, the layers as one chain of launches. Their weights are tiled in
// place at load, so those layers then run on it only. Measured in bench/results/issue9_h200
// (notes.md, run 34).
void ActionHeadEngine::plan_wgmma(const cpu::TowerWeights& tw) {
  const char* fused = std::getenv("EDGEVLA_CUDA_FUSED_EXPERT");
  const std::string_view other = chain_asked()                                              ? "EDGEVLA_CUDA_CHAIN_GEMM"
                                 : fused != nullptr && std::string_view(fused) == "1" ? "EDGEVLA_CUDA_FUSED_EXPERT"
                                                                                      : "";
  // o and down in at most 8 k parts (the family cap): with four weight stages copied ahead of the
  // chain's wait, the head is 0.03-0.10 ms faster than in 4 at 1 and 3 views, alternated twice
  // (run 43 call 2; under eight stages ahead 4 had been faster, run 36 call 1).
  const WgmmaChoice c = wgmma_choice(act_, other, "action_head (cuda)");
  wgmma_shapes_ = {};
  if (!c.on) return;
  const std::int64_t S = cfg_.suffix_len(), E = cfg_.expert.width, F = cfg_.expert.mlp_dim;
  const std::int64_t Q = (cfg_.expert.num_heads + 2 * cfg_.expert.num_kv_heads) * cfg_.expert.head_dim;
  const std::int64_t HD = cfg_.expert.num_heads * cfg_.expert.head_dim;
  auto no_bias = [&](auto member) {
    return std::all_of(tw.layers.begin(), tw.layers.end(),
                       [&](const cpu::GemmaLayer& g) { return (g.*member).bias.empty(); });
  };
  if (c.asked("qkv") && wgmma_gemm_fits(S, Q, E, WgmmaEpilogue::kNone)) {
    // RoPE on q and k in the epilogue when asked (EDGEVLA_CUDA_WGMMA_ROPE=1) and the head dim
    // allows (a multiple of 64).
    const std::int64_t h = cfg_.expert.head_dim;
    const bool rope = c.rope && h % 64 == 0;
    wgmma_shapes_.qkv = {Q, E, rope ? WgmmaEpilogue::kRope : WgmmaEpilogue::kNone};
  }
  if (c.asked("o") && wgmma_gemm_fits(S, E, HD, WgmmaEpilogue::kF32Parts)) {
    wgmma_shapes_.o = {E, HD, WgmmaEpilogue::kF32Parts};
  }
  if (c.asked("gate_up") && no_bias(&cpu::GemmaLayer::gate) && no_bias(&cpu::GemmaLayer::up) &&
      wgmma_gemm_fits(S, 2 * F, E, WgmmaEpilogue::kGeglu)) {
    wgmma_shapes_.gate_up = {2 * F, E, WgmmaEpilogue::kGeglu};
  }
  if (c.asked("down") && wgmma_gemm_fits(S, E, F, WgmmaEpilogue::kF32Parts)) {
    wgmma_shapes_.down = {E, F, WgmmaEpilogue::kF32Parts};
  }
  std::string used;
  for (const auto& [sh, name] : {std::pair{&wgmma_shapes_.qkv, "q|k|v"}, std::pair{&wgmma_shapes_.o, "o"},
                                 std::pair{&wgmma_shapes_.gate_up, "gate|up"}, std::pair{&wgmma_shapes_.down, "down"}}) {
    if (sh->n != 0) used += used.empty() ? name : std::string(", ") + name;
  }
  wgmma_chain_ = !used.empty() && c.chain;
  wgmma_launch_ = c.launch(info_.multiprocessors);
  // The norms in o's and down's GEMMs where asked, both run on it, and the device holds every
  // feature block of such a call at once.
  // int8 weights where asked, when all four projections run on it and q|k|v's epilogue does not
  // rotate (the int8 kernel has no RoPE form).
  w8_ = false;
  if (c.w8) {
    w8_ = wgmma_shapes_.qkv.n != 0 && wgmma_shapes_.o.n != 0 && wgmma_shapes_.gate_up.n != 0 &&
          wgmma_shapes_.down.n != 0 && wgmma_shapes_.qkv.epilogue == WgmmaEpilogue::kNone;
    spdlog::info("action_head (cuda): EDGEVLA_CUDA_WGMMA_W8=1: {}",
                 w8_ ? "the four projections on int8 weights (one scale a feature)"
                     : "not taken (all four projections on the warpgroup GEMM, no RoPE in q|k|v's epilogue)");
  }
  gemm_norm_ = false;
  norm_clusters_ = c.norm == 2;
  if (c.norm != 0) {
    const WgmmaLaunch how = wgmma_launch_;
    const bool fits = wgmma_shapes_.o.n != 0 && wgmma_shapes_.down.n != 0 &&
                      wgmma_linear_norm_fits(S, E, HD, kMaxKParts, how, norm_clusters_) &&
                      wgmma_linear_norm_fits(S, E, F, kMaxKParts, how, norm_clusters_);
    gemm_norm_ = fits;
    spdlog::info("action_head (cuda): EDGEVLA_CUDA_GEMM_NORM: {}",
                 fits ? std::string("the norms after o and down in their GEMMs (") +
                            (norm_clusters_ ? "k slices in clusters)" : "k parts)")
                      : std::string("not taken (o and down on the warpgroup GEMM, at most 56 rows, every block "
                                    "resident at once)"));
  }
  if (!used.empty()) describe_extra_ = std::string("warpgroup GEMM") + (wgmma_chain_ ? ", chained" : "");
  spdlog::info("action_head (cuda): warpgroup GEMM for {}{}{} (k parts at most {}, k slices at most {})",
               used.empty() ? std::string("none of the asked GEMMs (shapes)") : used,
               wgmma_shapes_.qkv.epilogue == WgmmaEpilogue::kRope ? " (RoPE in q|k|v's epilogue)" : "",
               wgmma_chain_ ? ", layers chained" : "", c.caps.max_parts, c.caps.max_split);
}

Status ActionHeadEngine::tile_wgmma_weights() {
  std::vector<WgmmaWeight> weights;
  for (ExpertLayerDev& l : layers_) {
    for (const auto& [role, w] : {std::pair{kChainQkv, &l.qkv}, std::pair{kChainO, &l.o},
                                  std::pair{kChainGateUp, &l.gate_up}, std::pair{kChainDown, &l.down}}) {
      const WgmmaShape& sh = wgmma_shape(role);
      if (sh.n == 0) continue;
      weights.push_back({w, sh.epilogue, sh.epilogue == WgmmaEpilogue::kRope ? qkv_rope(nullptr) : WgmmaRope{}});
    }
  }
  return wgmma_tile_in_place(stream_.get(), weights, "action_head (cuda)");
}

}  // namespace edgevla::backends::cuda::pi0
