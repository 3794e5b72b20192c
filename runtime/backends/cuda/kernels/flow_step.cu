// The boundary between two Euler steps of a flow-matching action head (contract in kernels.hpp):
// the action output projection, the Euler update, the dtype rounding of the new actions and the
// next step's action input projection, one block per action row.
//
// A block keeps its row of y (f32, in shared memory), gives each warp every eighth output of
// the output projection (lanes stride the width, a warp sum each), updates the row's actions,
// then gives each thread outputs of the input projection (a dot over the action dims). The
// products are f32 sums of act-dtype operands, as the GEMMs they replace; only the order of the
// additions differs. V = 8 (16-byte loads of bf16, two of f32) when the widths are multiples of
// 8 and every pointer is 16-byte aligned, else 1. Inside a DependentLaunchScope it is chained to
// the final norm before it and the next step's first norm after it (launch.cuh).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime/backends/cuda/kernels/elementwise_common.cuh"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/kernels/launch.cuh"

namespace edgevla::backends::cuda {

using ew::from_f32;
using ew::load;
using ew::store;
using ew::to_f32;
using ew::negative;
using ew::null_pointer;

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxWidth = 8192;  // y row in shared memory (32 KB)
constexpr int kMaxActions = 256;

template <class T, class TN, int V>
__global__ void __launch_bounds__(kThreads) flow_step_kernel(FlowStepArgs a) {
  __shared__ float y_row[kMaxWidth];
  __shared__ float v_row[kMaxActions];
  __shared__ float x_row[kMaxActions];
  // In a chain (launch.cuh): the next step's first norm may be scheduled now; y comes from the
  // kernel ahead.
  chain_enter();
  const std::int64_t r = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const std::int64_t E = a.width, A = a.action_dim;
  const T* y = static_cast<const T*>(a.y) + r * a.ldy;
  for (std::int64_t c = tid; c < E / V; c += kThreads) {
    float v[V];
    load<V>(y + c * V, v);
#pragma unroll
    for (int j = 0; j < V; ++j) y_row[c * V + j] = v[j];
  }
  __syncthreads();
  // Output projection: warp w takes outputs w, w + 8, ..., four at a time so that the loads of
  // all four are in flight together.
  const T* w_out = static_cast<const T*>(a.w_out);
  for (std::int64_t o0 = warp; o0 < A; o0 += 4 * kWarps) {
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 4
    for (std::int64_t c = lane; c < E / V; c += 32) {
      float w[4][V];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const std::int64_t o = o0 + u * kWarps;
        if (o < A) {
          load<V>(w_out + o * a.ld_out + c * V, w[u]);
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) w[u][j] = 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
#pragma unroll
        for (int j = 0; j < V; ++j) s[u] = fmaf(w[u][j], y_row[c * V + j], s[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) s[u] += __shfl_xor_sync(0xffffffffu, s[u], d);
      const std::int64_t o = o0 + u * kWarps;
      if (lane == 0 && o < A) v_row[o] = s[u] + (a.b_out != nullptr ? a.b_out[o] : 0.0f);
    }
  }
  __syncthreads();
  // Euler update; the next projection reads the actions rounded to the act dtype, as the
  // conversion it replaces did.
  for (std::int64_t o = tid; o < A; o += kThreads) {
    const float v = v_row[o];
    const float x = a.x[r * A + o] + a.dt * v;
    a.x[r * A + o] = x;
    if (a.v_out != nullptr) a.v_out[r * A + o] = v;
    x_row[o] = to_f32(from_f32<T>(x));
  }
  if (a.w_in == nullptr) return;
  __syncthreads();
  const T* w_in = static_cast<const T*>(a.w_in);
  TN* next = static_cast<TN*>(a.next) + r * a.ld_next;
#pragma unroll 4
  for (std::int64_t n = tid; n < a.next_width; n += kThreads) {
    const T* wr = w_in + n * a.ld_in;
    float s = a.b_in != nullptr ? a.b_in[n] : 0.0f;
    for (std::int64_t c = 0; c < A / V; ++c) {
      float w[V];
      load<V>(wr + c * V, w);
#pragma unroll
      for (int j = 0; j < V; ++j) s = fmaf(w[j], x_row[c * V + j], s);
    }
    next[n] = from_f32<TN>(s);
  }
}

}  // namespace

Status flow_step(cudaStream_t stream, const FlowStepArgs& a) {
  constexpr const char* kName = "flow_step";
  EDGEVLA_CHECK_NONNEG(kName, a.rows);
  if (a.rows == 0) return Status::ok();
  if (a.rows > 0x7fffffff) return invalid_argument("flow_step: more than 2^31 - 1 rows; split the rows");
  if (a.width < 1 || a.width > kMaxWidth || a.action_dim < 1 || a.action_dim > kMaxActions) {
    return invalid_argument("flow_step: width " + std::to_string(a.width) + " and action_dim " +
                            std::to_string(a.action_dim) + " must be in [1, " + std::to_string(kMaxWidth) +
                            "] and [1, " + std::to_string(kMaxActions) + "]; use the GEMM and euler_step instead");
  }
  EDGEVLA_CHECK_PTR(kName, a.y);
  EDGEVLA_CHECK_PTR(kName, a.w_out);
  EDGEVLA_CHECK_PTR(kName, a.x);
  if (a.ldy < a.width || a.ld_out < a.width) return invalid_argument("flow_step: ldy and ld_out must be >= width");
  if (a.w_in != nullptr) {
    EDGEVLA_CHECK_PTR(kName, a.next);
    if (a.next_width < 1 || a.ld_in < a.action_dim || a.ld_next < a.next_width) {
      return invalid_argument("flow_step: next_width must be positive, ld_in >= action_dim, ld_next >= next_width");
    }
  }
  const bool vec = a.width % 8 == 0 && a.action_dim % 8 == 0 && a.ldy % 8 == 0 && a.ld_out % 8 == 0 &&
                   a.ld_in % 8 == 0 && ew::aligned16(a.y) && ew::aligned16(a.w_out) &&
                   (a.w_in == nullptr || ew::aligned16(a.w_in));
  return ew::with_act(a.act, kName, "act", [&](auto act_tag) -> Status {
    using T = typename decltype(act_tag)::type;
    return ew::with_act(a.w_in != nullptr ? a.next_type : DType::kF32, kName, "next", [&](auto next_tag) -> Status {
      using TN = typename decltype(next_tag)::type;
      const dim3 grid(static_cast<unsigned>(a.rows));
      if (vec) {
        launch(&flow_step_kernel<T, TN, 8>, grid, dim3(kThreads), 0, stream, a);
      } else {
        launch(&flow_step_kernel<T, TN, 1>, grid, dim3(kThreads), 0, stream, a);
      }
      return last_launch_status(kName);
    });
  });
}

}  // namespace edgevla::backends::cuda
