#include "runtime/backends/cuda/fence.hpp"

#include <cuda.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/backends/cuda/kernels/common.hpp"
#include "runtime/util/clock.hpp"

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
  // `sleeping`: an event whose waiters sleep instead of spinning (no timing).
  Expected<cudaEvent_t> take(int index, bool sleeping = false) {
    {
      std::lock_guard lock(mu_);
      auto& free = free_[{index, sleeping}];
      if (!free.empty()) {
        cudaEvent_t e = free.back();
        free.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    if (sleeping) {
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventBlockingSync | cudaEventDisableTiming));
    } else {
      EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));  // timed: InputWait measures against it
    }
    return e;
  }
  void give(int index, cudaEvent_t e, bool sleeping = false) {
    std::lock_guard lock(mu_);
    free_[{index, sleeping}].push_back(e);
  }

 private:
  std::mutex mu_;
  std::map<std::pair<int, bool>, std::vector<cudaEvent_t>> free_;
};

// Tells other processes that armed blocks are written (RemoteReady::signal) once the fences on
// them are done: one thread per process waits on the fences in the order they were queued. It
// keeps each buffer alive until signalled (so the block is not recycled meanwhile), exits after a
// second without work and starts again with the next one.
class RemoteSignaller {
 public:
  static RemoteSignaller& instance() {
    static RemoteSignaller* s = new RemoteSignaller();  // never destroyed: its thread may outlive statics
    return *s;
  }
  // `sleeper` (optional): an event of device `index` recorded after the fence, waited for without
  // spinning, when the device marks the block written itself and this thread only wakes sleepers.
  void add(std::shared_ptr<CudaFence> fence, BufferPtr buffer, cudaEvent_t sleeper = nullptr, int index = 0) {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(fence), std::move(buffer), sleeper, index});
    if (!running_) {
      running_ = true;
      std::thread([this] { loop(); }).detach();
    } else {
      cv_.notify_one();
    }
  }

 private:
  struct Item {
    std::shared_ptr<CudaFence> fence;
    BufferPtr buffer;
    cudaEvent_t sleeper = nullptr;
    int index = 0;
  };
  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return !queue_.empty(); })) {
        running_ = false;
        return;
      }
      Item item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      if (item.sleeper != nullptr) {
        cudaEventSynchronize(item.sleeper);  // its errors are the fence's, seen next
        EventPool::instance().give(item.index, item.sleeper, /*sleeping=*/true);
      }
      const bool ok = item.fence->wait().is_ok();  // a failed stream: readers get an error, not bytes
      item.buffer->remote_ready()->signal(ok);
      item = {};  // may release the block (it stays readable by its readers' holds)
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool running_ = false;
};

// The device's own write of a word once the work queued before it is done (a stream memory
// operation, with the memory fence that makes that work's writes visible first), looked up at run
// time as the other driver functions are. Null, or off after its first failure: the producer's
// process signals alone.
using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
std::atomic<bool> g_device_writes_off{false};
WriteValue32 write_value32() {
  static const WriteValue32 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      return WriteValue32{nullptr};
    }
    return reinterpret_cast<WriteValue32>(p);
  }();
  return g_device_writes_off.load(std::memory_order_relaxed) ? nullptr : fn;
}

// Has the device set `remote`'s ready word itself, right behind the work queued on `stream`, so a
// reader spinning on it sees the block written within microseconds of that work's end. False when
// it cannot (the producer's process then signals alone).
bool device_marks_ready(const RemoteReady& remote, cudaStream_t stream) {
  void* word = remote.device_ready_word();
  WriteValue32 fn = write_value32();
  if (word == nullptr || fn == nullptr) return false;
  const CUresult r = fn(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(word), remote.ready_value(),
                        CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS && !g_device_writes_off.exchange(true)) {
    spdlog::warn("cuda: the device cannot mark shared blocks written itself (cuStreamWriteValue32: CUresult {}); "
                 "the producer's process signals readers in other processes instead",
                 static_cast<int>(r));
  }
  return r == CUDA_SUCCESS;
}

}  // namespace

Expected<std::shared_ptr<LayerEvents>> LayerEvents::create(int index, int count) {
  std::shared_ptr<LayerEvents> l(new LayerEvents(index));
  l->events_.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    cudaEvent_t e = nullptr;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    l->events_.push_back(e);
  }
  return l;
}

LayerEvents::~LayerEvents() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

namespace {
// The external forms of event records and waits exist only while a stream is captured (the
// runtime refuses them otherwise).
Expected<bool> capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &status));
  return status == cudaStreamCaptureStatusActive;
}
}  // namespace

Status LayerEvents::record(std::size_t i, cudaStream_t stream) const {
  EDGEVLA_ASSIGN_OR_RETURN(const bool captured, capturing(stream));
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaEventRecordWithFlags(events_.at(i), stream, captured ? cudaEventRecordExternal : cudaEventRecordDefault));
  return Status::ok();
}

