// What one hand-over between two chained kernels costs, and what it would cost if the next kernel
// waited on counters its predecessor's blocks increment instead of the predecessor's completion.
//
// A graph runs `hops` kernels back to back, each of G blocks (128 threads). Block b of hop h reads
// what hop h - 1 wrote, adds one, writes its own value; the last hop's values must equal `hops`
// (checked: a wait that let a block read before its predecessor's write would leave less). Each
// block may also stream S KB of constant "weights" from a buffer larger than twice the L2 before
// it waits, as the warpgroup GEMM streams its first stages before the chain's wait (run 41 found
// the memory system's load to change how long exchanges take). Wait forms:
//   plain      ordinary launches (the graph's own edges);
//   grid       programmatic dependent launch, griddepcontrol.wait (the heads' chain today);
//   flag_all   programmatic dependent launch, no griddepcontrol.wait: one thread polls a counter
//              that each block of hop h - 1 increments (release) after its write, until all G
//              have, then the block reads (acquire);
//   flag_one   the same, block b waiting only for block b of hop h - 1 (a consumer that needs one
//              producer tile: the dataflow a layer's kernels could use where a tile reads few).
// One JSON line per (form, G, S): µs per hop, best of rounds.
//
//   edgevla_bench_cuda_edges [--hops 200] [--rounds 5]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cuda_bench_util.hpp"
#include "runtime/backends/cuda/kernels/launch.cuh"
#include "runtime/backends/cuda/kernels/ptx.cuh"

using namespace edgevla;
using namespace edgevla::backends::cuda;
using namespace edgevla::bench;

