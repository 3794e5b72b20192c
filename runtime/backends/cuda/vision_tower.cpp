#include "runtime/backends/cuda/vision_tower.hpp"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "runtime/backends/cuda/kernels/attention.hpp"

namespace edgevla::backends::cuda {

namespace {

// The MLP's width on the device (plan()).
std::int64_t mlp_width(std::int64_t mlp) {
  static const bool pad = [] {
    const char* env = std::getenv("EDGEVLA_CUDA_TOWER_MLP_PAD");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return pad ? (mlp + 63) / 64 * 64 : mlp;
}

}  // namespace

int VisionTower::prefetch_lead() { return env_int("EDGEVLA_CUDA_TOWER_PREFETCH", 0, 0, 4); }

Status VisionTower::use_prefetch(int lead) {
  lead_ = lead;
  prefetch_.reset();
  if (lead <= 0) return Status::ok();
  EDGEVLA_ASSIGN_OR_RETURN(prefetch_, L2Prefetcher::create());
  return Status::ok();
}

Status VisionTower::prefetch_ahead(cudaStream_t s, std::int64_t j, std::size_t es) const {
  if (prefetch_ == nullptr) return Status::ok();
  const auto gemms = static_cast<std::int64_t>(layers_.size()) * 4;
  const std::int64_t from = j < 0 ? 0 : j + lead_, to = j + lead_;
  L2Ranges r;
  for (std::int64_t g = from; g <= to && g < gemms; ++g) {
    const Layer& l = layers_[static_cast<std::size_t>(g / 4)];
    const DevLinear& w = g % 4 == 0 ? l.qkv : g % 4 == 1 ? l.o : g % 4 == 2 ? l.fc1 : l.fc2;
    r.add(w.w, static_cast<std::size_t>(w.out * w.ld) * es);
  }
  return prefetch_->fork(s, r);
}

void VisionTower::plan(WeightPlan& wp, const std::vector<cpu::VisionLayer>& layers,
                       const std::vector<float>& post_w, const std::vector<float>& post_b) {
  layers_.assign(layers.size(), Layer{});  // sized once: the plan keeps pointers into it
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const cpu::VisionLayer& s = layers[i];
    Layer& d = layers_[i];
    wp.vector(d.ln1_w, s.ln1_w);
    wp.vector(d.ln1_b, s.ln1_b);
    wp.vector(d.ln2_w, s.ln2_w);
    wp.vector(d.ln2_b, s.ln2_b);
    wp.linear(d.qkv, {&s.q, &s.k, &s.v});
    wp.linear(d.o, {&s.o});
    const std::int64_t mlp = mlp_width(s.fc1.out);
    wp.linear_padded(d.fc1, s.fc1, mlp, s.fc1.in);
    wp.linear_padded(d.fc2, s.fc2, s.fc2.out, mlp);
  }
  wp.vector(post_w_, post_w);
  wp.vector(post_b_, post_b);
}

Status VisionTower::encode(const Gemm& mm, const Dims& d, const Buffers& b, std::span<const Images> runs, void* out,
                           DType out_type, const Ablation& ab) const {
  const DType act = mm.act;
  cudaStream_t s = mm.stream;
  const std::int64_t W = d.width, hd = W / d.heads;
  std::int64_t M = 0;
  for (const Images& r : runs) M += r.count * r.tokens;
  const std::size_t es = dtype_size(act);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  float* parts = M <= kBackbonePartsMaxRows ? b.parts : nullptr;
  ResidualParts pending{0, M * W, nullptr};  // the last residual GEMM's parts, for the next norm
  // x += the residual GEMM's result (its parts, or nothing: it accumulated into x), then LayerNorm.
  const auto add_ln = [&](const float* w, const float* bias, void* y, DType y_type) {
    if (ab.skip("vit_norm")) {
      pending.count = 0;
      return Status::ok();
    }
    const Status st = pending.count > 0 ? add_layer_norm(s, b.x, b.parts, M, W, w, bias, d.eps, y, y_type, pending)
                                        : layer_norm(s, b.x, M, W, w, bias, d.eps, y, y_type);
    pending.count = 0;
    return st;
  };
  std::int64_t g = 0;  // the stack's GEMMs so far (prefetch_ahead)
  const auto ahead = [&] { return prefetch_ahead(s, g++, es); };
  EDGEVLA_RETURN_IF_ERROR(prefetch_ahead(s, -1, es));
  for (const Layer& l : layers_) {
    EDGEVLA_RETURN_IF_ERROR(add_ln(l.ln1_w, l.ln1_b, b.y, act));
    EDGEVLA_RETURN_IF_ERROR(ahead());
    if (!ab.skip("vit_qkv")) EDGEVLA_RETURN_IF_ERROR(mm(b.y, M, W, l.qkv, b.qkv, act, 3 * W));
    std::int64_t off = 0;
    for (const Images& r : runs) {
      if (ab.skip("vit_attention")) break;
      auto* q = static_cast<std::byte*>(b.qkv) + static_cast<std::size_t>(off * 3 * W) * es;
      AttentionArgs a{act, r.count, r.tokens, d.heads, d.heads, hd, scale};
      a.q = q;
      a.ldq = 3 * W;
      a.q_batch = r.tokens * 3 * W;
      a.out = static_cast<std::byte*>(b.o) + static_cast<std::size_t>(off * W) * es;
      a.ldo = W;
      a.o_batch = r.tokens * W;
      a.a = KvBlock{q + W * es, q + 2 * W * es, 3 * W, r.tokens * 3 * W};
      a.a_max = r.tokens;
      a.scratch = b.scratch;
      a.scratch_bytes = b.scratch_bytes;
      EDGEVLA_RETURN_IF_ERROR(attention(s, a));
      off += r.count * r.tokens;
    }
    EDGEVLA_RETURN_IF_ERROR(ahead());
    if (!ab.skip("vit_o")) EDGEVLA_RETURN_IF_ERROR(mm.residual(b.o, M, W, l.o, b.x, parts, b.max_parts, pending));
    EDGEVLA_RETURN_IF_ERROR(add_ln(l.ln2_w, l.ln2_b, b.y, act));
    // h is fc1.out wide (the MLP's width rounded up: mlp_width).
    EDGEVLA_RETURN_IF_ERROR(ahead());
    if (!ab.skip("vit_fc1")) EDGEVLA_RETURN_IF_ERROR(mm(b.y, M, W, l.fc1, b.h, act, l.fc1.out, 0.0f, Epilogue::kGeluTanh));
    EDGEVLA_RETURN_IF_ERROR(ahead());
    if (!ab.skip("vit_fc2")) {
      EDGEVLA_RETURN_IF_ERROR(mm.residual(b.h, M, l.fc2.in, l.fc2, b.x, parts, b.max_parts, pending));
    }
  }
  EDGEVLA_RETURN_IF_ERROR(add_ln(post_w_, post_b_, out, out_type));
  return prefetch_ != nullptr ? prefetch_->join(s) : Status::ok();
}

}  // namespace edgevla::backends::cuda
