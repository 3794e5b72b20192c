// Ready fences of the cuda backend (runtime/core/buffer.hpp: ReadyFence): device work queued on
// a stream, attached to the buffer it writes, so readers wait for it — another stream on the
// device, the host with a synchronisation — instead of the producer waiting before it publishes.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/core/buffer.hpp"
#include "runtime/core/tensor.hpp"

namespace edgevla::backends::cuda {

// Bound output blocks a producer writes part by part inside its graphs (a graph per block): the
// first this many it is given; any further block gets the output copied after the pass, so a pool
// that keeps handing out new blocks costs no capture per run and no graph without bound.
inline constexpr std::size_t kMaxLayeredBlocks = 8;

// Events a producer records as each of its output's parts is written (a backbone: each layer's
// keys and values in its cache), so a consumer on the same device may start on the first parts
// before the last is written. Recorded inside the producer's CUDA graph (external record nodes) and
// waited for inside the consumer's (external wait nodes): the events are the producer's for its
// lifetime, and the same ones every run.
class LayerEvents {
 public:
  static Expected<std::shared_ptr<LayerEvents>> create(int index, int count);
  ~LayerEvents();
  LayerEvents(const LayerEvents&) = delete;
  LayerEvents& operator=(const LayerEvents&) = delete;
  int device() const { return index_; }
  std::size_t size() const { return events_.size(); }
  // Records part i's event on `stream` (a captured stream gets an external record node).
  Status record(std::size_t i, cudaStream_t stream) const;
  // Has `stream` wait for part i (a captured stream gets an external wait node).
  Status wait(std::size_t i, cudaStream_t stream) const;

 private:
  explicit LayerEvents(int index) : index_(index) {}
  int index_;
  std::vector<cudaEvent_t> events_;
};

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
  // The event (timing enabled: another stream's event can be measured against it).
  cudaEvent_t event() const { return event_; }
  // The producer's per-part events when it recorded them (nullptr otherwise).
  const std::shared_ptr<const LayerEvents>& layers() const { return layers_; }
  void set_layers(std::shared_ptr<const LayerEvents> layers) { layers_ = std::move(layers); }

 private:
  CudaFence(cudaEvent_t event, int index) : event_(event), index_(index) {}
  cudaEvent_t event_;
  int index_;
  std::shared_ptr<const LayerEvents> layers_;
};

// EDGEVLA_CUDA_SYNC_OUTPUTS set (to anything but 0): engines finish their stream before they
// publish and attach no fences — to rule fences out when hunting a wrong result, or to compare.
bool fences_off();

// Whether an engine on device `index` may hand `output` out with a fence instead of finishing its
// stream first: a buffer on that device that is either read only in this process or a block of the
// bus's shared pool (whose readers elsewhere wait for its RemoteReady signal), fences not off.
bool may_fence(const Tensor& output, int index);
// Records the work queued on `stream` into a fence on `output`'s buffer (see may_fence). A shared
// block is armed, and a thread of this process signals it written once the fence is done (the
// producer's stream does not wait, and neither does the node that publishes it).
// `layers`: the producer's per-part events of this output, for consumers on its device.
Status fence_output(const Tensor& output, cudaStream_t stream, int index,
                    std::shared_ptr<const LayerEvents> layers = nullptr);
// The per-part events `input`'s producer recorded, when it is cuda work of device `index`
// (nullptr otherwise: wait for the whole input).
std::shared_ptr<const LayerEvents> layer_events_of(const Tensor& input, int index);

// What an engine's stream waits for before it reads its inputs (wait_for_inputs): the fences of
// cuda work, and an event marking where the stream stood before the waits.
class InputWait {
 public:
  InputWait() = default;
  ~InputWait();
  InputWait(InputWait&& other) noexcept
      : start_(other.start_),
        index_(other.index_),
        waits_(other.waits_),
        host_waited_ms_(other.host_waited_ms_),
        host_ready_ns_(other.host_ready_ns_),
        deferred_(std::move(other.deferred_)),
        fences_(std::move(other.fences_)),
        timed_(std::move(other.timed_)) {
    other.start_ = nullptr;
  }
  InputWait& operator=(InputWait&&) = delete;
  InputWait(const InputWait&) = delete;
  // Inputs the stream waits for on the device.
  std::size_t waits() const { return waits_; }
  // Once the stream's work is done (the engine synchronised it): how long the stream stood
  // waiting for its inputs' producers, in ms (0 without fences, or when they were done first).
  Expected<double> waited_ms() const;
  // Inputs waited for on the host (blocks of another process): when the last one was ready (wall
  // clock ns, as message stamps; 0 when none was waited for). RunTimings::inputs_ready_ns.
  std::int64_t host_ready_ns() const { return host_ready_ns_; }
  // Waits for the host waits wait_for_inputs deferred (defer_host_waits): call before the first
  // device work or host read of the inputs.
  Status finish_host_waits();
  // An input on `stream`'s device whose producer this stream does not wait for as a whole (a
  // cache followed layer by layer): its producer's end is timed against the stream's start all the
  // same, so waited_ms() counts the part of this stage's time that ran beside its producer (the
  // producer's time, as a stage's wait for its inputs is). Nothing is waited for.
  Status time_producer(const Tensor& input, cudaStream_t stream, int index);

 private:
  friend Expected<InputWait> wait_for_inputs(const std::vector<const Tensor*>&, cudaStream_t, int, bool);
  cudaEvent_t start_ = nullptr;
  int index_ = 0;  // the device start_ belongs to
  std::size_t waits_ = 0;
  double host_waited_ms_ = 0;  // inputs waited for on the host (another process's block)
  std::int64_t host_ready_ns_ = 0;
  std::vector<const Tensor*> deferred_;  // device inputs whose host wait is deferred
  Status host_wait(const Tensor& t);
  std::vector<std::shared_ptr<CudaFence>> fences_;  // those on the stream's device (timed against start_)
  std::vector<std::shared_ptr<CudaFence>> timed_;   // time_producer's (not waited for by the stream)
  Status record_start(cudaStream_t stream, int index);
};

// Before an engine on device `index` reads its bound inputs on `stream`: each input still being
// written by queued device work (a fence on its buffer) is waited for — by `stream`, on the
// device, when it is cuda work (another backend's fence: on the host). A device input from another
// process is waited for on the host (its producer's signal): with `defer_host_waits`, not here but in
// InputWait::finish_host_waits(), so the engine's host work before it overlaps the producer's.
Expected<InputWait> wait_for_inputs(const std::vector<const Tensor*>& inputs, cudaStream_t stream, int index,
                                    bool defer_host_waits = false);

}  // namespace edgevla::backends::cuda
