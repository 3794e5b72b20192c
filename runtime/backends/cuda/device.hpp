// What every engine of the cuda backend needs besides kernels, whatever the model family: the
// device it runs on (checked at creation: present, new enough), device memory owned RAII and
// counted against the process's budget, and the weight uploader (memory-mapped checkpoint ->
// bounded pinned staging buffer -> device, converted to the compute dtype on the device, with
// progress in the log; afterwards the mapped pages are released so no weight byte is resident
// twice on a Jetson, where host and GPU share one memory).
#pragma once

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "runtime/backends/backend.hpp"
#include "runtime/backends/cuda/fence.hpp"
#include "runtime/backends/cuda/kernels/common.hpp"
#include "runtime/util/progress.hpp"

namespace edgevla::backends::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;
  std::size_t free_bytes = 0, total_bytes = 0;
  int multiprocessors = 0;
};

// The device of options.device ("cuda" / "cuda:N"), made current on this thread. Errors: no
// GPU or driver, index out of range, compute capability below 8.0 (bf16 tensor cores) — each
// naming the engine (`what`) and the fix (another backend, a fallback list).
Expected<DeviceInfo> select_device(const EngineOptions& options, std::string_view what);

// The backend's knobs set in this process's environment (env_knobs.hpp), "NAME=VALUE, ...";
// empty when none is. Read once; engines add it to describe(), so node info and the recorded
// NodeStatus say what a run changed from the defaults.
const std::string& knobs_set_in_env();

// Bytes the cuda engines of this process hold on their devices (weights and buffers).
std::int64_t process_device_bytes();

// One device allocation, freed on destruction, counted in process_device_bytes().
class DeviceMemory {
 public:
  DeviceMemory() = default;
  // `what` names the engine in the error: bytes asked, free and total, the fix.
  static Expected<DeviceMemory> allocate(std::size_t bytes, std::string_view what);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A bump allocator over one DeviceMemory: an engine sizes everything it will hold first
// (plan), allocates once, then carves (take). Pieces are 256-byte aligned.
class Arena {
 public:
  // Adds `bytes` to the plan; returns the offset.
  std::size_t plan(std::size_t bytes);
  std::size_t planned() const { return planned_; }
  Status allocate(std::string_view what);
  void* at(std::size_t offset) const { return static_cast<std::byte*>(memory_.get()) + offset; }
  std::size_t size() const { return memory_.size(); }

 private:
  std::size_t planned_ = 0;
  DeviceMemory memory_;
};

// Marks one engine run on the host timeline as an NVTX range named "edgevla.<family>.<stage>"
// (seen by Nsight Systems, and by Nsight Compute's --nvtx-include "edgevla.pi0.backbone/", which
// profiles only that stage's kernels). Costs nothing measurable when no tool is attached.
class NvtxRange {
 public:
  NvtxRange(std::string_view family, std::string_view stage) {
    const std::string name = "edgevla." + std::string(family) + "." + std::string(stage);
    nvtxRangePushA(name.c_str());
  }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// A stream owned by an engine. high: the device's greatest stream priority (its blocks are
// scheduled ahead of other streams' waiting blocks).
class Stream {
 public:
  Stream() = default;
  static Expected<Stream> create(bool high = false);
  ~Stream();
  Stream(Stream&& other) noexcept : s_(other.s_) { other.s_ = nullptr; }
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// An event owned by an engine, without timing (a point in a stream to wait for).
class Event {
 public:
  Event() = default;
  static Expected<Event> create();
  ~Event();
  Event(Event&& other) noexcept : e_(other.e_) { other.e_ = nullptr; }
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// A captured CUDA graph, instantiated; destroyed RAII.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(Graph&& other) noexcept : exec_(other.exec_) { other.exec_ = nullptr; }
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Captures what `body` enqueues on `stream` and instantiates it.
  template <class F>
  static Expected<Graph> capture(cudaStream_t stream, F&& body) {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    Status s = body();
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (!s.is_ok()) {
      if (graph != nullptr) cudaGraphDestroy(graph);
      return s;
    }
    EDGEVLA_CUDA_RETURN_IF_ERROR(end);
    Graph g;
    const cudaError_t inst = cudaGraphInstantiate(&g.exec_, graph, 0);
    cudaGraphDestroy(graph);
    EDGEVLA_CUDA_RETURN_IF_ERROR(inst);
    return g;
  }
  Status launch(cudaStream_t stream) const;

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Pinned host memory.
class PinnedBuffer {
 public:
  static Expected<PinnedBuffer> allocate(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept : p_(other.p_), bytes_(other.bytes_) { other.p_ = nullptr; }
  PinnedBuffer& operator=(PinnedBuffer&&) = delete;
  PinnedBuffer(const PinnedBuffer&) = delete;
  void* get() const { return p_; }
  std::size_t size() const { return bytes_; }

 private:
  PinnedBuffer() = default;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// Copies host tensors (any floating dtype) to device memory in the compute dtype through a
// bounded pinned staging buffer and a device scratch of the same size; shows its progress
// against `total_bytes` (runtime/util/progress.hpp: a bar on a terminal, log lines otherwise).
class Uploader {
 public:
  static Expected<Uploader> create(cudaStream_t stream, std::string what, std::int64_t total_bytes,
                                   std::size_t staging_bytes = std::size_t{64} << 20);
  // n values of src (dtype src_type, host) -> dst (device, dtype dst_type).
  Status upload(const void* src, DType src_type, std::int64_t n, void* dst, DType dst_type);
  // rows × cols values of src -> dst with rows `ld` apart and zeros past each row's cols and past
  // the last row, up to `count` values in all (a weight padded to a wider shape).
  Status upload_rows(const void* src, DType src_type, std::int64_t rows, std::int64_t cols, std::int64_t ld, void* dst,
                     DType dst_type, std::int64_t count);
  // Waits for the last chunk, logs the total.
  Status finish();
  std::int64_t uploaded_bytes() const { return done_; }

 private:
  Status send_staged(std::int64_t count, DType src_type, void* out, DType dst_type);
  Uploader(cudaStream_t stream, std::string what, std::int64_t total, PinnedBuffer pinned, DeviceMemory scratch)
      : stream_(stream),
        what_(std::move(what)),
        pinned_(std::move(pinned)),
        scratch_(std::move(scratch)),
        progress_(std::make_unique<Progress>(ProgressOptions{.what = what_ + ": weights to the GPU", .total = total})) {}
  cudaStream_t stream_;
  std::string what_;
  std::int64_t done_ = 0;
  double t0_ = 0;
  PinnedBuffer pinned_;
  DeviceMemory scratch_;
  std::unique_ptr<Progress> progress_;  // a pointer: the Uploader moves, a Progress does not
};

// Drops the pages of a read-only file mapping from this process (after the GPU holds what it
// needed), so the weights are not resident twice.
void release_mapped_pages(std::span<const std::byte> mapping);

// Device bytes free and total now, for error messages.
std::string device_memory_summary();

}  // namespace edgevla::backends::cuda
