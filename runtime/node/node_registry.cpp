#include "runtime/node/node_registry.hpp"

#include <dlfcn.h>

#include <filesystem>

#include "runtime/node/plugin_index.hpp"

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

Expected<std::unique_ptr<Node>> NodeRegistry::create(const NodeOptions& options) {
  if (!contains(options.type)) {
    if (Status s = load_plugin_for_type(options.type); !s.is_ok()) {
      std::string known;
      for (const auto& [name, description] : types()) known += (known.empty() ? "" : ", ") + name;
      return Status(s.code(), "node '" + options.name + "': " + s.message() +
                                  " (known types: " + known + ")");
    }
  }
  NodeFactory factory;
  {
    std::lock_guard lock(mu_);
    factory = types_.at(options.type).factory;
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

Status NodeRegistry::load_plugin_for_type(const std::string& type) {
  EDGEVLA_ASSIGN_OR_RETURN(NodePluginLocation where, find_node_plugin(type, node_plugin_folders()));
  EDGEVLA_RETURN_IF_ERROR(
      load_plugin(where.library)
          .with_context("node type '" + type + "' (plugin index " + where.index + ")"));
  if (!contains(type)) {
    return not_found(
        "node type '" + type + "': plugin index " + where.index + " names library " +
        where.library +
        ", which loaded but registers no such type; make the index's types match the library's "
        "EDGEVLA_REGISTER_NODE names (rebuild and reinstall the plugin)");
  }
  return Status::ok();
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
