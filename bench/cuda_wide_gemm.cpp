// The vision towers' four GEMMs a layer (SigLIP 1152 wide, MLP 4352 on the device) at the row
// counts the engines run them (pi0.5: 256 patches a view; GR00T: 324), on cuBLASLt as the
// engines plan it and on the many-rows warpgroup GEMM (wide_gemm.hpp): at its plan's launch shape
// and at every row size it is built for (the residual projections also in k parts; the plan's
// row size and parts in every cluster of up to 8 blocks). cuBLASLt's bf16 outputs get their bias
// in bf16 as well, as the engines give it (run 56 call 3 ran without: its q|k|v and fc1 rows there
// include a separate bias kernel, ~3 µs). Each timed
// as calls back to back in one captured graph over weight copies that together exceed the L2 cache
// (cold weights, as in a forward pass of 27 layers). Prints one JSON line a measurement, with the
// rate in TFLOP/s and the rel-L2 of the wide GEMM's output against cuBLASLt's.
//
// --set llm times GR00T's LLM instead (Qwen, 2048 wide, SwiGLU 6144, 16 q and 8 kv heads of 128)
// at its one- and two-view rows (131, 212), every form also in k parts, beside a kernel that only
// reads the weight bytes (what a weight-bound GEMM at these rows could reach).
//
//   edgevla_bench_cuda_wide_gemm [--repeat 3] [--rows 648] [--shape fc1] [--set towers|llm]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cuda_bench_util.hpp"
#include "runtime/backends/cuda/kernels/gemm.hpp"
#include "runtime/backends/cuda/kernels/wide_gemm.hpp"
#include "runtime/core/dtype.hpp"

using namespace edgevla;
using namespace edgevla::backends::cuda;
using namespace edgevla::bench;

