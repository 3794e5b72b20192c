// Weights read into L2 beside the kernels that run before them: a side stream forked off an
// engine's stream at a point of its pass asks for byte ranges (kernels/l2_prefetch.hpp) while
// the engine's next kernels run, and is joined back once at the end of the pass. Inside a
// captured graph each fork is a branch of one small node off the critical path.
//
// For the vision towers' GEMMs at a few hundred rows (compute-bound, with weights of 2.6-10 MB
// a GEMM that fit L2 several times over): each reads weights that the previous kernels could have
// brought in while the memory bus idled under attention, norms and the compute-bound GEMM before.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "runtime/backends/cuda/device.hpp"
#include "runtime/backends/cuda/kernels/l2_prefetch.hpp"

namespace edgevla::backends::cuda {

class L2Prefetcher {
 public:
  static Expected<std::unique_ptr<L2Prefetcher>> create();
  ~L2Prefetcher();
  L2Prefetcher(const L2Prefetcher&) = delete;
  L2Prefetcher& operator=(const L2Prefetcher&) = delete;

  // After what `main` has enqueued so far, asks for `ranges` on the side stream (which then runs
  // beside main's next kernels).
  Status fork(cudaStream_t main, const L2Ranges& ranges) const;
  // `main` waits for the side stream (whose requests end as soon as they are issued): once after
  // the last fork of a pass, before its capture ends. Nothing when nothing was forked since the
  // last join.
  Status join(cudaStream_t main) const;

 private:
  L2Prefetcher() = default;
  Stream side_;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  mutable bool open_ = false;  // forked since the last join
};

}  // namespace edgevla::backends::cuda
