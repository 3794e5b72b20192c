// ChunkExecutor: the pure chunk-execution logic of the actuation node, driven by explicit
// times so it can be tested without a clock or a bus. Chunks are submitted as they arrive;
// each tick() returns the joint command for that control tick (or nothing before the first
// chunk). The semantics (stride, replace/blend, latency compensation, hold, clamps, watchdog)
// are specified in nodes/actuation/README.md; the comments here only point at them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::nodes {

enum class Transition { kReplace, kBlend };

// Settings that may change while running (the node re-reads its params every tick).
struct ChunkExecutorTuning {
  int execute_steps = 25;  // actions of a chunk to execute before the next is wanted
  Transition transition = Transition::kReplace;
  double blend_old_weight = 0.3;     // weight of the old plan over the overlap (blend only)
  bool latency_compensation = true;  // skip actions whose time passed while inferring
  double watchdog_timeout_s = 0.5;   // 0: no watchdog
};

struct ChunkExecutorOptions {
  double control_rate_hz = 50.0;
  int action_dim = 0;                    // joints commanded: the first action_dim columns
  std::vector<double> position_min;      // empty (no limit) or action_dim values
  std::vector<double> position_max;      // empty (no limit) or action_dim values
  std::vector<double> max_velocity;      // per second; empty, one for all, or action_dim
  std::vector<double> initial_position;  // held before the first chunk; empty: command nothing
  ChunkExecutorTuning tuning;
};

// One chunk as it arrived. The executor copies what it needs; `actions` may die afterwards.
struct ChunkInput {
  std::span<const float> actions;  // row-major [rows, cols]
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t source_stamp_ns = 0;  // capture time of the observation; <= 0: unknown
  std::optional<double> dt_s;        // seconds between actions; absent: 1 / control_rate_hz
  std::int64_t id = 0;               // the caller's id, reported back while the chunk runs
};

enum class CommandState {
  kRun,      // executing an action of the current chunk
  kBlend,    // executing a blend of the old plan and the new chunk
  kHold,     // starved: the plan ran out, holding its last action
  kFault,    // watchdog: frozen at the last command
  kInitial,  // no chunk yet: holding initial_position
};
std::string_view command_state_name(CommandState state);

struct Command {
  std::vector<double> position;  // action_dim values, clamped
  CommandState state = CommandState::kRun;
  std::int64_t chunk_id = -1;    // id of the chunk the command derives from (-1: none)
  std::int64_t chunk_step = -1;  // index of the executed action in that chunk (-1: none)
  bool chunk_wanted = false;     // the stride is used up (or the plan ran out)
  bool clamped = false;          // a limit changed this command
  std::string fault;             // "watchdog: no chunk for X s" while faulted, else empty
};

struct ChunkExecutorCounters {
  std::uint64_t chunks_received = 0;    // every submit()
  std::uint64_t chunks_rejected = 0;    // submit() returned an error
  std::uint64_t chunks_superseded = 0;  // accepted, then replaced before a tick used it
  std::uint64_t ticks = 0;
  std::uint64_t commands = 0;         // ticks that produced a command
  std::uint64_t holds = 0;            // commands in kHold or kFault
  std::uint64_t late_ticks = 0;       // commands executing an action at index >= execute_steps
  std::uint64_t position_clamps = 0;  // joint values changed by a position limit
  std::uint64_t velocity_clamps = 0;  // joint values changed by the velocity limit
  std::uint64_t watchdog_faults = 0;  // times the watchdog tripped
};

class ChunkExecutor final {
 public:
  // The error names the offending option ("position_min has 3 values, action_dim is 7").
  static Status validate(const ChunkExecutorOptions& options);
  static Expected<ChunkExecutor> create(ChunkExecutorOptions options);

  void set_tuning(const ChunkExecutorTuning& tuning) { options_.tuning = tuning; }
  const ChunkExecutorOptions& options() const { return options_; }

  // A chunk arrived at `now_ns`. Wrong width, no rows, NaN/Inf in the used columns, a bad dt,
  // a chunk entirely in the past or older than the current one is rejected (the error says
  // why) and the current plan carries on. An accepted chunk takes effect at the next tick.
  Status submit(const ChunkInput& chunk, std::int64_t now_ns);

  // The command for the control tick at `now_ns`; nullopt before the first chunk when there
  // is no initial_position.
  std::optional<Command> tick(std::int64_t now_ns);
  // The clock the times above are read on was stepped by `delta_ns` (positive: forward)
  // between two calls: the watchdog counts only the time that really passed.
  void clock_stepped(std::int64_t delta_ns) { last_fresh_ns_ += delta_ns; }

  const ChunkExecutorCounters& counters() const { return counters_; }

 private:
  struct Pending {
    std::vector<double> actions;  // [rows, action_dim]
    std::int64_t rows = 0;
    std::int64_t source_stamp_ns = 0;
    double dt_ns = 0;
    std::int64_t id = 0;
  };
  // What the coming ticks will command, one row per tick.
  struct Plan {
    std::vector<double> rows;         // [size, action_dim]
    std::vector<std::int64_t> steps;  // action index in the chunk, per row
    std::size_t size = 0;
    std::size_t next = 0;     // row of the next tick
    std::size_t blended = 0;  // the first `blended` rows mix old and new
    std::int64_t chunk_id = -1;
  };

  explicit ChunkExecutor(ChunkExecutorOptions options) : options_(std::move(options)) {}
  double period_ns() const { return 1e9 / options_.control_rate_hz; }
  void apply(const Pending& chunk, std::int64_t now_ns);
  void clamp(std::vector<double>& target, Command& command);

  ChunkExecutorOptions options_;
  std::optional<Pending> pending_;
  Plan plan_;
  ChunkExecutorCounters counters_;
  bool have_chunk_ = false;            // a chunk has been accepted
  std::int64_t last_fresh_ns_ = 0;     // arrival of the newest accepted chunk
  std::int64_t newest_source_ns_ = 0;  // source stamp of the newest accepted chunk
  bool faulted_ = false;
  std::vector<double> hold_target_;   // what a hold commands (before clamps)
  std::vector<double> last_command_;  // empty until the first command
  std::int64_t last_chunk_id_ = -1;   // chunk of the last executed action
};

}  // namespace edgevla::nodes
