#include "runtime/backends/cuda/vision_tower.hpp"

#include <cmath>

#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

namespace {

// n rounded up to a multiple of 64 where `pad`.
std::int64_t padded_to_64(std::int64_t n, bool pad) { return pad ? (n + 63) / 64 * 64 : n; }

// The MLP's width on the device (plan()). The knobs here are read at each engine's activate, not
// once a process, so engines opened with and without them can be compared in one process (the
// tower tests do).
std::int64_t mlp_width(std::int64_t mlp) {
  return padded_to_64(mlp, env_int("EDGEVLA_CUDA_TOWER_MLP_PAD", 1, 0, 1) == 1);
}

}  // namespace

std::int64_t VisionTower::patch_width(std::int64_t in) {
  return padded_to_64(in, env_int("EDGEVLA_CUDA_PATCH_PAD", 1, 0, 1) == 1);
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
  stream_in_act_ = env_int("EDGEVLA_CUDA_TOWER_STREAM", 1, 0, 1) == 1;
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
  // The residual stream: b.x (f32), or b.xs in the compute dtype (stream_in_act()).
  const bool low = stream_in_act(act);
  if (low && b.xs == nullptr) {
    return invalid_argument("vision tower: the bf16 residual stream needs its buffer (Buffers::xs) from the engine; "
                            "set EDGEVLA_CUDA_TOWER_STREAM=0 for the f32 stream");
  }
  void* x = low ? b.xs : b.x;
  const DType xt = low ? act : DType::kF32;
  if (low) EDGEVLA_RETURN_IF_ERROR(convert(s, b.x, DType::kF32, b.xs, act, M * W));
  ResidualParts pending{0, M * W, nullptr};  // the last residual GEMM's parts, for the next norm
  // x += the residual GEMM's result (its parts, or nothing: it accumulated into x), then LayerNorm.
  const auto add_ln = [&](const float* w, const float* bias, void* y, DType y_type) {
    if (ab.skip("vit_norm")) {
      pending.count = 0;
      return Status::ok();
    }
    const Status st = pending.count > 0
                          ? add_layer_norm(s, x, xt, b.parts, M, W, w, bias, d.eps, y, y_type, pending)
                          : layer_norm(s, x, xt, M, W, w, bias, d.eps, y, y_type);
    pending.count = 0;
    return st;
  };
  for (const Layer& l : layers_) {
    EDGEVLA_RETURN_IF_ERROR(add_ln(l.ln1_w, l.ln1_b, b.y, act));
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
    if (!ab.skip("vit_o")) EDGEVLA_RETURN_IF_ERROR(mm.residual(b.o, M, W, l.o, x, xt, parts, b.max_parts, pending));
    EDGEVLA_RETURN_IF_ERROR(add_ln(l.ln2_w, l.ln2_b, b.y, act));
    // h is fc1.out wide (the MLP's width rounded up: mlp_width).
    if (!ab.skip("vit_fc1")) EDGEVLA_RETURN_IF_ERROR(mm(b.y, M, W, l.fc1, b.h, act, l.fc1.out, 0.0f, Epilogue::kGeluTanh));
    if (!ab.skip("vit_fc2")) {
      EDGEVLA_RETURN_IF_ERROR(mm.residual(b.h, M, l.fc2.in, l.fc2, x, xt, parts, b.max_parts, pending));
    }
  }
  return add_ln(post_w_, post_b_, out, out_type);
}

}  // namespace edgevla::backends::cuda
