#include "runtime/node/node_registry.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace edgevla {

NodeRegistry& NodeRegistry::instance() {
  static NodeRegistry r;
  return r;
}

bool NodeRegistry::add(const std::string& type, NodeFactory factory, std::string description) {
  std::lock_guard lock(mu_);
  if (types_.contains(type)) {
    duplicate_errors_.push_back("node type '" + type + "' is registered twice");
    return false;
  }
  types_.emplace(type, Entry{std::move(factory), std::move(description)});
  return true;
}

Expected<std::unique_ptr<Node>> NodeRegistry::create(const NodeOptions& options) const {
  NodeFactory factory;
  {
    std::lock_guard lock(mu_);
    auto it = types_.find(options.type);
    if (it == types_.end()) {
      std::string known;
      for (const auto& [name, e] : types_) known += (known.empty() ? "" : ", ") + name;
      return not_found("node '" + options.name + "' has unknown type '" + options.type +
                       "'; known types: " + known +
                       " (a type from a plugin needs the plugin listed under 'plugins:')");
    }
    factory = it->second.factory;
  }
  try {
    auto node = factory(options);
    if (!node) return internal_error("factory of type '" + options.type + "' returned null");
    return node;
  } catch (const std::exception& e) {
    return internal_error("constructing node '" + options.name + "' (" + options.type +
                          ") threw: " + e.what());
  }
}

bool NodeRegistry::contains(const std::string& type) const {
  std::lock_guard lock(mu_);
  return types_.contains(type);
}

std::vector<std::pair<std::string, std::string>> NodeRegistry::types() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& [name, e] : types_) v.emplace_back(name, e.description);
  return v;
}

Status NodeRegistry::load_plugin(const std::string& path) {
  std::error_code ec;
  const auto canonical = std::filesystem::canonical(path, ec);
  if (ec) return not_found("plugin '" + path + "' does not exist");
  {
    std::lock_guard lock(mu_);
    if (plugins_.contains(canonical.string())) return Status::ok();
  }
  std::size_t errors_before;
  {
    std::lock_guard lock(mu_);
    errors_before = duplicate_errors_.size();
  }
  void* handle = ::dlopen(canonical.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    return unavailable("cannot load plugin '" + path + "': " + ::dlerror());
  }
  std::lock_guard lock(mu_);
  plugins_.emplace(canonical.string(), handle);
  if (duplicate_errors_.size() > errors_before) {
    return already_exists("plugin '" + path + "': " + duplicate_errors_.back() +
                          " (rename the plugin's type)");
  }
  return Status::ok();
}

}  // namespace edgevla
