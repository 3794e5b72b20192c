// The cuda backend's kernels at the action expert's shapes (pi0.5 full size: 50 action rows,
// width 1024, MLP 4096, 8 query heads over one kv head of 256), against baselines in the same
// run: device-to-device copy bandwidth (what a weight stream could reach), a kernel that only reads
// the same weight bytes (the per-kernel floor: launch, fill and tail included), cuBLASLt alone,
// and edgevla's skinny kernel at each k per block. Attention is timed for each split of the keys.
// GEMMs run back to back over copies of their weights that together exceed the L2 cache (cold
// weights, launch gaps hidden, as inside a forward pass). Prints one JSON line per measurement.
//
//   edgevla_bench_cuda_kernels [--repeat 20] [--only gemm|backbone|attention|attention_shapes|mlp] [--shape NAME] [--k-chunk N]
//                              [--rows M]
// (--shape and --k-chunk narrow the GEMM part to one shape / one skinny share, and --shape the
// attention_shapes part to one shape (e.g. pi05_prefix_3view), for a profiler;
// --rows times every GEMM shape at M activation rows instead of its own, to see what the
// activations' reads cost beside the weights'; mlp: the heads' MLP halves as two GEMMs and as
// one kernel)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_bench_util.hpp"
#include "runtime/backends/cuda/kernels/attention.hpp"
#include "runtime/backends/cuda/kernels/chain_gemm.hpp"
#include "runtime/backends/cuda/kernels/gemm.hpp"
#include "runtime/backends/cuda/kernels/skinny_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"
#include "runtime/backends/cuda/kernels/wgmma_mlp.hpp"
#include "runtime/core/dtype.hpp"

using namespace edgevla;
using namespace edgevla::backends::cuda;
using namespace edgevla::bench;

namespace {

// µs a call of `args`, 18 calls captured in one graph (as the layers of a stage follow one
// another); the stream is idle after.
double attention_graph_us(cudaStream_t s, Timer& timer, int repeat, const AttentionArgs& args) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 18; ++i) CHECK_OK(attention(s, args));
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  const double us = timer.us(repeat, [&] { CHECK_CUDA(cudaGraphLaunch(exec, s)); }) / 18.0;
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  return us;
}

// The action heads' MLP halves, as two warpgroup GEMMs (kGelu or kGeglu into bf16 h, kF32Parts
// over h) and as one kernel (wgmma_mlp.hpp), each plain and chained (programmatic launches, as in
// the heads), on enough weight copies that every call reads from device memory; beside the
// weights' time at the copy rate. GR00T's DiT: 51 rows, 1536 → 6144 → GELU → 1536 in clusters of
// 12 (8 parts); pi0.5's expert: 50 rows, 1024 → gate|up 8192 → GeGLU 4096 → 1024 in clusters of 8
// (8 parts).
void mlp_half(cudaStream_t s, Timer& timer, double copy_gbps) {
  if (!wgmma_gemm_available()) return;
  struct MlpShape {
    const char* name;
    std::int64_t m, d, hidden, n_out;
    int cluster;
    bool geglu;
  };
  for (const MlpShape& sh : {MlpShape{"groot_ff1_ff2", 51, 1536, 6144, 1536, 12, false},
                             MlpShape{"pi05_gate_up_down", 50, 1024, 4096, 1024, 8, true}}) {
    const std::int64_t m = sh.m, d = sh.d, hidden = sh.hidden, n_out = sh.n_out, n1 = sh.geglu ? 2 * hidden : hidden;
    const WgmmaEpilogue epi1 = sh.geglu ? WgmmaEpilogue::kGeglu : WgmmaEpilogue::kGelu;
    const int parts = wgmma_mlp_parts(hidden, sh.cluster);
    const std::size_t w1_bytes = wgmma_tiled_bytes(n1, d), w2_bytes = wgmma_tiled_bytes(n_out, hidden);
    const int copies = static_cast<int>(std::clamp<std::size_t>(2 * timer.twice_l2 / (w1_bytes + w2_bytes) + 1, 2, 64));
    void* x = device_random_bf16(static_cast<std::size_t>(m * d), 7);
    void* w1 = device_random_bf16(static_cast<std::size_t>(n1 * d), 8);
    void* w2 = device_random_bf16(static_cast<std::size_t>(n_out * hidden), 9);
    std::byte *t1 = nullptr, *t2 = nullptr;
    void *h = nullptr, *out = nullptr;
    CHECK_CUDA(cudaMalloc(&t1, copies * w1_bytes));
    CHECK_CUDA(cudaMalloc(&t2, copies * w2_bytes));
    CHECK_CUDA(cudaMalloc(&h, static_cast<std::size_t>(m * hidden) * 2));
    CHECK_CUDA(cudaMalloc(&out, static_cast<std::size_t>(parts * m * n_out) * 4));
    for (int c = 0; c < copies; ++c) {
      CHECK_OK(wgmma_tile_weight(s, w1, n1, d, d, epi1, t1 + c * w1_bytes));
      CHECK_OK(wgmma_tile_weight(s, w2, n_out, hidden, hidden, WgmmaEpilogue::kF32Parts, t2 + c * w2_bytes));
    }
    auto pair = [&](int c) {
      WgmmaGemmArgs g1;
      g1.a = x, g1.m = m, g1.k = d, g1.lda = d, g1.w_tiled = t1 + c * w1_bytes, g1.n = n1;
      g1.epilogue = epi1, g1.d = h, g1.ldd = hidden;
      CHECK_OK(wgmma_gemm(s, g1));
      WgmmaGemmArgs g2;
      g2.a = h, g2.m = m, g2.k = hidden, g2.lda = hidden, g2.w_tiled = t2 + c * w2_bytes, g2.n = n_out;
      g2.epilogue = WgmmaEpilogue::kF32Parts, g2.d = out, g2.ldd = n_out, g2.k_parts = parts, g2.part_stride = m * n_out;
      CHECK_OK(wgmma_gemm(s, g2));
    };
    auto fused = [&](int c) {
      WgmmaMlpArgs a;
      a.x = x, a.m = m, a.d = d, a.ldx = d, a.w1_tiled = t1 + c * w1_bytes, a.hidden = hidden, a.geglu = sh.geglu;
      a.w2_tiled = t2 + c * w2_bytes, a.n_out = n_out, a.parts = static_cast<float*>(out), a.ldp = n_out;
      a.part_stride = m * n_out, a.cluster = sh.cluster;
      CHECK_OK(wgmma_mlp(s, a));
    };
    const double pair_us = timer.per_call_us(copies, 3, pair), fused_us = timer.per_call_us(copies, 3, fused);
    double pair_chained = 0, fused_chained = 0;
    {
      DependentLaunchScope scope(true);
      pair_chained = timer.per_call_us(copies, 3, pair);
      fused_chained = timer.per_call_us(copies, 3, fused);
    }
    const double floor_us = static_cast<double>(w1_bytes + w2_bytes) / (copy_gbps * 1e3);
    std::printf("{\"bench\": \"mlp_half\", \"shape\": \"%s\", \"cluster\": %d, \"resident_clusters\": %d, "
                "\"clusters\": %lld, \"pair_us\": %.2f, \"pair_chained_us\": %.2f, \"fused_us\": %.2f, "
                "\"fused_chained_us\": %.2f, \"weights_at_copy_rate_us\": %.2f}\n",
                sh.name, sh.cluster, wgmma_mlp_resident_clusters(m, d, hidden, n_out, sh.cluster, sh.geglu),
                static_cast<long long>(hidden / (64 * sh.cluster)), pair_us, pair_chained, fused_us, fused_chained,
                floor_us);
    for (void* q : {x, w1, w2, h, out, static_cast<void*>(t1), static_cast<void*>(t2)}) CHECK_CUDA(cudaFree(q));
  }
}

