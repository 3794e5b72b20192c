#include "nodes/actuation/chunk_executor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace edgevla::nodes {
namespace {

// Chunks whose actions are further apart than this are not action chunks; refusing them also
// bounds the plan a chunk expands to (rows = horizon * dt / control period).
constexpr double kMaxDtS = 10.0;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

Status check_length(const std::vector<double>& v, std::string_view name, int dim, bool one_ok) {
  const auto n = static_cast<std::int64_t>(v.size());
  if (n == 0 || n == dim || (one_ok && n == 1)) return Status::ok();
  return invalid_argument(std::string(name) + " has " + std::to_string(n) + " values; give " +
                          (one_ok ? "one value, " : "") + "action_dim (" + std::to_string(dim) +
                          ") values, or none for no limit");
}

}  // namespace

std::string_view command_state_name(CommandState state) {
  switch (state) {
    case CommandState::kRun:
      return "run";
    case CommandState::kBlend:
      return "blend";
    case CommandState::kHold:
      return "hold";
    case CommandState::kFault:
      return "fault";
    case CommandState::kInitial:
      return "initial";
  }
  return "?";
}

Status ChunkExecutor::validate(const ChunkExecutorOptions& o) {
  if (!(o.control_rate_hz > 0) || !std::isfinite(o.control_rate_hz)) {
    return invalid_argument("control_rate_hz must be positive, got " + num(o.control_rate_hz));
  }
  if (o.action_dim < 1) {
    return invalid_argument("action_dim must be at least 1, got " + std::to_string(o.action_dim));
  }
  EDGEVLA_RETURN_IF_ERROR(check_length(o.position_min, "position_min", o.action_dim, false));
  EDGEVLA_RETURN_IF_ERROR(check_length(o.position_max, "position_max", o.action_dim, false));
  EDGEVLA_RETURN_IF_ERROR(check_length(o.max_velocity, "max_velocity", o.action_dim, true));
  EDGEVLA_RETURN_IF_ERROR(
      check_length(o.initial_position, "initial_position", o.action_dim, false));
  for (std::size_t j = 0; j < o.position_min.size(); ++j) {
    if (std::isnan(o.position_min[j])) return invalid_argument("position_min holds NaN");
  }
  for (std::size_t j = 0; j < o.position_max.size(); ++j) {
    if (std::isnan(o.position_max[j])) return invalid_argument("position_max holds NaN");
    if (!o.position_min.empty() && o.position_min[j] > o.position_max[j]) {
      return invalid_argument("joint " + std::to_string(j) + ": position_min " +
                              num(o.position_min[j]) + " is above position_max " +
                              num(o.position_max[j]));
    }
  }
  for (double v : o.max_velocity) {
    if (!(v >= 0)) return invalid_argument("max_velocity values must be >= 0, got " + num(v));
  }
  for (std::size_t j = 0; j < o.initial_position.size(); ++j) {
    const double v = o.initial_position[j];
    if (!std::isfinite(v) || (!o.position_min.empty() && v < o.position_min[j]) ||
        (!o.position_max.empty() && v > o.position_max[j])) {
      return invalid_argument("initial_position of joint " + std::to_string(j) + " (" + num(v) +
                              ") is not finite or outside position_min/position_max");
    }
  }
  const ChunkExecutorTuning& t = o.tuning;
  if (t.execute_steps < 1) {
    return invalid_argument("execute_steps must be at least 1, got " +
                            std::to_string(t.execute_steps));
  }
  if (!(t.blend_old_weight >= 0 && t.blend_old_weight <= 1)) {
    return invalid_argument("blend_old_weight must be in [0, 1], got " + num(t.blend_old_weight));
  }
  if (!(t.watchdog_timeout_s >= 0)) {
    return invalid_argument("watchdog_timeout_s must be >= 0, got " + num(t.watchdog_timeout_s));
  }
  return Status::ok();
}

Expected<ChunkExecutor> ChunkExecutor::create(ChunkExecutorOptions options) {
  EDGEVLA_RETURN_IF_ERROR(validate(options));
  return ChunkExecutor(std::move(options));
}

