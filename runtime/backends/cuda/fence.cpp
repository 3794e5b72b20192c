#include "runtime/backends/cuda/fence.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {
namespace {

// Timed events kept for reuse, per device: destroying a timed event can block for as long as
// the device is busy (measured ~1 ms per chunk on the H200 while the next backbone ran), so
// fences and input waits take theirs from here and give them back. An event is given back only
// when nothing can wait on it any more (a stream that waits has already captured its state).
class EventPool {
 public:
  static EventPool& instance() {
    static EventPool* pool = new EventPool();  // never destroyed: events outlive static teardown
    return *pool;
  }
  Expected<cudaEvent_t> take(int index) {
    {
      std::lock_guard lock(mu_);
      auto& free = free_[index];
      if (!free.empty()) {
        cudaEvent_t e = free.back();
        free.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));  // timed: InputWait measures against it
    return e;
  }
  void give(int index, cudaEvent_t e) {
    std::lock_guard lock(mu_);
    free_[index].push_back(e);
  }

 private:
  std::mutex mu_;
  std::map<int, std::vector<cudaEvent_t>> free_;
};

}  // namespace

Expected<std::shared_ptr<CudaFence>> CudaFence::record(cudaStream_t stream, int index) {
  EDGEVLA_ASSIGN_OR_RETURN(cudaEvent_t event, EventPool::instance().take(index));
  std::shared_ptr<CudaFence> fence(new CudaFence(event, index));  // owns the event from here
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream));
  return fence;
}

CudaFence::~CudaFence() {
  if (event_ != nullptr) EventPool::instance().give(index_, event_);
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

bool fences_off() {
  static const bool off = [] {
    const char* v = std::getenv("EDGEVLA_CUDA_SYNC_OUTPUTS");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return off;
}

bool may_fence(const Tensor& output, int index) {
  return output.defined() && output.device() == Device::cuda(index) && !output.buffer()->shm().has_value() &&
         !fences_off();
}

Status fence_output(const Tensor& output, cudaStream_t stream, int index) {
  EDGEVLA_ASSIGN_OR_RETURN(auto fence, CudaFence::record(stream, index));
  output.buffer()->set_ready(std::move(fence));
  return Status::ok();
}

InputWait::~InputWait() {
  if (start_ != nullptr) EventPool::instance().give(index_, start_);
}

Expected<double> InputWait::waited_ms() const {
  double ms = 0;
  for (const auto& f : fences_) {
    float e = 0;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&e, start_, f->event()));
    ms = std::max(ms, static_cast<double>(e));
  }
  return ms;
}

Expected<InputWait> wait_for_inputs(const std::vector<const Tensor*>& inputs, cudaStream_t stream, int index) {
  InputWait w;
  for (const Tensor* t : inputs) {
    if (t == nullptr || !t->defined()) continue;
    const std::shared_ptr<ReadyFence>& fence = t->buffer()->ready();
    if (!fence) continue;
    auto* cuda = dynamic_cast<CudaFence*>(fence.get());
    if (cuda == nullptr) {
      EDGEVLA_RETURN_IF_ERROR(t->buffer()->wait_ready());
      continue;
    }
    if (w.start_ == nullptr) {
      EDGEVLA_ASSIGN_OR_RETURN(w.start_, EventPool::instance().take(index));
      w.index_ = index;
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(w.start_, stream));
    }
    if (Status s = fence->wait_on(stream); !s.is_ok()) {
      return s.with_context("cuda:" + std::to_string(index) + " waiting for the " + fence->device().to_string() +
                            " work that writes an input");
    }
    ++w.waits_;
    if (fence->device() == Device::cuda(index)) w.fences_.push_back(std::static_pointer_cast<CudaFence>(fence));
  }
  return w;
}

}  // namespace edgevla::backends::cuda
