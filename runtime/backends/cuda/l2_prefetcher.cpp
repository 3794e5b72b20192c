#include "runtime/backends/cuda/l2_prefetcher.hpp"

namespace edgevla::backends::cuda {

Expected<std::unique_ptr<L2Prefetcher>> L2Prefetcher::create() {
  std::unique_ptr<L2Prefetcher> p(new L2Prefetcher());
  EDGEVLA_ASSIGN_OR_RETURN(p->side_, Stream::create());
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&p->fork_, cudaEventDisableTiming));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&p->join_, cudaEventDisableTiming));
  return p;
}

L2Prefetcher::~L2Prefetcher() {
  if (fork_ != nullptr) cudaEventDestroy(fork_);
  if (join_ != nullptr) cudaEventDestroy(join_);
}

Status L2Prefetcher::fork(cudaStream_t main, const L2Ranges& ranges) const {
  if (ranges.count == 0) return Status::ok();
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(fork_, main));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(side_.get(), fork_, 0));
  open_ = true;
  return l2_prefetch(side_.get(), ranges);
}

Status L2Prefetcher::join(cudaStream_t main) const {
  if (!open_) return Status::ok();
  open_ = false;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(join_, side_.get()));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(main, join_, 0));
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
