// Host side of the warpgroup GEMM's attention prologue (WgmmaAttnA in wgmma_gemm.hpp, the device
// code in wgmma_attn_a.cuh): which calls it takes.
#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/wgmma_attn_a.cuh"
#include "runtime/backends/cuda/kernels/wgmma_gemm.hpp"

namespace edgevla::backends::cuda {

using namespace wgmma;

std::string wgmma_attn_a_problem(std::int64_t m, std::int64_t k, int k_parts, WgmmaEpilogue epilogue,
                                 const WgmmaAttnA& at) {
  const std::int64_t kbs = k / kBk;
  if (epilogue != WgmmaEpilogue::kF32Parts) return "attention in the prologue feeds the f32 k parts only";
  if (m < 1 || m > kWgmmaMaxRows) return "attention in the prologue takes 1 to " + std::to_string(kWgmmaMaxRows) + " rows";
  if (at.head_dim < 8 || at.head_dim > kAttnMaxHeadDim || at.head_dim % 8 != 0) {
    return "attention in the prologue takes head dims of 8 to " + std::to_string(kAttnMaxHeadDim) + " (multiples of 8)";
  }
  if (k_parts < 1 || kbs % k_parts != 0 || kbs / k_parts > 8 || (kbs / k_parts * kBk) % at.head_dim != 0) {
    return "attention in the prologue needs k parts of equal width, whole heads and at most 8 k blocks each (" +
           std::to_string(k_parts) + " parts of k " + std::to_string(k) + ")";
  }
  if (m * 3 * (kbs / k_parts * kBk) * 2 > kAttnStageBytes) {
    return "attention in the prologue stages at most " + std::to_string(kAttnStageBytes) + " bytes of q, k and v a part";
  }
  if (at.ldq % 8 != 0 || at.q_col % 8 != 0 || at.k_col % 8 != 0 || at.v_col % 8 != 0 ||
      reinterpret_cast<std::uintptr_t>(at.qkv) % 16 != 0 || at.ldq < std::max({at.q_col, at.k_col, at.v_col}) + k) {
    return "attention in the prologue needs q, k and v 16-byte aligned inside rows of ldq";
  }
  return {};
}

int wgmma_attn_a_parts(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t head_dim, int max_parts,
                       int multiprocessors) {
  WgmmaAttnA probe;
  probe.head_dim = head_dim;
  probe.ldq = 3 * k;
  probe.k_col = k, probe.v_col = 2 * k;
  for (int parts = wgmma_k_parts(n, k, max_parts, multiprocessors); parts >= 1; --parts) {
    if (wgmma_attn_a_problem(m, k, parts, WgmmaEpilogue::kF32Parts, probe).empty()) return parts;
  }
  return 0;
}

}  // namespace edgevla::backends::cuda
