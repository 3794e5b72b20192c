#include "runtime/backends/cuda/fence.hpp"

#include <string>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

Expected<std::shared_ptr<CudaFence>> CudaFence::record(cudaStream_t stream, int index) {
  cudaEvent_t event = nullptr;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  std::shared_ptr<CudaFence> fence(new CudaFence(event, index));  // owns the event from here
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
  return fence;
}

CudaFence::~CudaFence() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

Status CudaFence::wait() {
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
  return Status::ok();
}

Status CudaFence::wait_on(void* stream) {
  // A stream of any device of this process may wait for an event of another on the device.
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), event_, 0));
  return Status::ok();
}

bool CudaFence::done() { return cudaEventQuery(event_) == cudaSuccess; }

Status wait_for_inputs(const std::vector<const Tensor*>& inputs, cudaStream_t stream, int index,
                       std::uint64_t* waited) {
  for (const Tensor* t : inputs) {
    if (t == nullptr || !t->defined()) continue;
    const std::shared_ptr<ReadyFence>& fence = t->buffer()->ready();
    if (!fence) continue;
    if (fence->device().type == DeviceType::kCuda) {
      if (Status s = fence->wait_on(stream); !s.is_ok()) {
        return s.with_context("cuda:" + std::to_string(index) + " waiting for the " + fence->device().to_string() +
                              " work that writes an input");
      }
      if (waited != nullptr) ++*waited;
    } else {
      EDGEVLA_RETURN_IF_ERROR(t->buffer()->wait_ready());
    }
  }
  return Status::ok();
}

}  // namespace edgevla::backends::cuda
