// Node types by name. Built-in nodes register with EDGEVLA_REGISTER_NODE at static-init
// time; plugin shared libraries do the same when loaded: those a launch file lists under
// `plugins:`, and the one a plugin index names for a type asked for by name
// (runtime/node/plugin_index.hpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/node/node.hpp"

namespace edgevla {

using NodeFactory = std::function<std::unique_ptr<Node>(const NodeOptions&)>;

class NodeRegistry {
 public:
  static NodeRegistry& instance();

  // Registers `type`. A second registration of one name is recorded as an error and ignored
  // (reported by load_plugin), so one bad plugin cannot replace a built-in node.
  bool add(const std::string& type, NodeFactory factory, std::string description);
  // A type not registered yet is looked up in the plugin folders and its library loaded.
  Expected<std::unique_ptr<Node>> create(const NodeOptions& options);
  bool contains(const std::string& type) const;
  std::vector<std::pair<std::string, std::string>> types() const;  // name, description

  // dlopen()s a plugin; its node types register themselves. Errors name the file.
  Status load_plugin(const std::string& path);
  // Finds `type` in the plugin indexes (node_plugin_folders()) and loads its library. Errors
  // name the type, the folders searched and the fix.
  Status load_plugin_for_type(const std::string& type);

 private:
  struct Entry {
    NodeFactory factory;
    std::string description;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> types_;
  std::vector<std::string> duplicate_errors_;
  std::map<std::string, void*> plugins_;  // canonical path -> handle (never closed)
};

}  // namespace edgevla

#define EDGEVLA_REGISTER_NODE(Class, type_name, description)                          \
  static const bool EDGEVLA_CONCAT(edgevla_registered_, Class) =                      \
      ::edgevla::NodeRegistry::instance().add(                                        \
          type_name,                                                                  \
          [](const ::edgevla::NodeOptions& o) -> std::unique_ptr<::edgevla::Node> {    \
            return std::make_unique<Class>(o);                                        \
          },                                                                          \
          description)
