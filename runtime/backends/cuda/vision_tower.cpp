#include "runtime/backends/cuda/vision_tower.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

namespace {

// n rounded up to a multiple of 64 where `pad`.
std::int64_t padded_to_64(std::int64_t n, bool pad) { return pad ? (n + 63) / 64 * 64 : n; }

// The MLP's width on the device (plan()). The knobs here are read at each engine's activate, not
// once a process, so engines opened with and without them can be compared in one process.
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
    if (!ab.skip("vit_o")) EDGEVLA_RETURN_IF_ERROR(mm.residual(b.o, M, W, l.o, b.x, parts, b.max_parts, pending));
    EDGEVLA_RETURN_IF_ERROR(add_ln(l.ln2_w, l.ln2_b, b.y, act));
    // h is fc1.out wide (the MLP's width rounded up: mlp_width).
    if (!ab.skip("vit_fc1")) EDGEVLA_RETURN_IF_ERROR(mm(b.y, M, W, l.fc1, b.h, act, l.fc1.out, 0.0f, Epilogue::kGeluTanh));
    if (!ab.skip("vit_fc2")) {
      EDGEVLA_RETURN_IF_ERROR(mm.residual(b.h, M, l.fc2.in, l.fc2, b.x, parts, b.max_parts, pending));
    }
  }
  return add_ln(post_w_, post_b_, out, out_type);
}

Status VisionTower::encode_lanes(const Gemm& mm, std::span<const SideLane> side, cudaEvent_t fork, const Dims& d,
                                 const Buffers& b, std::span<const Images> runs, void* out, DType out_type,
                                 const Ablation& ab) const {
  // The images one by one (patches each), at most kMaxImages.
  constexpr std::size_t kMaxImages = 8;
  std::array<std::int64_t, kMaxImages> tokens{};
  std::size_t n = 0;
  for (const Images& r : runs) {
    for (std::int64_t i = 0; i < r.count; ++i) {
      if (n == kMaxImages) return encode(mm, d, b, runs, out, out_type, ab);
      tokens[n++] = r.tokens;
    }
  }
  const std::size_t lanes = std::min(n, 1 + side.size());
  if (lanes <= 1) return encode(mm, d, b, runs, out, out_type, ab);
  cudaStream_t s = mm.stream;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(s, &capture));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(fork, s));
  const std::size_t es = dtype_size(mm.act), out_es = dtype_size(out_type);
  const std::int64_t W = d.width, mlp_w = mlp();
  std::size_t first = 0;
  std::int64_t off = 0;  // the lane's first row
  for (std::size_t j = 0; j < lanes; ++j) {
    const std::size_t last = (j + 1) * n / lanes;
    // The lane's images as runs of one size.
    std::array<Images, kMaxImages> lane_runs{};
    std::size_t count = 0;
    std::int64_t rows = 0;
    for (std::size_t i = first; i < last; ++i) {
      if (count > 0 && lane_runs[count - 1].tokens == tokens[i]) {
        ++lane_runs[count - 1].count;
      } else {
        lane_runs[count++] = Images{1, tokens[i]};
      }
      rows += tokens[i];
    }
    Buffers lb = b;
    lb.x = b.x + off * W;
    lb.y = static_cast<std::byte*>(b.y) + static_cast<std::size_t>(off * W) * es;
    lb.qkv = static_cast<std::byte*>(b.qkv) + static_cast<std::size_t>(off * 3 * W) * es;
    lb.o = static_cast<std::byte*>(b.o) + static_cast<std::size_t>(off * W) * es;
    lb.h = static_cast<std::byte*>(b.h) + static_cast<std::size_t>(off * mlp_w) * es;
    void* lane_out = static_cast<std::byte*>(out) + static_cast<std::size_t>(off * W) * out_es;
    if (j == 0) {
      EDGEVLA_RETURN_IF_ERROR(encode(mm, d, lb, {lane_runs.data(), count}, lane_out, out_type, ab));
    } else {
      const SideLane& l = side[j - 1];
      // Outside capture (the pass that plans each GEMM shape on first use), the side lane's
      // plans are timed with the device otherwise idle, as the first lane's were.
      if (capture == cudaStreamCaptureStatusNone) EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(l.mm.stream, fork, 0));
      lb.parts = l.parts;
      lb.max_parts = l.parts != nullptr ? b.max_parts : 1;
      lb.scratch = l.scratch;
      lb.scratch_bytes = l.scratch_bytes;
      EDGEVLA_RETURN_IF_ERROR(encode(l.mm, d, lb, {lane_runs.data(), count}, lane_out, out_type, ab));
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(l.done, l.mm.stream));
    }
    first = last;
    off += rows;
  }
  for (std::size_t j = 1; j < lanes; ++j) EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s, side[j - 1].done, 0));
  return Status::ok();
}

int tower_lanes() { return env_int("EDGEVLA_CUDA_TOWER_LANES", 1, 1, 8); }

TowerLanes::~TowerLanes() {
  for (const VisionTower::SideLane& l : side_) {
    if (l.done != nullptr) cudaEventDestroy(l.done);
  }
  if (fork_ != nullptr) cudaEventDestroy(fork_);
}

Status TowerLanes::create(int views, const Gemm& gemm) {
  const int count = std::max(0, std::min(views, tower_lanes()) - 1);
  if (count == 0) return Status::ok();
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  side_.resize(static_cast<std::size_t>(count));
  for (VisionTower::SideLane& l : side_) {
    EDGEVLA_ASSIGN_OR_RETURN(Stream st, Stream::create());
    EDGEVLA_ASSIGN_OR_RETURN(std::unique_ptr<Blas> blas, Blas::create());
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&l.done, cudaEventDisableTiming));
    l.mm = Gemm{blas.get(), st.get(), gemm.act, gemm.sms};
    streams_.push_back(std::move(st));
    blas_.push_back(std::move(blas));
  }
  return Status::ok();
}

std::string TowerLanes::describe() const {
  return side_.empty() ? std::string() : "vision tower on up to " + std::to_string(side_.size() + 1) + " lanes";
}

void TowerLanes::plan(BufferPlan& buf, std::size_t parts_bytes, std::size_t scratch_bytes) {
  for (VisionTower::SideLane& l : side_) {
    if (parts_bytes > 0) buf(l.parts, parts_bytes);
    buf(l.scratch, scratch_bytes);
    l.scratch_bytes = scratch_bytes;
  }
}

}  // namespace edgevla::backends::cuda
