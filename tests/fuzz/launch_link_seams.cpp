// launch_file.cpp also creates nodes through the node registry (load_launch, not fuzzed) and
// checks a group's tcp options with the bus's tcp transport (runtime/bus/bus_io_tcp.cpp, which
// needs the whole bus). The launch fuzzer calls parse_launch only; these stand in for those
// parts instead of linking the whole runtime. Reaching the first three is a harness bug;
// check_tcp_options accepts every option set, so parse_launch's own handling of a group's tcp
// section (keys, key files, allow lists) is still fuzzed.
#include <cstdio>
#include <cstdlib>

#include "runtime/bus/bus.hpp"
#include "runtime/node/host.hpp"
#include "runtime/node/node_registry.hpp"

namespace edgevla {

NodeRegistry& NodeRegistry::instance() {
  std::fprintf(stderr, "launch_fuzzer: NodeRegistry::instance reached; the harness must call parse_launch only\n");
  std::abort();
}

Status NodeRegistry::load_plugin(const std::string&) {
  std::fprintf(stderr, "launch_fuzzer: NodeRegistry::load_plugin reached\n");
  std::abort();
}

Expected<DryRun> dry_run(const NodeOptions&) {
  std::fprintf(stderr, "launch_fuzzer: dry_run reached\n");
  std::abort();
}

Status check_tcp_options(const TcpOptions&) { return Status::ok(); }

}  // namespace edgevla
