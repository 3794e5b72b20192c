#include "runtime/bus/registry.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "runtime/shm/segment.hpp"

namespace edgevla {

std::string local_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string Registry::default_domain() {
  const char* d = std::getenv("EDGEVLA_DOMAIN");
  return d && *d ? d : "default";
}

std::string Registry::default_dir(const std::string& domain) {
  if (const char* d = std::getenv("EDGEVLA_REGISTRY_DIR"); d && *d) return d;
  const char* run = std::getenv("XDG_RUNTIME_DIR");
  std::string base = run && *run ? run : "/tmp";
  return base + "/edgevla-" + std::to_string(::getuid()) + "/" + domain;
}

namespace {

// A registry level must be a real directory (not a symlink) owned by this user and closed to
// everyone else: whoever can write in it can advertise topics to this graph.
Status check_private_dir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return failed_precondition("registry directory '" + path + "' cannot be opened as a directory (" +
                               std::strerror(errno) + "; a symbolic link is refused); remove it or set "
                               "EDGEVLA_REGISTRY_DIR to a directory of yours");
  }
  struct stat st {};
  const int rc = ::fstat(fd, &st);
  ::close(fd);
  if (rc != 0) return unavailable("cannot stat registry directory '" + path + "': " + std::strerror(errno));
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return failed_precondition("registry directory '" + path + "' is owned by uid " + std::to_string(st.st_uid) +
                               " with mode " + mode + "; edgevla uses only a directory owned by uid " +
                               std::to_string(::geteuid()) + " with mode 0700 (another user may have made it "
                               "to join this graph): remove it, or set EDGEVLA_REGISTRY_DIR to a directory of yours");
  }
  return Status::ok();
}

}  // namespace

Expected<Registry> Registry::open(std::string dir) {
  // mkdir -p with mode 0700 on each level we create; the levels edgevla owns (from the
  // per-user "edgevla-<uid>" directory down, or the configured directory itself) must be
  // private to this user, whoever created them.
  const std::string own_marker = "/edgevla-" + std::to_string(::getuid());
  const std::size_t own_from = dir.find(own_marker);
  for (std::size_t pos = 1; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return unavailable("cannot create registry directory '" + part + "': " + std::strerror(errno));
    }
    const bool owned_level = pos == std::string::npos || (own_from != std::string::npos && part.size() >= own_from + own_marker.size());
    if (owned_level) EDGEVLA_RETURN_IF_ERROR(check_private_dir(part));
  }
  // ipc:// paths are limited to 107 bytes by the kernel.
  if (dir.size() > 80) {
    return invalid_argument("registry directory '" + dir +
                            "' is too long for ipc socket paths; set EDGEVLA_REGISTRY_DIR shorter");
  }
  return Registry(std::move(dir));
}

std::string Registry::path_for(const std::string& bus_id, const std::string& suffix) const {
  // bus_id is host/pid/n; the file name uses pid-n (the directory is host-local).
  std::string tail = bus_id.substr(bus_id.find('/') + 1);
  for (char& c : tail) {
    if (c == '/') c = '-';
  }
  return dir_ + "/" + tail + suffix;
}

namespace {

void emit_topics(YAML::Emitter& out, const char* key, const std::vector<RegistryTopic>& topics) {
  out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& t : topics) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "topic" << YAML::Value << t.topic
        << YAML::Key << "type" << YAML::Value << t.type << YAML::Key << "node" << YAML::Value
        << t.node;
    if (!t.device.empty()) out << YAML::Key << "device" << YAML::Value << t.device;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

std::vector<RegistryTopic> read_topics(const YAML::Node& n) {
  std::vector<RegistryTopic> v;
  if (!n || !n.IsSequence()) return v;
  for (const auto& t : n) {
    v.push_back({t["topic"].as<std::string>(""), t["type"].as<std::string>(""),
                 t["node"].as<std::string>(""), t["device"].as<std::string>("")});
  }
  return v;
}

}  // namespace

Status Registry::write(const RegistryEntry& e) const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "bus" << YAML::Value << e.bus_id;
  out << YAML::Key << "pid" << YAML::Value << e.pid;
  out << YAML::Key << "host" << YAML::Value << e.host;
  out << YAML::Key << "process" << YAML::Value << e.process;
  out << YAML::Key << "started_ns" << YAML::Value << e.started_ns;
  out << YAML::Key << "data" << YAML::Value << e.data_endpoint;
  out << YAML::Key << "control" << YAML::Value << e.control_endpoint;
  out << YAML::Key << "tcp" << YAML::Value << e.tcp_endpoint;
  out << YAML::Key << "ring" << YAML::Value << e.ring;
  out << YAML::Key << "ring_producer" << YAML::Value << e.ring_producer;
  out << YAML::Key << "nodes" << YAML::Value << YAML::Flow << e.nodes;
  emit_topics(out, "publishers", e.publishers);
  emit_topics(out, "subscriptions", e.subscriptions);
  out << YAML::EndMap;
  const std::string path = path_for(e.bus_id, ".yaml");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << out.c_str() << "\n";
    if (!f) return unavailable("cannot write registry file '" + tmp + "'");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return unavailable("cannot publish registry file '" + path + "': " + std::strerror(errno));
  }
  return Status::ok();
}

void Registry::remove(const RegistryEntry& e) const {
  for (const char* suffix : {".yaml", ".pub", ".ctl"}) {
    ::unlink(path_for(e.bus_id, suffix).c_str());
  }
}

std::vector<RegistryEntry> Registry::list() const {
  std::vector<RegistryEntry> entries;
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return entries;
  std::vector<std::string> files;
  while (const dirent* d = ::readdir(dir)) {
    const std::string_view n(d->d_name);
    if (n.ends_with(".yaml")) files.emplace_back(n);
  }
  ::closedir(dir);
  for (const auto& f : files) {
    const std::string path = dir_ + "/" + f;
    try {
      const YAML::Node n = YAML::LoadFile(path);
      RegistryEntry e;
      e.bus_id = n["bus"].as<std::string>();
      e.pid = n["pid"].as<std::uint32_t>();
      e.host = n["host"].as<std::string>("");
      e.process = n["process"].as<std::string>("");
      e.started_ns = n["started_ns"].as<std::int64_t>(0);
      e.data_endpoint = n["data"].as<std::string>("");
      e.control_endpoint = n["control"].as<std::string>("");
      e.tcp_endpoint = n["tcp"].as<std::string>("");
      e.ring = n["ring"].as<std::string>("");
      e.ring_producer = n["ring_producer"].as<bool>(false);
      if (n["nodes"] && n["nodes"].IsSequence()) e.nodes = n["nodes"].as<std::vector<std::string>>();
      e.publishers = read_topics(n["publishers"]);
      e.subscriptions = read_topics(n["subscriptions"]);
      if (!shm::process_alive(static_cast<pid_t>(e.pid))) {
        remove(e);
        continue;
      }
      entries.push_back(std::move(e));
    } catch (const std::exception&) {
      // A file being replaced or a foreign file: skip it this round.
    }
  }
  return entries;
}

}  // namespace edgevla
