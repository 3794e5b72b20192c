// GR00T N1.6 action head on the GPU: its projections on the warpgroup GEMM (wgmma_plan.hpp), planned
// at load after the weights are uploaded: which run on it, their weights tiled in place, the MLP
// halves as one kernel where asked, and int8 copies of the DiT's projections where asked.
#include "runtime/backends/cuda/groot/action_head_engine.hpp"

namespace edgevla::backends::cuda::groot {
namespace action_head {

// EDGEVLA_CUDA_WGMMA_W8=1: every block's self-attention q|k|v, out, ff1 (its GELU form) and ff2 on
// int8 weights. The cross blocks' q stays on bf16 (it splits k over a cluster, which the int8
// kernel does not). Sized before upload from the blocks' shapes; each copy is taken only where
// plan_wgmma puts that projection on the warpgroup GEMM.
std::vector<WgmmaW8Weights::Entry> ActionHeadEngine::w8_entries() const {
  std::vector<WgmmaW8Weights::Entry> entries;
  for (const BlockDev& b : blocks_) {
    if (!b.cross) entries.push_back({&b.qkv, WgmmaW8Epilogue::kBf16});
    entries.push_back({&b.out, WgmmaW8Epilogue::kBf16});
    entries.push_back({&b.ff1, WgmmaW8Epilogue::kGelu});
    entries.push_back({&b.ff2, WgmmaW8Epilogue::kBf16});
  }
  return entries;
}

Status ActionHeadEngine::plan_wgmma() {
  const WgmmaChoice& c = wgmma_;
  if (!c.on) return Status::ok();
  const std::int64_t S = S_, E = E_, F = cfg_.ff_dim();
  std::vector<WgmmaWeight> weights;
  int counts[5] = {0, 0, 0, 0, 0}, heads_blocks = 0;
  const std::int64_t heads = cfg_.dit.num_heads, hd = cfg_.dit.head_dim;
  for (BlockDev& b : blocks_) {
    b.wg_qkv = c.asked(b.cross ? "q" : "qkv") && wgmma_gemm_fits(S, b.qkv.out, E, WgmmaEpilogue::kNone);
    // The heads kernel in place of q|k|v (cross q) and the attention kernel: not with int8 weights.
    b.wg_heads = b.wg_qkv && !c.w8 && (c.heads & (b.cross ? 2 : 1)) != 0 &&
                 wgmma_heads_fits(S, heads, hd, E, b.cross ? WgmmaHeadsMode::kCross : WgmmaHeadsMode::kSelf);
    b.wg_out = c.asked("out") && wgmma_gemm_fits(S, E, E, WgmmaEpilogue::kF32Parts);
    b.wg_ff1 = c.asked("ff1") && wgmma_gemm_fits(S, F, E, WgmmaEpilogue::kGelu);
    b.wg_ff2 = c.asked("ff2") && wgmma_gemm_fits(S, E, F, WgmmaEpilogue::kF32Parts);
    if (b.wg_heads) {
      weights.push_back({&b.qkv, WgmmaEpilogue::kNone, {}, hd}), ++heads_blocks;
    } else if (b.wg_qkv) {
      weights.push_back({&b.qkv, WgmmaEpilogue::kNone}), ++counts[b.cross ? 1 : 0];
    }
    if (b.wg_out) weights.push_back({&b.out, WgmmaEpilogue::kF32Parts}), ++counts[2];
    if (b.wg_ff1) weights.push_back({&b.ff1, WgmmaEpilogue::kGelu}), ++counts[3];
    if (b.wg_ff2) weights.push_back({&b.ff2, WgmmaEpilogue::kF32Parts}), ++counts[4];
  }
  if (wg_edges_) weights.push_back({&proj_out_2_, WgmmaEpilogue::kNone});
  if (c.w8 && w8_buffer_ != nullptr) {
    // From the row-major weights, before they are tiled in place; the int8 kernel's shapes are the
    // bf16 kernel's, so a projection planned on the one fits the other.
    const bool all = std::all_of(blocks_.begin(), blocks_.end(), [](const BlockDev& b) {
      return (b.cross || b.wg_qkv) && b.wg_out && b.wg_ff1 && b.wg_ff2;
    });
    if (all) EDGEVLA_RETURN_IF_ERROR(w8_weights_.quantize(stream_.get(), w8_buffer_, w8_entries()));
    spdlog::info("groot action_head (cuda): EDGEVLA_CUDA_WGMMA_W8=1: {}",
                 all ? "self q|k|v, out, ff1 and ff2 on int8 weights (one scale a feature)"
                     : "not taken (those projections are not all on the warpgroup GEMM)");
  }
  EDGEVLA_RETURN_IF_ERROR(wgmma_tile_in_place(stream_.get(), weights, "groot action_head (cuda)"));
  wgmma_chain_ = !weights.empty() && c.chain;
  wgmma_launch_ = c.launch(info_.multiprocessors);
  mlp_cluster_ = 0;
  if (c.mlp && !w8_weights_.has(blocks_.front().ff1)) {
    // The largest cluster (12 for the full DiT) for which every block's ff1 and ff2 are tiled, the
    // shapes fit, the parts stay within the norms' cap and every cluster is resident at once (a
    // second wave would cost more than the launch it saves).
    const bool all_tiled = std::all_of(blocks_.begin(), blocks_.end(), [](const BlockDev& b) { return b.wg_ff1 && b.wg_ff2; });
    for (int cluster = 12; all_tiled && mlp_cluster_ == 0 && cluster >= 2; --cluster) {
      if (!wgmma_mlp_fits(S, E, F, E, cluster) || wgmma_mlp_parts(F, cluster) > kMaxKParts) continue;
      if (wgmma_mlp_resident_clusters(S, E, F, E, cluster) >= static_cast<int>(F / (64 * cluster))) mlp_cluster_ = cluster;
    }
    if (mlp_cluster_ > 0) {
      spdlog::info("groot action_head (cuda): MLP halves as one kernel each, clusters of {} ({} parts)", mlp_cluster_,
                   wgmma_mlp_parts(F, mlp_cluster_));
    } else {
      spdlog::info("groot action_head (cuda): EDGEVLA_CUDA_WGMMA_MLP ignored (ff1 and ff2 not all on the warpgroup "
                   "GEMM, or no cluster size whose shapes fit and whose clusters the device holds at once)");
    }
  }
  if (!weights.empty()) {
    describe_extra_ =
        std::string("warpgroup GEMM") + (wgmma_chain_ ? ", chained" : "") + (mlp_cluster_ > 0 ? ", MLP halves fused" : "") +
        (heads_blocks > 0 ? ", attention blocks fused" : "");
  }
  const bool cross_heads = std::any_of(blocks_.begin(), blocks_.end(), [](const BlockDev& b) { return b.cross && b.wg_heads; });
  spdlog::info("groot action_head (cuda): warpgroup GEMM for {} self q|k|v, {} cross q, {} out, {} ff1, {} ff2{}{}; "
               "{} attention blocks as one heads kernel each{} (k parts at most {}, k slices at most {})",
               counts[0], counts[1], counts[2], counts[3], counts[4], wg_edges_ ? ", the steps' encoder and decoder" : "",
               wgmma_chain_ ? ", blocks chained" : "", heads_blocks,
               cross_heads ? ", cross blocks in clusters of " + std::to_string(wgmma_heads_cross_split(heads, hd)) : "",
               c.caps.max_parts, c.caps.max_split);
  return Status::ok();
}

}  // namespace action_head
}  // namespace edgevla::backends::cuda::groot
