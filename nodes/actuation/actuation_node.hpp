// actuation: executes the policy's action chunks on the robot at a fixed control rate. Each
// timer tick publishes one JointCommand (the first action_dim columns of the current chunk,
// blended, limited and watched over by ChunkExecutor) and writes it to a sink (csv file,
// stdout, udp, or none). Semantics and formats: nodes/actuation/README.md.
#pragma once

#include <memory>
#include <optional>

#include "nodes/actuation/chunk_executor.hpp"
#include "runtime/node/node.hpp"

namespace edgevla::nodes {

// Where each command goes besides the `command` topic (defined in actuation_node.cpp).
class CommandSink;

class ActuationNode final : public Node {
 public:
  explicit ActuationNode(const NodeOptions& options);
  ~ActuationNode() override;
  Status configure(NodeSpec& spec) override;
  Status activate() override;
  Status deactivate() override;

 private:
  void on_chunk(const msgs::ActionChunk& chunk);
  void on_tick();
  ChunkExecutorOptions executor_options() const;
  ChunkExecutorTuning tuning() const;

  // clang-format off
  Param<double> control_rate_hz_{"control_rate_hz", 50.0,
      {"commands per second (sets the timer)", 0.1, 10000.0, {}, true}};
  Param<int> action_dim_{"action_dim", 7,
      {"joints commanded: the first action_dim columns of each chunk", 1, 4096, {}, true}};
  Param<int> execute_steps_{"execute_steps", 25,
      {"actions of a chunk to execute before the next one is wanted (stride)", 1, 100000}};
  Param<std::string> transition_{"transition", "replace",
      {"how a new chunk takes over the remaining actions", {}, {}, {"replace", "blend"}}};
  Param<double> blend_old_weight_{"blend_old_weight", 0.3,
      {"weight of the old actions over the blend overlap", 0.0, 1.0}};
  Param<bool> latency_compensation_{"latency_compensation", true,
      {"skip the actions whose time passed while the policy inferred"}};
  Param<std::vector<double>> position_min_{"position_min", {},
      {"lower position limit per joint (empty: none)", {}, {}, {}, true}};
  Param<std::vector<double>> position_max_{"position_max", {},
      {"upper position limit per joint (empty: none)", {}, {}, {}, true}};
  Param<std::vector<double>> max_velocity_{"max_velocity", {},
      {"units/s, one value or one per joint (empty: none)", 0.0, {}, {}, true}};
  Param<std::vector<double>> initial_position_{"initial_position", {},
      {"held before the first chunk (empty: publish nothing until then)", {}, {}, {}, true}};
  Param<double> watchdog_timeout_s_{"watchdog_timeout_s", 0.5,
      {"hold and report a fault after this long without a chunk (0: off)", 0.0, 3600.0}};
  Param<bool> publish_state_{"publish_state", false,
      {"also publish each command as the robot's RobotState on 'state' (a simulated robot that "
       "follows its commands: closes the loop for demos and tests without a robot)", {}, {}, {}, true}};
  Param<std::string> sink_{"sink", "none",
      {"where every command is also written", {}, {}, {"none", "csv", "stdout", "udp"}, true}};
  Param<std::string> sink_path_{"sink_path", "",
      {"csv: file path; udp: host:port", {}, {}, {}, true}};
  // clang-format on

  Publisher<msgs::JointCommand> command_;
  Publisher<msgs::RobotState> state_;
  std::optional<ChunkExecutor> executor_;
  std::unique_ptr<CommandSink> sink_out_;
  RateLimitedLog log_limit_;
  std::uint64_t sink_errors_ = 0;
  bool was_faulted_ = false;
  // Steps of the system clock seen between ticks (wall time against the steady clock): the
  // watchdog must not fire because NTP or an operator moved the clock forward.
  std::int64_t last_tick_wall_ns_ = 0;
  std::int64_t last_tick_steady_ns_ = 0;
  std::uint64_t clock_steps_ = 0;
  // Headers of the newest accepted chunk and of the one executing, so each command derives
  // from the chunk it executes (capture-to-actuation latency is measured downstream).
  std::int64_t next_chunk_id_ = 0;
  std::optional<Header> newest_header_;
  std::int64_t newest_id_ = -1;
  std::optional<Header> current_header_;
  std::int64_t current_id_ = -1;
  std::optional<std::int64_t> newest_observation_seq_;
  std::optional<std::int64_t> current_observation_seq_;
  // When each arrived (node clock): end of the camera-to-actuation path, before the wait for
  // the control tick.
  std::int64_t newest_received_ns_ = 0;
  std::int64_t current_received_ns_ = 0;
};

}  // namespace edgevla::nodes