Status ChunkExecutor::submit(const ChunkInput& chunk, std::int64_t now_ns) {
  ++counters_.chunks_received;
  auto reject = [this](Status s) {
    ++counters_.chunks_rejected;
    return s;
  };
  const std::int64_t dim = options_.action_dim;
  if (chunk.rows <= 0) return reject(invalid_argument("chunk has no actions"));
  if (chunk.cols < dim) {
    return reject(invalid_argument("chunk has " + std::to_string(chunk.cols) +
                                   " action columns, fewer than action_dim " +
                                   std::to_string(dim)));
  }
  if (static_cast<std::int64_t>(chunk.actions.size()) < chunk.rows * chunk.cols) {
    return reject(invalid_argument("chunk holds " + std::to_string(chunk.actions.size()) +
                                   " values, fewer than its shape [" + std::to_string(chunk.rows) +
                                   ", " + std::to_string(chunk.cols) + "] needs"));
  }
  const double dt_s = chunk.dt_s.value_or(1.0 / options_.control_rate_hz);
  if (!(dt_s > 0 && dt_s <= kMaxDtS)) {
    return reject(
        invalid_argument("chunk dt_s " + num(dt_s) + " is outside (0, " + num(kMaxDtS) + "]"));
  }
  for (std::int64_t i = 0; i < chunk.rows; ++i) {
    for (std::int64_t j = 0; j < dim; ++j) {
      if (!std::isfinite(chunk.actions[static_cast<std::size_t>(i * chunk.cols + j)])) {
        return reject(invalid_argument("chunk action " + std::to_string(i) + " joint " +
                                       std::to_string(j) + " is NaN or infinite"));
      }
    }
  }
  const bool stamped = chunk.source_stamp_ns > 0;
  if (stamped && chunk.source_stamp_ns < newest_source_ns_) {
    return reject(
        invalid_argument("chunk is out of order: its observation is " +
                         num(static_cast<double>(newest_source_ns_ - chunk.source_stamp_ns) / 1e6) +
                         " ms older than the one of the chunk already accepted"));
  }
  const double dt_ns = dt_s * 1e9;
  if (options_.tuning.latency_compensation && stamped) {
    const double elapsed = static_cast<double>(now_ns - chunk.source_stamp_ns);
    if (std::floor(elapsed / dt_ns + 0.5) > static_cast<double>(chunk.rows - 1)) {
      return reject(out_of_range("chunk is stale: its observation is " + num(elapsed / 1e6) +
                                 " ms old and its " + std::to_string(chunk.rows) +
                                 " actions span only " +
                                 num(static_cast<double>(chunk.rows) * dt_s * 1e3) + " ms"));
    }
  }

  Pending p;
  p.rows = chunk.rows;
  p.source_stamp_ns = chunk.source_stamp_ns;
  p.dt_ns = dt_ns;
  p.id = chunk.id;
  p.actions.resize(static_cast<std::size_t>(chunk.rows * dim));
  for (std::int64_t i = 0; i < chunk.rows; ++i) {
    for (std::int64_t j = 0; j < dim; ++j) {
      p.actions[static_cast<std::size_t>(i * dim + j)] =
          chunk.actions[static_cast<std::size_t>(i * chunk.cols + j)];
    }
  }
  if (pending_) ++counters_.chunks_superseded;
  pending_ = std::move(p);
  have_chunk_ = true;
  last_fresh_ns_ = now_ns;
  if (stamped) newest_source_ns_ = chunk.source_stamp_ns;
  return Status::ok();
}

void ChunkExecutor::apply(const Pending& chunk, std::int64_t now_ns) {
  const auto dim = static_cast<std::size_t>(options_.action_dim);
  const ChunkExecutorTuning& t = options_.tuning;
  // Time of the first coming tick relative to action 0's time. With latency compensation it
  // is how long ago the observation was captured (never negative: a clock ahead of ours does
  // not delay the chunk); without, the chunk starts at the tick it takes effect.
  double offset_ns = 0;
  if (t.latency_compensation && chunk.source_stamp_ns > 0) {
    offset_ns = std::max(0.0, static_cast<double>(now_ns - chunk.source_stamp_ns));
  }
  Plan next;
  next.chunk_id = chunk.id;
  for (std::int64_t k = 0;; ++k) {
    // The action nearest in time to tick k.
    auto i = static_cast<std::int64_t>(
        std::floor((offset_ns + static_cast<double>(k) * period_ns()) / chunk.dt_ns + 0.5));
    if (i > chunk.rows - 1) {
      if (k > 0) break;
      i = chunk.rows - 1;  // went stale between arrival and this tick: run its last action once
    }
    const double* row = chunk.actions.data() + static_cast<std::size_t>(i) * dim;
    next.rows.insert(next.rows.end(), row, row + dim);
    next.steps.push_back(i);
    ++next.size;
  }
  if (t.transition == Transition::kBlend) {
    const std::size_t overlap = std::min(plan_.size - plan_.next, next.size);
    const double w = t.blend_old_weight;
    for (std::size_t k = 0; k < overlap; ++k) {
      const double* old_row = plan_.rows.data() + (plan_.next + k) * dim;
      double* new_row = next.rows.data() + k * dim;
      for (std::size_t j = 0; j < dim; ++j) new_row[j] = w * old_row[j] + (1.0 - w) * new_row[j];
    }
    next.blended = overlap;
  }
  plan_ = std::move(next);
}

