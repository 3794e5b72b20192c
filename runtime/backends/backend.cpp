#include "runtime/backends/backend.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>

namespace edgevla::backends {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendFactory, std::less<>> factories;
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

}  // namespace

std::string_view stage_name(Stage stage) {
  return stage == Stage::kBackbone ? "backbone" : "action_head";
}

bool register_backend(std::string name, BackendFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[std::move(name)] = std::move(factory);
  return true;
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, f] : r.factories) names.push_back(name);
  return names;
}

Expected<std::unique_ptr<Backend>> make_backend(std::string_view name) {
  auto find = [&]() -> BackendFactory {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    auto it = r.factories.find(name);
    return it == r.factories.end() ? BackendFactory{} : it->second;
  };
  BackendFactory factory = find();
  std::string load_error;
  if (!factory) {
    // Loading the plugin runs its static registration.
    const std::string file = own_dir() + "libedgevla_backend_" + std::string(name) + ".so";
    if (dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* err = dlerror();
      load_error = err != nullptr ? err : "unknown error";
    }
    factory = find();
  }
  if (!factory) {
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
  return factory();
}

}  // namespace edgevla::backends
