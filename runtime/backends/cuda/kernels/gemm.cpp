// cuBLASLt GEMMs of the cuda backend (see gemm.hpp).
//
// Row-major D[m, n] = A[m, k]·B[n, k]ᵀ is, read column-major, Dᵀ[n, m] = B·Aᵀ: cuBLASLt's "A"
// is edgevla's weight matrix B (stored k × n column-major, transposed), its "B" is the
// activations A (k × m, not transposed), and D keeps its buffer with ld = ldd. The bias then
// runs along cuBLASLt's rows, i.e. along edgevla's n, as cuBLASLt's bias epilogue expects.
//
// Two epilogue features are checked once on the device when the Blas is created, because the
// documentation does not promise them: that cuBLASLt's GELU epilogue is the tanh approximation
// the CPU backend uses, and that it accepts an f32 bias with a bf16 D. Where either is missing
// (or cuBLASLt offers no algorithm for a combination), the GEMM runs without it and bias_act
// applies the bias and/or GELU right after, on the same stream, so it stays capturable.
//
// The planning machinery (plan keys, candidate timing, the plan file) is gemm_plan.hpp.
#include "runtime/backends/cuda/kernels/gemm.hpp"

#include <cublasLt.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/backends/cuda/kernels/gemm_plan.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"

namespace edgevla::backends::cuda {

// Runs one small GEMM with A = B = 0, so D is the epilogue applied to the bias alone, and
// compares it with `expect`. False when cuBLASLt refuses the combination or differs.
Expected<bool> Blas::Impl::probe(DType d_type, Epilogue epilogue, const std::vector<float>& bias_host,
                                 const std::vector<float>& expect, float tolerance, std::string& note,
                                 bool bias_in_d) {
  const std::int64_t m = 8, n = static_cast<std::int64_t>(bias_host.size()), k = 16;
  DeviceBuffer a, b, d, bias;
  const std::size_t d_bytes = static_cast<std::size_t>(m * n) * dtype_size(d_type);
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&a.p, static_cast<std::size_t>(m * k) * 2));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&b.p, static_cast<std::size_t>(n * k) * 2));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&d.p, d_bytes));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&bias.p, bias_host.size() * sizeof(float)));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemset(a.p, 0, static_cast<std::size_t>(m * k) * 2));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemset(b.p, 0, static_cast<std::size_t>(n * k) * 2));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemset(d.p, 0, d_bytes));
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(bias.p, bias_host.data(), bias_host.size() * sizeof(float), cudaMemcpyHostToDevice));
  DeviceBuffer bias_d;
  if (bias_in_d) {  // the bias rounded to D's dtype (bf16)
    std::vector<std::uint16_t> bits(bias_host.size());
    for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = float_to_bfloat16(bias_host[i]);
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&bias_d.p, bits.size() * 2));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy(bias_d.p, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  }
  GemmArgs args;
  args.m = m, args.n = n, args.k = k;
  args.a = a.p, args.a_type = DType::kBF16, args.lda = k;
  args.b = b.p, args.b_type = DType::kBF16, args.ldb = k;
  args.d = d.p, args.d_type = d_type, args.ldd = n;
  args.bias = static_cast<const float*>(bias.p);
  args.bias_d = bias_d.p;
  args.epilogue = epilogue;
  const PlanKey key{m, n, k, k, k, n, DType::kBF16, DType::kBF16, d_type, epilogue, true, false, true,
                    256, 256, 256, 256, bias_in_d};
  const std::string what = "cuBLASLt epilogue probe";
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  Plan plan;
  EDGEVLA_RETURN_IF_ERROR(describe_plan(key, EpilogueChoice{true, epilogue == Epilogue::kGeluTanh, bias_in_d},
                                        bias_in_d ? bias_d.p : bias.p, what, plan, candidates));
  if (candidates.empty()) {
    note = "refused (" + last_refusal + ")";
    return false;
  }
  plan.lt_bias = true;
  plan.lt_bias_in_d = bias_in_d;
  const cublasStatus_t st = matmul(plan, candidates[0].algo, nullptr, args, d.p);
  if (st != CUBLAS_STATUS_SUCCESS) {
    (void)cudaGetLastError();
    note = "failed to run (" + lt_error(st) + ")";
    return false;
  }
  std::vector<unsigned char> out(d_bytes);
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpy(out.data(), d.p, d_bytes, cudaMemcpyDeviceToHost));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      float got;
      if (d_type == DType::kBF16) {
        std::uint16_t bits;
        std::memcpy(&bits, out.data() + (r * n + c) * 2, 2);
        got = bfloat16_to_float(bits);
      } else {
        std::memcpy(&got, out.data() + (r * n + c) * 4, 4);
      }
      const float e = expect[static_cast<std::size_t>(c)];
      if (!(std::fabs(got - e) <= tolerance * (1.0f + std::fabs(e)))) {
        note = "differs (" + std::to_string(got) + " for " + std::to_string(e) + ")";
        return false;
      }
    }
  }
  note = "fused";
  return true;
}

