// Binding bookkeeping every engine shares, whatever its backend: the family's tensor specs,
// bound tensors by spec index, the checks of bind() (dtype, rank, limits, device, writable
// outputs), and the views of what the last run produced.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/backends/backend.hpp"

namespace edgevla::backends {

class EngineBase : public Engine {
 public:
  std::string_view family() const override { return family_; }
  std::string_view stage() const override { return stage_; }
  std::string_view backend() const override { return backend_; }
  const std::vector<TensorSpec>& inputs() const override { return inputs_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Status bind(std::string_view name, const Tensor& tensor) override;
  void clear_bindings() override;
  Expected<Tensor> output(std::string_view name) const override;
  const RunTimings& last_timings() const override { return timings_; }

 protected:
  // `spec` gives the names, dtypes and largest shapes; `device` is where bound tensors must
  // live (DeviceType::kCpu for the CPU backend).
  EngineBase(std::string backend, std::string family, const model::StageSpec& spec, DeviceType device);
  // Index of a spec by name, or -1.
  int input_index(std::string_view name) const;
  int output_index(std::string_view name) const;
  // The same, or an internal error naming the tensor: the engine binds one that its family's
  // stage spec does not declare (engine and family out of step).
  Expected<int> input_slot(std::string_view name) const;
  Expected<int> output_slot(std::string_view name) const;
  const Tensor* bound_input(int index) const;
  const Tensor* bound_output(int index) const;
  // Every input slot's bound tensor (null where none is bound), in spec order.
  std::vector<const Tensor*> bound_inputs() const;
  // Records what output `index` holds after this run (a view of the right shape).
  void set_produced(int index, Tensor view);

  std::string backend_, family_, stage_;
  DeviceType device_;
  std::vector<TensorSpec> inputs_;
  std::vector<TensorSpec> outputs_;
  std::vector<Tensor> in_bound_;
  std::vector<Tensor> out_bound_;
  std::vector<Tensor> produced_;
  RunTimings timings_;
};

// Milliseconds since `t0`.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace edgevla::backends
