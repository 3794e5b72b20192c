#include "runtime/backends/backend.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace edgevla::backends {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // backend, family, stage

struct Registry {
  std::mutex mu;
  std::map<Key, EngineFactory> engines;
  std::map<std::string, DeviceCheck> device_checks;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Directory holding this library: plugins are looked up beside it.
std::string own_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

bool has_backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& [key, f] : r.engines) {
    if (std::get<0>(key) == name) return true;
  }
  return false;
}

class RegisteredBackend final : public Backend {
 public:
  explicit RegisteredBackend(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Expected<std::unique_ptr<Engine>> create(const model::Model& model, std::string_view stage,
                                           const EngineOptions& options) override {
    EngineFactory factory;
    std::string pairs;
    {
      Registry& r = registry();
      std::lock_guard lock(r.mu);
      for (const auto& [key, f] : r.engines) {
        if (std::get<0>(key) != name_) continue;
        if (std::get<1>(key) == model.family() && std::get<2>(key) == stage) factory = f;
        pairs += (pairs.empty() ? "" : ", ") + std::get<1>(key) + "/" + std::get<2>(key);
      }
    }
    if (!factory) {
      return not_found("backend '" + name_ + "' has no engine for stage '" + std::string(stage) + "' of model family '" +
                       std::string(model.family()) + "' (it has: " + pairs + "); pick another backend for this node");
    }
    return factory(model, options);
  }

  Status check_device(const model::StageSpec& stage, const EngineOptions& options, std::string& note) override {
    DeviceCheck check;
    {
      Registry& r = registry();
      std::lock_guard lock(r.mu);
      if (auto it = r.device_checks.find(name_); it != r.device_checks.end()) check = it->second;
    }
    if (!check) {
      note = "no device to check";
      return Status::ok();
    }
    return check(stage, options, note);
  }

 private:
  std::string name_;
};

}  // namespace

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kAuto: return "auto";
    case Precision::kF32: return "f32";
    case Precision::kBF16: return "bf16";
  }
  return "auto";
}

Expected<Precision> parse_precision(std::string_view name) {
  if (name == "auto" || name.empty()) return Precision::kAuto;
  if (name == "f32" || name == "float32") return Precision::kF32;
  if (name == "bf16" || name == "bfloat16") return Precision::kBF16;
  return invalid_argument("precision '" + std::string(name) + "' is unknown (auto, f32 or bf16)");
}

namespace {
// A device buffer met before any node loaded its backend: load the plugin that registers the
// device's allocator.
const bool kAllocatorLoaderRegistered = [] {
  register_allocator_loader([](DeviceType type) {
    if (type == DeviceType::kCuda) (void)make_backend("cuda");
  });
  return true;
}();
}  // namespace

bool register_device_check(std::string backend, DeviceCheck check) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.device_checks[std::move(backend)] = std::move(check);
  return true;
}

bool register_engine(std::string backend, std::string family, std::string stage, EngineFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.engines[{std::move(backend), std::move(family), std::move(stage)}] = std::move(factory);
  return true;
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::set<std::string> names;
  for (const auto& [key, f] : r.engines) names.insert(std::get<0>(key));
  return {names.begin(), names.end()};
}

Expected<std::unique_ptr<Backend>> make_backend(std::string_view name) {
  std::string load_error;
  if (!has_backend(name)) {
    // Loading the plugin runs its static registration.
    const std::string file = own_dir() + "libedgevla_backend_" + std::string(name) + ".so";
    if (dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* err = dlerror();
      load_error = err != nullptr ? err : "unknown error";
    }
  }
  if (!has_backend(name)) {
    // Registered ones, and the plugins next to this library.
    std::set<std::string> names;
    for (const auto& n : backend_names()) names.insert(n);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(own_dir().empty() ? "." : own_dir(), ec)) {
      const std::string f = e.path().filename().string();
      constexpr std::string_view kPrefix = "libedgevla_backend_";
      if (f.starts_with(kPrefix) && f.ends_with(".so")) names.insert(f.substr(kPrefix.size(), f.size() - kPrefix.size() - 3));
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return not_found("backend '" + std::string(name) + "' is not available (available: " +
                     (known.empty() ? "none" : known) + "; loading its plugin failed: " + load_error +
                     "). Set the node's backend param to one of those, or build edgevla with that "
                     "backend enabled");
  }
  return std::unique_ptr<Backend>(new RegisteredBackend(std::string(name)));
}

Status check_cpu_options(const EngineOptions& options, std::string_view what, std::int64_t needed_bytes) {
  if (options.device != "cpu") {
    return invalid_argument(std::string(what) + ": the cpu backend runs on device 'cpu', not '" + options.device +
                            "' (set backend: cuda for a GPU, or device: cpu)");
  }
  if (options.precision == Precision::kBF16) {
    return invalid_argument(std::string(what) +
                            ": the cpu backend computes in f32 only (bf16/f16 weights are converted as it multiplies); "
                            "set precision: f32 or auto, or use backend: cuda for bf16");
  }
  if (options.memory_budget_bytes > 0 && needed_bytes > options.memory_budget_bytes) {
    return resource_exhausted(std::string(what) + " needs " + std::to_string(needed_bytes >> 20) +
                              " MiB of weights but its memory budget is " +
                              std::to_string(options.memory_budget_bytes >> 20) +
                              " MiB; raise the budget or use a smaller checkpoint");
  }
  return Status::ok();
}

}  // namespace edgevla::backends