// The stages' other attention calls (the backbones' prefixes and vision towers, GR00T's DiT),
// each at every split count its scratch allows, beside the count the plan picks: one graph of
// 18 calls a measurement. Keys are one block (block a, the call's own or cached rows), or with
// `causal` block b as GR00T's LLM has it: the rows' own keys packed in token order, the first
// rows - a_valid rows padding (they see nothing), row r of the others its rank.
struct AttnShape {
  const char* name;
  std::int64_t batch, rows, heads, kv_heads, h, a_max, a_valid;  // a_valid < 0: no length on the device
  bool causal = false;
};

void attention_shapes(cudaStream_t s, Timer& timer, int repeat, const std::string& only_shape,
                      const std::string& only_split) {
  const AttnShape shapes[] = {
      {"pi05_prefix_1view", 1, 464, 8, 1, 256, 464, 456},   {"pi05_prefix_3view", 1, 976, 8, 1, 256, 976, 968},
      {"siglip_1view", 1, 256, 16, 16, 72, 256, -1},         {"siglip_3view", 3, 256, 16, 16, 72, 256, -1},
      {"groot_llm_1view", 1, 144, 16, 8, 128, 144, 131},     {"groot_llm_2view", 1, 224, 16, 8, 128, 224, 212},
      {"groot_dit_self", 1, 17, 32, 32, 48, 17, -1},         {"groot_dit_cross", 1, 17, 32, 32, 48, 144, 131},
      // GR00T's SigLIP 2 at 252 × 252 pixels, patch 14: 18 × 18 = 324 patches a view.
      {"groot_siglip_1view", 1, 324, 16, 16, 72, 324, -1},   {"groot_siglip_2view", 2, 324, 16, 16, 72, 324, -1},
      // GR00T's LLM as the engine calls it (131 / 212 real tokens in 144 / 224 rows).
      {"groot_llm_causal_1view", 1, 144, 16, 8, 128, 0, 131, true},
      {"groot_llm_causal_2view", 1, 224, 16, 8, 128, 0, 212, true},
  };
  for (const AttnShape& sh : shapes) {
    if (!only_shape.empty() && only_shape != sh.name) continue;
    const std::int64_t Q = (sh.heads + 2 * sh.kv_heads) * sh.h;
    const std::int64_t kv_rows = std::max(sh.rows, sh.a_max);
    void* qkv = device_random_bf16(static_cast<std::size_t>(sh.batch * kv_rows * Q), 5);
    void* out = nullptr;
    CHECK_CUDA(cudaMalloc(&out, static_cast<std::size_t>(sh.batch * sh.rows * sh.heads * sh.h) * 2));
    std::int32_t* a_len = nullptr;
    CHECK_CUDA(cudaMalloc(&a_len, 4));
    const std::int32_t valid = static_cast<std::int32_t>(sh.a_valid);
    CHECK_CUDA(cudaMemcpy(a_len, &valid, 4, cudaMemcpyHostToDevice));
    AttentionArgs aa{DType::kBF16, sh.batch, sh.rows, sh.heads, sh.kv_heads, sh.h,
                     1.0f / std::sqrt(static_cast<float>(sh.h))};
    aa.q = qkv, aa.ldq = Q, aa.q_batch = kv_rows * Q, aa.out = out, aa.ldo = sh.heads * sh.h;
    aa.o_batch = sh.rows * sh.heads * sh.h;
    auto* base = static_cast<std::byte*>(qkv);
    aa.a = KvBlock{base + sh.heads * sh.h * 2, base + (sh.heads + sh.kv_heads) * sh.h * 2, Q, kv_rows * Q};
    aa.a_max = sh.a_max;
    aa.a_len = sh.a_valid >= 0 ? a_len : nullptr;
    std::int32_t* limits = nullptr;
    double keys_seen = static_cast<double>(sh.a_valid >= 0 ? sh.a_valid : sh.a_max);  // a row's, on average
    if (sh.causal) {
      std::vector<std::int32_t> lim(static_cast<std::size_t>(sh.rows), 0);
      double sum = 0.0;
      for (std::int64_t r = sh.rows - sh.a_valid; r < sh.rows; ++r) {
        lim[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r - (sh.rows - sh.a_valid) + 1);
        sum += lim[static_cast<std::size_t>(r)];
      }
      keys_seen = sum / static_cast<double>(sh.rows);
      CHECK_CUDA(cudaMalloc(&limits, lim.size() * 4));
      CHECK_CUDA(cudaMemcpy(limits, lim.data(), lim.size() * 4, cudaMemcpyHostToDevice));
      aa.b = aa.a;
      aa.a = KvBlock{};
      aa.a_max = 0;
      aa.a_len = nullptr;
      aa.b_len = sh.rows;
      aa.b_limit = limits;
    }
    const std::size_t planned = attention_scratch_bytes(aa);
    const std::size_t split_bytes =
        static_cast<std::size_t>(sh.batch * sh.kv_heads * sh.rows * (sh.heads / sh.kv_heads) * (sh.h + 2)) * 4;
    const std::size_t most = split_bytes * 16;
    void* scratch = nullptr;
    CHECK_CUDA(cudaMalloc(&scratch, most));
    aa.scratch = scratch;
    std::vector<float> ref;
    // Every split of the 64-row blocks (0: the plan's own pick, with the scratch a stage
    // allocates); at head dim 256 also the wide 128-row blocks at their plan's pick (-1).
    // At head dim 256 (block a only) also the warpgroup kernel at its plan's pick and at 1-4 shares.
    // The warpgroup kernel with G = 1 or 2 warpgroups a block ("wgG" at its plan's pick, "wgGsN"
    // at N shares), and with rotated walks (AttentionArgs::rotate) attn_bf16 ("rot") and the
    // two-warpgroup kernel ("wgrot") at their plans' picks; "wgt..." the same with bulk tensor
    // copies (AttentionArgs::wg_tma).
    struct Ask {
      std::string label;  // for --split
      int splits;         // 0: the plan's pick
      bool wide;
      int wg;             // warpgroups a block; 0: attn_bf16
      bool rot = false;
      bool tma = false;   // the warpgroup kernel's K and V by bulk tensor copies
      bool narrow = false;  // 32-row blocks (AttentionArgs::narrow)
      int groups = 0;       // attn_bf16's key groups a block (AttentionArgs::key_groups); 0: the plan's
      int wg_narrow = 0;    // head dims 65-128 on the warpgroup kernel, warpgroups a block (AttentionArgs::wg_narrow)
      int roles = 0;        // ... with its copies from a producer warp (AttentionArgs::wg_roles; 2: turns)
      bool trim = false;    // ... q·kᵀ over 80 dims (AttentionArgs::wg_qk_trim)
    };
    std::vector<Ask> asks;
    for (const int n : {0, 1, 2, 3, 4, 6, 8, 12}) asks.push_back({n == 0 ? "plan" : std::to_string(n), n, false, 0});
    asks.push_back({"rot", 0, false, 0, true});
    asks.push_back({"narrow", 0, false, 0, false, false, true});
    asks.push_back({"narrow1", 1, false, 0, false, false, true});
    // One or two key groups a block at 1-3 shares ("g1s2": one group, two shares).
    for (const int groups : {1, 2}) {
      for (const int n : {1, 2, 3}) {
        asks.push_back({"g" + std::to_string(groups) + "s" + std::to_string(n), n, false, 0, false, false, false, groups});
      }
    }
    asks.push_back({"narrow_g2s1", 1, false, 0, false, false, true, 2});
    // Head dims 65-128 on the warpgroup kernel at head dim 128, one or two warpgroups a block, at
    // the plan's shares and at one ("wg128_2s1").
    if (sh.h > 64 && sh.h <= 128) {
      for (const int groups : {1, 2}) {
        for (const int n : {0, 1}) {
          const std::string label = "wg128_" + std::to_string(groups) + (n == 1 ? "s1" : "");
          asks.push_back({label, n, false, 0, false, false, false, 0, groups});
        }
        // The producer warp's form ("wg128r_2"), and with turns ("wg128p_2"), at the plan's shares.
        asks.push_back({"wg128r_" + std::to_string(groups), 0, false, 0, false, false, false, 0, groups, 1});
        if (groups == 2) asks.push_back({"wg128p_2", 0, false, 0, false, false, false, 0, groups, 2});
        // The same with q·kᵀ over 80 dims ("wg128pt_2", "wg128rt_1"), where the head has at most 80.
        if (sh.h <= 80) {
          asks.push_back({groups == 2 ? "wg128pt_2" : "wg128rt_1", 0, false, 0, false, false, false, 0, groups,
                          groups == 2 ? 2 : 1, true});
        }
      }
    }
    if (sh.h > 192) asks.push_back({"wide", 0, true, 0});
    if (sh.h == 256) {
      for (const int groups : {1, 2}) {
        const std::string g = "wg" + std::to_string(groups);
        for (const int n : {0, 1, 2, 4}) asks.push_back({n == 0 ? g : g + "s" + std::to_string(n), n, false, groups});
      }
      asks.push_back({"wgrot", 0, false, 2, true});
      // The same with K and V by bulk tensor copies ("wgtG", "wgtGsN", "wgtrot").
      for (const int groups : {1, 2}) {
        const std::string g = "wgt" + std::to_string(groups);
        for (const int n : {0, 2, 4}) asks.push_back({n == 0 ? g : g + "s" + std::to_string(n), n, false, groups, false, true});
      }
      asks.push_back({"wgtrot", 0, false, 2, true, true});
      // One warpgroup, bulk copies from a producer warp ("wgtr1", AttentionArgs::wg_roles).
      asks.push_back({"wgtr1", 0, false, 1, false, true, false, 0, 0, 1});
    }
    for (const Ask& ask : asks) {
      // --split plan | N | rot | narrow | narrow1 | wide | wgG | wgGsN | wgrot | wgtG | wgtGsN |
      // wgtrot: one launch form only (for a profiler).
      if (!only_split.empty() && only_split != ask.label) continue;
      AttentionArgs one = aa;
      one.wide_from = ask.wide ? 1 : 0;
      one.wg = ask.wg;
      one.rotate = ask.rot ? 1 : 0;
      one.wg_tma = ask.tma || ask.wg_narrow > 0 ? 1 : 0;  // head dims 65-128 take bulk copies only
      one.narrow = ask.narrow ? 1 : 0;
      one.key_groups = ask.groups;
      one.wg_narrow = ask.wg_narrow;
      one.wg_narrow_b = sh.causal && ask.wg_narrow > 0 ? 1 : 0;
      one.wg_roles = ask.roles;
      one.wg_qk_trim = ask.trim ? 1 : 0;
      const int splits = ask.splits;
      if (ask.wg == 0 && !ask.wide && ask.wg_narrow == 0) one.shares = splits;  // exactly that many where the scratch allows
      const std::size_t one_planned =
          ask.wide || ask.wg > 0 || ask.narrow || ask.wg_narrow > 0 ? attention_scratch_bytes(one) : planned;
      one.scratch_bytes = splits == 0 ? one_planned : splits == 1 ? 0 : split_bytes * static_cast<std::size_t>(splits);
      if (one.scratch_bytes > most) continue;
      if ((ask.wg > 0 || ask.wg_narrow > 0) && !attention_takes_warpgroup_kernel(one)) continue;
      if (ask.narrow && !attention_takes_narrow_blocks(one)) continue;
      const double us = attention_graph_us(s, timer, repeat, one);
      const auto got = download(out, DType::kBF16, static_cast<std::size_t>(sh.batch * sh.rows * sh.heads * sh.h));
      if (ref.empty()) ref = got;
      const std::string asked = ask.wide ? "wide plan" : ask.label;
      // q·kᵀ and p·v over the keys that count, two FLOPs a multiply-add: the tensor rate reached.
      const double flops = 4.0 * static_cast<double>(sh.batch * sh.heads * sh.rows * sh.h) * keys_seen;
      std::printf("{\"bench\": \"attention_shape\", \"shape\": \"%s\", \"splits_asked\": \"%s\", "
                  "\"planned_splits\": %zu, \"us_per_call_in_graph\": %.2f, \"tflops\": %.1f, "
                  "\"rel_l2_vs_planned\": %.2e}\n",
                  sh.name, asked.c_str(), one_planned == 0 ? std::size_t{1} : one_planned / split_bytes, us,
                  flops / (us * 1e6), rel_l2(got, ref));
    }
    CHECK_CUDA(cudaFree(qkv));
    CHECK_CUDA(cudaFree(out));
    CHECK_CUDA(cudaFree(a_len));
    CHECK_CUDA(cudaFree(limits));
    CHECK_CUDA(cudaFree(scratch));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 20;
  std::string only;  // "gemm" or "attention": one part (for a profiler)
  std::string only_shape;
  std::string only_split;
  int only_chunk = 0;
  std::int64_t rows = 0;  // 0: each shape's own
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rows") == 0) rows = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(3, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    if (std::strcmp(argv[i], "--shape") == 0) only_shape = argv[i + 1];
    if (std::strcmp(argv[i], "--split") == 0) only_split = argv[i + 1];
    if (std::strcmp(argv[i], "--k-chunk") == 0) only_chunk = std::atoi(argv[i + 1]);
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Timer timer(s);

  // Baseline: device-to-device copy of 256 MB (read + write traffic).
  const std::size_t copy_bytes = std::size_t{256} << 20;
  void *src = nullptr, *dst = nullptr;
  CHECK_CUDA(cudaMalloc(&src, copy_bytes));
  CHECK_CUDA(cudaMalloc(&dst, copy_bytes));
  const double copy_us =
      timer.us(repeat, [&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, s)); });
  const double copy_gbps = 2.0 * static_cast<double>(copy_bytes) / (copy_us * 1e3);
  std::printf("{\"bench\": \"copy\", \"device\": \"%s\", \"bytes\": %zu, \"us\": %.1f, \"gbps_read_plus_write\": %.0f}\n",
              prop.name, copy_bytes, copy_us, copy_gbps);
  CHECK_CUDA(cudaFree(src));
  CHECK_CUDA(cudaFree(dst));

  // GEMMs of one expert layer (pi0.5, 50 rows) and pi0's 51.
  struct Shape {
    const char* name;
    std::int64_t m, n, k;
    DType d;
    float beta;
  };
  const std::vector<Shape> head_shapes = {
      {"qkv", 50, 2560, 1024, DType::kBF16, 0.0f},     {"o", 50, 1024, 2048, DType::kF32, 0.0f},
      {"gate_up", 50, 8192, 1024, DType::kBF16, 0.0f}, {"down", 50, 1024, 4096, DType::kF32, 0.0f},
      {"o_pi0", 51, 1024, 2048, DType::kF32, 1.0f},    {"down_pi0", 51, 1024, 4096, DType::kF32, 1.0f},
      // GR00T N1.6's DiT (51 rows): the cross-attention q and ff1.
      {"groot_q", 51, 1536, 1536, DType::kBF16, 0.0f}, {"groot_ff1", 51, 6144, 1536, DType::kBF16, 0.0f},
  };
  // --only backbone: the vision towers' GEMMs at one view (256 patches; both families' SigLIP is
  // 1152 wide with an MLP of 4304, which the warpgroup GEMM takes padded to 4352 with zero weights)
  // and at three (768), where cuBLASLt runs at 160-300 TFLOP/s (run 42 call 3).
  const std::vector<Shape> backbone_shapes = {
      {"siglip_qkv", 256, 3456, 1152, DType::kBF16, 0.0f},   {"siglip_o", 256, 1152, 1152, DType::kF32, 0.0f},
      {"siglip_fc1", 256, 4304, 1152, DType::kBF16, 0.0f},   {"siglip_fc1_pad", 256, 4352, 1152, DType::kBF16, 0.0f},
      {"siglip_fc2", 256, 1152, 4304, DType::kF32, 0.0f},    {"siglip_fc2_pad", 256, 1152, 4352, DType::kF32, 0.0f},
      {"siglip_qkv_3v", 768, 3456, 1152, DType::kBF16, 0.0f}, {"siglip_o_3v", 768, 1152, 1152, DType::kF32, 0.0f},
      {"siglip_fc1_pad_3v", 768, 4352, 1152, DType::kBF16, 0.0f},
      {"siglip_fc2_pad_3v", 768, 1152, 4352, DType::kF32, 0.0f},
  };
  const std::vector<Shape>& shapes = only == "backbone" ? backbone_shapes : head_shapes;
  auto lt_only = Blas::create();
  auto mixed = Blas::create();
  CHECK_OK(lt_only.status());
  CHECK_OK(mixed.status());
  (*lt_only)->set_own_kernels(false);
  double layer_lt = 0, layer_best = 0, layer_floor = 0, layer_read = 0;
  unsigned* sink = nullptr;
  CHECK_CUDA(cudaMalloc(&sink, sizeof(unsigned)));
  for (Shape sh : shapes) {
    if (only == "attention" || only == "attention_shapes" || only == "mlp") break;
    if (!only_shape.empty() && only_shape != sh.name) continue;
    if (rows > 0) sh.m = rows;
    void* a = device_random_bf16(static_cast<std::size_t>(sh.m * sh.k), 1);
    void* w = device_random_bf16(static_cast<std::size_t>(sh.n * sh.k), 2);
    const std::size_t w_bytes = static_cast<std::size_t>(sh.n * sh.k) * 2;
    const WeightCopies weight_copies = copy_weights(timer, w, w_bytes);
    const int copies = weight_copies.count;
    std::byte* wc = weight_copies.base;
    void* d = nullptr;
    const std::size_t d_bytes = static_cast<std::size_t>(sh.m * sh.n) * dtype_size(sh.d);
    CHECK_CUDA(cudaMalloc(&d, d_bytes));
    CHECK_CUDA(cudaMemset(d, 0, d_bytes));
    GemmArgs g;
    g.m = sh.m, g.n = sh.n, g.k = sh.k, g.a = a, g.lda = sh.k, g.b = w, g.ldb = sh.k, g.d = d, g.d_type = sh.d;
    g.ldd = sh.n, g.beta = sh.beta;
    const double wbytes = static_cast<double>(sh.n * sh.k * 2);
    const double floor_us = wbytes / (copy_gbps * 1e3);
    const double lt_us = timer.per_call_us(copies, 3, [&](int c) {
      GemmArgs gc = g;
      gc.b = wc + c * w_bytes;
      CHECK_OK((*lt_only)->gemm(s, gc));
    });
    // The same bytes only read, back to back over the same copies.
    const double read_us = read_only_us(timer, weight_copies, w_bytes, 3, sink);
    // The reference result: cuBLASLt with beta 0 into a copy.
    GemmArgs g0 = g;
    void* ref_d = nullptr;
    CHECK_CUDA(cudaMalloc(&ref_d, d_bytes));
    g0.d = ref_d, g0.beta = 0.0f;
    CHECK_OK((*lt_only)->gemm(s, g0));
    CHECK_CUDA(cudaStreamSynchronize(s));
    const auto ref = download(ref_d, sh.d, static_cast<std::size_t>(sh.m * sh.n));
    double best = lt_us;
    std::string skinny_json;
    for (const int kc : kSkinnyChunks) {
      SkinnyGemmArgs sg;
      sg.m = sh.m, sg.n = sh.n, sg.k = sh.k, sg.a = a, sg.lda = sh.k, sg.w = w, sg.ldw = sh.k, sg.d = d;
      sg.d_type = sh.d, sg.ldd = sh.n, sg.beta = sh.beta, sg.k_chunk = kc;
      if ((only_chunk > 0 && kc != only_chunk) || !skinny_chunk_distinct(sh.k, kc) ||
          skinny_gemm_unsupported(sg) != nullptr) {
        continue;
      }
      const double us = timer.per_call_us(copies, 3, [&](int c) {
        SkinnyGemmArgs sc = sg;
        sc.w = wc + c * w_bytes;
        CHECK_OK(skinny_gemm(s, sc));
      });
      SkinnyGemmArgs s0 = sg;
      s0.d = ref_d, s0.beta = 0.0f;
      CHECK_OK(skinny_gemm(s, s0));
      CHECK_CUDA(cudaStreamSynchronize(s));
      const double err = rel_l2(download(ref_d, sh.d, ref.size()), ref);
      best = std::min(best, us);
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s{\"k_chunk\": %d, \"us\": %.2f, \"gbps\": %.0f, \"rel_l2_vs_cublaslt\": %.2e}",
                    skinny_json.empty() ? "" : ", ", kc, us, wbytes / (us * 1e3), err);
      skinny_json += buf;
    }
    (void)(*mixed)->gemm(s, g);
    const double mixed_us = timer.per_call_us(copies, 3, [&](int c) {
      GemmArgs gc = g;
      gc.b = wc + c * w_bytes;
      CHECK_OK((*mixed)->gemm(s, gc));
    });
    // The chained few-rows GEMM (chain_gemm.hpp) for the same shape, plain launches and chained
    // ones (each call a programmatic dependent of the one before: its weight copy overlaps the
    // previous call, as in the expert's chain of kernels).
    std::string chain_json = "null";
    {
      const int max_parts = sh.d == DType::kBF16 ? (std::strcmp(sh.name, "gate_up") == 0 ? 2 : 1) : 8;
      const ChainGemmShape cs = chain_gemm_plan(sh.m, sh.n, sh.k, prop.multiProcessorCount, max_parts);
      if (cs.parts > 0 && prop.major >= 9) {
        void* cd = nullptr;
        CHECK_CUDA(cudaMalloc(&cd, static_cast<std::size_t>(cs.parts * sh.m * sh.n) * 4));
        ChainGemmArgs cg;
        cg.m = sh.m, cg.n = sh.n, cg.k = sh.k, cg.a = a, cg.lda = sh.k, cg.w = w, cg.ldw = sh.k, cg.d = cd;
        cg.ldd = sh.n, cg.parts = cs.parts, cg.block_n = cs.block_n;
        auto run_chain = [&](int c) {
          ChainGemmArgs cc = cg;
          cc.w = wc + c * w_bytes;
          CHECK_OK(chain_gemm(s, cc));
        };
        const double plain_us = timer.per_call_us(copies, 3, run_chain);
        double chained_us = 0;
        {
          DependentLaunchScope scope(true);
          chained_us = timer.per_call_us(copies, 3, run_chain);
        }
        char buf[200];
        std::snprintf(buf, sizeof buf, "{\"block_n\": %d, \"parts\": %d, \"plain_us\": %.2f, \"chained_us\": %.2f}",
                      cs.block_n, cs.parts, plain_us, chained_us);
        chain_json = buf;
        CHECK_CUDA(cudaFree(cd));
      }
    }
    // The warpgroup GEMM (wgmma_gemm.hpp, compute capability 9.0) on tiled copies of the same
    // weights: bf16 outputs whole (gate|up also with its GeGLU), f32 outputs in 1-8 k parts.
    std::string wgmma_json = "null";
    if (wgmma_gemm_available() && sh.beta == 0.0f && wgmma_gemm_fits(sh.m, sh.n, sh.k, WgmmaEpilogue::kNone)) {
      std::byte* tc = nullptr;
      CHECK_CUDA(cudaMalloc(&tc, copies * w_bytes));
      const bool geglu = std::strcmp(sh.name, "gate_up") == 0;
      void* wd = nullptr;
      CHECK_CUDA(cudaMalloc(&wd, static_cast<std::size_t>(8 * sh.m * sh.n) * 4));
      auto time_form = [&](WgmmaEpilogue epi, int parts, int split = 1) {
        for (int c = 0; c < copies; ++c) CHECK_OK(wgmma_tile_weight(s, wc + c * w_bytes, sh.n, sh.k, sh.k, epi, tc + c * w_bytes));
        WgmmaGemmArgs wg;
        wg.a = a, wg.m = sh.m, wg.k = sh.k, wg.lda = sh.k, wg.n = sh.n, wg.epilogue = epi, wg.d = wd;
        wg.ldd = epi == WgmmaEpilogue::kGeglu ? sh.n / 2 : sh.n;
        wg.k_parts = parts, wg.part_stride = sh.m * sh.n;
        wg.k_split = split;
        return timer.per_call_us(copies, 3, [&](int c) {
          WgmmaGemmArgs wc2 = wg;
          wc2.w_tiled = tc + c * w_bytes;
          CHECK_OK(wgmma_gemm(s, wc2));
        });
      };
      char buf[600];
      if (sh.d == DType::kBF16) {
        const double plain = time_form(WgmmaEpilogue::kNone, 1);
        const double fused = geglu ? time_form(WgmmaEpilogue::kGeglu, 1) : 0.0;
        // k slices in a cluster (2-4).
        double split_us[3] = {0, 0, 0};
        // (k slices only up to 56 rows.)
        for (int sp = 2; sp <= 4; ++sp) {
          split_us[sp - 2] = sp <= sh.k / 64 && sh.m <= kWgmmaMaxRows ? time_form(WgmmaEpilogue::kNone, 1, sp) : 0.0;
        }
        // The vision towers' fc1 with its GELU in the epilogue, as cuBLASLt's fc1 runs in the engine.
        const double gelu = std::strstr(sh.name, "fc1") != nullptr ? time_form(WgmmaEpilogue::kGelu, 1) : 0.0;
        std::snprintf(buf, sizeof buf,
                      "{\"bf16_us\": %.2f, \"geglu_us\": %.2f, \"gelu_us\": %.2f, \"over_cublaslt\": %.3f, \"split_2_us\": %.2f, "
                      "\"split_3_us\": %.2f, \"split_4_us\": %.2f, \"planned_split\": %d}",
                      plain, fused, gelu, plain / lt_us, split_us[0], split_us[1], split_us[2],
                      wgmma_k_split(sh.n, sh.k, kWgmmaMaxSplit, prop.multiProcessorCount));
      } else {
        double us[4] = {0, 0, 0, 0};
        const int ps[4] = {1, 2, 4, 8};
        for (int i = 0; i < 4; ++i) us[i] = ps[i] <= sh.k / 64 ? time_form(WgmmaEpilogue::kF32Parts, ps[i]) : 0.0;
        std::snprintf(buf, sizeof buf,
                      "{\"parts_1_us\": %.2f, \"parts_2_us\": %.2f, \"parts_4_us\": %.2f, \"parts_8_us\": %.2f, "
                      "\"planned_parts\": %d}",
                      us[0], us[1], us[2], us[3], wgmma_k_parts(sh.n, sh.k, 8, prop.multiProcessorCount));
      }
      wgmma_json = buf;
      CHECK_CUDA(cudaFree(tc));
      CHECK_CUDA(cudaFree(wd));
    }
    std::printf("{\"bench\": \"gemm\", \"shape\": \"%s\", \"wgmma\": %s, \"chain\": %s, \"m\": %lld, \"n\": %lld, \"k\": %lld, \"d\": \"%s\", "
                "\"weight_floor_us\": %.2f, \"read_only_us\": %.2f, \"cublaslt_us\": %.2f, \"cublaslt_over_read\": %.2f, "
                "\"cublaslt_gbps\": %.0f, \"skinny\": [%s], \"blas_pick_us\": %.2f, \"best_over_cublaslt\": %.2f}\n",
                sh.name, wgmma_json.c_str(), chain_json.c_str(), static_cast<long long>(sh.m), static_cast<long long>(sh.n),
                static_cast<long long>(sh.k), dtype_name(sh.d).data(), floor_us, read_us, lt_us, lt_us / read_us,
                wbytes / (lt_us * 1e3), skinny_json.c_str(), mixed_us,
                lt_us / best);
    if (sh.m == 50) {
      layer_lt += lt_us;
      layer_best += mixed_us;
      layer_floor += floor_us;
      layer_read += read_us;
    }
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(wc));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFree(ref_d));
  }
  CHECK_CUDA(cudaFree(sink));
  std::printf("{\"bench\": \"gemm_layer\", \"weight_floor_us\": %.2f, \"read_only_us\": %.2f, \"cublaslt_us\": %.2f, "
              "\"blas_pick_us\": %.2f}\n",
              layer_floor, layer_read, layer_lt, layer_best);
  std::printf("{\"bench\": \"blas_plans\", \"report\": \"");
  for (const char c : (*mixed)->plan_report()) {
    if (c == '\n') std::printf("; ");
    else if (c != '"') std::putchar(c);
  }
  std::printf("\"}\n");

  // Attention: 50 action rows × 8 heads over one kv head of 256, a cache of 1024 rows holding
  // `valid` tokens, plus the 50 rows' own keys; each split count, 18 calls in one graph.
  if (only != "gemm" && only != "backbone" && only != "attention_shapes" && only != "mlp") {
    const std::int64_t rows = 50, H = 8, K = 1, h = 256, cache_rows = 1024, Q = (H + 2 * K) * h;
    void* qkv = device_random_bf16(static_cast<std::size_t>(rows * Q), 3);
    void* cache = device_random_bf16(static_cast<std::size_t>(2 * cache_rows * K * h), 4);
    void* out = nullptr;
    CHECK_CUDA(cudaMalloc(&out, static_cast<std::size_t>(rows * H * h) * 2));
    std::int32_t* a_len = nullptr;
    CHECK_CUDA(cudaMalloc(&a_len, 4));
    AttentionArgs aa{DType::kBF16, 1, rows, H, K, h, 1.0f / 16.0f};
    aa.q = qkv, aa.ldq = Q, aa.out = out, aa.ldo = H * h;
    aa.a = KvBlock{cache, static_cast<std::byte*>(cache) + cache_rows * K * h * 2, K * h, 0};
    aa.a_len = a_len, aa.a_max = cache_rows;
    aa.b = KvBlock{static_cast<std::byte*>(qkv) + H * h * 2, static_cast<std::byte*>(qkv) + (H + K) * h * 2, Q, 0};
    aa.b_len = rows;
    const std::size_t max_scratch = attention_scratch_bytes(aa);
    aa.scratch_bytes = max_scratch;
    void* scratch = nullptr;
    CHECK_CUDA(cudaMalloc(&scratch, std::max<std::size_t>(max_scratch, 16) * 4));
    aa.scratch = scratch;
    // Bytes of one split's partials (the plan's own unit): scratch for n splits is n of them.
    AttentionArgs one = aa;
    one.wg = 0;  // attn_bf16 at each split count; the warpgroup kernel's rows below
    const std::size_t split_bytes = static_cast<std::size_t>(rows * H * (h + 2)) * 4;
    for (const std::int32_t valid : {456, 968}) {
      CHECK_CUDA(cudaMemcpy(a_len, &valid, 4, cudaMemcpyHostToDevice));
      std::vector<float> ref;
      for (const int splits : {1, 2, 3, 4, 6, 8, 12, 17, 24, 32}) {
        one.scratch_bytes = splits == 1 ? 0 : split_bytes * static_cast<std::size_t>(splits);
        if (one.scratch_bytes > 4 * std::max<std::size_t>(max_scratch, 16)) continue;
        one.cluster = 0;  // partials in scratch, attn_combine
        const double us = attention_graph_us(s, timer, repeat, one);
        const auto got = download(out, DType::kBF16, static_cast<std::size_t>(rows * H * h));
        if (ref.empty()) ref = got;
        // The same shares merged inside clusters (AttentionArgs::cluster), where the device takes them.
        AttentionArgs clustered = one;
        clustered.cluster = 1;
        const bool merges = attention_merges_in_clusters(clustered);
        const double cluster_us = merges ? attention_graph_us(s, timer, repeat, clustered) : 0.0;
        const double cluster_l2 =
            merges ? rel_l2(download(out, DType::kBF16, static_cast<std::size_t>(rows * H * h)), got) : 0.0;
        std::printf("{\"bench\": \"attention\", \"valid_prefix\": %d, \"splits_asked\": %d, \"us_per_call_in_graph\": "
                    "%.2f, \"rel_l2_vs_unsplit\": %.2e, \"planned_default_scratch\": %zu, \"clusters_us\": %.2f, "
                    "\"clusters_rel_l2_vs_combine\": %.2e}\n",
                    valid, splits, us, rel_l2(got, ref), max_scratch / split_bytes, cluster_us, cluster_l2);
      }
      // The warpgroup kernel's bulk-copy form over both blocks (AttentionArgs::wg, wg_tma) with 1
      // or 2 warpgroups a block, at its plan's shares ("form": "wgt1" / "wgt2").
      for (const int groups : {1, 2}) {
        AttentionArgs w = aa;
        w.wg = groups, w.wg_tma = 1;
        w.scratch_bytes = attention_scratch_bytes(w);
        if (!attention_takes_warpgroup_kernel(w) || w.scratch_bytes > 4 * std::max<std::size_t>(max_scratch, 16)) continue;
        const double us = attention_graph_us(s, timer, repeat, w);
        const auto got = download(out, DType::kBF16, static_cast<std::size_t>(rows * H * h));
        std::printf("{\"bench\": \"attention\", \"valid_prefix\": %d, \"form\": \"wgt%d\", \"splits\": %zu, "
                    "\"us_per_call_in_graph\": %.2f, \"rel_l2_vs_unsplit\": %.2e}\n",
                    valid, groups, w.scratch_bytes / split_bytes, us, rel_l2(got, ref));
      }
    }
  }
  if (only.empty() || only == "attention_shapes") attention_shapes(s, timer, repeat, only_shape, only_split);
  if (only.empty() || only == "mlp") mlp_half(s, timer, copy_gbps);
  return 0;
}
