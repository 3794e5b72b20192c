// Weight views every family's CPU engines build from a checkpoint: f32 vectors (norms, biases)
// converted once at load, Linears over the memory-mapped [out, in] matrices, and the SigLIP
// encoder layers that pi0's and GR00T's vision towers share key for key.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/backends/cpu/kernels.hpp"
#include "runtime/core/tensor.hpp"

namespace edgevla::backends::cpu {

// A family's checkpoint lookup: the tensor stored under `name`, or the checkpoint's error.
using WeightLookup = std::function<Expected<Tensor>(const std::string& name)>;

// The tensor under `name`, which must be contiguous (mapped weights always are).
Expected<Tensor> contiguous_weight(const WeightLookup& get, const std::string& name);
// `name` as f32 values, whatever its stored dtype.
Expected<std::vector<float>> weight_vector(const WeightLookup& get, const std::string& name);
// A Linear over "<name>.weight" [out, in...] (conv weights flatten to [out, c·p·p]), with
// "<name>.bias" when `bias`.
Expected<Linear> weight_linear(const WeightLookup& get, const std::string& name, bool bias);

// The same over any checkpoint type with `Expected<Tensor> weight(name) const`.
template <class Checkpoint>
WeightLookup lookup_in(const Checkpoint& ck) {
  return [&ck](const std::string& name) { return ck.weight(name); };
}
template <class Checkpoint>
Expected<Tensor> weight(const Checkpoint& ck, const std::string& name) {
  return contiguous_weight(lookup_in(ck), name);
}
template <class Checkpoint>
Expected<std::vector<float>> weight_vec(const Checkpoint& ck, const std::string& name) {
  return weight_vector(lookup_in(ck), name);
}
template <class Checkpoint>
Expected<Linear> weight_lin(const Checkpoint& ck, const std::string& name, bool bias) {
  return weight_linear(lookup_in(ck), name, bias);
}

// One SigLIP encoder layer: LayerNorms with bias, attention projections and MLP with biases.
struct VisionLayer {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
  Linear q, k, v, o, fc1, fc2;
};
// Layers "<prefix><i>." for i < depth (prefix ends in "encoder.layers.").
Status load_siglip_layers(const WeightLookup& get, const std::string& prefix, int depth,
                          std::vector<VisionLayer>& out);

}  // namespace edgevla::backends::cpu
