// Discovery without a daemon: every bus writes one small YAML file describing itself
// (endpoints, publishers, subscriptions, nodes) into a per-user, per-domain directory.
// Peers on the same host read the directory to find each other; `edgevla topic list` and
// friends read it to introspect a running graph. Files of dead processes are pruned by
// whoever notices first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla {

struct RegistryTopic {
  std::string topic;
  std::string type;
  std::string node;
  std::string device;  // publishers: where its tensors may live ("cuda:0"); empty: the host
};

struct RegistryEntry {
  std::string bus_id;            // "<host>/<pid>/<n>"
  std::uint32_t pid = 0;
  std::string host;
  std::string process;           // human name, e.g. the launch group
  std::int64_t started_ns = 0;
  std::string data_endpoint;     // ipc:// XPUB carrying shm descriptors
  std::string control_endpoint;  // ipc:// REP answering introspection requests
  std::string tcp_endpoint;      // tcp:// XPUB with inline tensors, or empty
  std::string ring;              // shm name of the bus's inbound ring (same-host delivery), or empty
  bool ring_producer = false;    // the bus delivers into the rings of peers that have one
  std::vector<std::string> nodes;
  std::vector<RegistryTopic> publishers;
  std::vector<RegistryTopic> subscriptions;
};

class Registry {
 public:
  // ${EDGEVLA_REGISTRY_DIR} or ${XDG_RUNTIME_DIR:-/tmp}/edgevla-<uid>/<domain>.
  static std::string default_dir(const std::string& domain);
  // $EDGEVLA_DOMAIN or "default".
  static std::string default_domain();

  // Creates the directory (mode 0700) when missing.
  static Expected<Registry> open(std::string dir);

  const std::string& dir() const { return dir_; }
  // Path of a per-bus file ("<pid>-<n><suffix>").
  std::string path_for(const std::string& bus_id, const std::string& suffix) const;
  Status write(const RegistryEntry& entry) const;
  void remove(const RegistryEntry& entry) const;
  // Every readable entry; entries of dead processes are deleted along the way.
  std::vector<RegistryEntry> list() const;

 private:
  explicit Registry(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

std::string local_hostname();

}  // namespace edgevla
