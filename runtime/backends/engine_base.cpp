#include "runtime/backends/engine_base.hpp"

namespace edgevla::backends {
namespace {

Status check_against(const TensorSpec& spec, const Tensor& t, std::string_view role,
                     std::string_view stage, std::string_view backend, DeviceType device) {
  const std::string what = std::string(stage) + " " + std::string(role) + " '" + spec.name + "'";
  if (!t.defined()) return invalid_argument(what + ": the tensor is empty");
  // A CUDA engine also takes host tensors (it copies them in); a CPU engine only host ones.
  if (t.device().type != DeviceType::kCpu && t.device().type != device) {
    return invalid_argument(what + " is on " + t.device().to_string() + "; the " + std::string(backend) +
                            " backend cannot read it (copy it to the CPU or pick the backend of that device)");
  }
  if (!t.is_contiguous()) return invalid_argument(what + " " + t.describe() + " must be contiguous");
  // An engine may accept more dtypes than it produces by default (spec.accepts), either way.
  const bool dtype_ok = spec.accepts_dtype(t.dtype());
  if (!dtype_ok) {
    std::string allowed(dtype_name(spec.dtype));
    {
      for (DType d : spec.accepts) {
        if (d != spec.dtype) allowed += "/" + std::string(dtype_name(d));
      }
    }
    return invalid_argument(what + " must be " + allowed + ", got " + std::string(dtype_name(t.dtype())));
  }
  if (t.rank() != spec.max_shape.rank()) {
    return invalid_argument(what + " must have shape like " + spec.max_shape.to_string() + ", got " +
                            t.shape().to_string());
  }
  for (int d = 0; d < t.rank(); ++d) {
    if (t.shape()[d] > spec.max_shape[d] || t.shape()[d] < 0) {
      return invalid_argument(what + " " + t.shape().to_string() + " exceeds the model's " +
                              spec.max_shape.to_string() + " in dimension " + std::to_string(d));
    }
  }
  if (role == "output" && !t.buffer()->writable()) {
    return invalid_argument(what + " is read-only; bind a writable tensor");
  }
  return Status::ok();
}

}  // namespace

EngineBase::EngineBase(std::string backend, std::string family, const model::StageSpec& spec, DeviceType device)
    : backend_(std::move(backend)), family_(std::move(family)), stage_(spec.name), device_(device),
      inputs_(spec.inputs), outputs_(spec.outputs) {
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  produced_.resize(outputs_.size());
}

int EngineBase::input_index(std::string_view name) const {
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int EngineBase::output_index(std::string_view name) const {
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Expected<int> EngineBase::input_slot(std::string_view name) const {
  const int i = input_index(name);
  if (i < 0) {
    return internal_error(backend_ + " " + family_ + " " + stage_ + ": the family's stage spec declares no input '" +
                          std::string(name) + "' for the engine to bind");
  }
  return i;
}

Expected<int> EngineBase::output_slot(std::string_view name) const {
  const int i = output_index(name);
  if (i < 0) {
    return internal_error(backend_ + " " + family_ + " " + stage_ + ": the family's stage spec declares no output '" +
                          std::string(name) + "' for the engine to fill");
  }
  return i;
}

Status EngineBase::bind(std::string_view name, const Tensor& tensor) {
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  produced_.resize(outputs_.size());
  if (const int i = input_index(name); i >= 0) {
    EDGEVLA_RETURN_IF_ERROR(check_against(inputs_[static_cast<std::size_t>(i)], tensor, "input", stage_, backend_, device_));
    in_bound_[static_cast<std::size_t>(i)] = tensor;
    return Status::ok();
  }
  if (const int o = output_index(name); o >= 0) {
    EDGEVLA_RETURN_IF_ERROR(check_against(outputs_[static_cast<std::size_t>(o)], tensor, "output", stage_, backend_, device_));
    out_bound_[static_cast<std::size_t>(o)] = tensor;
    return Status::ok();
  }
  std::string names;
  for (const auto& s : inputs_) names += (names.empty() ? "" : ", ") + s.name;
  for (const auto& s : outputs_) names += ", " + s.name;
  if (names.size() > 300) names = names.substr(0, 300) + "...";
  return not_found(stage_ + " has no input or output '" + std::string(name) +
                   "' (it has " + names + ")");
}

void EngineBase::clear_bindings() {
  for (auto& t : in_bound_) t = Tensor();
  for (auto& t : out_bound_) t = Tensor();
}

std::vector<const Tensor*> EngineBase::bound_inputs() const {
  std::vector<const Tensor*> out;
  out.reserve(inputs_.size());
  for (int i = 0; i < static_cast<int>(inputs_.size()); ++i) out.push_back(bound_input(i));
  return out;
}

const Tensor* EngineBase::bound_input(int index) const {
  if (index < 0 || static_cast<std::size_t>(index) >= in_bound_.size()) return nullptr;
  const Tensor& t = in_bound_[static_cast<std::size_t>(index)];
  return t.defined() ? &t : nullptr;
}

const Tensor* EngineBase::bound_output(int index) const {
  if (index < 0 || static_cast<std::size_t>(index) >= out_bound_.size()) return nullptr;
  const Tensor& t = out_bound_[static_cast<std::size_t>(index)];
  return t.defined() ? &t : nullptr;
}

void EngineBase::set_produced(int index, Tensor view) {
  produced_.resize(outputs_.size());
  produced_[static_cast<std::size_t>(index)] = std::move(view);
}

Expected<Tensor> EngineBase::output(std::string_view name) const {
  const int o = output_index(name);
  if (o < 0) return not_found(stage_ + " has no output '" + std::string(name) + "'");
  if (static_cast<std::size_t>(o) >= produced_.size() || !produced_[static_cast<std::size_t>(o)].defined()) {
    return not_found(stage_ + " output '" + std::string(name) +
                     "' was not produced by the last run (diagnostic outputs are produced only "
                     "when bound)");
  }
  return produced_[static_cast<std::size_t>(o)];
}

}  // namespace edgevla::backends