void ChunkExecutor::clamp(std::vector<double>& target, Command& command) {
  const ChunkExecutorOptions& o = options_;
  for (std::size_t j = 0; j < target.size(); ++j) {
    double v = target[j];
    if (!last_command_.empty() && !o.max_velocity.empty()) {
      const double step = o.max_velocity[o.max_velocity.size() == 1 ? 0 : j] / o.control_rate_hz;
      const double lo = last_command_[j] - step, hi = last_command_[j] + step;
      if (v < lo || v > hi) {
        v = std::clamp(v, lo, hi);
        ++counters_.velocity_clamps;
        command.clamped = true;
      }
    }
    if (!o.position_min.empty() && v < o.position_min[j]) {
      v = o.position_min[j];
      ++counters_.position_clamps;
      command.clamped = true;
    }
    if (!o.position_max.empty() && v > o.position_max[j]) {
      v = o.position_max[j];
      ++counters_.position_clamps;
      command.clamped = true;
    }
    target[j] = v;
  }
}

std::optional<Command> ChunkExecutor::tick(std::int64_t now_ns) {
  ++counters_.ticks;
  if (pending_) {
    apply(*pending_, now_ns);
    pending_.reset();
  }
  const ChunkExecutorTuning& t = options_.tuning;
  const auto silent_ns = static_cast<double>(now_ns - last_fresh_ns_);
  if (have_chunk_ && t.watchdog_timeout_s > 0 && silent_ns > t.watchdog_timeout_s * 1e9) {
    if (!faulted_) {
      faulted_ = true;
      ++counters_.watchdog_faults;
      plan_ = Plan{};  // a plan nobody refreshes is not executed further
      if (!last_command_.empty()) hold_target_ = last_command_;
    }
  } else {
    faulted_ = false;
  }

  Command c;
  std::vector<double> target;
  const auto dim = static_cast<std::size_t>(options_.action_dim);
  if (faulted_) {
    if (!hold_target_.empty()) {
      target = hold_target_;
    } else if (!options_.initial_position.empty()) {
      target = options_.initial_position;
    } else {
      return std::nullopt;  // tripped before anything was ever commanded
    }
    char b[64];
    std::snprintf(b, sizeof b, "watchdog: no chunk for %.2f s", silent_ns / 1e9);
    c.fault = b;
    c.state = CommandState::kFault;
    c.chunk_id = last_chunk_id_;
    c.chunk_wanted = true;
    ++counters_.holds;
  } else if (plan_.next < plan_.size) {
    const std::size_t r = plan_.next++;
    target.assign(plan_.rows.begin() + static_cast<std::ptrdiff_t>(r * dim),
                  plan_.rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * dim));
    c.state = r < plan_.blended ? CommandState::kBlend : CommandState::kRun;
    c.chunk_id = plan_.chunk_id;
    c.chunk_step = plan_.steps[r];
    c.chunk_wanted = c.chunk_step + 1 >= t.execute_steps;
    if (c.chunk_step >= t.execute_steps) ++counters_.late_ticks;
    hold_target_ = target;
    last_chunk_id_ = plan_.chunk_id;
  } else if (!hold_target_.empty()) {
    target = hold_target_;
    c.state = CommandState::kHold;
    c.chunk_id = last_chunk_id_;
    c.chunk_wanted = true;
    ++counters_.holds;
  } else if (!options_.initial_position.empty()) {
    target = options_.initial_position;
    c.state = CommandState::kInitial;
    c.chunk_wanted = true;
  } else {
    return std::nullopt;
  }
  clamp(target, c);
  last_command_ = target;
  c.position = std::move(target);
  ++counters_.commands;
  return c;
}

}  // namespace edgevla::nodes
