// The backend seam. A backend (cpu, cuda, tensorrt...) makes engines, one per (model family,
// stage) pair it supports. Stage nodes talk to an engine only through this interface: tensors
// are bound to inputs and outputs by the names the family declares (model::StageSpec, which
// the stage's messages also use), run() computes, and every buffer the engine needs is
// allocated when it is created, so a run allocates nothing. Outputs may be shorter than
// declared (e.g. a backend drops invalid prefix tokens): output(name) is a view of exactly
// what this run produced.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/model/family.hpp"

namespace edgevla::backends {

using model::TensorSpec;

// The Euler steps an action head is sized for unless a caller asks for more (the velocity
// output holds one [H,A] slab per step).
inline constexpr int kDefaultMaxSteps = 64;

enum class Precision : std::uint8_t {
  kAuto,  // the backend's native choice: f32 on the CPU, bf16 on CUDA
  kF32,
  kBF16,
};
std::string_view precision_name(Precision p);
Expected<Precision> parse_precision(std::string_view name);

struct EngineOptions {
  int threads = 0;                    // CPU worker threads; 0 = all cores
  int max_steps = kDefaultMaxSteps;   // action head: largest num_steps (sizes the velocity output)
  std::string device = "cpu";         // "cpu", "cuda", "cuda:<index>"
  Precision precision = Precision::kAuto;
  // Bytes this engine may hold on its device (weights and buffers); 0 = no limit. A stage that
  // would not fit is refused at creation, by name, with the bytes needed.
  std::int64_t memory_budget_bytes = 0;
};

struct RunOptions {
  int num_steps = 10;       // action head: Euler steps for this run
};

struct RunTimings {
  double total_ms = 0;
  // Of total_ms: how long the device stood waiting for inputs whose producers published before
  // their device work was done (ready fences) — the producer's time, not this stage's.
  double input_wait_ms = 0;
  // When an input from another process was waited for on the host (its producer signals when the
  // block is written, runtime/shm/ready.hpp): when it was ready, in wall-clock ns (the clock of
  // message stamps); 0 when no such wait happened. The producer's device work ran until then.
  std::int64_t inputs_ready_ns = 0;
  // Sub-stage times (e.g. "vision", "prefix" / "steps"), for per-stage reports.
  std::vector<std::pair<std::string, double>> parts;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view family() const = 0;
  virtual std::string_view stage() const = 0;
  virtual std::string_view backend() const = 0;
  // "cpu f32 (2 threads)", "cuda:0 bf16 (NVIDIA H200)": for logs, node info and NodeStatus.
  virtual std::string describe() const = 0;
  virtual const std::vector<TensorSpec>& inputs() const = 0;
  virtual const std::vector<TensorSpec>& outputs() const = 0;

  // Binds `tensor` to input or output `name`. An input is read during run(); an output bound by
  // the caller is written in place (e.g. a shared-memory tensor a publisher loaned), otherwise
  // the engine writes its own preallocated buffer. Dtype, rank and limits are checked here.
  virtual Status bind(std::string_view name, const Tensor& tensor) = 0;
  // Forgets every binding (inputs and outputs).
  virtual void clear_bindings() = 0;
  // Runs the stage on the bound inputs. On error the outputs are unspecified.
  virtual Status run(const RunOptions& options) = 0;
  // An output of the last run, shaped as produced; not_found for unknown names.
  virtual Expected<Tensor> output(std::string_view name) const = 0;
  virtual const RunTimings& last_timings() const = 0;
  // Bytes of this engine's weights and buffers resident in host memory now (pages it touched),
  // for per-node memory reports.
  virtual std::int64_t resident_bytes() const = 0;
  // Bytes it holds in device memory (0 for the CPU).
  virtual std::int64_t device_bytes() const = 0;
};

using EngineFactory =
    std::function<Expected<std::unique_ptr<Engine>>(const model::Model& model, const EngineOptions& options)>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // The engine of `stage` for `model`'s family; not_found (naming the pairs this backend has)
  // when it has none; failed_precondition / resource_exhausted when the device cannot hold it.
  virtual Expected<std::unique_ptr<Engine>> create(const model::Model& model, std::string_view stage,
                                                   const EngineOptions& options) = 0;
  // Without building anything: whether this backend's device can take `stage` (present, new
  // enough, its weights fit the free memory and the budget). `note` says what was found.
  // For `edgevla launch --check`; backends without a device check answer ok.
  virtual Status check_device(const model::StageSpec& stage, const EngineOptions& options, std::string& note) = 0;
};

using DeviceCheck =
    std::function<Status(const model::StageSpec& stage, const EngineOptions& options, std::string& note)>;
// Registers the device check of backend `backend` (static registration, like engines).
bool register_device_check(std::string backend, DeviceCheck check);

// Registers the engine of (family, stage) for backend `backend` (static registration from the
// backend's library). A backend exists once it has an engine.
bool register_engine(std::string backend, std::string family, std::string stage, EngineFactory factory);
// The backend registered as `name`; when none is, loads libedgevla_backend_<name>.so from the
// library directory and looks again. The error lists what exists.
Expected<std::unique_ptr<Backend>> make_backend(std::string_view name);
std::vector<std::string> backend_names();

// Checks `options` against what a CPU engine can do: device cpu, precision auto/f32, and
// `needed_bytes` within the memory budget. The error names the engine and the fix.
Status check_cpu_options(const EngineOptions& options, std::string_view what, std::int64_t needed_bytes);

}  // namespace edgevla::backends
