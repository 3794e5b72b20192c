#include "runtime/backends/cpu/pi0/pi0_weights.hpp"

namespace edgevla::backends::cpu {
namespace {

using model::Checkpoint;

Status load_tower(const Checkpoint& ck, std::string_view prefix, const model::GemmaDims& dims,
                  bool adaptive, TowerWeights& out) {
  const std::string p(prefix);
  auto norm = [&](const std::string& name, std::vector<float>& w, Linear& mod) -> Status {
    if (adaptive) {
      EDGEVLA_ASSIGN_OR_RETURN(mod, weight_lin(ck, name + ".dense", true));
    } else {
      EDGEVLA_ASSIGN_OR_RETURN(w, weight_vec(ck, name + ".weight"));
    }
    return Status::ok();
  };
  out.layers.resize(static_cast<std::size_t>(dims.depth));
  for (int i = 0; i < dims.depth; ++i) {
    GemmaLayer& l = out.layers[static_cast<std::size_t>(i)];
    const std::string b = p + "layers." + std::to_string(i) + ".";
    EDGEVLA_RETURN_IF_ERROR(norm(b + "input_layernorm", l.in_norm, l.in_mod));
    EDGEVLA_RETURN_IF_ERROR(norm(b + "post_attention_layernorm", l.post_norm, l.post_mod));
    EDGEVLA_ASSIGN_OR_RETURN(l.q, weight_lin(ck, b + "self_attn.q_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.k, weight_lin(ck, b + "self_attn.k_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.v, weight_lin(ck, b + "self_attn.v_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.o, weight_lin(ck, b + "self_attn.o_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.gate, weight_lin(ck, b + "mlp.gate_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.up, weight_lin(ck, b + "mlp.up_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.down, weight_lin(ck, b + "mlp.down_proj", false));
  }
  return Status::ok();
}

}  // namespace

Expected<VisionWeights> load_vision(const Checkpoint& ck) {
  const std::string v(model::kVisionPrefix);
  VisionWeights w;
  EDGEVLA_ASSIGN_OR_RETURN(w.patch, weight_lin(ck, v + "embeddings.patch_embedding", true));
  EDGEVLA_ASSIGN_OR_RETURN(w.position, weight_vec(ck, v + "embeddings.position_embedding.weight"));
  EDGEVLA_RETURN_IF_ERROR(load_siglip_layers(lookup_in(ck), v + "encoder.layers.", ck.config().vision.depth, w.layers));
  EDGEVLA_ASSIGN_OR_RETURN(w.post_w, weight_vec(ck, v + "post_layernorm.weight"));
  EDGEVLA_ASSIGN_OR_RETURN(w.post_b, weight_vec(ck, v + "post_layernorm.bias"));
  EDGEVLA_ASSIGN_OR_RETURN(w.projector, weight_lin(ck, std::string(model::kProjector.substr(0, model::kProjector.size() - 1)), true));
  return w;
}

Expected<Embedding> load_embedding(const Checkpoint& ck) {
  auto t = weight(ck, std::string(model::kEmbedding));
  if (!t) return t.status();
  return Embedding{t->raw_data(), t->dtype(), t->shape()[0], t->shape()[1]};
}

Expected<TowerWeights> load_vlm(const Checkpoint& ck) {
  TowerWeights w;
  // The VLM's final norm is never applied at inference (the prefix pass stops at the cache).
  EDGEVLA_RETURN_IF_ERROR(load_tower(ck, model::kVlmPrefix, ck.config().vlm, false, w));
  return w;
}

Expected<TowerWeights> load_expert(const Checkpoint& ck) {
  TowerWeights w;
  const bool ada = ck.config().type == model::ModelType::kPi05;
  EDGEVLA_RETURN_IF_ERROR(load_tower(ck, model::kExpertPrefix, ck.config().expert, ada, w));
  const std::string norm = std::string(model::kExpertPrefix) + "norm";
  if (ada) {
    EDGEVLA_ASSIGN_OR_RETURN(w.final_mod, weight_lin(ck, norm + ".dense", true));
  } else {
    EDGEVLA_ASSIGN_OR_RETURN(w.final_norm, weight_vec(ck, norm + ".weight"));
  }
  return w;
}

Expected<HeadWeights> load_heads(const Checkpoint& ck) {
  HeadWeights h;
  EDGEVLA_ASSIGN_OR_RETURN(h.action_in, weight_lin(ck, "action_in_proj", true));
  EDGEVLA_ASSIGN_OR_RETURN(h.action_out, weight_lin(ck, "action_out_proj", true));
  if (ck.config().type == model::ModelType::kPi05) {
    EDGEVLA_ASSIGN_OR_RETURN(h.time_in, weight_lin(ck, "time_mlp_in", true));
    EDGEVLA_ASSIGN_OR_RETURN(h.time_out, weight_lin(ck, "time_mlp_out", true));
  } else {
    EDGEVLA_ASSIGN_OR_RETURN(h.state_proj, weight_lin(ck, "state_proj", true));
    EDGEVLA_ASSIGN_OR_RETURN(h.action_time_in, weight_lin(ck, "action_time_mlp_in", true));
    EDGEVLA_ASSIGN_OR_RETURN(h.action_time_out, weight_lin(ck, "action_time_mlp_out", true));
  }
  return h;
}

}  // namespace edgevla::backends::cpu
