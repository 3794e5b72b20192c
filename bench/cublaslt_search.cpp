// A probe of cuBLASLt beyond its heuristic: for each GEMM shape the engines run at few rows, every
// algorithm id cuBLASLt lists (cublasLtMatmulAlgoGetIds) in each tile, stage, split-k and cluster
// configuration it accepts (cublasLtMatmulAlgoCheck), timed the way Blas times its candidates (a
// CUDA graph of back-to-back calls over weight copies larger than L2). Prints, per shape, the
// heuristic's best and the fastest configurations found, one JSON line each.
//
// --layouts: instead, the heuristic's best (each of its results timed) for the same product in
// other operand layouts: the engines' (the weight as cuBLASLt's A, transposed: "tn"), the weight
// stored transposed ("nn"), and the operands swapped with a row-ordered D ("swap_rowd": the
// activations as A, so cuBLASLt's m is the few rows), and the engines' layout once more with the
// weights resident in L2 ("tn_warm": every call reads the same copy), what keeping a GEMM's
// weights in L2 across steps could give at most. One JSON line a shape.
//
//   edgevla_bench_cublaslt_search [--shape NAME] [--max-configs N] [--layouts]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CK(x)                                                                          \
  do {                                                                                 \
    const cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define LK(x)                                                                              \
  do {                                                                                     \
    const cublasStatus_t s_ = (x);                                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cublasLtGetStatusName(s_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

// rows: the activations' rows (the engines' m); out: output features; k: the reduction.
struct Shape {
  const char* name;
  int rows, out, k;
};

constexpr Shape kShapes[] = {
    {"groot_siglip_fc1", 324, 4304, 1152}, {"groot_siglip_fc2", 324, 1152, 4304},
    {"groot_siglip_qkv", 324, 3456, 1152}, {"groot_llm_gate_up", 144, 12288, 2048},
    {"groot_llm_down", 144, 2048, 6144},   {"groot_llm_qkv", 144, 4096, 2048},
    {"groot_dit_ff1", 51, 6144, 1536},     {"groot_dit_ff2", 51, 1536, 6144},
    {"pi05_expert_gate_up", 50, 8192, 1024}, {"pi05_expert_qkv", 50, 2560, 1024},
    {"pi05_expert_down", 50, 1024, 4096},  {"pi05_gemma_gate_up", 456, 32768, 2048},
    {"pi05_expert_o", 50, 1024, 2048},     {"groot_dit_qkv", 51, 4608, 1536},
    {"groot_dit_out", 51, 1536, 1536},
};

// How the product's operands are laid out (the --layouts mode; the search uses kTn).
enum class Layout { kTn, kNn, kSwapRowD };
const char* layout_name(Layout l) { return l == Layout::kTn ? "tn" : l == Layout::kNn ? "nn" : "swap_rowd"; }

struct Problem {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  void *w_copies = nullptr, *x = nullptr, *y = nullptr, *ws = nullptr;
  std::size_t w_bytes = 0, n_copies = 0, ws_bytes = 64u << 20;
  Shape s{};
  bool weight_is_a = true;  // which cuBLASLt operand walks the weight copies
  bool warm = false;        // every call reads copy 0: the weights stay in L2 (--layouts' tn_warm)
};

void make_problem(Problem& p, const Shape& s, int l2, Layout layout = Layout::kTn) {
  p.s = s;
  LK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  if (layout == Layout::kSwapRowD) {
    // D [rows, out] row-ordered = X [rows, k] . W: A = X (k x rows column-major, transposed),
    // B = W (k x out column-major).
    p.weight_is_a = false;
    LK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    LK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
    LK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, s.k, s.rows, s.k));
    LK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, s.k, s.out, s.k));
    LK(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_16BF, s.rows, s.out, s.out));
    const cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
    LK(cublasLtMatrixLayoutSetAttribute(p.d, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof(row)));
  } else {
    // D^T [out, rows] = W [out, k] . X^T [k, rows], column-major as the engines lay them out;
    // "nn": W stored [k, out] row-major, i.e. column-major out x k, not transposed.
    const cublasOperation_t ta = layout == Layout::kTn ? t : n;
    LK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    LK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
    if (layout == Layout::kTn) {
      LK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, s.k, s.out, s.k));
    } else {
      LK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, s.out, s.k, s.out));
    }
    LK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, s.k, s.rows, s.k));
    LK(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_16BF, s.out, s.rows, s.out));
  }
  p.w_bytes = (static_cast<std::size_t>(s.out) * s.k * 2 + 255) / 256 * 256;
  p.n_copies = std::clamp<std::size_t>(2 * static_cast<std::size_t>(l2) / p.w_bytes + 1, 2, 64);
  CK(cudaMalloc(&p.w_copies, p.n_copies * p.w_bytes));
  CK(cudaMemset(p.w_copies, 0, p.n_copies * p.w_bytes));
  CK(cudaMalloc(&p.x, static_cast<std::size_t>(s.rows) * s.k * 2));
  CK(cudaMemset(p.x, 0, static_cast<std::size_t>(s.rows) * s.k * 2));
  CK(cudaMalloc(&p.y, static_cast<std::size_t>(s.rows) * s.out * 2));
  CK(cudaMalloc(&p.ws, p.ws_bytes));
}

