// What every cuda engine shares, whatever its model family: device copies of the checkpoint's
// linears (fused where one GEMM can do the work of several: q|k|v, gate|up), the weight plan that
// uploads them, the GEMM helpers the forward passes call, and the engine base (device, owned
// stream, cuBLASLt, one device arena for weights and buffers, the budget check and the upload
// through the bounded pinned staging path, then the checkpoint's mapped pages released).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/backends/cpu/kernels.hpp"
#include "runtime/backends/cuda/device.hpp"
#include "runtime/backends/cuda/kernels/chain_gemm.hpp"
#include "runtime/backends/cuda/kernels/gemm.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/engine_base.hpp"
#include "runtime/model/safetensors.hpp"

namespace edgevla::backends::cuda {

// A weight matrix [out, in] (row stride ld) on the device in the compute dtype, and its f32 bias.
struct DevLinear {
  void* w = nullptr;
  float* bias = nullptr;
  void* bias_act = nullptr;  // the bias again in the activation dtype (bf16 engines), for GEMMs
                             // with a bf16 output, whose cuBLASLt epilogue takes no f32 bias
  std::int64_t out = 0, in = 0, ld = 0;
};

// Plans device space for weights, then uploads them once the arena is allocated.
class WeightPlan {
 public:
  explicit WeightPlan(DType act) : act_(act) {}
  // One matrix made of the row blocks of `parts` (same `in`), e.g. q|k|v; biases concatenated
  // when the parts have them.
  void linear(DevLinear& dst, std::vector<const cpu::Linear*> parts);
  // One matrix with zeros past its `out` rows up to out_to and past its `in` columns up to in_to
  // (a bias padded with zeros too): the same products on a shape the GEMMs take better.
  void linear_padded(DevLinear& dst, const cpu::Linear& src, std::int64_t out_to, std::int64_t in_to);
  // An f32 vector.
  void vector(float*& dst, const std::vector<float>& src);
  // A matrix kept as stored ([rows, cols], dtype), e.g. the token embedding.
  void matrix(void*& dst, const void* src, DType src_type, std::int64_t rows, std::int64_t cols);
  std::int64_t bytes() const { return static_cast<std::int64_t>(arena_bytes_); }
  // Bytes read from the checkpoint (the upload's progress counts these).
  std::int64_t source_bytes() const { return static_cast<std::int64_t>(source_bytes_); }
  // Plans the weights into `arena` (call before Arena::allocate), then uploads after it.
  void place(Arena& arena);
  Status upload(Arena& arena, Uploader& up);

 private:
  struct Item {
    void** dst;
    std::vector<std::pair<const void*, std::int64_t>> sources;  // host pointer, elements
    DType src_type;
    DType dst_type;
    std::size_t offset = 0;
    std::int64_t count = 0;
    // Padded (linear_padded): the one source's rows × cols land `ld` apart, zeros around them up
    // to count elements. 0: the sources are laid end to end.
    std::int64_t rows = 0, cols = 0, ld = 0;
  };
  DType act_;
  std::vector<Item> items_;
  std::vector<std::unique_ptr<std::vector<float>>> kept_;  // concatenated biases
  std::size_t arena_bytes_ = 0;
  std::size_t source_bytes_ = 0;
};

// GEMM on act operands: D[m,n] = A[m,k]·Wᵀ (+bias) (+beta·D).
struct Gemm {
  Blas* blas;
  cudaStream_t stream;
  DType act;
  Status operator()(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* d, DType d_type,
                    std::int64_t ldd, float beta = 0.0f, Epilogue ep = Epilogue::kNone, const float* bias_override = nullptr,
                    bool use_bias = true) const;
  // A·Wᵀ with k split into the parts Blas::k_parts picks for the shape (at most max_parts):
  // f32 [parts, m, n] at d, no bias. Returns the count; the consumer sums the parts and adds
  // w.bias (ResidualParts in kernels.hpp), so no reduction runs in between.
  Expected<int> parts(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, float* d,
                      int max_parts) const;
  // A GEMM of the residual stream (an o, down or fc2 projection): with `parts`, its k parts
  // there (parts() above) and `pending` set to their layout for the norm after it to add;
  // without (nullptr), added into the f32 stream x [m, w.out] by the GEMM itself (beta 1) and
  // pending.count 0.
  Status residual(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, float* x, float* parts,
                  int max_parts, ResidualParts& pending) const;
  // The same with the stream x in x_type (f32, or the compute dtype: a bf16 stream takes the
  // product added by the GEMM in bf16, as PyTorch's bf16 models do).
  Status residual(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* x, DType x_type,
                  float* parts, int max_parts, ResidualParts& pending) const;
  // The same two results from the chained few-rows GEMM (chain_gemm.hpp), for a run of kernels
  // inside a DependentLaunchScope: max_parts 1 writes bf16 D [m, ldd] plus w.bias; more writes
  // f32 k parts at d with row stride w.out, as parts() does, and returns their count.
  Expected<int> chained(const void* a, std::int64_t m, std::int64_t lda, const DevLinear& w, void* d,
                        std::int64_t ldd, int max_parts) const;
  // Whether chained() takes this GEMM (bf16, m ≤ 64, a shape chain_gemm_plan finds).
  bool chain_fits(std::int64_t m, std::int64_t lda, const DevLinear& w, int max_parts) const;
  int sms = 0;  // the device's multiprocessors (chained() plans its launch on them)
};

// Parts a k-split GEMM writes at most (the buffers its consumers read are sized for this).
inline constexpr int kMaxKParts = 8;

// k parts the backbones' residual GEMMs (SigLIP's o and fc2; Gemma's and Qwen's o and down) may
// split into (Blas::k_parts offers 1, 2 or 4), and the most rows for which they do: on the H200
// (bench/results/issue9_h200/run30/call5) the parts took 0.07-0.1 ms off GR00T's backbone at 1
// and 2 views (SigLIP 256 / 512 rows, its LLM 131 / 220) and off pi0.5's at one view (256 SigLIP
// rows, a 512-row prefix bucket), and added 0.05-0.13 ms to pi0.5's at three (768 and 1024 rows),
// where beta-add GEMMs are already full. EDGEVLA_CUDA_BACKBONE_PARTS=0 turns them off, to compare.
inline constexpr int kMaxBackboneParts = 4;
inline constexpr std::int64_t kBackbonePartsMaxRows = 512;
// kMaxBackboneParts, or 1 where EDGEVLA_CUDA_BACKBONE_PARTS=0.
int backbone_parts();

// Buffers planned before the arena exists and resolved after: buf(p, bytes) then resolve().
class BufferPlan {
 public:
  explicit BufferPlan(Arena& arena) : arena_(arena) {}
  template <class T>
  void operator()(T*& p, std::size_t bytes) {
    items_.emplace_back(reinterpret_cast<void**>(&p), arena_.plan(bytes));
  }
  void resolve() const {
    for (const auto& [p, off] : items_) *p = arena_.at(off);
  }

