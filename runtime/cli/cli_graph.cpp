// `edgevla node ...` and `edgevla param ...`: introspection of a running graph through the
// registry and each process's control endpoint.
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <iostream>

#include "runtime/bus/control_client.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/cli/cli.hpp"
#include "runtime/node/node_registry.hpp"
#include "runtime/node/plugin_index.hpp"

namespace edgevla::cli {
namespace {

std::vector<RegistryEntry> entries() {
  auto reg = Registry::open(Registry::default_dir(Registry::default_domain()));
  if (!reg) return {};
  return reg->list();
}

const RegistryEntry* host_of(const std::vector<RegistryEntry>& all, const std::string& node) {
  for (const auto& e : all) {
    for (const auto& n : e.nodes) {
      if (n == node) return &e;
    }
  }
  return nullptr;
}

int no_such_node(const std::string& node) {
  std::fprintf(stderr, "no running node named '%s' in domain '%s' (see `edgevla node list`)\n",
               node.c_str(), Registry::default_domain().c_str());
  return 1;
}

}  // namespace

int node_list(bool verbose) {
  const auto all = entries();
  int count = 0;
  for (const auto& e : all) {
    if (e.nodes.empty()) continue;
    if (!verbose) {
      for (const auto& n : e.nodes) {
        std::printf("%-24s process %-16s pid %u\n", n.c_str(), e.process.c_str(), e.pid);
        ++count;
      }
      continue;
    }
    auto reply = control_request(e.control_endpoint, "nodes", "");
    if (!reply) {
      std::fprintf(stderr, "process %s (pid %u): %s\n", e.process.c_str(), e.pid,
                   reply.status().message().c_str());
      continue;
    }
    std::cout << "---\n" << *reply;
    count += static_cast<int>(e.nodes.size());
  }
  if (count == 0) std::fprintf(stderr, "no nodes running in domain '%s'\n", Registry::default_domain().c_str());
  return 0;
}

int node_stats() {
  std::printf("%-14s %-12s %-12s %-13s %8s %10s %10s %10s %8s %8s %9s\n", "process", "node", "callback", "kind",
              "count", "p50 us", "p99 us", "max us", "dropped", "errors", "rss MB");
  int rows = 0;
  for (const auto& e : entries()) {
    if (e.nodes.empty()) continue;
    auto reply = control_request(e.control_endpoint, "nodes", "");
    if (!reply) {
      std::fprintf(stderr, "process %s (pid %u): %s\n", e.process.c_str(), e.pid, reply.status().message().c_str());
      continue;
    }
    const YAML::Node root = YAML::Load(*reply);
    const double rss_mb = root["rss_bytes"].as<double>(0) / (1 << 20);
    for (const auto& n : root["nodes"]) {
      for (const auto& cb : n["callbacks"]) {
        std::printf("%-14s %-12s %-12s %-13s %8llu %10.1f %10.1f %10.1f %8llu %8llu %9.1f\n", e.process.c_str(),
                    n["name"].as<std::string>().c_str(), cb["name"].as<std::string>().c_str(),
                    cb["kind"].as<std::string>().c_str(), cb["count"].as<unsigned long long>(0),
                    cb["p50_us"].as<double>(0), cb["p99_us"].as<double>(0), cb["max_us"].as<double>(0),
                    cb["dropped"].as<unsigned long long>(0), cb["errors"].as<unsigned long long>(0), rss_mb);
        ++rows;
      }
    }
  }
  if (rows == 0) std::fprintf(stderr, "no node callbacks in domain '%s'\n", Registry::default_domain().c_str());
  return 0;
}

int bus_stats() {
  int processes = 0;
  for (const auto& e : entries()) {
    auto reply = control_request(e.control_endpoint, "bus", "");
    if (!reply) {
      std::fprintf(stderr, "process %s (pid %u): %s\n", e.process.c_str(), e.pid, reply.status().message().c_str());
      continue;
    }
    std::cout << "--- # process " << e.process << " (pid " << e.pid << ")\n" << *reply;
    ++processes;
  }
  if (processes == 0) std::fprintf(stderr, "no processes in domain '%s'\n", Registry::default_domain().c_str());
  return 0;
}

int node_info(const std::string& node) {
  const auto all = entries();
  const RegistryEntry* e = host_of(all, node);
  if (e == nullptr) return no_such_node(node);
  auto reply = control_request(e->control_endpoint, "nodes", "");
  if (!reply) {
    std::fprintf(stderr, "%s\n", reply.status().message().c_str());
    return 1;
  }
  const YAML::Node root = YAML::Load(*reply);
  for (const auto& n : root["nodes"]) {
    if (n["name"].as<std::string>() != node) continue;
    YAML::Emitter out;
    out << n;
    std::cout << "process: " << e->process << " (pid " << e->pid << ")\n" << out.c_str() << "\n";
    return 0;
  }
  return no_such_node(node);
}

int node_types() {
  for (const auto& [name, description] : NodeRegistry::instance().types()) {
    std::printf("%-20s %s\n", name.c_str(), description.c_str());
  }
  // Types a launch file can name that load on first use (runtime/node/plugin_index.hpp).
  const auto folders = node_plugin_folders();
  auto indexed = list_node_plugins(folders);
  if (!indexed) {
    std::fprintf(stderr, "%s\n", indexed.status().message().c_str());
    return 1;
  }
  std::string searched;
  for (const auto& f : folders) searched += (searched.empty() ? "" : ":") + f;
  std::printf("\nplugin folders (EDGEVLA_PLUGIN_PATH, then the installed one): %s\n",
              searched.c_str());
  for (const auto& t : *indexed) {
    if (NodeRegistry::instance().contains(t.type)) continue;  // built in: the built-in one runs
    std::printf("%-20s plugin %s (index %s)\n", t.type.c_str(), t.where.library.c_str(),
                t.where.index.c_str());
  }
  return 0;
}

int param_dump(const std::string& node) {
  const auto all = entries();
  const RegistryEntry* e = host_of(all, node);
  if (e == nullptr) return no_such_node(node);
  auto reply = control_request(e->control_endpoint, "params", node);
  if (!reply) {
    std::fprintf(stderr, "%s\n", reply.status().message().c_str());
    return 1;
  }
  std::cout << *reply;
  return 0;
}

int param_set(const std::string& node, const std::string& key, const std::string& value) {
  const auto all = entries();
  const RegistryEntry* e = host_of(all, node);
  if (e == nullptr) return no_such_node(node);
  auto reply = control_request(e->control_endpoint, "set", node + "\n" + key + "\n" + value);
  if (!reply) {
    std::fprintf(stderr, "%s\n", reply.status().message().c_str());
    return 1;
  }
  std::cout << *reply;
  return 0;
}

int topic_list(bool verbose) {
  struct Info {
    std::string type;
    std::vector<std::string> pubs, subs;
  };
  std::map<std::string, Info> topics;
  for (const auto& e : entries()) {
    for (const auto& p : e.publishers) {
      auto& i = topics[p.topic];
      i.type = p.type;
      i.pubs.push_back(p.node + "@" + e.process);
    }
    for (const auto& s : e.subscriptions) {
      auto& i = topics[s.topic];
      if (i.type.empty()) i.type = s.type;
      i.subs.push_back(s.node + "@" + e.process);
    }
  }
  for (const auto& [topic, i] : topics) {
    std::printf("%-32s %-14s %zu publisher(s) %zu subscriber(s)\n", topic.c_str(),
                i.type.empty() ? "*" : i.type.c_str(), i.pubs.size(), i.subs.size());
    if (verbose) {
      for (const auto& p : i.pubs) std::printf("    pub %s\n", p.c_str());
      for (const auto& s : i.subs) std::printf("    sub %s\n", s.c_str());
    }
  }
  if (topics.empty()) std::fprintf(stderr, "no topics in domain '%s'\n", Registry::default_domain().c_str());
  return 0;
}

int topic_info(const std::string& topic) {
  int found = 0;
  for (const auto& e : entries()) {
    for (const auto& p : e.publishers) {
      if (p.topic != topic) continue;
      std::printf("publisher  %-20s %-12s process %s (pid %u)\n", p.node.c_str(), p.type.c_str(),
                  e.process.c_str(), e.pid);
      ++found;
    }
    for (const auto& s : e.subscriptions) {
      if (s.topic != topic) continue;
      std::printf("subscriber %-20s %-12s process %s (pid %u)\n", s.node.c_str(),
                  s.type.empty() ? "*" : s.type.c_str(), e.process.c_str(), e.pid);
      ++found;
    }
  }
  if (found == 0) {
    std::fprintf(stderr, "nobody publishes or subscribes '%s'\n", topic.c_str());
    return 1;
  }
  return 0;
}

}  // namespace edgevla::cli