int main(int argc, char** argv) {
  int rounds = 3;
  std::int64_t only_rows = 0;
  std::string only_shape, set = "towers";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rows") == 0) only_rows = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--shape") == 0) only_shape = argv[i + 1];
    if (std::strcmp(argv[i], "--set") == 0) set = argv[i + 1];
  }
  const bool llm = set == "llm";
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (!wide_gemm_available()) {
    std::printf("{\"bench\": \"wide_gemm\", \"skipped\": \"needs compute capability 9.0 and an sm_90a build\"}\n");
    return 0;
  }
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Timer timer(s);
  auto blas = Blas::create();
  CHECK_OK(blas.status());

  struct Shape {
    const char* name;
    std::int64_t n, k;
    WideEpilogue epi;
  };
  const std::vector<Shape> tower_shapes = {{"qkv", 3456, 1152, WideEpilogue::kBias},
                                           {"o", 1152, 1152, WideEpilogue::kResidual},
                                           {"fc1", 4352, 1152, WideEpilogue::kGelu},
                                           {"fc2", 1152, 4352, WideEpilogue::kResidual}};
  const std::vector<Shape> llm_shapes = {{"llm_qkv", 4096, 2048, WideEpilogue::kBias},
                                         {"llm_o", 2048, 2048, WideEpilogue::kResidual},
                                         {"llm_gate_up", 12288, 2048, WideEpilogue::kBias},
                                         {"llm_down", 2048, 6144, WideEpilogue::kResidual}};
  const std::vector<Shape>& shapes = llm ? llm_shapes : tower_shapes;
  const std::vector<std::int64_t> row_counts =
      llm ? std::vector<std::int64_t>{131, 212} : std::vector<std::int64_t>{256, 324, 512, 648, 768};
  const int max_parts = 4;  // the kernel's most k parts
  unsigned* sink = nullptr;
  CHECK_CUDA(cudaMalloc(&sink, sizeof(unsigned)));
  double total_lt = 0.0, total_wide = 0.0;
  for (const std::int64_t m : row_counts) {
    if (only_rows > 0 && m != only_rows) continue;
    for (const Shape& sh : shapes) {
      if (!only_shape.empty() && only_shape != sh.name) continue;
      const bool f32 = sh.epi == WideEpilogue::kResidual;
      const DType d_type = f32 ? DType::kF32 : DType::kBF16;
      void* a = device_random_bf16(static_cast<std::size_t>(m * sh.k), 1);
      void* w = device_random_bf16(static_cast<std::size_t>(sh.n * sh.k), 2);
      const std::size_t w_bytes = static_cast<std::size_t>(sh.n * sh.k) * 2;
      const WeightCopies weight_copies = copy_weights(timer, w, w_bytes);
      const int copies = weight_copies.count;
      std::byte* wc = weight_copies.base;
      std::vector<float> bias_h(static_cast<std::size_t>(sh.n));
      for (std::size_t i = 0; i < bias_h.size(); ++i) bias_h[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
      float* bias = nullptr;
      CHECK_CUDA(cudaMalloc(&bias, bias_h.size() * 4));
      CHECK_CUDA(cudaMemcpy(bias, bias_h.data(), bias_h.size() * 4, cudaMemcpyHostToDevice));
      // The bias again in bf16, which cuBLASLt's bf16-output epilogue reads (as the engines give it:
      // without it the bias runs as a kernel of its own, ~3 µs more).
      std::vector<std::uint16_t> bias_bf16(bias_h.size());
      for (std::size_t i = 0; i < bias_h.size(); ++i) bias_bf16[i] = float_to_bfloat16(bias_h[i]);
      void* bias_d = nullptr;
      CHECK_CUDA(cudaMalloc(&bias_d, bias_bf16.size() * 2));
      CHECK_CUDA(cudaMemcpy(bias_d, bias_bf16.data(), bias_bf16.size() * 2, cudaMemcpyHostToDevice));
      const std::size_t d_bytes = static_cast<std::size_t>(m * sh.n) * dtype_size(d_type);
      void *d = nullptr, *ref_d = nullptr, *parts = nullptr;
      CHECK_CUDA(cudaMalloc(&d, d_bytes));
      CHECK_CUDA(cudaMalloc(&ref_d, d_bytes));
      CHECK_CUDA(cudaMalloc(&parts, static_cast<std::size_t>(max_parts * m * sh.n) * 4));
      const double flop = 2.0 * static_cast<double>(m * sh.n * sh.k);
      // cuBLASLt as the tower calls it: bias (+ GELU) into bf16, or beta 1 into the f32 stream.
      GemmArgs g;
      g.m = m, g.n = sh.n, g.k = sh.k, g.a = a, g.lda = sh.k, g.b = w, g.ldb = sh.k, g.d = d, g.d_type = d_type;
      g.ldd = sh.n, g.beta = f32 ? 1.0f : 0.0f, g.bias = bias, g.bias_d = f32 ? nullptr : bias_d;
      g.epilogue = sh.epi == WideEpilogue::kGelu ? Epilogue::kGeluTanh : Epilogue::kNone;
      const double lt_us = timer.per_call_us(copies, rounds, [&](int c) {
        GemmArgs gc = g;
        gc.b = wc + c * w_bytes;
        CHECK_OK((*blas)->gemm(s, gc));
      });
      // Reference outputs (beta 0 for the residual form: the product plus bias alone).
      GemmArgs g0 = g;
      g0.d = ref_d, g0.beta = 0.0f;
      CHECK_OK((*blas)->gemm(s, g0));
      CHECK_CUDA(cudaStreamSynchronize(s));
      const auto ref = download(ref_d, d_type, static_cast<std::size_t>(m * sh.n));
      std::printf("{\"bench\": \"wide_gemm\", \"device\": \"%s\", \"shape\": \"%s\", \"m\": %lld, \"n\": %lld, "
                  "\"k\": %lld, \"kernel\": \"cublaslt\", \"us\": %.2f, \"tflops\": %.0f}\n",
                  prop.name, sh.name, static_cast<long long>(m), static_cast<long long>(sh.n),
                  static_cast<long long>(sh.k), lt_us, flop / (lt_us * 1e6));
      // The weight bytes only read, back to back over the same copies.
      const double read_us = read_only_us(timer, weight_copies, w_bytes, rounds, sink);
      std::printf("{\"bench\": \"wide_gemm\", \"shape\": \"%s\", \"m\": %lld, \"kernel\": \"read_only\", "
                  "\"us\": %.2f, \"tbps\": %.2f, \"cublaslt_over_read\": %.2f}\n",
                  sh.name, static_cast<long long>(m), read_us, static_cast<double>(w_bytes) / (read_us * 1e6),
                  lt_us / read_us);
      // In the LLM set every form may take k parts (into f32 parts, as a diagnosis of the shape).
      const int shape_parts = f32 || llm ? max_parts : 1;
      const WidePlan plan = wide_gemm_plan(m, sh.n, sh.k, shape_parts, prop.multiProcessorCount);
      double plan_us = 0.0;
      // Each row size and part count without a cluster and with the plan's cluster for it; the
      // plan's row size and parts also with every other cluster of up to 8 blocks.
      struct Form {
        int rows, parts, cx, cz;
      };
      std::vector<Form> forms;
      for (const int rows : kWideRowSizes) {
        for (int p = 1; p <= shape_parts; ++p) {
          WidePlan c{rows, p};
          wide_gemm_cluster(c, m, sh.n, 4);
          forms.push_back({rows, p, 1, 1});
          if (c.cluster_x * c.cluster_z > 1) forms.push_back({rows, p, c.cluster_x, c.cluster_z});
        }
      }
      for (int cx = 1; cx <= 8; ++cx) {
        for (int cz = 1; cx * cz <= 8; ++cz) {
          if (sh.n / 128 % cx != 0 || (m + plan.rows - 1) / plan.rows % cz != 0) continue;
          if (cx * cz == 1 || (cx == plan.cluster_x && cz == plan.cluster_z)) continue;
          forms.push_back({plan.rows, plan.parts, cx, cz});
        }
      }
      for (const Form& f : forms) {
          const int rows = f.rows, p = f.parts;
          WideGemmArgs wg;
          wg.a = a, wg.m = m, wg.k = sh.k, wg.lda = sh.k, wg.w = w, wg.n = sh.n, wg.ldw = sh.k;
          wg.rows = rows, wg.cluster_x = f.cx, wg.cluster_z = f.cz;
          if (p > 1) {
            wg.epilogue = WideEpilogue::kF32Parts, wg.d = parts, wg.ldd = sh.n, wg.k_parts = p, wg.part_stride = m * sh.n;
          } else {
            wg.epilogue = sh.epi, wg.d = d, wg.ldd = sh.n, wg.bias = bias;
          }
          const double us = timer.per_call_us(copies, rounds, [&](int c) {
            WideGemmArgs wc_args = wg;
            wc_args.w = wc + c * w_bytes;
            CHECK_OK(wide_gemm(s, wc_args));
          });
          // Its output against cuBLASLt's: parts summed (plus the bias) on the host; the residual
          // form run once more into a zeroed stream.
          std::vector<float> got;
          if (p > 1) {
            CHECK_OK(wide_gemm(s, wg));
            CHECK_CUDA(cudaStreamSynchronize(s));
            const auto all = download(parts, DType::kF32, static_cast<std::size_t>(p * m * sh.n));
            got.assign(static_cast<std::size_t>(m * sh.n), 0.0f);
            for (int q = 0; q < p; ++q) {
              for (std::size_t i = 0; i < got.size(); ++i) got[i] += all[q * m * sh.n + static_cast<std::int64_t>(i)];
            }
            for (std::size_t i = 0; i < got.size(); ++i) got[i] += bias_h[i % static_cast<std::size_t>(sh.n)];
          } else {
            CHECK_CUDA(cudaMemsetAsync(d, 0, d_bytes, s));
            CHECK_OK(wide_gemm(s, wg));
            CHECK_CUDA(cudaStreamSynchronize(s));
            got = download(d, d_type, static_cast<std::size_t>(m * sh.n));
          }
          const bool planned = rows == plan.rows && p == plan.parts && f.cx == plan.cluster_x && f.cz == plan.cluster_z;
          if (planned) plan_us = us;
          const std::int64_t blocks = sh.n / 128 * ((m + rows - 1) / rows) * p;
          std::printf("{\"bench\": \"wide_gemm\", \"shape\": \"%s\", \"m\": %lld, \"kernel\": \"wide\", \"rows\": %d, "
                      "\"parts\": %d, \"cluster\": \"%dx%d\", \"blocks\": %lld, \"planned\": %s, \"us\": %.2f, "
                      "\"tflops\": %.0f, \"vs_cublaslt\": %.3f, \"rel_l2_vs_cublaslt\": %.2e}\n",
                      sh.name, static_cast<long long>(m), rows, p, f.cx, f.cz, static_cast<long long>(blocks),
                      planned ? "true" : "false", us, flop / (us * 1e6), lt_us / us, rel_l2(got, ref));
      }
      std::printf("{\"bench\": \"wide_gemm_summary\", \"shape\": \"%s\", \"m\": %lld, \"cublaslt_us\": %.2f, "
                  "\"wide_planned_us\": %.2f, \"speedup\": %.3f}\n",
                  sh.name, static_cast<long long>(m), lt_us, plan_us, lt_us / plan_us);
      if (m == 648) total_lt += lt_us, total_wide += plan_us;
      CHECK_CUDA(cudaFree(a));
      CHECK_CUDA(cudaFree(w));
      CHECK_CUDA(cudaFree(wc));
      CHECK_CUDA(cudaFree(bias));
      CHECK_CUDA(cudaFree(bias_d));
      CHECK_CUDA(cudaFree(d));
      CHECK_CUDA(cudaFree(ref_d));
      CHECK_CUDA(cudaFree(parts));
    }
  }
  CHECK_CUDA(cudaFree(sink));
  if (total_lt > 0.0) {
    std::printf("{\"bench\": \"wide_gemm_layer\", \"m\": 648, \"cublaslt_us\": %.2f, \"wide_planned_us\": %.2f, "
                "\"over_27_layers_ms_saved\": %.3f}\n",
                total_lt, total_wide, 27.0 * (total_lt - total_wide) / 1e3);
  }
  return 0;
}