Expected<std::unique_ptr<Blas>> Blas::create(std::size_t workspace_bytes) {
  std::unique_ptr<Blas> blas(new Blas());
  blas->impl_ = std::make_unique<Impl>();
  Impl& im = *blas->impl_;
  const cublasStatus_t st = cublasLtCreate(&im.lt);
  if (st != CUBLAS_STATUS_SUCCESS) {
    im.lt = nullptr;
    return unavailable("cublasLtCreate failed: " + lt_error(st) + " (is a CUDA device present?)");
  }
  im.workspace_bytes = workspace_bytes;
  im.wide_offered = env_int("EDGEVLA_CUDA_WIDE_GEMM", 0, 0, 1) == 1 && wide_gemm_available();
  im.near_rows = env_int("EDGEVLA_GEMM_NEAR_ROWS", 1, 0, 1) == 1;
  im.load_plan_file();
  if (workspace_bytes > 0) EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&im.workspace, workspace_bytes));

  // Probe 1: cuBLASLt's GELU (f32 D, so an approximation other than tanh's shows).
  std::vector<float> bias(64), expect(64);
  for (std::size_t i = 0; i < bias.size(); ++i) {
    bias[i] = -5.0f + 10.0f * static_cast<float>(i) / 63.0f;
    const double x = bias[i];
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    expect[i] = static_cast<float>(0.5 * x * (1.0 + std::tanh(u)));
  }
  std::string gelu_note, bias_note;
  EDGEVLA_ASSIGN_OR_RETURN(im.lt_gelu_ok,
                           im.probe(DType::kF32, Epilogue::kGeluTanh, bias, expect, 2e-6f, gelu_note));
  // Probe 2: an f32 bias with a bf16 D (values that bf16 cannot hold exactly).
  for (std::size_t i = 0; i < bias.size(); ++i) {
    bias[i] = 0.1f * (static_cast<float>(i) - 31.5f) + 1.0e-3f;
    expect[i] = bias[i];
  }
  EDGEVLA_ASSIGN_OR_RETURN(im.lt_f32_bias_bf16_ok,
                           im.probe(DType::kBF16, Epilogue::kNone, bias, expect, 8e-3f, bias_note));
  // Probe 3: GELU with a bf16 D and a bf16 bias: what bf16 GEMMs with GELU would use. Values of
  // order one must agree to about bf16's resolution (2^-8 relative); tails near zero may differ
  // by a few 1e-6, far below what a bf16 activation of order one resolves.
  std::vector<float> gelu_bias(64);
  for (std::size_t i = 0; i < gelu_bias.size(); ++i) {
    gelu_bias[i] = bfloat16_to_float(float_to_bfloat16(-5.0f + 10.0f * static_cast<float>(i) / 63.0f));
    const double x = gelu_bias[i];
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    expect[i] = static_cast<float>(0.5 * x * (1.0 + std::tanh(u)));
  }
  std::string gelu_bf16_note;
  EDGEVLA_ASSIGN_OR_RETURN(im.lt_gelu_bf16_ok, im.probe(DType::kBF16, Epilogue::kGeluTanh, gelu_bias, expect,
                                                        1.0f / 128.0f, gelu_bf16_note, /*bias_in_d=*/true));
  im.epilogue_report = "cuBLASLt GELU epilogue: " + gelu_note + "; f32 bias with bf16 D: " + bias_note +
                       "; GELU and bf16 bias with bf16 D: " + gelu_bf16_note +
                       " (where not fused, bias_act runs after the GEMM)";
  return blas;
}

Blas::~Blas() = default;

std::size_t Blas::cached_plans() const { return impl_->plans.size(); }

bool Blas::fused_gelu_epilogue() const { return impl_->lt_gelu_ok; }
bool Blas::fused_f32_bias_with_bf16_output() const { return impl_->lt_f32_bias_bf16_ok; }
bool Blas::fused_gelu_epilogue_bf16() const { return impl_->lt_gelu_bf16_ok; }
const std::string& Blas::epilogue_report() const { return impl_->epilogue_report; }

void Blas::set_own_kernels(bool on) { impl_->own_kernels = on; }

std::string Blas::plan_report() const {
  std::string out;
  for (const auto& [key, plan] : impl_->plans) {
    out += "gemm m=" + std::to_string(key.m) + " n=" + std::to_string(key.n) + " k=" + std::to_string(key.k) +
           (key.batch > 1 ? " x" + std::to_string(key.batch) + " k parts" : std::string()) + " " +
           std::string(dtype_name(key.a)) + "->" + std::string(dtype_name(key.d)) + ": " + plan->chosen + "\n";
  }
  for (const auto& [key, parts] : impl_->k_parts_cache) {
    out += "gemm m=" + std::to_string(key.m) + " n=" + std::to_string(key.n) + " k=" + std::to_string(key.k) + " " +
           std::string(dtype_name(key.a)) + "->f32: split into " + std::to_string(parts) + " k parts\n";
  }
  return out;
}

