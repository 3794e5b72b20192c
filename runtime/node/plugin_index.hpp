// Node plugins found by type name, so a launch file can say `type: my_gripper` for a node
// built in another repository without listing its library under `plugins:`.
//
// A plugin folder holds node plugin libraries and, for each, an index file `<name>.nodes`:
//
//   library: libmy_gripper.so     # relative to the index file's folder, or absolute
//   types: [my_gripper]           # the node types the library registers
//
// (edgevla_add_node_plugin() in the CMake package writes and installs both.) The folders
// searched, in order: each entry of EDGEVLA_PLUGIN_PATH (colon-separated), then
// <libdir>/edgevla/plugins beside libedgevla_runtime.so, the installed package's own. The
// first folder that indexes a type provides it, so a folder earlier on EDGEVLA_PLUGIN_PATH
// overrides an installed plugin; two index files of one folder naming one type is an error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla {

struct NodePluginLocation {
  std::string library;  // the plugin library, absolute
  std::string index;    // the index file that names the type
};

// EDGEVLA_PLUGIN_PATH's entries (empty ones skipped), then the installed plugin folder.
std::vector<std::string> node_plugin_folders();

// The plugin library that provides `type`, looking through `folders` in order. Errors name the
// type, every folder searched and the fix; a malformed index in a searched folder, an index
// naming a library that is not there and two indexes of one folder naming `type` are errors.
Expected<NodePluginLocation> find_node_plugin(std::string_view type,
                                              const std::vector<std::string>& folders);

struct IndexedNodeType {
  std::string type;
  NodePluginLocation where;
};

// Every type the indexes of `folders` name, each with the folder that provides it (the first),
// in folder order and by name within a folder; for `edgevla node types`. Errors as above.
Expected<std::vector<IndexedNodeType>> list_node_plugins(const std::vector<std::string>& folders);

}  // namespace edgevla