void free_problem(Problem& p) {
  cublasLtMatmulDescDestroy(p.desc);
  cublasLtMatrixLayoutDestroy(p.a);
  cublasLtMatrixLayoutDestroy(p.b);
  cublasLtMatrixLayoutDestroy(p.d);
  cudaFree(p.w_copies);
  cudaFree(p.x);
  cudaFree(p.y);
  cudaFree(p.ws);
}

// µs per call, best of three graph replays over the weight copies; negative when it does not run.
float time_algo(cublasLtHandle_t lt, Problem& p, const cublasLtMatmulAlgo_t& algo, cudaStream_t st) {
  const float one = 1.0f, zero = 0.0f;
  auto call = [&](std::size_t c) {
    const void* w = static_cast<char*>(p.w_copies) + (p.warm ? 0 : c) * p.w_bytes;
    return cublasLtMatmul(lt, p.desc, &one, p.weight_is_a ? w : p.x, p.a, p.weight_is_a ? p.x : w, p.b, &zero, p.y,
                          p.d, p.y, p.d, &algo, p.ws, p.ws_bytes, st);
  };
  if (call(0) != CUBLAS_STATUS_SUCCESS || cudaStreamSynchronize(st) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1.0f;
  }
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return -1.0f;
  bool ok = true;
  for (std::size_t c = 0; c < p.n_copies && ok; ++c) ok = call(c) == CUBLAS_STATUS_SUCCESS;
  if (cudaStreamEndCapture(st, &g) != cudaSuccess || !ok || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
    if (g != nullptr) cudaGraphDestroy(g);
    (void)cudaGetLastError();
    return -1.0f;
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int r = 0; r < 4; ++r) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0) best = std::min(best, ms * 1000.0f / static_cast<float>(p.n_copies));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return best;
}

template <typename T>
std::vector<T> cap_list(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  std::size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0) {
    return {};
  }
  std::vector<T> v(bytes / sizeof(T));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS) return {};
  return v;
}

struct Found {
  float us;
  int id, tile, stages, splitk, cluster;
};

// The heuristic's results for p, each timed: the best µs (negative: none ran) and how many.
float heuristic_best(cublasLtHandle_t lt, Problem& p, cudaStream_t st, int& returned) {
  cublasLtMatmulPreference_t pref = nullptr;
  LK(cublasLtMatmulPreferenceCreate(&pref));
  LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &p.ws_bytes,
                                          sizeof(p.ws_bytes)));
  std::vector<cublasLtMatmulHeuristicResult_t> heur(64);
  returned = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.d, p.d, pref, 64, heur.data(), &returned) !=
      CUBLAS_STATUS_SUCCESS) {
    returned = 0;
  }
  float best = -1.0f;
  for (int i = 0; i < returned; ++i) {
    const float us = time_algo(lt, p, heur[static_cast<std::size_t>(i)].algo, st);
    if (us > 0 && (best < 0 || us < best)) best = us;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return best;
}

