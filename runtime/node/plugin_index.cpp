#include "runtime/node/plugin_index.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "runtime/node/params.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;

// The folder of libedgevla_runtime.so, wherever it was installed (or built).
std::string runtime_library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&runtime_library_dir), &info) == 0 ||
      info.dli_fname == nullptr)
    return {};
  std::error_code ec;
  const fs::path lib = fs::canonical(info.dli_fname, ec);
  return ec ? std::string() : lib.parent_path().string();
}

struct IndexEntry {
  std::string index;
  std::string library;
  std::vector<std::string> types;
};

// One index file; errors name the file, the key and the expected form.
Expected<IndexEntry> read_index(const fs::path& file) {
  const std::string path = file.string();
  const std::string form = " (expected: library: libname.so, types: [type, ...])";
  EDGEVLA_ASSIGN_OR_RETURN(YAML::Node root, load_yaml_file(path, "plugin index"));
  if (!root.IsMap())
    return invalid_argument("plugin index '" + path + "' is not a YAML map" + form);
  IndexEntry e{path, {}, {}};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>("");
    if (key != "library" && key != "types") {
      return invalid_argument("plugin index '" + path + "' has unknown key '" + key + "'" + form);
    }
  }
  const YAML::Node lib = root["library"];
  if (!lib || !lib.IsScalar() || lib.as<std::string>("").empty()) {
    return invalid_argument("plugin index '" + path +
                            "' has no 'library' (the plugin's file name)" + form);
  }
  const fs::path lib_path(lib.as<std::string>());
  e.library = (lib_path.is_absolute() ? lib_path : file.parent_path() / lib_path)
                  .lexically_normal()
                  .string();
  const YAML::Node types = root["types"];
  if (!types || !types.IsSequence() || types.size() == 0) {
    return invalid_argument("plugin index '" + path +
                            "' has no 'types' list (the node types its library registers)" + form);
  }
  for (const auto& t : types) {
    const std::string name = t.IsScalar() ? t.as<std::string>("") : std::string();
    if (name.empty())
      return invalid_argument("plugin index '" + path +
                              "': every entry of 'types' must be a type name" + form);
    e.types.push_back(name);
  }
  return e;
}

// The index files of `folder`, sorted (so errors and results do not depend on directory order).
std::vector<fs::path> index_files(const fs::path& folder) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() == ".nodes" && entry.is_regular_file(ec))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<std::string> node_plugin_folders() {
  std::vector<std::string> folders;
  if (const char* env = std::getenv("EDGEVLA_PLUGIN_PATH"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string_view entry = rest.substr(0, colon);
      if (!entry.empty()) folders.emplace_back(entry);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  if (const std::string dir = runtime_library_dir(); !dir.empty())
    folders.push_back(dir + "/edgevla/plugins");
  return folders;
}

Expected<std::vector<IndexedNodeType>> list_node_plugins(const std::vector<std::string>& folders) {
  std::vector<IndexedNodeType> out;
  std::set<std::string> seen;  // types an earlier folder provides
  for (const auto& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;
    std::map<std::string, IndexEntry> here;
    for (const auto& file : index_files(folder)) {
      EDGEVLA_ASSIGN_OR_RETURN(IndexEntry e, read_index(file));
      for (const auto& type : e.types) {
        if (auto it = here.find(type); it != here.end()) {
          return already_exists("node type '" + type + "' is named by two plugin indexes in " +
                                folder + ": " + it->second.index + " and " + e.index +
                                "; remove the one that should not provide it");
        }
        here.emplace(type, e);
      }
    }
    for (const auto& [type, e] : here) {
      if (seen.insert(type).second) out.push_back({type, {e.library, e.index}});
    }
  }
  return out;
}

Expected<NodePluginLocation> find_node_plugin(std::string_view type,
                                              const std::vector<std::string>& folders) {
  std::string searched;
  for (const auto& folder : folders) {
    std::error_code ec;
    const bool is_dir = fs::is_directory(folder, ec);
    searched += (searched.empty() ? "" : ", ") + folder + (is_dir ? "" : " (no such folder)");
    if (!is_dir) continue;
    std::vector<IndexEntry> matches;
    for (const auto& file : index_files(folder)) {
      EDGEVLA_ASSIGN_OR_RETURN(IndexEntry e, read_index(file));
      if (std::find(e.types.begin(), e.types.end(), type) != e.types.end())
        matches.push_back(std::move(e));
    }
    if (matches.size() > 1) {
      return already_exists(
          "node type '" + std::string(type) + "' is named by two plugin indexes in " + folder +
          ": " + matches[0].index + " (" + matches[0].library + ") and " + matches[1].index + " (" +
          matches[1].library + "); remove the one that should not provide it");
    }
    if (matches.size() == 1) {
      if (!fs::is_regular_file(matches[0].library, ec)) {
        return not_found("node type '" + std::string(type) + "': plugin index " + matches[0].index +
                         " names library " + matches[0].library +
                         ", which does not exist; reinstall the plugin or remove its stale index");
      }
      return NodePluginLocation{matches[0].library, matches[0].index};
    }
  }
  return not_found(
      "node type '" + std::string(type) +
      "' is not built in and no plugin index (*.nodes) names it; plugin folders searched, in "
      "order: " +
      (searched.empty() ? std::string("none") : searched) +
      ". Install the node's plugin into one of them (edgevla_add_node_plugin in CMake), add the "
      "folder it is installed in to EDGEVLA_PLUGIN_PATH, or list its library under 'plugins:' in "
      "the "
      "launch file");
}

}  // namespace edgevla
