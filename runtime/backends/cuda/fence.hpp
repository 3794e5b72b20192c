// Ready fences of the cuda backend (runtime/core/buffer.hpp: ReadyFence): device work queued on
// a stream, attached to the buffer it writes, so readers wait for it — another stream on the
// device, the host with a synchronisation — instead of the producer waiting before it publishes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/core/buffer.hpp"
#include "runtime/core/tensor.hpp"

namespace edgevla::backends::cuda {

// A ReadyFence for work queued on a cuda stream: an event recorded there when made. wait()
// synchronises the host with it; wait_on(stream) has another stream of this process (any of its
// devices) wait for it on the device.
class CudaFence final : public ReadyFence {
 public:
  // Records the work queued so far on `stream` (device `index`).
  static Expected<std::shared_ptr<CudaFence>> record(cudaStream_t stream, int index);
  ~CudaFence() override;
  CudaFence(const CudaFence&) = delete;
  CudaFence& operator=(const CudaFence&) = delete;
  Device device() const override { return Device::cuda(index_); }
  Status wait() override;
  Status wait_on(void* stream) override;
  bool done() override;

 private:
  CudaFence(cudaEvent_t event, int index) : event_(event), index_(index) {}
  cudaEvent_t event_;
  int index_;
};

// Before an engine on device `index` reads its bound inputs on `stream`: each input still being
// written by queued device work (a fence on its buffer) is waited for — by `stream`, on the
// device, when it is cuda work; on the host otherwise. Counts the device-side waits in `waited`.
Status wait_for_inputs(const std::vector<const Tensor*>& inputs, cudaStream_t stream, int index,
                       std::uint64_t* waited = nullptr);

}  // namespace edgevla::backends::cuda
