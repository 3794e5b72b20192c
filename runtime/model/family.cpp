#include "runtime/model/family.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

namespace edgevla::model {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

int frame_threads(int requested) {
  if (requested >= 1) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 4, 1, 4);
}

Expected<Tensor> image_tensor(const PreprocessInput& in, DType dtype, const Shape& shape) {
  if (!in.image_buffer) return Tensor::empty(dtype, shape);
  EDGEVLA_ASSIGN_OR_RETURN(Tensor t, in.image_buffer(dtype, shape));
  if (!t.defined() || t.dtype() != dtype || !(t.shape() == shape) || !t.is_contiguous() || !t.device().is_cpu()) {
    return internal_error("the image buffer given for a " + std::string(dtype_name(dtype)) + " " + shape.to_string() +
                          " image is " + (t.defined() ? std::string(dtype_name(t.dtype())) + " " + t.shape().to_string()
                                                      : std::string("empty")) +
                          " (a contiguous host tensor of that dtype and shape is needed)");
  }
  return t;
}

bool TensorSpec::accepts_dtype(DType t) const {
  return t == dtype || std::find(accepts.begin(), accepts.end(), t) != accepts.end();
}

Expected<const StageSpec*> Model::stage(std::string_view name) const {
  std::string known;
  for (const StageSpec& s : stages()) {
    if (s.name == name) return &s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  return not_found("model family '" + std::string(family()) + "' has no stage '" + std::string(name) +
                   "' (its stages: " + known + ")");
}

bool register_family(std::unique_ptr<Family> family) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::string name(family->name());
  r.families[name] = std::move(family);
  return true;
}

std::vector<std::string> family_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, f] : r.families) names.push_back(name);
  return names;
}

Expected<const Family*> find_family(std::string_view name, const std::string& dir) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::string known;
  for (const auto& [n, f] : r.families) known += (known.empty() ? "" : ", ") + n;
  if (name.empty() || name == "auto") {
    for (const auto& [n, f] : r.families) {
      if (f->recognizes(dir)) return f.get();
    }
    return not_found("'" + dir + "' is not a checkpoint of any model family edgevla knows (" + known +
                     ": no config.json or weights that one of them takes for its own); point 'checkpoint' at a checkpoint "
                     "folder (`edgevla model init` makes one)");
  }
  auto it = r.families.find(name);
  if (it == r.families.end()) {
    return not_found("model family '" + std::string(name) + "' is unknown (known: " + known + ")");
  }
  return it->second.get();
}

}  // namespace edgevla::model