 private:
  Arena& arena_;
  std::vector<std::pair<void**, std::size_t>> items_;
};

// Whether the comma-separated `list` names `name` (the engines' environment lists).
bool comma_list_has(std::string_view list, std::string_view name);

// Profiling only: kernels an engine leaves out of its forward pass, to measure what each one
// costs inside the captured, chained graph (the engine's outputs are then wrong, and its
// description says so). Builds configured with -DEDGEVLA_CUDA_ABLATION=ON read the comma list in
// EDGEVLA_CUDA_ABLATE (the kernel names each engine documents at its skip points); every other
// build ignores the variable, so a deployed binary cannot be told to drop a kernel.
class Ablation {
 public:
  static Ablation from_env();
  bool skip(std::string_view kernel) const;
  const std::string& list() const { return list_; }

 private:
  std::string list_;
};

// The part of an engine every cuda engine has.
class CudaEngineBase : public EngineBase {
 public:
  std::string describe() const override;
  std::int64_t device_bytes() const override { return static_cast<std::int64_t>(arena_.size()); }
  std::int64_t resident_bytes() const override { return 0; }

 protected:
  CudaEngineBase(std::string family, const model::StageSpec& spec, DeviceInfo info, DType act)
      : EngineBase("cuda", std::move(family), spec, DeviceType::kCuda), info_(std::move(info)), act_(act) {}
  // Stream and cuBLASLt; then the caller plans the arena.
  Status init_device();
  // What describe() adds after the device (e.g. which GEMM runs the head's projections), shown
  // by `node info` and NodeStatus.
  std::string describe_extra_;
  // Kernels left out for profiling (Ablation; empty unless built for it), read by init_device().
  Ablation ablation_;
  // Checks the plan against the budget and the free memory, allocates, uploads the weights and
  // releases the mapped pages of `files` (the checkpoint's). `what` names the stage.
  Status allocate_and_upload(WeightPlan& weights, const std::string& what,
                             const std::vector<const model::SafetensorsFile*>& files, const EngineOptions& o);
  Gemm gemm() { return Gemm{blas_.get(), stream_.get(), act_, info_.multiprocessors}; }
  // After the first capture: which kernel runs each GEMM shape (a summary at info, every plan
  // at debug), under `who`.
  void log_plans(const std::string& who) const { blas_->log_plans(who); }

  DeviceInfo info_;
  DType act_;
  Stream stream_;
  std::unique_ptr<Blas> blas_;
  Arena arena_;
};

// Prefix rows are padded to a multiple of row_bucket() (one backbone graph per bucket); a cache
// the backbone leaves on the device has the padded row count. The bucket trades padding rows of
// GEMM and attention work (64 cost pi0.5's one-view prefix 456 -> 512 rows, 12 %) against how
// many graphs and GEMM plans a run of varying prompts makes (each at its bucket's first use).
// EDGEVLA_CUDA_ROW_BUCKET (1-64, default 16), read once a process so that every engine pads alike.
std::int64_t row_bucket();
inline std::int64_t padded_rows(std::int64_t rows) {
  const std::int64_t b = row_bucket();
  return (rows + b - 1) / b * b;
}

// EDGEVLA_CUDA_BACKBONE_CHAIN=1 (read at each activate; 0 by default): the backbones' own kernels
// that take part in chains (norms, attention, RoPE, GeGLU; launch.cuh) launch chained behind the
// kernel before them (a cuBLASLt GEMM's launch gap hidden): both families' towers and LLMs.
bool backbone_chain_enabled();

// Resolves options.precision for the cuda backend: auto and bf16 compute in bf16, f32 in f32.
DType compute_dtype(const EngineOptions& options);

// Elements in a shape (for plans).
inline std::size_t bytes_of(DType t, std::int64_t n) { return static_cast<std::size_t>(n) * dtype_size(t); }

}  // namespace edgevla::backends::cuda
