// How the cuda backend's GEMMs get their plans (gemm.cpp's part, included by gemm.cpp only):
// on the plan key (gemm_plan_key.hpp), cuBLASLt descriptors and the heuristic's candidates (its
// own list and its picks at nearby row counts), candidates timed on the device as CUDA graphs
// over weight copies larger than L2, picks carried across processes in the plan file
// (EDGEVLA_GEMM_PLAN_FILE), and Blas::Impl, which holds them per Blas.
#pragma once

#include <cublasLt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/backends/cuda/kernels/gemm.hpp"
#include "runtime/backends/cuda/kernels/gemm_plan_key.hpp"
#include "runtime/backends/cuda/kernels/skinny_gemm.hpp"
#include "runtime/backends/cuda/kernels/wide_gemm.hpp"

namespace edgevla::backends::cuda {

using namespace gemm_plan;  // private header: the planning's own names

struct Blas::Impl {
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  bool own_kernels = true;           // offer the skinny kernel as a candidate
  bool lt_gelu_ok = false;         // cuBLASLt's GELU epilogue is the tanh approximation
  bool lt_f32_bias_bf16_ok = false;  // cuBLASLt takes an f32 bias with a bf16 D
  bool lt_gelu_bf16_ok = false;      // its GELU is tanh's to within bf16 resolution (bf16 D)
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
  // EDGEVLA_GEMM_PLAN_FILE: the picks of an earlier process (key -> cuBLASLt candidate index or
  // skinny k share), reused instead of timing, and this process's new picks appended. Makes a
  // profiler's run (where timing is distorted) run the same kernels as the plain run.
  // Picks hold for one device and cuBLASLt version: each line starts with both (plan_prefix),
  // so a file carried to another GPU or library is timed afresh there and grows its own lines.
  std::string plan_file, plan_prefix;
  struct StoredPick {
    int lt = -1, skinny_k_chunk = 0;
    float ms = -1.0f;
    int wide_rows = 0;
  };
  std::map<std::string, StoredPick> stored_picks;
  // k_parts' answers per unsplit shape.
  std::map<PlanKey, int> k_parts_cache;
  std::size_t logged_plans = 0;  // plans.size() when log_plans last said it at info level
  std::string last_refusal = "no algorithm returned";  // why the last heuristic query found none
  std::string epilogue_report;

  ~Impl() {
    plans.clear();
    if (workspace != nullptr) cudaFree(workspace);
    if (lt != nullptr) cublasLtDestroy(lt);
  }

