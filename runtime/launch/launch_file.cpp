#include "runtime/launch/launch_file.hpp"

#include <grp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "runtime/node/host.hpp"
#include "runtime/node/node_registry.hpp"
#include "runtime/util/edit_distance.hpp"
#include "runtime/util/log.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;

std::string where(const std::string& file, const YAML::Node& n) {
  return file + ":" + std::to_string(n.Mark().line + 1);
}

Status error_at(const std::string& file, const YAML::Node& n, const std::string& msg) {
  return invalid_argument(where(file, n) + ": " + msg);
}

// Rejects keys outside `allowed`, naming the first unknown one.
Status check_keys(const std::string& file, const YAML::Node& map, const std::set<std::string>& allowed,
                  const std::string& what) {
  for (const auto& kv : map) {
    const auto key = kv.first.as<std::string>();
    if (!allowed.contains(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return error_at(file, kv.first, "unknown key '" + key + "' in " + what + " (allowed: " + list + ")");
    }
  }
  return Status::ok();
}

Expected<std::string> get_string(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) return error_at(file, n, "'" + key + "' must be a string");
  return n.Scalar();
}

Expected<bool> get_bool(const std::string& file, const YAML::Node& n, const std::string& key) {
  auto v = param_from_yaml(n, ParamType::kBool);
  if (!v) return error_at(file, n, "'" + key + "' " + v.status().message());
  return std::get<bool>(*v);
}

Expected<double> get_number(const std::string& file, const YAML::Node& n, const std::string& key) {
  auto v = param_from_yaml(n, ParamType::kDouble);
  if (!v) return error_at(file, n, "'" + key + "' " + v.status().message());
  return std::get<double>(*v);
}

Expected<std::vector<std::string>> get_strings(const std::string& file, const YAML::Node& n,
                                               const std::string& key) {
  if (!n.IsSequence()) return error_at(file, n, "'" + key + "' must be a list");
  std::vector<std::string> out;
  for (const auto& e : n) {
    if (!e.IsScalar()) return error_at(file, e, "'" + key + "' entries must be strings");
    out.push_back(e.Scalar());
  }
  return out;
}

// Group names or numeric gids, resolved now so a misspelt group stops the launch here and not
// as a refused connection later.
Expected<std::vector<std::uint32_t>> get_gids(const std::string& file, const YAML::Node& n,
                                              const std::string& key) {
  EDGEVLA_ASSIGN_OR_RETURN(auto names, get_strings(file, n, key));
  std::vector<std::uint32_t> gids;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    std::uint32_t gid = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), gid);
    if (!name.empty() && ec == std::errc() && end == name.data() + name.size()) {
      gids.push_back(gid);
      continue;
    }
    group grp{};
    group* found = nullptr;
    std::vector<char> buf(16384);
    int rc = 0;
    while ((rc = ::getgrnam_r(name.c_str(), &grp, buf.data(), buf.size(), &found)) == ERANGE &&
           buf.size() < (1u << 24)) {
      buf.resize(buf.size() * 2);  // a group with very many members
    }
    if (rc != 0 || found == nullptr) {
      return error_at(file, n[i],
                      "'" + key + "': no group named '" + name +
                          "' on this machine; name a group that exists (getent group) or give its "
                          "numeric gid");
    }
    gids.push_back(found->gr_gid);
  }
  return gids;
}

std::string relative_to(const std::string& file, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return (fs::path(file).parent_path() / path).lexically_normal().string();
}

}  // namespace

Expected<ParamsFile> load_params_file(const std::string& path, const std::string& referenced_from) {
  EDGEVLA_ASSIGN_OR_RETURN(YAML::Node root, load_yaml_file(path, referenced_from));
  if (root.IsNull()) return ParamsFile{path, YAML::Node(YAML::NodeType::Map)};
  if (!root.IsMap()) return error_at(path, root, "a params file must map node names to their params");
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) return error_at(path, kv.first, "a node name must be a plain string (a key: of the file)");
    const std::string node = kv.first.Scalar();
    if (!kv.second.IsMap()) return error_at(path, kv.second, "params of node '" + node + "' must be a map");
    for (const auto& p : kv.second) {
      if (!p.first.IsScalar()) {
        return error_at(path, p.first, "a param name of node '" + node + "' must be a plain string (key: value)");
      }
    }
  }
  return ParamsFile{path, root};
}

