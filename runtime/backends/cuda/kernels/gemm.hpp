// GEMMs of the cuda backend through cuBLASLt. Row-major throughout, as the rest of edgevla:
//   D[m, n] = alpha · A[m, k] · B[n, k]ᵀ + beta · C[m, n]   (+ bias[n]) (then an epilogue)
// A is activations (row stride lda), B is a weight matrix stored [out = n, in = k] as in the
// checkpoint (row stride ldb), C/D share one buffer and stride (beta = 1 accumulates into D:
// the residual add fused into the GEMM). bf16 operands accumulate in f32; D may be bf16 or f32
// (the residual stream stays f32). f32 operands compute in plain f32 (no TF32), for
// `precision: f32`.
//
// Plans are cached per shape and dtype: at first use the heuristic's candidates, and for bf16
// operands with at most 64 rows edgevla's own skinny kernel (skinny_gemm.hpp), are timed on the
// device with cold caches and the fastest is kept. The first call of a shape plans it and must
// happen outside stream capture (the engines run one warm-up pass before capturing); later
// calls allocate nothing and never synchronise, so they can be captured into a CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

enum class Epilogue : std::uint8_t {
  kNone,      // D = alpha·A·Bᵀ + beta·C (+ bias when given)
  kGeluTanh,  // D = gelu_tanh(alpha·A·Bᵀ + bias) (beta must be 0)
};

struct GemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  DType a_type = DType::kBF16;
  std::int64_t lda = 0;
  const void* b = nullptr;
  DType b_type = DType::kBF16;
  std::int64_t ldb = 0;
  void* d = nullptr;
  DType d_type = DType::kBF16;
  std::int64_t ldd = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  const float* bias = nullptr;  // f32 [n] on the device, or nullptr
  // Optional: the same bias in D's dtype (a bf16 D: cuBLASLt's epilogue refuses an f32 bias
  // there, so with this copy it adds the bias itself instead of a bias_act pass after).
  const void* bias_d = nullptr;
  Epilogue epilogue = Epilogue::kNone;
  // Strided batch: `batch` independent products, the i-th reading A + i·stride_a, B + i·stride_b
  // and writing D + i·stride_d (elements). Used to split k into parts (see Blas::k_parts).
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
};

// A GEMM whose k is split into `parts` slices, each written as its own f32 product:
//   D_p[m, n] = A[m, p·k/P .. (p+1)·k/P) · B[n, same]ᵀ,  D_p at d + p·m·ldd
// The consumer (a norm that adds the residual anyway) sums the parts, so no reduction kernel
// runs between the GEMM and it. parts == 1 is a plain GEMM into D.
GemmArgs k_split_args(const GemmArgs& args, int parts);

// One Blas serves one stream at a time: its workspace is shared by every GEMM it enqueues, and
// its plan cache is not locked (one engine thread drives it).
class Blas {
 public:
  // A cuBLASLt handle and a device workspace of `workspace_bytes` (32 MiB covers Hopper's
  // largest split-k plans).
  static Expected<std::unique_ptr<Blas>> create(std::size_t workspace_bytes = std::size_t{32} << 20);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // Enqueues one GEMM on `stream`. Errors name the shape and dtypes.
  Status gemm(cudaStream_t stream, const GemmArgs& args);
  // Plans cached so far (for tests and reports).
  std::size_t cached_plans() const;
  // What create() found cuBLASLt to do itself on this device (for tests and reports): its GELU
  // epilogue is the tanh approximation; it takes an f32 bias with a bf16 D. Where not, gemm()
  // runs bias_act (kernels.hpp) after the GEMM instead, with the same results.
  bool fused_gelu_epilogue() const;
  bool fused_f32_bias_with_bf16_output() const;
  // For a bf16 D: cuBLASLt's GELU epilogue agrees with the tanh approximation to within bf16's
  // resolution, so bf16 GEMMs with GELU use it (an f32 D still needs fused_gelu_epilogue()).
  bool fused_gelu_epilogue_bf16() const;
  // Those two findings in words (why a feature is not fused), for logs.
  const std::string& epilogue_report() const;
  // Whether plans made from now on may pick edgevla's few-rows kernel (skinny_gemm.hpp) where
  // it times faster than cuBLASLt (default on; off to compare or to isolate).
  void set_own_kernels(bool on);
  // Each planned shape and what runs it, with its timed median (one line per plan).
  std::string plan_report() const;
  // Logs how many shapes are planned and what runs them, as `who` (e.g. "backbone (cuda)"): at
  // info level when plans were added since it last did (an engine's graph per input block
  // plans nothing new), the full report at debug level.
  void log_plans(const std::string& who) const;
  // How many k parts (1, 2 or 4, at most max_parts; see k_split_args) run `args` fastest on
  // this device; `args` has an f32 D (scratch of max_parts · m · ldd elements), beta 0 and no
  // bias or epilogue: the consumer of the parts adds those. The first call for a
  // shape plans and times every split (outside capture, as gemm's first call); later calls
  // answer from the cache. Splits whose k slice is not a multiple of 64 are not offered.
  Expected<int> k_parts(cudaStream_t stream, const GemmArgs& args, int max_parts);

 private:
  Blas() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgevla::backends::cuda