namespace {

enum class Wait { kPlain, kGrid, kFlagAll, kFlagOne };
const char* name(Wait w) {
  switch (w) {
    case Wait::kPlain: return "plain";
    case Wait::kGrid: return "grid";
    case Wait::kFlagAll: return "flag_all";
    case Wait::kFlagOne: return "flag_one";
  }
  return "?";
}

constexpr int kThreads = 128;

struct Hop {
  const float* in;           // hop h - 1's values [G] (nullptr for the first hop)
  float* out;                // this hop's [G]
  const unsigned* wait_on;   // flag forms: hop h - 1's counter(s), or nullptr
  unsigned* done;            // flag forms: this hop's counter(s)
  const uint4* weights;      // S KB a block, streamed before the wait
  int vecs;                  // uint4 a block to stream
  int g;
  Wait wait;
  float* sink;               // keeps the streamed loads alive
};

__global__ void __launch_bounds__(kThreads) hop_kernel(const Hop a) {
  chain_release();
  unsigned x = 0;
  const uint4* w = a.weights + static_cast<long long>(blockIdx.x) * a.vecs;
  for (int i = static_cast<int>(threadIdx.x); i < a.vecs; i += kThreads) {
    const uint4 v = __ldg(w + i);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (a.wait == Wait::kGrid) chain_wait();
  if ((a.wait == Wait::kFlagAll || a.wait == Wait::kFlagOne) && a.wait_on != nullptr) {
    if (threadIdx.x == 0) {
      const unsigned* c = a.wait == Wait::kFlagAll ? a.wait_on : a.wait_on + blockIdx.x;
      const unsigned target = a.wait == Wait::kFlagAll ? static_cast<unsigned>(a.g) : 1u;
      while (ptx::ld_acquire(c) < target) __nanosleep(20);
    }
    __syncthreads();
  }
  float v = 0.0f;
  if (a.in != nullptr) {
    if (a.wait == Wait::kFlagOne) {
      v = a.in[blockIdx.x];
    } else {
      __shared__ float s_max[kThreads / 32];
      for (int j = static_cast<int>(threadIdx.x); j < a.g; j += kThreads) v = fmaxf(v, a.in[j]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
      if (threadIdx.x % 32 == 0) s_max[threadIdx.x / 32] = v;
      __syncthreads();
      for (int i = 0; i < kThreads / 32; ++i) v = fmaxf(v, s_max[i]);
    }
  }
  if (threadIdx.x == 0) {
    a.out[blockIdx.x] = v + 1.0f;
    if (a.done != nullptr) {
      __threadfence();
      atomicAdd(a.wait == Wait::kFlagAll ? a.done : a.done + blockIdx.x, 1u);
    }
  }
  if (x == 0x9e3779b9u) a.sink[blockIdx.x] = static_cast<float>(x);  // never in practice
}

}  // namespace

int main(int argc, char** argv) {
  int hops = 200, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--hops") == 0) hops = std::max(2, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  if (!dependent_launch_supported()) {
    std::fprintf(stderr, "edgevla_bench_cuda_edges: needs programmatic dependent launch (compute capability 9.0+)\n");
    return 77;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Timer timer(s);
  const int max_g = 128;
  const std::size_t weight_bytes = std::max<std::size_t>(timer.twice_l2 * 2, 256u << 20);
  uint4* weights = nullptr;
  float *values = nullptr, *sink = nullptr;
  unsigned* counters = nullptr;
  CHECK_CUDA(cudaMalloc(&weights, weight_bytes));
  CHECK_CUDA(cudaMemset(weights, 1, weight_bytes));
  CHECK_CUDA(cudaMalloc(&values, static_cast<std::size_t>(hops) * max_g * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&counters, static_cast<std::size_t>(hops) * max_g * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&sink, max_g * sizeof(float)));
  const std::size_t weight_vecs = weight_bytes / sizeof(uint4);

  for (const int stream_kb : {0, 32}) {
    for (const int g : {16, 64, 128}) {
      for (const Wait wait : {Wait::kPlain, Wait::kGrid, Wait::kFlagAll, Wait::kFlagOne}) {
        const int vecs = stream_kb * 1024 / static_cast<int>(sizeof(uint4));
        const bool flags = wait == Wait::kFlagAll || wait == Wait::kFlagOne;
        auto enqueue = [&] {
          CHECK_CUDA(cudaMemsetAsync(values, 0, static_cast<std::size_t>(hops) * max_g * sizeof(float), s));
          CHECK_CUDA(cudaMemsetAsync(counters, 0, static_cast<std::size_t>(hops) * max_g * sizeof(unsigned), s));
          const DependentLaunchScope chained(wait != Wait::kPlain);
          std::size_t offset = 0;
          for (int h = 0; h < hops; ++h) {
            if (offset + static_cast<std::size_t>(g) * vecs > weight_vecs) offset = 0;
            Hop a{h > 0 ? values + (h - 1) * max_g : nullptr,
                  values + h * max_g,
                  flags && h > 0 ? counters + (h - 1) * max_g : nullptr,
                  flags ? counters + h * max_g : nullptr,
                  weights + offset,
                  vecs,
                  g,
                  wait,
                  sink};
            offset += static_cast<std::size_t>(g) * vecs;
            launch(hop_kernel, dim3(static_cast<unsigned>(g)), dim3(kThreads), 0, s, a);
          }
          CHECK_OK(last_launch_status("hop_kernel"));
        };
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        enqueue();
        CHECK_CUDA(cudaStreamEndCapture(s, &graph));
        CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        std::vector<double> us;
        for (int r = 0; r <= rounds; ++r) {
          CHECK_CUDA(cudaEventRecord(timer.a, s));
          CHECK_CUDA(cudaGraphLaunch(exec, s));
          CHECK_CUDA(cudaEventRecord(timer.b, s));
          CHECK_CUDA(cudaEventSynchronize(timer.b));
          float ms = 0.0f;
          CHECK_CUDA(cudaEventElapsedTime(&ms, timer.a, timer.b));
          if (r > 0) us.push_back(1000.0 * ms / hops);
        }
        std::vector<float> last(static_cast<std::size_t>(g));
        CHECK_CUDA(cudaMemcpy(last.data(), values + static_cast<std::size_t>(hops - 1) * max_g, g * sizeof(float),
                              cudaMemcpyDeviceToHost));
        int wrong = 0;
        for (const float x : last) wrong += x != static_cast<float>(hops);
        std::printf("{\"bench\": \"edges\", \"device\": \"%s\", \"wait\": \"%s\", \"blocks\": %d, \"stream_kb\": %d, "
                    "\"hops\": %d, \"us_per_hop\": %.3f, \"us_per_hop_median\": %.3f, \"wrong_values\": %d}\n",
                    prop.name, name(wait), g, stream_kb, hops, *std::min_element(us.begin(), us.end()), median(us),
                    wrong);
        std::fflush(stdout);
        CHECK_CUDA(cudaGraphExecDestroy(exec));
        CHECK_CUDA(cudaGraphDestroy(graph));
      }
    }
  }
  CHECK_CUDA(cudaFree(weights));
  CHECK_CUDA(cudaFree(values));
  CHECK_CUDA(cudaFree(counters));
  CHECK_CUDA(cudaFree(sink));
  return 0;
}