  // Descriptors and the heuristic's candidates for `key` with the given epilogue choice; an
  // empty candidate list when cuBLASLt has no algorithm for it.
  Status describe_plan(const PlanKey& key, const EpilogueChoice& choice, const void* bias, const std::string& what,
                       Plan& plan, std::vector<cublasLtMatmulHeuristicResult_t>& candidates) {
    EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
    const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
    EDGEVLA_LT_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)), what);
    EDGEVLA_LT_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)), what);
    cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_DEFAULT;
    if (choice.lt_bias && choice.lt_gelu) {
      ep = CUBLASLT_EPILOGUE_GELU_BIAS;
    } else if (choice.lt_bias) {
      ep = CUBLASLT_EPILOGUE_BIAS;
    } else if (choice.lt_gelu) {
      ep = CUBLASLT_EPILOGUE_GELU;
    }
    EDGEVLA_LT_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof(ep)), what);
    if (choice.lt_bias) {
      const std::int32_t bias_type = choice.bias_in_d ? cuda_type(key.d) : CUDA_R_32F;
      EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                                &bias_type, sizeof(bias_type)),
                                 what);
      // The heuristic may check the bias pointer too; each call sets its own again.
      EDGEVLA_LT_RETURN_IF_ERROR(
          cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), what);
    }
    EDGEVLA_LT_RETURN_IF_ERROR(
        cublasLtMatrixLayoutCreate(&plan.a, cuda_type(key.b), static_cast<std::uint64_t>(key.k),
                                   static_cast<std::uint64_t>(key.n), key.ldb),
        what);
    EDGEVLA_LT_RETURN_IF_ERROR(
        cublasLtMatrixLayoutCreate(&plan.b, cuda_type(key.a), static_cast<std::uint64_t>(key.k),
                                   static_cast<std::uint64_t>(key.m), key.lda),
        what);
    EDGEVLA_LT_RETURN_IF_ERROR(
        cublasLtMatrixLayoutCreate(&plan.d, cuda_type(key.d), static_cast<std::uint64_t>(key.n),
                                   static_cast<std::uint64_t>(key.m), key.ldd),
        what);
    if (key.batch > 1) {
      const std::int32_t count = static_cast<std::int32_t>(key.batch);
      const std::pair<cublasLtMatrixLayout_t, std::int64_t> layouts[3] = {
          {plan.a, key.stride_b}, {plan.b, key.stride_a}, {plan.d, key.stride_d}};
      for (const auto& [layout, stride] : layouts) {
        EDGEVLA_LT_RETURN_IF_ERROR(
            cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), what);
        EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
                                       layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                                   what);
      }
    }

    cublasLtMatmulPreference_t pref = nullptr;
    EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref), what);
    struct PrefGuard {
      cublasLtMatmulPreference_t p;
      ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); }
    } guard{pref};
    const std::uint64_t ws = workspace_bytes;
    EDGEVLA_LT_RETURN_IF_ERROR(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)), what);
    // cuBLASLt assumes 256-byte aligned buffers unless told otherwise; views into larger
    // buffers (fused QKV outputs, row offsets) may be less aligned.
    const std::uint32_t align[3] = {key.align_b, key.align_a, key.align_d};
    EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                                    &align[0], sizeof(align[0])),
                               what);
    EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                                    &align[1], sizeof(align[1])),
                               what);
    EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                                    &align[2], sizeof(align[2])),
                               what);
    EDGEVLA_LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                                    &align[2], sizeof(align[2])),
                               what);
    candidates.assign(kCandidates, cublasLtMatmulHeuristicResult_t{});
    int returned = 0;
    last_refusal = "no algorithm returned";
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, plan.desc, plan.a, plan.b, plan.d, plan.d, pref,
                                                             kCandidates, candidates.data(), &returned);
    // A refused combination (NOT_SUPPORTED, or INVALID_VALUE for an epilogue/type mix) is no
    // candidates: the caller falls back or reports the shape.
    if (st != CUBLAS_STATUS_SUCCESS) {
      returned = 0;
      last_refusal = lt_error(st);
    }
    candidates.resize(static_cast<std::size_t>(std::max(returned, 0)));
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const cublasLtMatmulHeuristicResult_t& r) {
                                      return r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > workspace_bytes;
                                    }),
                     candidates.end());
    if (!candidates.empty() && offers_near_rows(key)) add_near_row_candidates(key, plan, pref, candidates);
    return Status::ok();
  }

  // The heuristic's tile follows the row count: at 212 rows it may offer a tile of 112 rows
  // (two blocks down the rows, twice the blocks across the device) where at the 224 of a
  // prompt bucket it offers one of 224. Its first picks at a few row counts near key.m, each
  // checked for key's own shape, are appended after its own list (so stored picks of the
  // shorter list keep their indices) and timed with them.
  static constexpr std::int64_t kNearRowsMin = 64;
  static constexpr int kNearCandidates = 4;
  void add_near_row_candidates(const PlanKey& key, const Plan& plan, cublasLtMatmulPreference_t pref,
                               std::vector<cublasLtMatmulHeuristicResult_t>& candidates) {
    static constexpr std::int64_t kDeltas[] = {-32, -16, -8, 8, 16, 32};
    const auto same = [](const cublasLtMatmulAlgo_t& x, const cublasLtMatmulAlgo_t& y) {
      return std::memcmp(x.data, y.data, sizeof(x.data)) == 0;
    };
    for (const std::int64_t delta : kDeltas) {
      const auto rows = static_cast<std::uint64_t>(key.m + delta);
      cublasLtMatrixLayout_t b = nullptr, d = nullptr;
      if (cublasLtMatrixLayoutCreate(&b, cuda_type(key.a), static_cast<std::uint64_t>(key.k), rows, key.lda) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatrixLayoutCreate(&d, cuda_type(key.d), static_cast<std::uint64_t>(key.n), rows, key.ldd) !=
              CUBLAS_STATUS_SUCCESS) {
        if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
        continue;
      }
      cublasLtMatmulHeuristicResult_t near[kNearCandidates] = {};
      int returned = 0;
      if (cublasLtMatmulAlgoGetHeuristic(lt, plan.desc, plan.a, b, d, d, pref, kNearCandidates, near, &returned) !=
          CUBLAS_STATUS_SUCCESS) {
        returned = 0;
      }
      cublasLtMatrixLayoutDestroy(b);
      cublasLtMatrixLayoutDestroy(d);
      for (int i = 0; i < returned; ++i) {
        if (near[i].state != CUBLAS_STATUS_SUCCESS) continue;
        if (std::any_of(candidates.begin(), candidates.end(),
                        [&](const cublasLtMatmulHeuristicResult_t& c) { return same(c.algo, near[i].algo); })) {
          continue;
        }
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(lt, plan.desc, plan.a, plan.b, plan.d, plan.d, &near[i].algo, &check) !=
                CUBLAS_STATUS_SUCCESS ||
            check.state != CUBLAS_STATUS_SUCCESS || check.workspaceSize > workspace_bytes) {
          continue;
        }
        check.algo = near[i].algo;
        candidates.push_back(check);
      }
    }
  }
  // Set at creation: EDGEVLA_GEMM_NEAR_ROWS (default 1).
  bool near_rows = true;
  bool offers_near_rows(const PlanKey& k) const { return near_rows && k.batch == 1 && k.m >= kNearRowsMin; }

  cublasStatus_t matmul(const Plan& plan, const cublasLtMatmulAlgo_t& algo, cudaStream_t stream, const GemmArgs& a,
                        void* d) {
    if (plan.lt_bias) {
      const void* bias = plan.lt_bias_in_d ? a.bias_d : static_cast<const void*>(a.bias);
      const cublasStatus_t st =
          cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
      if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    return cublasLtMatmul(lt, plan.desc, &a.alpha, a.b, plan.a, a.a, plan.b, &a.beta, d, plan.d, d, plan.d, &algo,
                          workspace, workspace_bytes, stream);
  }

  // One way to run a planned GEMM: one of cuBLASLt's algorithms, edgevla's skinny kernel or its
  // many-rows kernel.
  struct Candidate {
    int lt = -1;             // index into cuBLASLt's candidates
    int skinny_k_chunk = 0;  // > 0: the skinny kernel
    int wide_rows = 0;       // > 0: the many-rows kernel with this many rows a block
  };

  // The many-rows kernel's form of `a` (bias, bias + GELU, or the f32 residual add), or false
  // where it has none: bf16 operands, alpha 1, one GEMM, at least kWideMinRows rows (fewer are the
  // skinny kernels' and cuBLASLt's), offered only with EDGEVLA_CUDA_WIDE_GEMM=1: timed beside
  // cuBLASLt's picks in both backbones it won no shape (the towers' four at 324 and 648 rows ran
  // at 67-96 % of cuBLASLt's speed; bench/results/issue9_h200 run 56 calls 3-5), and its six row
  // sizes lengthen every plan's timing.
  static constexpr std::int64_t kWideMinRows = 128;
  bool wide_args(const GemmArgs& a, int rows, void* d, WideGemmArgs& w) const {
    if (!own_kernels || !wide_offered || a.a_type != DType::kBF16 || a.b_type != DType::kBF16 ||
        a.batch != 1 || a.alpha != 1.0f || a.m < kWideMinRows || !wide_gemm_fits(a.m, a.n, a.k)) {
      return false;
    }
    const bool bf16_out = a.d_type == DType::kBF16 && a.beta == 0.0f;
    const bool residual = a.d_type == DType::kF32 && a.beta == 1.0f && a.epilogue == Epilogue::kNone;
    if (!bf16_out && !residual) return false;
    w = WideGemmArgs{};
    w.a = a.a, w.m = a.m, w.k = a.k, w.lda = a.lda;
    w.w = a.b, w.n = a.n, w.ldw = a.ldb;
    w.d = d, w.ldd = a.ldd, w.bias = a.bias, w.rows = rows;
    w.epilogue = residual ? WideEpilogue::kResidual
                          : (a.epilogue == Epilogue::kGeluTanh ? WideEpilogue::kGelu : WideEpilogue::kBias);
    return true;
  }
  // Set at creation: EDGEVLA_CUDA_WIDE_GEMM=1 and wide_gemm_available().
  bool wide_offered = false;

  SkinnyGemmArgs skinny_args(const GemmArgs& a, int k_chunk, void* d) const {
    SkinnyGemmArgs s;
    s.m = a.m, s.n = a.n, s.k = a.k;
    s.a = a.a, s.lda = a.lda;
    s.w = a.b, s.ldw = a.ldb;
    s.d = d, s.d_type = a.d_type, s.ldd = a.ldd;
    s.alpha = a.alpha, s.beta = a.beta, s.bias = a.bias;
    s.k_chunk = k_chunk;
    return s;
  }

  // Whether the skinny kernel can run `a` with this k per block, inside the workspace.
  bool skinny_fits(const GemmArgs& a, int k_chunk) const {
    if (!own_kernels || a.a_type != DType::kBF16 || a.b_type != DType::kBF16 ||
        a.epilogue != Epilogue::kNone || a.batch != 1) {
      return false;
    }
    const SkinnyGemmArgs s = skinny_args(a, k_chunk, a.d);
    return skinny_gemm_unsupported(s) == nullptr;
  }

  bool run_candidate(const Plan& plan, const std::vector<cublasLtMatmulHeuristicResult_t>& lt_candidates,
                     const Candidate& c, cudaStream_t stream, const GemmArgs& args, void* d) {
    if (c.skinny_k_chunk > 0) return skinny_gemm(stream, skinny_args(args, c.skinny_k_chunk, d)).is_ok();
    if (c.wide_rows > 0) {
      WideGemmArgs w;
      return wide_args(args, c.wide_rows, d, w) && wide_gemm(stream, w).is_ok();
    }
    return matmul(plan, lt_candidates[static_cast<std::size_t>(c.lt)].algo, stream, args, d) == CUBLAS_STATUS_SUCCESS;
  }

  // Times the candidates on a scratch D (the real D may be accumulated into) and returns the
  // index of the fastest and its time per call. In a forward pass the weights come from device
  // memory, not from the L2 cache (a model's weights are many times its size), and GEMMs follow
  // one another without a pause: each candidate runs back to back over enough copies of the
  // weight matrix to fill twice the L2 cache (their contents do not matter to the time), best
  // of a few rounds. Synchronises: plan time only.
  Expected<std::pair<std::size_t, float>> fastest(const Plan& plan,
                                                  const std::vector<cublasLtMatmulHeuristicResult_t>& lt_candidates,
                                                  const std::vector<Candidate>& candidates, cudaStream_t stream,
                                                  const GemmArgs& args, const std::string& what) {
    DeviceBuffer scratch, copies;
    const std::size_t bytes = static_cast<std::size_t>((args.batch - 1) * args.stride_d + (args.m - 1) * args.ldd +
                                                       args.n) *
                              dtype_size(args.d_type);
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&scratch.p, bytes));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(scratch.p, 0, bytes, stream));
    int dev = 0, l2 = 0;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    const std::size_t w_bytes =
        (static_cast<std::size_t>((args.batch - 1) * args.stride_b + (args.n - 1) * args.ldb + args.k) *
             dtype_size(args.b_type) +
         255) /
        256 * 256;
    const std::size_t n_copies = std::clamp<std::size_t>((2 * static_cast<std::size_t>(l2)) / w_bytes + 1, 2, 64);
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMalloc(&copies.p, n_copies * w_bytes));
    Event start, stop;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start.e));
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop.e));
    std::size_t best = 0;
    float best_ms = 0.0f;
    bool any = false;
    // The calls are captured into a graph on a private stream and the graph is timed: a GEMM
    // takes a few µs on the device, less than enqueueing it takes on the host.
    struct TimingStream {
      cudaStream_t s = nullptr;
      ~TimingStream() {
        if (s != nullptr) cudaStreamDestroy(s);
      }
    } ts;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&ts.s, cudaStreamNonBlocking));
    // The caller's earlier GEMMs share the workspace: they finish first.
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      GemmArgs a = args;
      // Once eagerly: a candidate that cannot run is left out before any capture.
      if (!run_candidate(plan, lt_candidates, candidates[i], ts.s, a, scratch.p)) continue;
      bool ok = true;
      cudaGraph_t graph = nullptr;
      if (cudaStreamBeginCapture(ts.s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) continue;
      for (std::size_t c = 0; c < n_copies && ok; ++c) {
        a.b = static_cast<const std::byte*>(copies.p) + c * w_bytes;
        ok = run_candidate(plan, lt_candidates, candidates[i], ts.s, a, scratch.p);
      }
      const cudaError_t end = cudaStreamEndCapture(ts.s, &graph);
      cudaGraphExec_t exec = nullptr;
      ok = ok && end == cudaSuccess && graph != nullptr && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
      float cand_ms = 0.0f;
      for (int round = 0; round < 4 && ok; ++round) {
        EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.e, ts.s));
        ok = cudaGraphLaunch(exec, ts.s) == cudaSuccess;
        EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.e, ts.s));
        EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.e));
        float ms = 0.0f;
        EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.e, stop.e));
        ms /= static_cast<float>(n_copies);
        if (round > 0 && (round == 1 || ms < cand_ms)) cand_ms = ms;  // round 0 warms up
      }
      if (exec != nullptr) cudaGraphExecDestroy(exec);
      if (graph != nullptr) cudaGraphDestroy(graph);
      if (!ok) continue;
      if (!any || cand_ms < best_ms) {
        best = i;
        best_ms = cand_ms;
        any = true;
      }
    }
    // A failed candidate may leave an error behind; none of them is kept.
    (void)cudaGetLastError();
    if (!any) return internal_error(what + ": no GEMM candidate ran");
    return std::make_pair(best, best_ms);
  }

  std::string key_text(const PlanKey& k, const EpilogueChoice& c) const {
    std::ostringstream o;
    o << k.m << ' ' << k.n << ' ' << k.k << ' ' << k.lda << ' ' << k.ldb << ' ' << k.ldd << ' '
      << static_cast<int>(k.a) << ' ' << static_cast<int>(k.b) << ' ' << static_cast<int>(k.d) << ' '
      << static_cast<int>(k.epilogue) << ' ' << k.bias << k.alpha_zero << k.beta_zero << k.bias_d << ' ' << k.align_a
      << ' ' << k.align_b << ' ' << k.align_d << ' ' << k.align_bias << ' ' << c.lt_bias << c.lt_gelu << c.bias_in_d;
    if (k.batch > 1) o << " batch " << k.batch << ' ' << k.stride_a << ' ' << k.stride_b << ' ' << k.stride_d;
    // A pick's index means another list where the near rows' candidates are offered.
    if (offers_near_rows(k)) o << " near";
    return o.str();
  }

  void load_plan_file() {
    const char* f = std::getenv("EDGEVLA_GEMM_PLAN_FILE");
    if (f == nullptr || *f == '\0') return;
    plan_file = f;
    int dev = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
      plan_prefix = std::string(prop.name) + " sm" + std::to_string(prop.major * 10 + prop.minor);
    }
    for (char& c : plan_prefix) c = c == ' ' ? '_' : c;
    plan_prefix += " cublasLt" + std::to_string(cublasLtGetVersion()) + " ";
    std::ifstream in(plan_file);
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t bar = line.find(" | ");
      if (bar == std::string::npos) continue;
      std::istringstream v(line.substr(bar + 3));
      int lt = -1, chunk = 0, wide = 0;
      float ms = -1.0f;
      if (v >> lt >> chunk) {
        if (!(v >> ms)) ms = -1.0f;  // lines of older files carry no time
        if (!(v >> wide)) wide = 0;  // nor the many-rows kernel
        stored_picks[line.substr(0, bar)] = StoredPick{lt, chunk, ms, wide};
      }
    }
  }

  // Builds the plan for `key`: cuBLASLt's own epilogue where `allowed` permits and it offers
  // an algorithm, else the post-GEMM bias_act. `time` picks the fastest candidate on the device
  // (a lone candidate is timed too when `need_ms`: k_parts compares plans by their times).
  Expected<std::unique_ptr<Plan>> make_plan(const PlanKey& key, EpilogueChoice allowed, cudaStream_t stream,
                                            const GemmArgs& args, bool time, const std::string& what,
                                            bool need_ms = false) {
    const bool gelu = key.epilogue == Epilogue::kGeluTanh;
    EpilogueChoice choice;
    choice.lt_bias = key.bias && allowed.lt_bias;
    choice.bias_in_d = choice.lt_bias && allowed.bias_in_d;
    // GELU follows the bias: cuBLASLt can only apply it when it applies the bias too.
    choice.lt_gelu = gelu && allowed.lt_gelu && (choice.lt_bias || !key.bias);
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto plan = std::make_unique<Plan>();
      std::vector<cublasLtMatmulHeuristicResult_t> candidates;
      EDGEVLA_RETURN_IF_ERROR(describe_plan(
          key, choice, choice.bias_in_d ? args.bias_d : static_cast<const void*>(args.bias), what, *plan,
          candidates));
      if (candidates.empty()) {
        if (choice.lt_bias || choice.lt_gelu) {
          choice = EpilogueChoice{};  // retry with the epilogue after the GEMM
          continue;
        }
        return invalid_argument(what + ": cuBLASLt offers no algorithm for this shape, strides and dtypes (" +
                                last_refusal + ")");
      }
      plan->lt_bias = choice.lt_bias;
      plan->lt_bias_in_d = choice.bias_in_d;
      plan->post_bias = key.bias && !choice.lt_bias;
      plan->post_gelu = gelu && !choice.lt_gelu;
      plan->algo = candidates[0].algo;
      plan->chosen = "cuBLASLt (heuristic's first)";
      if (!time) return plan;
      std::vector<Candidate> all;
      for (std::size_t i = 0; i < candidates.size(); ++i) all.push_back(Candidate{static_cast<int>(i), 0});
      for (const int kc : kSkinnyChunks) {
        if (skinny_chunk_distinct(args.k, kc) && skinny_fits(args, kc)) all.push_back(Candidate{-1, kc});
      }
      if (WideGemmArgs probe; wide_args(args, 0, args.d, probe)) {
        for (const int rows : kWideRowSizes) all.push_back(Candidate{-1, 0, rows});
      }
      if (all.size() < 2 && !need_ms) return plan;
      std::pair<std::size_t, float> pick{0, -1.0f};
      const std::string stored_key = plan_prefix + key_text(key, choice);
      bool from_file = false;
      if (auto st = stored_picks.find(stored_key); st != stored_picks.end()) {
        for (std::size_t i = 0; i < all.size(); ++i) {
          if (all[i].lt == st->second.lt && all[i].skinny_k_chunk == st->second.skinny_k_chunk &&
              all[i].wide_rows == st->second.wide_rows) {
            pick = {i, st->second.ms};
            from_file = true;
          }
        }
        // A pick stored without its time cannot be compared (k_parts): timed afresh.
        if (need_ms && pick.second < 0.0f) from_file = false;
      }
      if (!from_file) {
        EDGEVLA_ASSIGN_OR_RETURN(pick, fastest(*plan, candidates, all, stream, args, what));
        if (!plan_file.empty()) {
          std::ofstream out(plan_file, std::ios::app);
          out << stored_key << " | " << all[pick.first].lt << " " << all[pick.first].skinny_k_chunk << " "
              << pick.second << " " << all[pick.first].wide_rows << "\n";
        }
      }
      const Candidate& c = all[pick.first];
      plan->ms = pick.second;
      const std::string us = from_file ? std::string("from the plan file")
                                       : std::to_string(static_cast<int>(pick.second * 1000.0f + 0.5f)) + " us";
      if (c.skinny_k_chunk > 0) {
        plan->skinny_k_chunk = c.skinny_k_chunk;
        plan->post_bias = false;  // the skinny kernel adds the bias itself
        plan->chosen = "edgevla skinny k_chunk=" + std::to_string(c.skinny_k_chunk) + ", " + us;
      } else if (c.wide_rows > 0) {
        plan->wide_rows = c.wide_rows;
        plan->post_bias = plan->post_gelu = false;  // the many-rows kernel applies both itself
        plan->chosen = "edgevla wide rows=" + std::to_string(c.wide_rows) + ", " + us;
      } else {
        plan->algo = candidates[static_cast<std::size_t>(c.lt)].algo;
        plan->chosen = "cuBLASLt candidate " + std::to_string(c.lt) + " of " + std::to_string(candidates.size()) +
                       ", " + us;
      }
      return plan;
    }
    return invalid_argument(what + ": cuBLASLt offers no algorithm for this shape, strides and dtypes");
  }

  // The plan for `args` (validated, m, n > 0), made on first use outside capture.
  Expected<const Plan*> find_plan(cudaStream_t stream, const GemmArgs& args, bool need_ms) {
    const auto what = [&] { return describe(args); };
    const PlanKey key = key_of(args);
    auto it = plans.find(key);
    if (it != plans.end() && need_ms && it->second->ms < 0.0f) {
      plans.erase(it);  // planned untimed by gemm(); k_parts needs its time
      it = plans.end();
    }
    if (it == plans.end()) {
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
      if (capture != cudaStreamCaptureStatusNone) {
        return failed_precondition(what() +
                                   ": this shape has no plan yet and the stream is being captured; run the GEMM once "
                                   "before capturing (the warm-up pass plans every shape)");
      }
      // cuBLASLt reads an f32 bias of at least 16-byte alignment; less aligned ones go after.
      const bool bias_aligned = args.bias == nullptr || alignment_of(args.bias) >= 16;
      // A bf16 D: cuBLASLt takes the bias in bf16 (bias_d) where it refuses an f32 one.
      const bool low_d = args.d_type != DType::kF32;
      const bool use_bias_d = low_d && !lt_f32_bias_bf16_ok && args.bias_d != nullptr &&
                              alignment_of(args.bias_d) >= 16;
      const EpilogueChoice allowed{
          (bias_aligned && (!low_d || lt_f32_bias_bf16_ok)) || use_bias_d,
          lt_gelu_ok || (low_d && lt_gelu_bf16_ok && (args.bias == nullptr || use_bias_d)), use_bias_d};
      EDGEVLA_ASSIGN_OR_RETURN(auto plan, make_plan(key, allowed, stream, args, /*time=*/true, what(), need_ms));
      it = plans.emplace(key, std::move(plan)).first;
    }
    return static_cast<const Plan*>(it->second.get());
  }

  // Runs one small GEMM with A = B = 0, so D is the epilogue applied to the bias alone, and
  // compares it with `expect`. False when cuBLASLt refuses the combination or differs (gemm.cpp).
  Expected<bool> probe(DType d_type, Epilogue epilogue, const std::vector<float>& bias_host,
                       const std::vector<float>& expect, float tolerance, std::string& note,
                       bool bias_in_d = false);
};

}  // namespace edgevla::backends::cuda
