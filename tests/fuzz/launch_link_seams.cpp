// launch_file.cpp's load_launch (not fuzzed) also creates nodes through the node registry; the
// launch fuzzer only calls parse_launch, so these two stand in for the node host and registry
// instead of linking the whole runtime. Reaching either is a harness bug.
#include <cstdio>
#include <cstdlib>

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

}  // namespace edgevla
