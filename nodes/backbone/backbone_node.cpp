#include "nodes/backbone/backbone_node.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {

Status BackboneNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(params_.declare(spec));
  EDGEVLA_RETURN_IF_ERROR(params_.check(spec, model::kBackbone));
  EDGEVLA_ASSIGN_OR_RETURN(out_, spec.publisher<msgs::BackboneOutput>("prefix"));
  // The newest observation only: an older one would make an older chunk. Tensors on a device
  // reach the engine as they are, or as host copies for an engine elsewhere (for_engine).
  return spec.subscribe<msgs::Observation>("observation", QoS::keep_last(1).taking_device_tensors(),
                                           [this](const msgs::Observation& m) { on_observation(m); });
}

Status BackboneNode::activate() {
  EDGEVLA_RETURN_IF_ERROR(stage_.open(log(), params_, model::kBackbone));
  // Outputs the engine leaves on its device: subscribers in this process that read tensor
  // bytes on the CPU must have asked for host copies, or activation stops here, saying so.
  for (const backends::TensorSpec& spec : stage_.engine->outputs()) {
    if (spec.device.is_cpu()) continue;
    if (Status s = out_.publishes_on(spec.device); !s.is_ok()) {
      stage_.close();
      return s.with_context("output '" + spec.name + "'");
    }
  }
  report_engine(stage_.engine->describe());
  report_memory(stage_.engine->resident_bytes());
  return Status::ok();
}

Status BackboneNode::deactivate() {
  stage_.close();
  return Status::ok();
}

void BackboneNode::on_observation(const msgs::Observation& obs) {
  if (Status s = infer(obs); !s.is_ok()) report_bad_input("observation", s);
}

// Binds the observation's tensors to the engine's inputs by name, loans the required outputs
// from the publisher (the engine writes them in place, in shared memory) and publishes what the
// run produced, with the observation's other tensors (state...) passed on to the action head.
Status BackboneNode::infer(const msgs::Observation& obs) {
  backends::Engine& engine = *stage_.engine;
  engine.clear_bindings();
  const Message& in = obs.message();
  std::string image_inputs;
  int images_bound = 0;
  for (const backends::TensorSpec& spec : engine.inputs()) {
    const bool image = spec.name.starts_with("image.");
    if (image) image_inputs += (image_inputs.empty() ? "" : ", ") + spec.name.substr(6);
    const Tensor* t = in.tensor(spec.name);
    if (t == nullptr) {
      if (spec.required) {
        return invalid_argument("observation has no '" + spec.name + "' (" + spec.description +
                                "); run it through the preprocess node of this model");
      }
      continue;
    }
    EDGEVLA_ASSIGN_OR_RETURN(Tensor input, for_engine(spec, *t, stage_.host_copies));
    EDGEVLA_RETURN_IF_ERROR(engine.bind(spec.name, input).with_context("observation"));
    images_bound += image ? 1 : 0;
  }
  // Images of cameras the model has no slot for are a wiring mistake worth saying.
  for (const auto& t : in.tensors()) {
    if (!t.name.starts_with("image.")) continue;
    const auto& inputs = engine.inputs();
    if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& s) { return s.name == t.name; })) {
      return invalid_argument("observation camera '" + t.name.substr(6) + "' is not a camera slot of this model (" +
                              image_inputs + ")");
    }
  }
  if (!image_inputs.empty() && images_bound == 0) {
    return invalid_argument("observation has no image of any camera slot of the model (" + image_inputs + ")");
  }
  // Outputs are loaned and bound, so the engine writes them in place; one named like an input
  // (GR00T's attention_mask, handed on) cannot be bound (the name binds the input), so it is
  // copied into a loan after the run instead of publishing the engine's own memory.
  std::vector<std::pair<std::string, bool>> published;  // name, copied after the run
  for (const backends::TensorSpec& spec : engine.outputs()) {
    if (!spec.required) continue;  // diagnostics stay in the engine
    const auto& inputs = engine.inputs();
    if (std::any_of(inputs.begin(), inputs.end(), [&](const auto& s) { return s.name == spec.name; })) {
      published.emplace_back(spec.name, true);
      continue;
    }
    EDGEVLA_ASSIGN_OR_RETURN(Tensor loan, out_.loan(spec.dtype, spec.max_shape, spec.device));
    EDGEVLA_RETURN_IF_ERROR(engine.bind(spec.name, loan));
    published.emplace_back(spec.name, false);
  }
  EDGEVLA_RETURN_IF_ERROR(engine.run({}));

  Message m(std::string(msgs::BackboneOutput::schema().type), msgs::BackboneOutput::schema().version);
  m.set_field("family", std::string(engine.family()));
  for (const auto& [name, copy] : published) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor t, engine.output(name));
    if (copy) {
      EDGEVLA_ASSIGN_OR_RETURN(t, copy_into_loan(t));
    }
    m.set_tensor(name, std::move(t));
  }
  // The action head may need the observation's other tensors (pi0's state token, the raw state
  // for un-normalizing or relative actions).
  for (const auto& t : in.tensors()) {
    if (t.name.starts_with("image.") || m.tensor(t.name) != nullptr) continue;
    const auto& inputs = engine.inputs();
    if (std::any_of(inputs.begin(), inputs.end(), [&](const auto& s) { return s.name == t.name; })) continue;
    m.set_tensor(t.name, t.tensor);
  }
  m.set_field("observation_seq", static_cast<std::int64_t>(obs.header().seq));
  m.set_field("backbone_ms", engine.last_timings().total_ms);
  stage_.stamp_replay_params(m);
  if (auto ms = in.number_field("preprocess_ms")) m.set_field("preprocess_ms", *ms);
  m.derive_from(obs.header());
  EDGEVLA_RETURN_IF_ERROR(out_.publish(std::move(m)));
  if (stage_.memory_report_due()) report_memory(engine.resident_bytes());
  return Status::ok();
}

Expected<Tensor> BackboneNode::copy_into_loan(const Tensor& t) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor c, t.contiguous());
  EDGEVLA_ASSIGN_OR_RETURN(Tensor loan, out_.loan(c.dtype(), c.shape(), c.device()));
  if (c.device().is_cpu()) {
    std::memcpy(loan.raw_data(), c.raw_data(), c.nbytes());
    return loan;
  }
  EDGEVLA_ASSIGN_OR_RETURN(Allocator * a, allocator_for(c.device()));
  EDGEVLA_RETURN_IF_ERROR(c.buffer()->wait_ready());  // the engine's work that writes it
  EDGEVLA_RETURN_IF_ERROR(a->copy(loan.raw_data(), c.raw_data(), c.nbytes(), CopyKind::kOnDevice));
  return loan;
}

EDGEVLA_REGISTER_NODE(BackboneNode, "backbone",
                      "a model family's backbone (pi0/pi0.5: SigLIP + Gemma prefix): Observation -> BackboneOutput");

}  // namespace edgevla::nodes