void layouts(cublasLtHandle_t lt, cudaStream_t st, int l2, const std::string& only) {
  for (const Shape& s : kShapes) {
    if (!only.empty() && only != s.name) continue;
    std::printf("{\"shape\": \"%s\", \"rows\": %d, \"out\": %d, \"k\": %d", s.name, s.rows, s.out, s.k);
    for (Layout l : {Layout::kTn, Layout::kNn, Layout::kSwapRowD}) {
      Problem p;
      make_problem(p, s, l2, l);
      int returned = 0;
      const float us = heuristic_best(lt, p, st, returned);
      std::printf(", \"%s_us\": %.2f, \"%s_results\": %d", layout_name(l), us, layout_name(l), returned);
      if (l == Layout::kTn) {
        p.warm = true;
        std::printf(", \"tn_warm_us\": %.2f", heuristic_best(lt, p, st, returned));
      }
      free_problem(p);
    }
    std::printf("}\n");
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  int max_configs = 3000;
  bool layout_mode = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--layouts") == 0) layout_mode = true;
    if (i + 1 >= argc) continue;
    if (std::strcmp(argv[i], "--shape") == 0) only = argv[i + 1];
    if (std::strcmp(argv[i], "--max-configs") == 0) max_configs = std::atoi(argv[i + 1]);
  }
  int dev = 0, l2 = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  cublasLtHandle_t lt = nullptr;
  LK(cublasLtCreate(&lt));
  cudaStream_t st = nullptr;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (layout_mode) {
    layouts(lt, st, l2, only);
    cudaStreamDestroy(st);
    cublasLtDestroy(lt);
    return 0;
  }
  for (const Shape& s : kShapes) {
    if (!only.empty() && only != s.name) continue;
    Problem p;
    make_problem(p, s, l2);
    // The heuristic's list, as Blas asks for it.
    int returned = 0;
    const float heur_best = heuristic_best(lt, p, st, returned);
    // Every listed algorithm id and configuration.
    std::vector<int> ids(512);
    int n_ids = 0;
    LK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                static_cast<int>(ids.size()), ids.data(), &n_ids));
    std::vector<Found> found;
    int tried = 0, ran = 0;
    const int per_id = std::max(50, max_configs / std::max(1, n_ids));
    for (int ii = 0; ii < n_ids && tried < max_configs; ++ii) {
      const int tried_before = tried;
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                 CUDA_R_16BF, ids[static_cast<std::size_t>(ii)], &algo) != CUBLAS_STATUS_SUCCESS) {
        continue;
      }
      std::vector<int> tiles = cap_list<int>(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
      std::vector<int> stages = cap_list<int>(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
      if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
      stages.insert(stages.begin(), CUBLASLT_MATMUL_STAGES_UNDEFINED);  // cuBLASLt's own choice first
      int splitk_ok = 0;
      std::size_t w = 0;
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitk_ok, sizeof(splitk_ok), &w);
      std::vector<int> splits = {1};
      if (splitk_ok) splits.insert(splits.end(), {2, 3, 4, 6, 8});
      const int clusters[] = {CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
                              CUBLASLT_CLUSTER_SHAPE_1x2x1};
      for (int tile : tiles) {
        for (int stage : stages) {
          for (int split : splits) {
            for (int cluster : clusters) {
              if (tried >= max_configs || tried - tried_before >= per_id) break;
              cublasLtMatmulAlgo_t a = algo;
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile));
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof(stage));
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split));
              if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                       sizeof(cluster)) != CUBLAS_STATUS_SUCCESS &&
                  cluster != CUBLASLT_CLUSTER_SHAPE_AUTO) {
                continue;
              }
              cublasLtMatmulHeuristicResult_t check{};
              if (cublasLtMatmulAlgoCheck(lt, p.desc, p.a, p.b, p.d, p.d, &a, &check) != CUBLAS_STATUS_SUCCESS ||
                  check.workspaceSize > p.ws_bytes) {
                continue;
              }
              ++tried;
              const float us = time_algo(lt, p, a, st);
              if (us <= 0) continue;
              ++ran;
              found.push_back(Found{us, ids[static_cast<std::size_t>(ii)], tile, stage, split, cluster});
            }
          }
        }
      }
    }
    std::sort(found.begin(), found.end(), [](const Found& x, const Found& y) { return x.us < y.us; });
    std::printf("{\"shape\": \"%s\", \"rows\": %d, \"out\": %d, \"k\": %d, \"heuristic_results\": %d, "
                "\"heuristic_best_us\": %.2f, \"algo_ids\": %d, \"configs_valid\": %d, \"configs_ran\": %d, \"best\": [",
                s.name, s.rows, s.out, s.k, returned, heur_best, n_ids, tried, ran);
    for (std::size_t i = 0; i < std::min<std::size_t>(5, found.size()); ++i) {
      const Found& f = found[i];
      std::printf("%s{\"us\": %.2f, \"id\": %d, \"tile\": %d, \"stages\": %d, \"splitk\": %d, \"cluster\": %d}",
                  i ? ", " : "", f.us, f.id, f.tile, f.stages, f.splitk, f.cluster);
    }
    std::printf("]}\n");
    std::fflush(stdout);
    free_problem(p);
  }
  cudaStreamDestroy(st);
  cublasLtDestroy(lt);
  return 0;
}
