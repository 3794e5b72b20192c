// The fused expert kernel's timing trace, read on the host (expert_fused.hpp).
#include <algorithm>
#include <cstdio>
#include <string>

#include "runtime/backends/cuda/kernels/expert_fused.hpp"

namespace edgevla::backends::cuda {

int fused_expert_trace_slots(const FusedExpertShape& s) { return kFusedPhasesPerLayer * s.layers + 2; }

std::string fused_expert_trace_report(const FusedExpertShape& s, int grid, const unsigned long long* trace) {
  static constexpr const char* kNames[kFusedPhasesPerLayer] = {"norm",    "qkv gemm",  "qkv sum+rope", "attention",
                                                          "combine", "o gemm",    "gated norm",   "gate|up gemm",
                                                          "geglu",   "down gemm"};
  const int stride = grid + 1;
  double work[kFusedPhasesPerLayer] = {}, release[kFusedPhasesPerLayer] = {}, spread[kFusedPhasesPerLayer] = {};
  for (int l = 0; l < s.layers; ++l) {
    for (int ph = 0; ph < kFusedPhasesPerLayer; ++ph) {
      const int b = 1 + l * kFusedPhasesPerLayer + ph;
      const unsigned long long start = trace[(b - 1) * stride + grid];
      unsigned long long first = ~0ull, last = 0;
      for (int i = 0; i < grid; ++i) {
        first = std::min(first, trace[b * stride + i]);
        last = std::max(last, trace[b * stride + i]);
      }
      work[ph] += static_cast<double>(last - start) / 1e3;
      spread[ph] += static_cast<double>(last - first) / 1e3;
      release[ph] += static_cast<double>(trace[b * stride + grid] - last) / 1e3;
    }
  }
  std::string out = "fused expert step, us per layer (slowest block's phase | arrival spread | barrier release):";
  double total = 0;
  for (int ph = 0; ph < kFusedPhasesPerLayer; ++ph) {
    char line[160];
    std::snprintf(line, sizeof(line), " %s %.2f|%.2f|%.2f;", kNames[ph], work[ph] / s.layers, spread[ph] / s.layers,
                  release[ph] / s.layers);
    out += line;
    total += (work[ph] + release[ph]) / s.layers;
  }
  const int last = kFusedPhasesPerLayer * s.layers + 1;
  unsigned long long end = 0;
  for (int i = 0; i < grid; ++i) end = std::max(end, trace[last * stride + i]);
  char tail[120];
  std::snprintf(tail, sizeof(tail), " sum %.2f us per layer; step %.1f us", total,
                static_cast<double>(end - trace[grid]) / 1e3);
  return out + tail;
}

}  // namespace edgevla::backends::cuda