namespace {

// `${NAME}` and `${NAME:-default}` in a string value are replaced by the environment
// variable (so one launch file serves several checkpoints or machines); `$$` is a literal `$`.
Expected<std::string> expand_env(const std::string& text, const std::string& origin) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      out += text[i];
    } else if (i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (i + 1 < text.size() && text[i + 1] == '{') {
      const std::size_t close = text.find('}', i + 2);
      if (close == std::string::npos) {
        return invalid_argument(origin + ": unclosed '${' in '" + text + "' (write $$ for a literal $)");
      }
      const std::string body = text.substr(i + 2, close - i - 2);
      const std::size_t dflt = body.find(":-");
      const std::string name = body.substr(0, dflt);
      if (name.empty() || name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                              std::string::npos) {
        return invalid_argument(origin + ": '${" + body + "}' is not an environment variable name");
      }
      const char* value = std::getenv(name.c_str());
      if (value != nullptr && *value != '\0') {
        out += value;
      } else if (dflt != std::string::npos) {
        out += body.substr(dflt + 2);
      } else {
        return invalid_argument(origin + ": environment variable " + name +
                                " is not set (export it, or write ${" + name + ":-default})");
      }
      i = close;
    } else {
      out += '$';
    }
  }
  return out;
}

Expected<YAML::Node> expand_env(const YAML::Node& value, const std::string& origin) {
  if (value.IsScalar()) {
    const std::string& text = value.Scalar();
    if (text.find('$') == std::string::npos) return value;
    EDGEVLA_ASSIGN_OR_RETURN(std::string expanded, expand_env(text, origin));
    // Re-read, so `${RATE:-30}` is still a number.
    try {
      return YAML::Load(expanded);
    } catch (const YAML::Exception&) {
      return YAML::Node(expanded);
    }
  }
  if (value.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& e : value) {
      EDGEVLA_ASSIGN_OR_RETURN(YAML::Node x, expand_env(e, origin));
      out.push_back(x);
    }
    return out;
  }
  return value;
}

Status apply_params(NodeOptions& node, const YAML::Node& params, const std::string& file) {
  for (const auto& kv : params) {
    const std::string origin = where(file, kv.first);
    EDGEVLA_ASSIGN_OR_RETURN(YAML::Node value, expand_env(kv.second, origin));
    node.params[kv.first.as<std::string>()] = ParamOverride{value, origin};
  }
  return Status::ok();
}

// A group's or a node's upstream_spin_us, in range.
Expected<std::int64_t> get_upstream_spin_us(const std::string& file, const YAML::Node& n) {
  EDGEVLA_ASSIGN_OR_RETURN(double v, get_number(file, n, "upstream_spin_us"));
  if (!(v >= 0 && v <= 10'000'000)) {
    return error_at(file, n,
                    "'upstream_spin_us' must be between 0 (off) and 10000000 microseconds (the longest an "
                    "executor spins while a node upstream of it runs a callback)");
  }
  return static_cast<std::int64_t>(v);
}

struct Parser {
  std::vector<std::string> stack;  // include chain, for cycle detection
  LaunchDescription out;
  std::vector<ParamsFile> params_files;  // global, in order of appearance