void Blas::log_plans(const std::string& who) const {
  const std::size_t shapes = impl_->plans.size();
  const std::string report = plan_report();
  if (shapes != impl_->logged_plans) {
    const auto count = [&](const char* what) {
      std::size_t n = 0;
      for (std::size_t at = 0; (at = report.find(what, at)) != std::string::npos; ++at) ++n;
      return n;
    };
    const std::size_t few = count("edgevla skinny"), many = count("edgevla wide");
    spdlog::info("{}: {} GEMM shapes planned, {} on edgevla's few-rows kernel, {} on its many-rows kernel, {} on "
                 "cuBLASLt",
                 who, shapes, few, many, shapes - few - many);
    impl_->logged_plans = shapes;
  }
  spdlog::debug("{} GEMM plans:\n{}", who, report);
}

GemmArgs k_split_args(const GemmArgs& args, int parts) {
  GemmArgs a = args;
  if (parts <= 1) return a;
  a.k = args.k / parts;
  a.batch = parts;
  a.stride_a = a.k;
  a.stride_b = a.k;
  a.stride_d = args.m * args.ldd;
  a.beta = 0.0f;
  a.bias = nullptr;
  a.bias_d = nullptr;
  return a;
}

Status Blas::gemm(cudaStream_t stream, const GemmArgs& args) {
  EDGEVLA_RETURN_IF_ERROR(validate(args));
  if (args.m == 0 || args.n == 0) return Status::ok();
  Impl& im = *impl_;
  EDGEVLA_ASSIGN_OR_RETURN(const Plan* found, im.find_plan(stream, args, /*need_ms=*/false));
  const Plan& plan = *found;
  if (plan.skinny_k_chunk > 0) return skinny_gemm(stream, im.skinny_args(args, plan.skinny_k_chunk, args.d));
  if (plan.wide_rows > 0) {
    WideGemmArgs w;
    if (!im.wide_args(args, plan.wide_rows, args.d, w)) {
      return internal_error(describe(args) + ": planned on the many-rows kernel, which does not take it");
    }
    return wide_gemm(stream, w);
  }
  const cublasStatus_t st = im.matmul(plan, plan.algo, stream, args, args.d);
  if (st != CUBLAS_STATUS_SUCCESS) return internal_error(describe(args) + ": cublasLtMatmul failed: " + lt_error(st));
  if (plan.post_bias || plan.post_gelu) {
    EDGEVLA_RETURN_IF_ERROR(bias_act(stream, args.d, args.d_type, args.m, args.n, args.ldd,
                                     plan.post_bias ? args.bias : nullptr, plan.post_gelu));
  }
  return Status::ok();
}

Expected<int> Blas::k_parts(cudaStream_t stream, const GemmArgs& args, int max_parts) {
  EDGEVLA_RETURN_IF_ERROR(validate(args));
  if (args.batch != 1 || args.d_type != DType::kF32 || args.epilogue != Epilogue::kNone || args.bias != nullptr ||
      args.beta != 0.0f) {
    return invalid_argument(describe(args) +
                            ": k_parts takes one unbatched GEMM with an f32 D, beta 0, no bias and no epilogue (the "
                            "consumer of the parts adds the bias and the residual)");
  }
  if (args.m == 0 || args.n == 0) return 1;
  Impl& im = *impl_;
  const PlanKey key = key_of(args);
  if (auto it = im.k_parts_cache.find(key); it != im.k_parts_cache.end() && it->second <= max_parts) {
    return it->second;
  }
  // EDGEVLA_GEMM_MAX_K_PARTS caps the split (1: every k-split GEMM runs whole; to compare).
  if (const char* cap = std::getenv("EDGEVLA_GEMM_MAX_K_PARTS"); cap != nullptr && *cap != '\0') {
    max_parts = std::min(max_parts, std::max(1, std::atoi(cap)));
  }
  // Four at most: eight parts can time faster alone, but the norm that reads them all costs more
  // than that (pi0.5's head 0.6 % slower with eight than with four; bench/results/issue9_h200
  // run 27, call 14).
  constexpr int kMostParts = 4;
  int best = 1;
  float best_ms = -1.0f;
  for (int parts = 1; parts <= std::min(max_parts, kMostParts); parts *= 2) {
    if (args.k % parts != 0 || (parts > 1 && (args.k / parts) % 64 != 0)) continue;
    const GemmArgs a = k_split_args(args, parts);
    EDGEVLA_ASSIGN_OR_RETURN(const Plan* plan, im.find_plan(stream, a, /*need_ms=*/true));
    const float ms = plan->ms;
    // A split must win by 3 %: its consumer reads the parts, which the timing leaves out.
    if (best_ms < 0.0f || (ms >= 0.0f && ms < best_ms * (parts == 1 ? 1.0f : 0.97f))) {
      best = parts;
      best_ms = ms;
    }
  }
  im.k_parts_cache[key] = best;
  return best;
}

}  // namespace edgevla::backends::cuda
