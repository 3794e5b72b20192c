// The cuda backend's GEMM plans, their pieces (gemm_plan.hpp's part, included by it only): cuBLASLt
// errors as text, a GEMM's plan key (shape, strides, dtypes, epilogue, alignments), the plan a key
// maps to, the arguments' checks, and the RAII holders the planning uses.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "runtime/backends/cuda/kernels/gemm.hpp"

namespace edgevla::backends::cuda {

// Internal to the GEMMs (one translation unit includes this).
namespace gemm_plan {

constexpr int kCandidates = 16;  // heuristic results timed when a shape is planned

std::string lt_error(cublasStatus_t s) {
  return std::string(cublasLtGetStatusName(s)) + " (" + cublasLtGetStatusString(s) + ")";
}

std::string describe(const GemmArgs& a) {
  return "gemm m=" + std::to_string(a.m) + " n=" + std::to_string(a.n) + " k=" + std::to_string(a.k) + " (a " +
         std::string(dtype_name(a.a_type)) + ", b " + std::string(dtype_name(a.b_type)) + ", d " +
         std::string(dtype_name(a.d_type)) + ")";
}

cudaDataType_t cuda_type(DType t) { return t == DType::kBF16 ? CUDA_R_16BF : CUDA_R_32F; }

// Largest power of two (up to 256) dividing the address: what cuBLASLt may assume of a buffer.
std::uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t al = 256;
  while (al > 1 && a % al != 0) al >>= 1;
  return al;
}

struct PlanKey {
  std::int64_t m, n, k, lda, ldb, ldd;
  DType a, b, d;
  Epilogue epilogue;
  bool bias, alpha_zero, beta_zero;
  std::uint32_t align_a, align_b, align_d, align_bias;
  bool bias_d = false;  // a copy of the bias in D's dtype is given
  std::int64_t batch = 1, stride_a = 0, stride_b = 0, stride_d = 0;

  auto tie() const {
    return std::tie(m, n, k, lda, ldb, ldd, a, b, d, epilogue, bias, alpha_zero, beta_zero, align_a, align_b, align_d,
                    align_bias, bias_d, batch, stride_a, stride_b, stride_d);
  }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

// What a plan lets cuBLASLt do itself.
struct EpilogueChoice {
  bool lt_bias = false;
  bool lt_gelu = false;
  bool bias_in_d = false;  // cuBLASLt reads the bias in D's dtype (GemmArgs::bias_d)
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr;  // cuBLASLt's A: edgevla's weights B
  cublasLtMatrixLayout_t b = nullptr;  // cuBLASLt's B: edgevla's activations A
  cublasLtMatrixLayout_t d = nullptr;  // C and D
  cublasLtMatmulAlgo_t algo{};
  int skinny_k_chunk = 0;  // > 0: edgevla's few-rows kernel with this k per block runs instead
  int wide_rows = 0;       // > 0: edgevla's many-rows kernel (wide_gemm.hpp) with this many rows a block
  std::string chosen;      // what runs, and its timed median (plan_report)
  float ms = -1.0f;        // the timed time per call (-1: not timed)
  bool lt_bias = false;
  bool lt_bias_in_d = false;  // cuBLASLt's bias is GemmArgs::bias_d
  bool post_bias = false;  // bias_act adds the bias after the GEMM
  bool post_gelu = false;  // bias_act applies GELU after the GEMM

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

// A device buffer that frees itself (plan time and probes only).
struct DeviceBuffer {
  void* p = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p != nullptr) cudaFree(p);
  }
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e != nullptr) cudaEventDestroy(e);
  }
};

#define EDGEVLA_LT_RETURN_IF_ERROR(call, context)                                                       \
  do {                                                                                                  \
    const cublasStatus_t edgevla_lt_status_ = (call);                                                   \
    if (edgevla_lt_status_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      return internal_error(std::string(context) + ": " #call " failed: " + lt_error(edgevla_lt_status_)); \
    }                                                                                                   \
  } while (0)

Status validate(const GemmArgs& args) {
  const auto what = [&] { return describe(args); };
  if (args.m < 0 || args.n < 0 || args.k < 0) return invalid_argument(what() + ": sizes must not be negative");
  const bool ab_bf16 = args.a_type == DType::kBF16 && args.b_type == DType::kBF16;
  const bool ab_f32 = args.a_type == DType::kF32 && args.b_type == DType::kF32;
  if (!(ab_bf16 && (args.d_type == DType::kBF16 || args.d_type == DType::kF32)) &&
      !(ab_f32 && args.d_type == DType::kF32)) {
    return invalid_argument(what() +
                            ": unsupported dtypes; use a and b bf16 with d bf16 or f32, or a, b and d all f32");
  }
  if (args.m == 0 || args.n == 0) return Status::ok();
  if (args.k == 0) return invalid_argument(what() + ": k must be positive");
  if (args.lda < args.k || args.ldb < args.k || args.ldd < args.n) {
    return invalid_argument(what() + ": strides lda=" + std::to_string(args.lda) + " ldb=" + std::to_string(args.ldb) +
                            " ldd=" + std::to_string(args.ldd) + " must be at least k, k and n");
  }
  if (args.a == nullptr || args.b == nullptr || args.d == nullptr) {
    return invalid_argument(what() + ": a, b and d must not be null");
  }
  if (args.epilogue == Epilogue::kGeluTanh && args.beta != 0.0f) {
    return invalid_argument(what() + ": the GELU epilogue needs beta = 0 (it cannot accumulate into D)");
  }
  if (args.batch < 1 || args.stride_a < 0 || args.stride_b < 0 || args.stride_d < 0) {
    return invalid_argument(what() + ": batch must be at least 1 and its strides not negative");
  }
  if (args.batch > 1 && (args.bias != nullptr || args.epilogue != Epilogue::kNone)) {
    return invalid_argument(what() + ": a batched GEMM takes no bias or epilogue (each product would get it); " +
                            "apply it once where the products are summed");
  }
  return Status::ok();
}

PlanKey key_of(const GemmArgs& args) {
  PlanKey key{args.m,
              args.n,
              args.k,
              args.lda,
              args.ldb,
              args.ldd,
              args.a_type,
              args.b_type,
              args.d_type,
              args.epilogue,
              args.bias != nullptr,
              args.alpha == 0.0f,
              args.beta == 0.0f,
              alignment_of(args.a),
              alignment_of(args.b),
              alignment_of(args.d),
              args.bias != nullptr ? alignment_of(args.bias) : 256u,
              args.bias != nullptr && args.bias_d != nullptr};
  if (args.batch > 1) {
    key.batch = args.batch;
    key.stride_a = args.stride_a;
    key.stride_b = args.stride_b;
    key.stride_d = args.stride_d;
  }
  return key;
}

}  // namespace gemm_plan

}  // namespace edgevla::backends::cuda