  Status parse_node(const std::string& file, const YAML::Node& n, GroupDescription& group) {
    if (!n.IsMap()) return error_at(file, n, "a node must be a map with at least 'name' and 'type'");
    EDGEVLA_RETURN_IF_ERROR(check_keys(
        file, n, {"name", "type", "namespace", "params", "params_files", "remap", "qos", "upstream_spin_us"}, "a node"));
    if (!n["name"]) return error_at(file, n, "node lacks 'name'");
    if (!n["type"]) return error_at(file, n, "node lacks 'type'");
    NodeOptions o;
    EDGEVLA_ASSIGN_OR_RETURN(o.name, get_string(file, n["name"], "name"));
    EDGEVLA_ASSIGN_OR_RETURN(o.type, get_string(file, n["type"], "type"));
    if (o.name.empty() || o.name.find_first_of("/. \t") != std::string::npos) {
      return error_at(file, n["name"], "node name '" + o.name + "' must be non-empty without '/', '.' or blanks");
    }
    o.origin = where(file, n);
    if (n["namespace"]) {
      EDGEVLA_ASSIGN_OR_RETURN(o.ns, get_string(file, n["namespace"], "namespace"));
    }
    if (const auto pf = n["params_files"]) {
      EDGEVLA_ASSIGN_OR_RETURN(auto files, get_strings(file, pf, "params_files"));
      for (const auto& f : files) {
        EDGEVLA_ASSIGN_OR_RETURN(ParamsFile p, load_params_file(relative_to(file, f), where(file, pf)));
        // Keyed by node name like every params file; it may hold other nodes' sections too
        // (one file shared by several nodes), but it must hold this node's.
        const YAML::Node mine = p.root[o.name];
        if (!mine) {
          return error_at(file, pf, "params file '" + p.path + "' has no section for node '" + o.name +
                                        "' (params files are keyed by node name)");
        }
        EDGEVLA_RETURN_IF_ERROR(apply_params(o, mine, p.path));
      }
    }
    if (const auto p = n["params"]) {
      if (!p.IsMap()) return error_at(file, p, "'params' must be a map of key: value");
      EDGEVLA_RETURN_IF_ERROR(apply_params(o, p, file));
    }
    if (n["upstream_spin_us"]) {
      EDGEVLA_ASSIGN_OR_RETURN(o.upstream_spin_us, get_upstream_spin_us(file, n["upstream_spin_us"]));
    }
    if (const auto r = n["remap"]) {
      if (!r.IsMap()) return error_at(file, r, "'remap' must map declared names to topics");
      for (const auto& kv : r) o.remaps[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    if (const auto q = n["qos"]) {
      if (!q.IsMap()) return error_at(file, q, "'qos' must map subscription names to QoS");
      for (const auto& kv : q) {
        auto qos = parse_qos(kv.second.as<std::string>(""));
        if (!qos) return error_at(file, kv.second, qos.status().message());
        o.qos[kv.first.as<std::string>()] = *qos;
      }
    }
    group.nodes.push_back(std::move(o));
    return Status::ok();
  }

  Status parse_group(const std::string& file, const YAML::Node& n) {
    if (!n.IsMap()) return error_at(file, n, "a group must be a map");
    for (const char* old : {"tcp_listen", "tcp_peers"}) {
      if (n[old]) {
        return error_at(file, n[old],
                        "'" + std::string(old) +
                            "' is now part of the group's tcp section: tcp: {listen: 7447, secret_key: "
                            "keys/NAME.secret, allowed_keys: [...], peers: [{endpoint: ..., server_key: ...}]} "
                            "(or insecure: true for plaintext)");
      }
    }
    EDGEVLA_RETURN_IF_ERROR(
        check_keys(file, n,
                   {"name", "respawn", "respawn_delay_s", "max_respawns", "heartbeat_timeout_s", "required", "tcp",
                    "allowed_groups", "shm_pool_mb", "spin_us", "upstream_spin_us", "nodes"},
                   "a group"));
    GroupDescription g;
    g.origin = where(file, n);
    if (!n["name"]) return error_at(file, n, "group lacks 'name'");
    EDGEVLA_ASSIGN_OR_RETURN(g.name, get_string(file, n["name"], "name"));
    if (n["respawn"]) {
      EDGEVLA_ASSIGN_OR_RETURN(g.respawn, get_bool(file, n["respawn"], "respawn"));
    }
    if (n["required"]) {
      EDGEVLA_ASSIGN_OR_RETURN(g.required, get_bool(file, n["required"], "required"));
    }
    if (n["respawn_delay_s"]) {
      EDGEVLA_ASSIGN_OR_RETURN(g.respawn_delay_s, get_number(file, n["respawn_delay_s"], "respawn_delay_s"));
      if (!(g.respawn_delay_s >= 0 && g.respawn_delay_s <= 3600)) {
        return error_at(file, n["respawn_delay_s"], "'respawn_delay_s' must be between 0 and 3600 seconds");
      }
    }
    if (n["heartbeat_timeout_s"]) {
      EDGEVLA_ASSIGN_OR_RETURN(g.heartbeat_timeout_s,
                               get_number(file, n["heartbeat_timeout_s"], "heartbeat_timeout_s"));
      if (!(g.heartbeat_timeout_s == 0 || (g.heartbeat_timeout_s >= 0.2 && g.heartbeat_timeout_s <= 3600))) {
        return error_at(file, n["heartbeat_timeout_s"],
                        "'heartbeat_timeout_s' must be 0 (off) or between 0.2 and 3600 seconds");
      }
    }
    if (n["max_respawns"]) {
      EDGEVLA_ASSIGN_OR_RETURN(double v, get_number(file, n["max_respawns"], "max_respawns"));
      if (!(v >= 0 && v <= 1000000 && std::floor(v) == v)) {
        return error_at(file, n["max_respawns"], "'max_respawns' must be a whole number >= 0 (0: never restart)");
      }
      g.max_respawns = static_cast<int>(v);
    }
    if (n["shm_pool_mb"]) {
      EDGEVLA_ASSIGN_OR_RETURN(double v, get_number(file, n["shm_pool_mb"], "shm_pool_mb"));
      // Up to 1 TiB: a bound that keeps the byte count (and the cast) in range.
      if (!(v >= 1 && v <= (1 << 20) && std::floor(v) == v)) {
        return error_at(file, n["shm_pool_mb"], "'shm_pool_mb' must be a whole number of MB from 1 to 1048576");
      }
      g.shm_pool_mb = static_cast<std::int64_t>(v);
    }
    if (n["spin_us"]) {
      EDGEVLA_ASSIGN_OR_RETURN(double v, get_number(file, n["spin_us"], "spin_us"));
      if (!(v >= 0 && v <= 1'000'000)) {
        return error_at(file, n["spin_us"], "'spin_us' must be between 0 (no spinning) and 1000000 microseconds");
      }
      g.spin_us = static_cast<std::int64_t>(v);
    }
    if (n["upstream_spin_us"]) {
      EDGEVLA_ASSIGN_OR_RETURN(g.upstream_spin_us, get_upstream_spin_us(file, n["upstream_spin_us"]));
    }
    if (n["tcp"]) EDGEVLA_RETURN_IF_ERROR(parse_tcp(file, n["tcp"], g));
    if (n["allowed_groups"]) {
      EDGEVLA_ASSIGN_OR_RETURN(g.allowed_gids,
                               get_gids(file, n["allowed_groups"], "allowed_groups"));
    }
    if (!n["nodes"] || !n["nodes"].IsSequence()) return error_at(file, n, "group '" + g.name + "' needs a 'nodes' list");
    for (const auto& node : n["nodes"]) EDGEVLA_RETURN_IF_ERROR(parse_node(file, node, g));
    for (const auto& other : out.groups) {
      if (other.name == g.name) {
        return error_at(file, n["name"], "group '" + g.name + "' is declared twice (first at " + other.origin + ")");
      }
    }
    out.groups.push_back(std::move(g));
    return Status::ok();
  }

  // A group's tcp section. Key files are read now (relative to the launch file), so a missing
  // key or a secret file open to others stops the launch before anything starts.
  Status parse_tcp(const std::string& file, const YAML::Node& n, GroupDescription& g) {
    if (!n.IsMap()) {
      return error_at(file, n, "'tcp' must be a map (listen, secret_key, allowed_keys, peers, insecure)");
    }
    EDGEVLA_RETURN_IF_ERROR(check_keys(file, n, {"listen", "peers", "secret_key", "allowed_keys", "insecure"},
                                       "a group's tcp section"));
    TcpOptions& t = g.tcp;
    const auto path = [&](const YAML::Node& v, const std::string& key) -> Expected<std::string> {
      EDGEVLA_ASSIGN_OR_RETURN(std::string p, get_string(file, v, key));
      EDGEVLA_ASSIGN_OR_RETURN(p, expand_env(p, where(file, v)));
      return relative_to(file, p);
    };
    if (n["listen"]) {
      EDGEVLA_ASSIGN_OR_RETURN(t.listen, get_string(file, n["listen"], "listen"));
      EDGEVLA_ASSIGN_OR_RETURN(t.listen, expand_env(t.listen, where(file, n["listen"])));
    }
    if (n["insecure"]) {
      EDGEVLA_ASSIGN_OR_RETURN(t.insecure, get_bool(file, n["insecure"], "insecure"));
    }
    if (n["secret_key"]) {
      EDGEVLA_ASSIGN_OR_RETURN(std::string p, path(n["secret_key"], "secret_key"));
      auto pair = read_secret_key_file(p);
      if (!pair) return error_at(file, n["secret_key"], pair.status().message());
      t.key = std::move(*pair);
    }
    if (const auto a = n["allowed_keys"]) {
      if (!a.IsSequence()) {
        return error_at(file, a, "'allowed_keys' must be a list of public key files (keys/NAME.public)");
      }
      for (const auto& e : a) {
        EDGEVLA_ASSIGN_OR_RETURN(std::string p, path(e, "allowed_keys"));
        auto key = read_public_key_file(p);
        if (!key) return error_at(file, e, key.status().message());
        t.allowed_keys.push_back(std::move(*key));
      }
    }
    if (const auto peers = n["peers"]) {
      if (!peers.IsSequence()) {
        return error_at(file, peers, "'peers' must be a list of {endpoint: tcp://HOST:PORT, server_key: keys/NAME.public}");
      }
      for (const auto& e : peers) {
        TcpPeer peer;
        if (e.IsScalar()) {  // plaintext shorthand: the endpoint alone
          EDGEVLA_ASSIGN_OR_RETURN(peer.endpoint, get_string(file, e, "peers"));
        } else if (e.IsMap()) {
          EDGEVLA_RETURN_IF_ERROR(check_keys(file, e, {"endpoint", "server_key"}, "a tcp peer"));
          if (!e["endpoint"]) return error_at(file, e, "tcp peer lacks 'endpoint' (tcp://HOST:PORT)");
          EDGEVLA_ASSIGN_OR_RETURN(peer.endpoint, get_string(file, e["endpoint"], "endpoint"));
          if (e["server_key"]) {
            EDGEVLA_ASSIGN_OR_RETURN(std::string p, path(e["server_key"], "server_key"));
            auto key = read_public_key_file(p);
            if (!key) return error_at(file, e["server_key"], key.status().message());
            peer.server_key = std::move(*key);
          }
        } else {
          return error_at(file, e, "a tcp peer must be {endpoint: tcp://HOST:PORT, server_key: keys/NAME.public}");
        }
        EDGEVLA_ASSIGN_OR_RETURN(peer.endpoint, expand_env(peer.endpoint, where(file, e)));
        t.peers.push_back(std::move(peer));
      }
    }
    if (Status s = check_tcp_options(t); !s.is_ok()) {
      return error_at(file, n, "group '" + g.name + "': " + s.message());
    }
    return Status::ok();
  }

  // `record:` runs a bag_recorder node in a process of its own, started first and stopped
  // last so it sees everything; its keys are that node's params (output, topics, all, ...).
  Status parse_record(const std::string& file, const YAML::Node& rec) {
    if (!rec.IsMap()) return error_at(file, rec, "'record' must be a map of recorder params (output, topics|all, ...)");
    for (const auto& g : out.groups) {
      if (g.name == "record") return error_at(file, rec, "only one 'record' section is allowed (first at " + g.origin + ")");
    }
    GroupDescription g;
    g.name = "record";
    g.origin = where(file, rec);
    g.required = false;  // the robot goes on without it; its death is an error all the same
    NodeOptions o;
    o.name = "recorder";
    o.type = "bag_recorder";
    o.origin = where(file, rec);
    EDGEVLA_RETURN_IF_ERROR(apply_params(o, rec, file));
    g.nodes.push_back(std::move(o));
    out.groups.insert(out.groups.begin(), std::move(g));
    return Status::ok();
  }

  Status parse_file(const std::string& path, const std::string& referenced_from) {
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    for (const auto& s : stack) {
      if (s == canonical) {
        std::string chain;
        for (const auto& c : stack) chain += c + " -> ";
        return invalid_argument("include cycle: " + chain + canonical);
      }
    }
    EDGEVLA_ASSIGN_OR_RETURN(YAML::Node root, load_yaml_file(path, referenced_from));
    if (!root.IsMap()) return error_at(path, root, "a launch file must be a map");
    EDGEVLA_RETURN_IF_ERROR(check_keys(path, root, {"include", "plugins", "params_files", "groups", "nodes", "record"},
                                       "a launch file"));
    stack.push_back(canonical);
    if (const auto inc = root["include"]) {
      EDGEVLA_ASSIGN_OR_RETURN(auto files, get_strings(path, inc, "include"));
      for (const auto& f : files) EDGEVLA_RETURN_IF_ERROR(parse_file(relative_to(path, f), where(path, inc)));
    }
    if (const auto pl = root["plugins"]) {
      EDGEVLA_ASSIGN_OR_RETURN(auto files, get_strings(path, pl, "plugins"));
      for (const auto& f : files) out.plugins.push_back(relative_to(path, f));
    }
    if (const auto pf = root["params_files"]) {
      EDGEVLA_ASSIGN_OR_RETURN(auto files, get_strings(path, pf, "params_files"));
      for (const auto& f : files) {
        EDGEVLA_ASSIGN_OR_RETURN(ParamsFile p, load_params_file(relative_to(path, f), where(path, pf)));
        params_files.push_back(std::move(p));
      }
    }
    if (const auto groups = root["groups"]) {
      if (!groups.IsSequence()) return error_at(path, groups, "'groups' must be a list");
      for (const auto& g : groups) EDGEVLA_RETURN_IF_ERROR(parse_group(path, g));
    }
    if (const auto nodes = root["nodes"]) {
      if (!nodes.IsSequence()) return error_at(path, nodes, "'nodes' must be a list");
      YAML::Node g(YAML::NodeType::Map);
      g["name"] = "main";
      g["nodes"] = nodes;
      EDGEVLA_RETURN_IF_ERROR(parse_group(path, g));
    }
    if (const auto rec = root["record"]) EDGEVLA_RETURN_IF_ERROR(parse_record(path, rec));
    stack.pop_back();
    return Status::ok();
  }

  NodeOptions* find_node(const std::string& name) {
    for (auto& g : out.groups) {
      for (auto& n : g.nodes) {
        if (n.name == name) return &n;
      }
    }
    return nullptr;
  }

  // Global params files sit below each node's own params: they fill only keys not yet set.
  Status apply_global_params() {
    for (const auto& pf : params_files) {
      for (const auto& kv : pf.root) {
        const std::string node = kv.first.Scalar();  // load_params_file checked it is a scalar
        NodeOptions* o = find_node(node);
        if (o == nullptr) {
          // One params file often serves several launch files; a section for a node this
          // launch does not run is not an error, but is said (it may be a misspelt name).
          logger().warn("{}: params for node '{}', which this launch does not run (ignored)", where(pf.path, kv.first),
                        node);
          continue;
        }
        for (const auto& p : kv.second) {
          const std::string key = p.first.Scalar();
          if (o->params.contains(key)) continue;
          const std::string origin = where(pf.path, p.first);
          EDGEVLA_ASSIGN_OR_RETURN(YAML::Node value, expand_env(p.second, origin));
          o->params[key] = ParamOverride{value, origin};
        }
      }
    }
    return Status::ok();
  }
};

Status apply_sets(LaunchDescription& d, const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    const auto dot = s.find('.');
    const auto eq = s.find('=');
    if (dot == std::string::npos || eq == std::string::npos || dot > eq || dot == 0 || eq == dot + 1) {
      return invalid_argument("--set '" + s + "' must look like node.key=value");
    }
    const std::string node = s.substr(0, dot);
    const std::string key = s.substr(dot + 1, eq - dot - 1);
    NodeOptions* target = nullptr;
    for (auto& g : d.groups) {
      for (auto& n : g.nodes) {
        if (n.name == node) target = &n;
      }
    }
    if (target == nullptr) return invalid_argument("--set '" + s + "': the launch has no node named '" + node + "'");
    YAML::Node value;
    try {
      value = YAML::Load(s.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      return invalid_argument("--set '" + s + "': value is not valid YAML: " + e.msg);
    }
    target->params[key] = ParamOverride{value, "--set " + s};
  }
  return Status::ok();
}

}  // namespace

Expected<LaunchDescription> parse_launch(const std::string& path, const std::vector<std::string>& sets) {
  Parser p;
  p.out.file = path;
  try {
    EDGEVLA_RETURN_IF_ERROR(p.parse_file(path, ""));
  } catch (const YAML::Exception& e) {
    // A value of the wrong YAML kind somewhere (e.g. a list where a string belongs).
    return invalid_argument((p.stack.empty() ? path : p.stack.back()) + ":" +
                            std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (p.out.groups.empty()) return invalid_argument(path + ": the launch declares no nodes");
  std::map<std::string, std::string> seen;
  for (const auto& g : p.out.groups) {
    for (const auto& n : g.nodes) {
      if (auto it = seen.find(n.name); it != seen.end()) {
        return invalid_argument(n.origin + ": node name '" + n.name + "' is already used at " + it->second);
      }
      seen[n.name] = n.origin;
    }
  }
  try {
    EDGEVLA_RETURN_IF_ERROR(p.apply_global_params());
  } catch (const YAML::Exception& e) {
    // load_params_file checked the files' shape; this is the net under that check.
    return invalid_argument("a params file of " + path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  EDGEVLA_RETURN_IF_ERROR(apply_sets(p.out, sets));
  return p.out;
}

namespace {

// "did you mean 'x'?" with the closest of `known`, or the list when nothing is close.
std::string closest(const std::string& wrong, const std::set<std::string>& known) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(wrong, k);
    if (d < best_d) best_d = d, best = k;
  }
  std::string all;
  for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
  if (known.empty()) return "it has none";
  if (best_d <= std::max<std::size_t>(2, wrong.size() / 3)) return "did you mean '" + best + "'? (known: " + all + ")";
  return "known: " + all;
}

}  // namespace

Expected<LaunchDescription> load_launch(const std::string& path, const std::vector<std::string>& sets) {
  EDGEVLA_ASSIGN_OR_RETURN(LaunchDescription d, parse_launch(path, sets));
  for (const auto& plugin : d.plugins) {
    EDGEVLA_RETURN_IF_ERROR(NodeRegistry::instance().load_plugin(plugin).with_context(path));
  }
  // Every topic some node of the launch publishes or subscribes to, plus the hosts' status.
  std::set<std::string> topics = {"/edgevla/status"};
  const NodeOptions* recorder = nullptr;
  for (auto& g : d.groups) {
    for (const auto& n : g.nodes) {
      auto run = dry_run(n);
      if (!run) return run.status().with_context(n.origin);
      g.load_bytes = std::max(g.load_bytes, run->load_bytes);
      topics.insert(run->topics.begin(), run->topics.end());
      if (n.type == "bag_recorder") recorder = &n;
      // A remap key names one of the node's publishers or subscriptions (or the topic one
      // resolves to); a typo would leave the node on its default topic, unnoticed.
      std::set<std::string> names(run->names.begin(), run->names.end());
      for (const auto& [key, topic] : n.remaps) {
        const bool known = names.contains(key) ||
                           std::find(run->default_topics.begin(), run->default_topics.end(), key) != run->default_topics.end();
        if (!known) {
          return invalid_argument(n.origin + ": node '" + n.name + "' (type " + n.type + ") has remap key '" + key +
                                  "' that matches none of its publishers or subscriptions; " + closest(key, names));
        }
      }
    }
  }
  // Recorded topics that nothing in the launch publishes or subscribes to would record nothing.
  if (recorder != nullptr) {
    if (auto it = recorder->params.find("topics"); it != recorder->params.end() && it->second.value.IsSequence()) {
      for (const auto& t : it->second.value) {
        const std::string topic = t.as<std::string>("");
        if (!topics.contains(topic)) {
          return invalid_argument(recorder->origin + ": record topic '" + topic +
                                  "' is neither published nor subscribed by any node of this launch; " +
                                  closest(topic, topics));
        }
      }
    }
  }
  return d;
}

std::int64_t effective_upstream_spin_us(const GroupDescription& group, unsigned cores) {
  return cores >= kUpstreamSpinMinCores ? group.upstream_spin_us : 0;
}

}  // namespace edgevla
