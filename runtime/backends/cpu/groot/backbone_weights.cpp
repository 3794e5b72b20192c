#include "runtime/backends/cpu/groot/backbone_weights.hpp"

namespace edgevla::backends::cpu::groot_backbone {
namespace {

using model::groot::Checkpoint;

WeightLookup lookup(const Checkpoint& ck) {
  return [&ck](const std::string& name) { return ck.weight(name); };
}

Expected<Tensor> get(const Checkpoint& ck, const std::string& name) { return contiguous_weight(lookup(ck), name); }

Expected<std::vector<float>> vec(const Checkpoint& ck, const std::string& name) {
  return weight_vector(lookup(ck), name);
}

// A Linear over "<name>.weight" [out, in] (+ "<name>.bias" when `bias`).
Expected<Linear> lin(const Checkpoint& ck, const std::string& name, bool bias) {
  return weight_linear(lookup(ck), name, bias);
}

}  // namespace

Expected<SiglipWeights> load_siglip(const Checkpoint& ck) {
  const std::string v(model::groot::kVisionPrefix);
  SiglipWeights w;
  EDGEVLA_ASSIGN_OR_RETURN(w.patch, lin(ck, v + "embeddings.patch_embedding", true));
  EDGEVLA_ASSIGN_OR_RETURN(w.position, vec(ck, v + "embeddings.position_embedding.weight"));
  EDGEVLA_RETURN_IF_ERROR(load_siglip_layers(lookup(ck), v + "encoder.layers.", ck.config().vision.num_layers, w.layers));
  EDGEVLA_ASSIGN_OR_RETURN(w.post_w, vec(ck, v + "post_layernorm.weight"));
  EDGEVLA_ASSIGN_OR_RETURN(w.post_b, vec(ck, v + "post_layernorm.bias"));
  return w;
}

Expected<Mlp1Weights> load_mlp1(const Checkpoint& ck) {
  const std::string m(model::groot::kMlp1Prefix);
  Mlp1Weights w;
  EDGEVLA_ASSIGN_OR_RETURN(w.ln_w, vec(ck, m + "0.weight"));
  EDGEVLA_ASSIGN_OR_RETURN(w.ln_b, vec(ck, m + "0.bias"));
  EDGEVLA_ASSIGN_OR_RETURN(w.fc1, lin(ck, m + "1", true));
  EDGEVLA_ASSIGN_OR_RETURN(w.fc2, lin(ck, m + "3", true));
  return w;
}

Expected<Qwen3Weights> load_qwen3(const Checkpoint& ck) {
  const std::string p = std::string(model::groot::kLanguagePrefix) + "model.";
  Qwen3Weights w;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor table, get(ck, std::string(model::groot::kEmbedTokens)));
  w.embed = {table.raw_data(), table.dtype(), table.shape()[0], table.shape()[1]};
  const int depth = ck.config().select_layer;
  w.layers.resize(static_cast<std::size_t>(depth));
  for (int i = 0; i < depth; ++i) {
    Qwen3Layer& l = w.layers[static_cast<std::size_t>(i)];
    const std::string b = p + "layers." + std::to_string(i) + ".";
    EDGEVLA_ASSIGN_OR_RETURN(l.in_norm, vec(ck, b + "input_layernorm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.post_norm, vec(ck, b + "post_attention_layernorm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.q_norm, vec(ck, b + "self_attn.q_norm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.k_norm, vec(ck, b + "self_attn.k_norm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.q, lin(ck, b + "self_attn.q_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.k, lin(ck, b + "self_attn.k_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.v, lin(ck, b + "self_attn.v_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.o, lin(ck, b + "self_attn.o_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.gate, lin(ck, b + "mlp.gate_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.up, lin(ck, b + "mlp.up_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.down, lin(ck, b + "mlp.down_proj", false));
  }
  EDGEVLA_ASSIGN_OR_RETURN(w.final_norm, vec(ck, p + "norm.weight"));
  return w;
}

}  // namespace edgevla::backends::cpu::groot_backbone
