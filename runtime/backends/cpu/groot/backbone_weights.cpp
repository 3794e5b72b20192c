#include "runtime/backends/cpu/groot/backbone_weights.hpp"

namespace edgevla::backends::cpu::groot_backbone {

using model::groot::Checkpoint;

Expected<SiglipWeights> load_siglip(const Checkpoint& ck) {
  const std::string v(model::groot::kVisionPrefix);
  SiglipWeights w;
  EDGEVLA_ASSIGN_OR_RETURN(w.patch, weight_lin(ck, v + "embeddings.patch_embedding", true));
  EDGEVLA_ASSIGN_OR_RETURN(w.position, weight_vec(ck, v + "embeddings.position_embedding.weight"));
  EDGEVLA_RETURN_IF_ERROR(load_siglip_layers(lookup_in(ck), v + "encoder.layers.", ck.config().vision.num_layers, w.layers));
  EDGEVLA_ASSIGN_OR_RETURN(w.post_w, weight_vec(ck, v + "post_layernorm.weight"));
  EDGEVLA_ASSIGN_OR_RETURN(w.post_b, weight_vec(ck, v + "post_layernorm.bias"));
  return w;
}

Expected<Mlp1Weights> load_mlp1(const Checkpoint& ck) {
  const std::string m(model::groot::kMlp1Prefix);
  Mlp1Weights w;
  EDGEVLA_ASSIGN_OR_RETURN(w.ln_w, weight_vec(ck, m + "0.weight"));
  EDGEVLA_ASSIGN_OR_RETURN(w.ln_b, weight_vec(ck, m + "0.bias"));
  EDGEVLA_ASSIGN_OR_RETURN(w.fc1, weight_lin(ck, m + "1", true));
  EDGEVLA_ASSIGN_OR_RETURN(w.fc2, weight_lin(ck, m + "3", true));
  return w;
}

Expected<Qwen3Weights> load_qwen3(const Checkpoint& ck) {
  const std::string p = std::string(model::groot::kLanguagePrefix) + "model.";
  Qwen3Weights w;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor table, weight(ck, std::string(model::groot::kEmbedTokens)));
  w.embed = {table.raw_data(), table.dtype(), table.shape()[0], table.shape()[1]};
  const int depth = ck.config().select_layer;
  w.layers.resize(static_cast<std::size_t>(depth));
  for (int i = 0; i < depth; ++i) {
    Qwen3Layer& l = w.layers[static_cast<std::size_t>(i)];
    const std::string b = p + "layers." + std::to_string(i) + ".";
    EDGEVLA_ASSIGN_OR_RETURN(l.in_norm, weight_vec(ck, b + "input_layernorm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.post_norm, weight_vec(ck, b + "post_attention_layernorm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.q_norm, weight_vec(ck, b + "self_attn.q_norm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.k_norm, weight_vec(ck, b + "self_attn.k_norm.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.q, weight_lin(ck, b + "self_attn.q_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.k, weight_lin(ck, b + "self_attn.k_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.v, weight_lin(ck, b + "self_attn.v_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.o, weight_lin(ck, b + "self_attn.o_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.gate, weight_lin(ck, b + "mlp.gate_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.up, weight_lin(ck, b + "mlp.up_proj", false));
    EDGEVLA_ASSIGN_OR_RETURN(l.down, weight_lin(ck, b + "mlp.down_proj", false));
  }
  EDGEVLA_ASSIGN_OR_RETURN(w.final_norm, weight_vec(ck, p + "norm.weight"));
  return w;
}

}  // namespace edgevla::backends::cpu::groot_backbone
