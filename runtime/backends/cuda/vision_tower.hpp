// The SigLIP encoder both families' backbones run on the GPU (pi0's SigLIP, GR00T's SigLIP2):
// per layer LayerNorm → q|k|v → attention inside each image → o (residual) → LayerNorm →
// fc1 + GELU-tanh → fc2 (residual), then the post LayerNorm. What differs per family stays with
// the family: patch embedding, positions, and what follows the tower (projector, pixel
// unshuffle and mlp1).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/backends/cpu/weight_views.hpp"
#include "runtime/backends/cuda/engine_common.hpp"

namespace edgevla::backends::cuda {

class VisionTower {
 public:
  // The stack's sizes (the MLP's is its weights': mlp_width).
  struct Dims {
    std::int64_t width = 0, heads = 0;
    float eps = 0.0f;
  };
  // `count` images of `tokens` patches each, one after the other in the rows: one attention call.
  struct Images {
    std::int64_t count = 0, tokens = 0;
  };
  // Device buffers for `rows` patch rows (the caller's arena): x [rows, width] f32 holds the
  // embedded patches and is updated in place; y [rows, width], qkv [rows, 3·width], o [rows,
  // width] and h [rows, mlp()] in the compute dtype; parts [max_parts, min(rows,
  // kBackbonePartsMaxRows), width] f32 (null: beta-add residual GEMMs); the attention's scratch.
  struct Buffers {
    float* x = nullptr;
    void *y = nullptr, *qkv = nullptr, *o = nullptr, *h = nullptr;
    float* parts = nullptr;
    int max_parts = 1;
    void* scratch = nullptr;
    std::size_t scratch_bytes = 0;
    // The stream in the compute dtype [rows, width], where stream_in_act(): x is converted into
    // it first and the layers add into it instead.
    void* xs = nullptr;
  };

  // Plans every layer's device weights and the post norm's (the checkpoint's views; their device
  // pointers land here when the plan uploads). The MLP goes on the device rounded up to a multiple
  // of 64 (fc1's extra features and fc2's extra inputs zero, so the products are the same), which
  // cuBLASLt runs faster and which lets fc2's k split in parts (SigLIP's 4304 -> 4352); as stored
  // with EDGEVLA_CUDA_TOWER_MLP_PAD=0.
  void plan(WeightPlan& wp, const std::vector<cpu::VisionLayer>& layers, const std::vector<float>& post_w,
            const std::vector<float>& post_b);

  // Runs the stack over b.x's rows, the images in `runs` in row order, and writes the post
  // norm into `out` [rows, width] (out_type). Enqueues only: capturable. `ab` (profiling builds):
  // the tower's kernel classes to leave out, vit_norm, vit_qkv, vit_attention, vit_o, vit_fc1, vit_fc2.
  Status encode(const Gemm& mm, const Dims& d, const Buffers& b, std::span<const Images> runs, void* out,
                DType out_type, const Ablation& ab = Ablation{}) const;
  // The patch embedding's k on the device for `in` values a patch (3·14·14 = 588 in both
  // families): rounded up to a multiple of 64, the patch rows and the weight's extra columns
  // zero, so the products are the same. At 588 the rows are not 16-byte aligned and cuBLASLt
  // falls back to a kernel that took 17 µs at GR00T's 648 rows on an H200 (run 55 call 2, and
  // PyTorch's the same). As stored with EDGEVLA_CUDA_PATCH_PAD=0.
  static std::int64_t patch_width(std::int64_t in);
  // The MLP's width on the device, after plan(): the h buffer's row width.
  std::int64_t mlp() const { return layers_.empty() ? 0 : layers_.front().fc1.out; }
  // After plan(): whether the residual stream runs in the compute dtype `act` (bf16 at the default
  // precision, as PyTorch's bf16 towers keep it) rather than f32: the residual GEMMs add into it
  // in their epilogue (cuBLASLt's bf16 beta-add), the norms read half the bytes. The default
  // since run 64 (pi0.5 −0.04 / −0.11 ms at one / three views on an H200, GR00T unchanged:
  // bench/results/issue9_h200/notes.md); EDGEVLA_CUDA_TOWER_STREAM=0 keeps the f32 stream. The
  // engines then give Buffers::xs. At f32 precision the stream is f32 either way.
  bool stream_in_act(DType act) const { return stream_in_act_ && act != DType::kF32; }

 private:
  struct Layer {
    float *ln1_w = nullptr, *ln1_b = nullptr, *ln2_w = nullptr, *ln2_b = nullptr;
    DevLinear qkv, o, fc1, fc2;
  };
  std::vector<Layer> layers_;
  float *post_w_ = nullptr, *post_b_ = nullptr;
  bool stream_in_act_ = false;
};

}  // namespace edgevla::backends::cuda
