#include "runtime/backends/cuda/device.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "runtime/backends/cuda/env_knobs.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"

namespace edgevla::backends::cuda {
namespace {

std::atomic<std::int64_t> g_device_bytes{0};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

namespace {
// The environment against the backend's knobs, read once a process.
const EnvCheck& env_check() {
  static const EnvCheck checked = check_env(kEnvPrefixes, kEnvKnobs);
  return checked;
}
}  // namespace

const std::string& knobs_set_in_env() {
  static const std::string knobs = [] {
    std::string joined;
    for (const std::string& s : env_check().set) joined += (joined.empty() ? "" : ", ") + s;
    return joined;
  }();
  return knobs;
}

std::int64_t process_device_bytes() { return g_device_bytes.load(); }

std::string device_memory_summary() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return "device memory unknown";
  return mib(free) + " free of " + mib(total);
}

Expected<DeviceInfo> select_device(const EngineOptions& options, std::string_view what) {
  auto device = parse_device(options.device);
  if (!device || device->type != DeviceType::kCuda) {
    return invalid_argument(std::string(what) + ": the cuda backend runs on device 'cuda' or 'cuda:<index>', not '" +
                            options.device + "'");
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    return failed_precondition(std::string(what) + ": no CUDA GPU is usable (" +
                               (err != cudaSuccess ? std::string(cudaGetErrorString(err)) : "none found") +
                               "); use backend: cpu, or a fallback list such as backend: [cuda, cpu]");
  }
  if (device->index >= count) {
    return failed_precondition(std::string(what) + ": GPU " + std::to_string(device->index) + " does not exist (" +
                               std::to_string(count) + " found); set cuda_device below " + std::to_string(count));
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device->index));
  cudaDeviceProp prop{};
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device->index));
  DeviceInfo info;
  info.index = device->index;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  if (prop.major < 8) {
    return failed_precondition(std::string(what) + ": GPU " + info.name + " has compute capability " +
                               std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                               "; the cuda backend needs 8.0 or newer (bf16 tensor cores); use backend: cpu");
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  return info;
}

namespace {

// At load: each variable set under the backend's prefixes that it does not read (a misspelt or
// stale knob, which would otherwise change nothing without a word) is named once, with the
// nearest knob it does read (env_knobs.hpp); the knobs that are set, in one line, so that a log
// says what this run changed from the defaults.
const bool kEnvChecked = [] {
  for (const std::string& line : env_check().unknown) spdlog::warn("cuda backend: {}", line);
  if (!knobs_set_in_env().empty()) spdlog::info("cuda backend: knobs set in the environment: {}", knobs_set_in_env());
  return true;
}();

// `edgevla launch --check`: the device exists and is new enough, and the stage's weights in the
// compute dtype fit its free memory and the budget (buffers come on top: a few percent).
const bool kDeviceCheckRegistered =
    register_device_check("cuda", [](const model::StageSpec& stage, const EngineOptions& options, std::string& note) {
      const std::string what = stage.name + " (cuda)";
      EDGEVLA_ASSIGN_OR_RETURN(DeviceInfo info, select_device(options, what));
      const std::int64_t element = options.precision == Precision::kF32 ? 4 : 2;
      const std::int64_t need = stage.weight_elements * element;
      const auto mib = [](std::int64_t b) { return std::to_string(b >> 20) + " MiB"; };
      const auto free = static_cast<std::int64_t>(info.free_bytes);
      if (need > free) {
        return resource_exhausted(what + " needs " + mib(need) + " of device memory for its weights but GPU " +
                                  std::to_string(info.index) + " (" + info.name + ") has " + mib(free) +
                                  " free; free the GPU, use precision bf16, or add cpu to the node's backend list");
      }
      if (options.memory_budget_bytes > 0 && need > options.memory_budget_bytes) {
        return resource_exhausted(what + " needs " + mib(need) + " of device memory for its weights but "
                                  "gpu_memory_budget_mb allows " + mib(options.memory_budget_bytes) +
                                  "; raise the budget or add cpu to the node's backend list");
      }
      note = "cuda:" + std::to_string(info.index) + " " + info.name + " (compute " + std::to_string(info.major) + "." +
             std::to_string(info.minor) + "), " + mib(need) + " of weights, " + mib(free) + " free";
      return Status::ok();
    });

}  // namespace

// DeviceMemory --------------------------------------------------------------------------------

Expected<DeviceMemory> DeviceMemory::allocate(std::size_t bytes, std::string_view what) {
  DeviceMemory m;
  if (bytes == 0) return m;
  const cudaError_t err = cudaMalloc(&m.ptr_, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of a failed allocation
    return resource_exhausted(std::string(what) + " needs " + mib(bytes) + " of device memory but the GPU has " +
                              device_memory_summary() + " (" + cudaGetErrorString(err) +
                              "); free the GPU, use a smaller checkpoint, or add cpu to the backend list");
  }
  m.bytes_ = bytes;
  g_device_bytes += static_cast<std::int64_t>(bytes);
  return m;
}

DeviceMemory::~DeviceMemory() {
  if (ptr_ != nullptr) {
    cudaFree(ptr_);
    g_device_bytes -= static_cast<std::int64_t>(bytes_);
  }
}

DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    this->~DeviceMemory();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

std::size_t Arena::plan(std::size_t bytes) {
  const std::size_t offset = planned_;
  planned_ += (bytes + 255) / 256 * 256;
  return offset;
}

Status Arena::allocate(std::string_view what) {
  EDGEVLA_ASSIGN_OR_RETURN(memory_, DeviceMemory::allocate(planned_, what));
  return Status::ok();
}

// Stream, Graph, PinnedBuffer ------------------------------------------------------------------

