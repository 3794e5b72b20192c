// Binding bookkeeping shared by the CPU engines: specs, bound tensors by spec index, checks.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/backends/backend.hpp"

namespace edgevla::backends::cpu {

class EngineBase : public Engine {
 public:
  std::string_view backend() const override { return "cpu"; }
  const std::vector<TensorSpec>& inputs() const override { return inputs_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Status bind(std::string_view name, const Tensor& tensor) override;
  void clear_bindings() override;
  Expected<Tensor> output(std::string_view name) const override;
  const RunTimings& last_timings() const override { return timings_; }

 protected:
  // Index of a spec by name, or -1.
  int input_index(std::string_view name) const;
  int output_index(std::string_view name) const;
  const Tensor* bound_input(int index) const;
  const Tensor* bound_output(int index) const;
  // Records what output `index` holds after this run (a view of the right shape).
  void set_produced(int index, Tensor view);

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

}  // namespace edgevla::backends::cpu
