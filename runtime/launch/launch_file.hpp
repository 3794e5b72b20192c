// Launch files: which nodes run, with which params, in which processes.
//
//   include: [common.yaml]             # other launch files, merged in
//   plugins: [../build/lib/libmy.so]   # shared libraries that register node types (a type
//                                      # a plugin index names needs none: plugin_index.hpp)
//   params_files: [../params/demo.yaml]  # ROS 2-style: keyed by node name
//   groups:                            # one process per group; nodes in a group share it
//     - name: main
//       respawn: false                 # max_respawns: 10, respawn_delay_s: 1, required: true
//       nodes:
//         - name: source
//           type: tensor_source
//           params: {rate_hz: 30}
//           remap: {image: /camera/image}
//   nodes: [...]                       # shorthand for a single group named "main"
//
// Everything is checked before anything starts; errors name the file, line and key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/bus/bus.hpp"
#include "runtime/node/node.hpp"

namespace edgevla {

struct GroupDescription {
  std::string name;
  bool respawn = false;          // restart the process when it exits unexpectedly
  double respawn_delay_s = 1.0;
  int max_respawns = 10;         // then give up (and stop the launch if required); >= 0
  // The process beats every fraction of this; when no beat came for this long (stopped with
  // SIGSTOP, frozen, swapped out), the supervisor kills it and treats it as a crash
  // (respawned when respawn is on). 0 turns the check off.
  double heartbeat_timeout_s = 5.0;
  // When this process ends for good (no respawn, or its respawns used up), stop the whole
  // launch with a non-zero exit. On by default: a policy graph missing a stage is not running.
  // The record group is not required (the robot goes on), but its death is reported as an
  // error and makes the launch exit non-zero.
  bool required = true;
  // tcp: this process's topics to other hosts (listen) and theirs to it (peers), encrypted
  // with the key files it names (read when the file is loaded) unless insecure: true.
  TcpOptions tcp;
  // allowed_groups: other uids' processes of these groups may use this process's ipc
  // endpoints (names are resolved to gids when the file is loaded).
  std::vector<std::uint32_t> allowed_gids;
  std::int64_t shm_pool_mb = 2048;
  std::int64_t spin_us = 0;      // executor spin before sleeping (latency vs CPU)
  // Executors spin up to this long while a node of the group that publishes to them runs a
  // callback (0: off): hand-overs inside the process without a thread wake-up, for machines
  // with cores to spare (GPU hosts).
  std::int64_t upstream_spin_us = 0;
  std::vector<NodeOptions> nodes;  // in start order
  std::string origin;            // "file:line"
  std::int64_t load_bytes = 0;   // largest load a node of the group declared (load_launch)
};

struct LaunchDescription {
  std::string file;  // the top-level file
  std::vector<std::string> plugins;
  std::vector<GroupDescription> groups;  // in file order; started heaviest load first
};

// Parses `path` (with includes and params files), applies `sets` ("node.key=value") and
// checks the result: unique names, known node types (after loading plugins), every param
// declared, typed and in range. Nothing is started.
// What a group's upstream_spin_us comes to on a machine of `cores` cores: off below
// kUpstreamSpinMinCores, where spinning executors take the cores the stages need (slower, not
// faster), so a launch file written for a GPU host runs as well on a small machine.
inline constexpr unsigned kUpstreamSpinMinCores = 4;
std::int64_t effective_upstream_spin_us(const GroupDescription& group, unsigned cores);

Expected<LaunchDescription> load_launch(const std::string& path, const std::vector<std::string>& sets);

// A params file: { node_name: { key: value, ... }, ... }, read and checked for that shape (node
// and param names plain strings, each node's section a map); an error names the file and line.
struct ParamsFile {
  std::string path;
  YAML::Node root;
};
Expected<ParamsFile> load_params_file(const std::string& path, const std::string& referenced_from = "");

// Parses only, without loading plugins or configuring nodes (used by load_launch and tests).
Expected<LaunchDescription> parse_launch(const std::string& path, const std::vector<std::string>& sets);

}  // namespace edgevla
