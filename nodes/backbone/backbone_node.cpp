#include "nodes/backbone/backbone_node.hpp"

#include <cmath>

#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {

Status BackboneNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(params_.declare(spec));
  EDGEVLA_RETURN_IF_ERROR(params_.check(spec, backends::Stage::kBackbone));
  EDGEVLA_ASSIGN_OR_RETURN(cache_, spec.publisher<msgs::PrefixCache>("prefix"));
  // The newest observation only: an older one would make an older chunk.
  return spec.subscribe<msgs::Observation>("observation", QoS::keep_last(1),
                                           [this](const msgs::Observation& m) { on_observation(m); });
}

Status BackboneNode::activate() {
  EDGEVLA_RETURN_IF_ERROR(stage_.open(params_, backends::Stage::kBackbone));
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

Status BackboneNode::infer(const msgs::Observation& obs) {
  backends::Engine& engine = *stage_.engine;
  const model::ModelConfig& c = stage_.checkpoint->config();
  engine.clear_bindings();
  int cameras = 0;
  for (const auto& slot : c.cameras) {
    const Tensor* img = obs.image(slot);
    if (img == nullptr) continue;
    if (img->dtype() != DType::kF32) {
      return invalid_argument("image." + slot + " is " + img->describe() + "; the backbone needs f32 [3," +
                              std::to_string(c.vision.image_size) + "," + std::to_string(c.vision.image_size) +
                              "] in [-1, 1] (run it through the preprocess node)");
    }
    EDGEVLA_RETURN_IF_ERROR(engine.bind("image." + slot, *img));
    ++cameras;
  }
  // Images of cameras the model has no slot for are a wiring mistake worth saying.
  for (const auto& t : obs.message().tensors()) {
    if (t.name.rfind("image.", 0) != 0) continue;
    const std::string slot = t.name.substr(6);
    if (std::find(c.cameras.begin(), c.cameras.end(), slot) == c.cameras.end()) {
      std::string known;
      for (const auto& s : c.cameras) known += (known.empty() ? "" : ", ") + s;
      return invalid_argument("observation camera '" + slot + "' is not a camera slot of this model (" + known + ")");
    }
  }
  const Tensor* tokens = obs.message().tensor("tokens");
  const Tensor* mask = obs.message().tensor("token_mask");
  if (tokens == nullptr || mask == nullptr) {
    return invalid_argument("observation has no 'tokens'/'token_mask' (the prompt); run it through preprocess");
  }
  if (cameras == 0) {
    return invalid_argument("observation has no image of any camera slot of the model");
  }
  EDGEVLA_RETURN_IF_ERROR(engine.bind("tokens", *tokens));
  EDGEVLA_RETURN_IF_ERROR(engine.bind("token_mask", *mask));

  // The cache goes into one shared-memory loan: [layers, k|v, prefix, kv_heads, head_dim].
  const std::int64_t L = c.vlm.depth, P = c.prefix_len(), K = c.vlm.num_kv_heads, h = c.vlm.head_dim;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor loan, cache_.loan(DType::kF32, Shape{L, 2, P, K, h}));
  for (std::int64_t l = 0; l < L; ++l) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor layer, loan.select(0, l));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor k, layer.select(0, 0));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor v, layer.select(0, 1));
    EDGEVLA_RETURN_IF_ERROR(engine.bind("k." + std::to_string(l), k));
    EDGEVLA_RETURN_IF_ERROR(engine.bind("v." + std::to_string(l), v));
  }
  EDGEVLA_RETURN_IF_ERROR(engine.run({}));

  Message m(std::string(msgs::PrefixCache::schema().type), msgs::PrefixCache::schema().version);
  m.set_field("num_layers", L);
  for (std::int64_t l = 0; l < L; ++l) {
    for (const char* kv : {"k.", "v."}) {
      const std::string name = kv + std::to_string(l);
      EDGEVLA_ASSIGN_OR_RETURN(Tensor t, engine.output(name));
      m.set_tensor(name, std::move(t));
    }
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor valid, engine.output("mask"));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor valid_copy, valid.clone());  // the engine reuses its mask buffer
  m.set_tensor("mask", std::move(valid_copy));
  // The action head needs the observation's state (pi0's state token; un-normalization).
  m.set_tensor("state", obs.state());
  if (const Tensor* raw = obs.message().tensor("state_raw")) m.set_tensor("state_raw", *raw);
  m.set_field("observation_seq", static_cast<std::int64_t>(obs.header().seq));
  m.set_field("backbone_ms", engine.last_timings().total_ms);
  stage_.stamp_replay_params(m);
  if (auto ms = obs.message().number_field("preprocess_ms")) m.set_field("preprocess_ms", *ms);
  m.derive_from(obs.header());
  EDGEVLA_RETURN_IF_ERROR(cache_.publish(std::move(m)));
  if (stage_.memory_report_due()) report_memory(engine.resident_bytes());
  return Status::ok();
}

EDGEVLA_REGISTER_NODE(BackboneNode, "backbone",
                      "pi0/pi0.5 vision encoder + Gemma prefix: Observation -> PrefixCache (per-layer K/V)");

}  // namespace edgevla::nodes