Status LayerEvents::wait(std::size_t i, cudaStream_t stream) const {
  EDGEVLA_ASSIGN_OR_RETURN(const bool captured, capturing(stream));
  EDGEVLA_CUDA_RETURN_IF_ERROR(
      cudaStreamWaitEvent(stream, events_.at(i), captured ? cudaEventWaitExternal : cudaEventWaitDefault));
  return Status::ok();
}

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
  if (!output.defined() || output.device() != Device::cuda(index) || fences_off()) return false;
  const Buffer& b = *output.buffer();
  return !b.shm().has_value() || b.remote_ready() != nullptr;
}

Status fence_output(const Tensor& output, cudaStream_t stream, int index, std::shared_ptr<const LayerEvents> layers) {
  EDGEVLA_ASSIGN_OR_RETURN(auto fence, CudaFence::record(stream, index));
  if (layers != nullptr && layers->device() == index) fence->set_layers(std::move(layers));
  const BufferPtr& buffer = output.buffer();
  buffer->set_ready(fence);
  if (RemoteReady* remote = buffer->remote_ready(); remote != nullptr) {
    // A block of the bus's shared pool: readers in other processes wait for its signal — set by the
    // device itself when it can, and by this process's signalling thread in any case (it wakes
    // sleeping readers, and reports a failed stream).
    remote->arm();
    cudaEvent_t sleeper = nullptr;
    if (device_marks_ready(*remote, stream)) {
      // Readers that spin have their signal; the thread need not spin for the sleepers' wake-up.
      if (auto e = EventPool::instance().take(index, /*sleeping=*/true)) {
        if (cudaEventRecord(*e, stream) == cudaSuccess) {
          sleeper = *e;
        } else {
          EventPool::instance().give(index, *e, /*sleeping=*/true);
        }
      }
    }
    RemoteSignaller::instance().add(std::move(fence), buffer, sleeper, index);
  }
  return Status::ok();
}

std::shared_ptr<const LayerEvents> layer_events_of(const Tensor& input, int index) {
  if (!input.defined() || input.device() != Device::cuda(index)) return nullptr;
  auto* fence = dynamic_cast<CudaFence*>(input.buffer()->ready().get());
  if (fence == nullptr || fence->layers() == nullptr || fence->layers()->device() != index) return nullptr;
  return fence->layers();
}

InputWait::~InputWait() {
  if (start_ != nullptr) EventPool::instance().give(index_, start_);
}

Expected<double> InputWait::waited_ms() const {
  double ms = host_waited_ms_;
  for (const auto& f : fences_) {
    float e = 0;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&e, start_, f->event()));
    ms = std::max(ms, static_cast<double>(e));
  }
  for (const auto& f : timed_) {
    // The stream did not wait for it: its producer may still run its last work (the rows zeroed
    // after a pass), microseconds at most once this stream is done.
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(f->event()));
    float e = 0;
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&e, start_, f->event()));
    ms = std::max(ms, static_cast<double>(e));
  }
  return ms;
}

Status InputWait::record_start(cudaStream_t stream, int index) {
  if (start_ != nullptr) return Status::ok();
  EDGEVLA_ASSIGN_OR_RETURN(start_, EventPool::instance().take(index));
  index_ = index;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, stream));
  return Status::ok();
}

Status InputWait::time_producer(const Tensor& input, cudaStream_t stream, int index) {
  if (!input.defined()) return Status::ok();
  auto fence = std::dynamic_pointer_cast<CudaFence>(input.buffer()->ready());
  if (fence == nullptr || fence->device() != Device::cuda(index) || fence->done()) return Status::ok();
  EDGEVLA_RETURN_IF_ERROR(record_start(stream, index));
  timed_.push_back(std::move(fence));
  return Status::ok();
}

Status InputWait::host_wait(const Tensor& t) {
  const bool pending = !t.buffer()->ready()->done();
  const std::int64_t t0 = steady_now_ns();
  EDGEVLA_RETURN_IF_ERROR(t.buffer()->wait_ready());
  if (pending) {
    host_waited_ms_ = std::max(host_waited_ms_, (steady_now_ns() - t0) / 1e6);
    host_ready_ns_ = std::max(host_ready_ns_, wall_now_ns());  // the clock of message stamps
  }
  return Status::ok();
}

Status InputWait::finish_host_waits() {
  for (const Tensor* t : deferred_) EDGEVLA_RETURN_IF_ERROR(host_wait(*t));
  deferred_.clear();
  return Status::ok();
}

Expected<InputWait> wait_for_inputs(const std::vector<const Tensor*>& inputs, cudaStream_t stream, int index,
                                    bool defer_host_waits) {
  InputWait w;
  for (const Tensor* t : inputs) {
    if (t == nullptr || !t->defined()) continue;
    const std::shared_ptr<ReadyFence>& fence = t->buffer()->ready();
    if (!fence) continue;
    auto* cuda = dynamic_cast<CudaFence*>(fence.get());
    if (cuda == nullptr) {
      // Another backend's work, or a block from another process whose producer signals when it is
      // written: waited for on the host (counted as the stream's wait).
      ++w.waits_;
      if (defer_host_waits && !t->device().is_cpu()) {
        w.deferred_.push_back(t);
      } else {
        EDGEVLA_RETURN_IF_ERROR(w.host_wait(*t));
      }
      continue;
    }
    EDGEVLA_RETURN_IF_ERROR(w.record_start(stream, index));
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