Expected<Stream> Stream::create(bool high) {
  Stream s;
  int least = 0, greatest = 0;
  if (high) EDGEVLA_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&s.s_, cudaStreamNonBlocking, high ? greatest : least));
  return s;
}

Stream::~Stream() {
  if (s_ != nullptr) cudaStreamDestroy(s_);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_ != nullptr) cudaStreamDestroy(s_);
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Expected<Event> Event::create() {
  Event e;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e.e_, cudaEventDisableTiming));
  return e;
}

Event::~Event() {
  if (e_ != nullptr) cudaEventDestroy(e_);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_ != nullptr) cudaEventDestroy(e_);
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

Graph::~Graph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
}

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    exec_ = o.exec_;
    o.exec_ = nullptr;
  }
  return *this;
}

Status Graph::launch(cudaStream_t stream) const {
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, stream));
  return Status::ok();
}

Expected<PinnedBuffer> PinnedBuffer::allocate(std::size_t bytes) {
  PinnedBuffer b;
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMallocHost(&b.p_, bytes));
  b.bytes_ = bytes;
  return b;
}

PinnedBuffer::~PinnedBuffer() {
  if (p_ != nullptr) cudaFreeHost(p_);
}

// Uploader ------------------------------------------------------------------------------------

Expected<Uploader> Uploader::create(cudaStream_t stream, std::string what, std::int64_t total_bytes,
                                    std::size_t staging_bytes) {
  EDGEVLA_ASSIGN_OR_RETURN(PinnedBuffer pinned, PinnedBuffer::allocate(staging_bytes));
  EDGEVLA_ASSIGN_OR_RETURN(DeviceMemory scratch, DeviceMemory::allocate(staging_bytes, what + " (upload staging)"));
  Uploader u(stream, std::move(what), total_bytes, std::move(pinned), std::move(scratch));
  u.t0_ = now_s();
  return u;
}

// The first `count` values of the pinned buffer (src_type) to `out` (dst_type): copied as they are,
// or through the device scratch and converted.
Status Uploader::send_staged(std::int64_t count, DType src_type, void* out, DType dst_type) {
  const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(src_type);
  if (src_type == dst_type) {
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out, pinned_.get(), bytes, cudaMemcpyHostToDevice, stream_));
    return Status::ok();
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(scratch_.get(), pinned_.get(), bytes, cudaMemcpyHostToDevice, stream_));
  return convert(stream_, scratch_.get(), src_type, out, dst_type, count);
}

Status Uploader::upload(const void* src, DType src_type, std::int64_t n, void* dst, DType dst_type) {
  const std::size_t es = dtype_size(src_type), ed = dtype_size(dst_type);
  const std::int64_t per_chunk = static_cast<std::int64_t>(pinned_.size() / es);
  for (std::int64_t first = 0; first < n; first += per_chunk) {
    const std::int64_t count = std::min(per_chunk, n - first);
    // The previous chunk's copy out of the pinned buffer must be done before it is refilled.
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    std::memcpy(pinned_.get(), static_cast<const std::byte*>(src) + static_cast<std::size_t>(first) * es,
                static_cast<std::size_t>(count) * es);
    EDGEVLA_RETURN_IF_ERROR(send_staged(count, src_type, static_cast<std::byte*>(dst) + static_cast<std::size_t>(first) * ed,
                                        dst_type));
    done_ += count * static_cast<std::int64_t>(es);
    progress_->set(done_);
  }
  return Status::ok();
}

Status Uploader::upload_rows(const void* src, DType src_type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                             void* dst, DType dst_type, std::int64_t count) {
  const std::size_t es = dtype_size(src_type), ed = dtype_size(dst_type);
  if (cols > ld || rows * ld > count) {
    return invalid_argument(what_ + ": a padded weight of " + std::to_string(rows) + " x " + std::to_string(cols) +
                            " does not fit " + std::to_string(count) + " values " + std::to_string(ld) + " a row");
  }
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(count) * ed, stream_));
  const std::int64_t per_chunk = std::max<std::int64_t>(1, static_cast<std::int64_t>(pinned_.size() / es) / ld);
  if (per_chunk * ld * static_cast<std::int64_t>(es) > static_cast<std::int64_t>(pinned_.size())) {
    return invalid_argument(what_ + ": a padded row of " + std::to_string(ld) + " values does not fit the staging buffer");
  }
  for (std::int64_t first = 0; first < rows; first += per_chunk) {
    const std::int64_t n = std::min(per_chunk, rows - first);
    EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    auto* stage = static_cast<std::byte*>(pinned_.get());
    std::memset(stage, 0, static_cast<std::size_t>(n * ld) * es);
    for (std::int64_t r = 0; r < n; ++r) {
      std::memcpy(stage + static_cast<std::size_t>(r * ld) * es,
                  static_cast<const std::byte*>(src) + static_cast<std::size_t>((first + r) * cols) * es,
                  static_cast<std::size_t>(cols) * es);
    }
    EDGEVLA_RETURN_IF_ERROR(
        send_staged(n * ld, src_type, static_cast<std::byte*>(dst) + static_cast<std::size_t>(first * ld) * ed, dst_type));
    done_ += n * cols * static_cast<std::int64_t>(es);
    progress_->set(done_);
  }
  return Status::ok();
}

Status Uploader::finish() {
  EDGEVLA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  progress_->finish();
  const double s = now_s() - t0_;
  spdlog::info("{}: {} MiB of weights on the GPU in {:.2f} s ({:.1f} GB/s)", what_, done_ >> 20, s,
               s > 0 ? static_cast<double>(done_) / s / 1e9 : 0.0);
  return Status::ok();
}

void release_mapped_pages(std::span<const std::byte> mapping) {
  if (mapping.empty()) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(mapping.data());
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + mapping.size()) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace edgevla::backends::cuda
