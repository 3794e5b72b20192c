// The backend seam. A backend (cpu, cuda, tensorrt...) turns a checkpoint into engines, one per
// inference stage. Stage nodes talk to an engine only through this interface: tensors are bound
// to inputs and outputs by name (the same names the stage's messages use), run() computes, and
// every buffer the engine needs is allocated when it is created, so a run allocates nothing.
//
// Stages and their tensors (C cameras, S image size, T tokens, L layers, n prefix tokens kept,
// K kv heads, h head dim, H horizon, A action dim):
//   backbone     in:  image.<camera> f32 [3,S,S] (absent = camera masked), tokens i32 [T],
//                     token_mask bool [T]
//                out: k.<i>, v.<i> f32 [n,K,h] per layer, mask bool [n];
//                     vision_embeddings f32 [C,N,D] (diagnostic, rows of masked cameras zero)
//   action_head  in:  k.<i>, v.<i> [n,K,h] (f32/bf16/f16), mask bool [n], state f32 [A],
//                     noise f32 [H,A]
//                out: actions f32 [H,A] (normalized), velocities f32 [steps,H,A] (diagnostic)
// n varies from run to run (the backend may drop invalid prefix tokens), so outputs report the
// shape of this run: output(name) is a view of exactly what was produced.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/model/checkpoint.hpp"

namespace edgevla::backends {

enum class Stage { kBackbone, kActionHead };
std::string_view stage_name(Stage stage);

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  Shape max_shape;          // the largest shape the engine accepts or produces
  bool required = true;     // inputs: must be bound for run(); outputs: always produced
  std::string description;
};

// The Euler steps an action head is sized for unless a caller asks for more (the velocity
// output holds one [H,A] slab per step).
inline constexpr int kDefaultMaxSteps = 64;

struct EngineOptions {
  int threads = 0;                    // worker threads; 0 = all cores
  int max_steps = kDefaultMaxSteps;   // action head: largest num_steps (sizes the velocity output)
};

struct RunOptions {
  int num_steps = 10;       // action head: Euler steps for this run
};

struct RunTimings {
  double total_ms = 0;
  // Sub-stage times (e.g. "vision", "prefix" / "steps"), for per-stage reports.
  std::vector<std::pair<std::string, double>> parts;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual Stage stage() const = 0;
  virtual std::string_view backend() const = 0;
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
  // Bytes of this engine's weights and buffers that are resident in memory now (pages it
  // touched), for per-node memory reports.
  virtual std::int64_t resident_bytes() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual Expected<std::unique_ptr<Engine>> create(Stage stage, const model::Checkpoint& checkpoint,
                                                   const EngineOptions& options) = 0;
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// Registers a backend under `name` (static registration from the backend's library).
bool register_backend(std::string name, BackendFactory factory);
// The backend registered as `name`; when none is, loads libedgevla_backend_<name>.so from the
// library directory (plugins of the next rounds) and looks again. The error lists what exists.
Expected<std::unique_ptr<Backend>> make_backend(std::string_view name);
std::vector<std::string> backend_names();

}  // namespace edgevla::backends
