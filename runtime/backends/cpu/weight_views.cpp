#include "runtime/backends/cpu/weight_views.hpp"

namespace edgevla::backends::cpu {

Expected<Tensor> contiguous_weight(const WeightLookup& get, const std::string& name) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor t, get(name));
  if (!t.is_contiguous()) return internal_error("weight '" + name + "' is not contiguous");
  return t;
}

Expected<std::vector<float>> weight_vector(const WeightLookup& get, const std::string& name) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor t, contiguous_weight(get, name));
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  to_f32(t.dtype(), t.raw_data(), out.data(), t.numel());
  return out;
}

Expected<Linear> weight_linear(const WeightLookup& get, const std::string& name, bool bias) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor w, contiguous_weight(get, name + ".weight"));
  Linear l;
  l.w = w.raw_data();
  l.dtype = w.dtype();
  l.out = w.shape()[0];
  l.in = w.numel() / l.out;
  if (bias) {
    EDGEVLA_ASSIGN_OR_RETURN(l.bias, weight_vector(get, name + ".bias"));
  }
  return l;
}

Status load_siglip_layers(const WeightLookup& get, const std::string& prefix, int depth,
                          std::vector<VisionLayer>& out) {
  out.resize(static_cast<std::size_t>(depth));
  for (int i = 0; i < depth; ++i) {
    VisionLayer& l = out[static_cast<std::size_t>(i)];
    const std::string b = prefix + std::to_string(i) + ".";
    EDGEVLA_ASSIGN_OR_RETURN(l.ln1_w, weight_vector(get, b + "layer_norm1.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.ln1_b, weight_vector(get, b + "layer_norm1.bias"));
    EDGEVLA_ASSIGN_OR_RETURN(l.ln2_w, weight_vector(get, b + "layer_norm2.weight"));
    EDGEVLA_ASSIGN_OR_RETURN(l.ln2_b, weight_vector(get, b + "layer_norm2.bias"));
    EDGEVLA_ASSIGN_OR_RETURN(l.q, weight_linear(get, b + "self_attn.q_proj", true));
    EDGEVLA_ASSIGN_OR_RETURN(l.k, weight_linear(get, b + "self_attn.k_proj", true));
    EDGEVLA_ASSIGN_OR_RETURN(l.v, weight_linear(get, b + "self_attn.v_proj", true));
    EDGEVLA_ASSIGN_OR_RETURN(l.o, weight_linear(get, b + "self_attn.out_proj", true));
    EDGEVLA_ASSIGN_OR_RETURN(l.fc1, weight_linear(get, b + "mlp.fc1", true));
    EDGEVLA_ASSIGN_OR_RETURN(l.fc2, weight_linear(get, b + "mlp.fc2", true));
  }
  return Status::ok();
}

}  // namespace edgevla::backends::cpu
