#include "nodes/actuation/actuation_node.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {

// One command as the sinks see it.
struct SinkRecord {
  std::int64_t stamp_ns = 0;
  std::uint64_t tick = 0;
  std::int64_t chunk_seq = -1;
  const Command* command = nullptr;
};

// Writes every command somewhere besides the topic. A failed write is counted and logged by
// the node; the control loop carries on.
class CommandSink {
 public:
  virtual ~CommandSink() = default;
  virtual Status write(const SinkRecord& record) = 0;
};

namespace {

// A wall-clock difference from the steady clock above this between two ticks is a step.
constexpr std::int64_t kClockStepNs = 100'000'000;

// Shortest text that reads back as the same double.
void append_number(std::string& out, double v) {
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  out.append(b, r.ptr);
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};

// csv: a header line, then one row per command, flushed per row so a crash loses nothing.
class CsvSink final : public CommandSink {
 public:
  static Expected<std::unique_ptr<CommandSink>> open(const std::string& path, int dim) {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "w"));
    if (!f) return unavailable("cannot open csv sink '" + path + "': " + std::strerror(errno));
    std::string header = "stamp_ns,tick,state,chunk_seq,chunk_step,clamped";
    for (int j = 0; j < dim; ++j) header += ",j" + std::to_string(j);
    header += '\n';
    auto sink = std::unique_ptr<CsvSink>(new CsvSink(std::move(f), path));
    EDGEVLA_RETURN_IF_ERROR(sink->put(header));
    return std::unique_ptr<CommandSink>(std::move(sink));
  }

  Status write(const SinkRecord& r) override {
    line_.clear();
    const Command& c = *r.command;
    line_ += std::to_string(r.stamp_ns) + ',' + std::to_string(r.tick) + ',' +
             std::string(command_state_name(c.state)) + ',' + std::to_string(r.chunk_seq) + ',' +
             std::to_string(c.chunk_step) + ',' + (c.clamped ? '1' : '0');
    for (double v : c.position) {
      line_ += ',';
      append_number(line_, v);
    }
    line_ += '\n';
    return put(line_);
  }

 private:
  CsvSink(std::unique_ptr<std::FILE, FileCloser> f, std::string path)
      : file_(std::move(f)), path_(std::move(path)) {}
  Status put(const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), file_.get()) != text.size() ||
        std::fflush(file_.get()) != 0) {
      return unavailable("csv sink '" + path_ + "': " + std::strerror(errno));
    }
    return Status::ok();
  }
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::string path_;
  std::string line_;
};

// stdout: one line per command.
class StdoutSink final : public CommandSink {
 public:
  explicit StdoutSink(std::string node) : node_(std::move(node)) {}
  Status write(const SinkRecord& r) override {
    const Command& c = *r.command;
    line_ = "actuation " + node_ + " tick=" + std::to_string(r.tick) +
            " stamp_ns=" + std::to_string(r.stamp_ns) +
            " state=" + std::string(command_state_name(c.state)) +
            " chunk_seq=" + std::to_string(r.chunk_seq) +
            " chunk_step=" + std::to_string(c.chunk_step) + " clamped=" + (c.clamped ? "1" : "0") +
            " position=";
    for (std::size_t j = 0; j < c.position.size(); ++j) {
      if (j > 0) line_ += ',';
      append_number(line_, c.position[j]);
    }
    line_ += '\n';
    if (std::fwrite(line_.data(), 1, line_.size(), stdout) != line_.size() ||
        std::fflush(stdout) != 0) {
      return unavailable(std::string("stdout sink: ") + std::strerror(errno));
    }
    return Status::ok();
  }

 private:
  std::string node_;
  std::string line_;
};

// "host:port" or "[v6addr]:port" -> host, port; no name lookup.
Expected<std::pair<std::string, std::string>> split_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  const auto bad = [&] {
    return invalid_argument("udp sink_path '" + text + "' is not host:port (e.g. 127.0.0.1:9870)");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int p = 0;
  auto r = std::from_chars(port.data(), port.data() + port.size(), p);
  if (r.ec != std::errc() || r.ptr != port.data() + port.size() || p < 1 || p > 65535 ||
      host.empty()) {
    return bad();
  }
  return std::pair{host, port};
}

// Little-endian bytes of an unsigned value.
void put_le(std::byte* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// udp: one datagram per command, the binary layout of README.md ("udp datagram").
class UdpSink final : public CommandSink {
 public:
  static constexpr std::size_t kHeaderBytes = 40;

  static Expected<std::unique_ptr<CommandSink>> open(const std::string& target, int dim) {
    EDGEVLA_ASSIGN_OR_RETURN(auto hp, split_host_port(target));
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (int e = getaddrinfo(hp.first.c_str(), hp.second.c_str(), &hints, &found); e != 0) {
      return unavailable("udp sink '" + target + "': " + gai_strerror(e));
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
    const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return unavailable("udp sink '" + target + "': socket: " + std::strerror(errno));
    auto sink = std::unique_ptr<UdpSink>(new UdpSink(fd, target, dim));
    std::memcpy(&sink->addr_, found->ai_addr, found->ai_addrlen);
    sink->addr_len_ = found->ai_addrlen;
    return std::unique_ptr<CommandSink>(std::move(sink));
  }
  ~UdpSink() override { ::close(fd_); }

  Status write(const SinkRecord& r) override {
    const Command& c = *r.command;
    std::byte* p = packet_.data();
    std::memcpy(p, "EVJC", 4);
    put_le(p + 4, 1, 2);  // version
    put_le(p + 6, c.position.size(), 2);
    put_le(p + 8, r.tick, 8);
    put_le(p + 16, static_cast<std::uint64_t>(r.stamp_ns), 8);
    put_le(p + 24, static_cast<std::uint64_t>(r.chunk_seq), 8);
    put_le(p + 32, static_cast<std::uint32_t>(static_cast<std::int32_t>(c.chunk_step)), 4);
    put_le(p + 36, static_cast<std::uint8_t>(c.state), 1);
    put_le(p + 37, (c.clamped ? 1u : 0u) | (c.chunk_wanted ? 2u : 0u) | (c.fault.empty() ? 0u : 4u),
           1);
    put_le(p + 38, 0, 2);
    for (std::size_t j = 0; j < c.position.size(); ++j) {
      put_le(p + kHeaderBytes + 8 * j, std::bit_cast<std::uint64_t>(c.position[j]), 8);
    }
    const ssize_t n = ::sendto(fd_, p, packet_.size(), MSG_DONTWAIT,
                               reinterpret_cast<const sockaddr*>(&addr_), addr_len_);
    if (n != static_cast<ssize_t>(packet_.size())) {
      return unavailable("udp sink '" + target_ + "': " + std::strerror(errno));
    }
    return Status::ok();
  }

 private:
  UdpSink(int fd, std::string target, int dim)
      : fd_(fd),
        target_(std::move(target)),
        packet_(kHeaderBytes + 8 * static_cast<std::size_t>(dim)) {}
  int fd_;
  std::string target_;
  std::vector<std::byte> packet_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
};

}  // namespace

ActuationNode::ActuationNode(const NodeOptions& options) : Node(options) {}
ActuationNode::~ActuationNode() = default;

ChunkExecutorTuning ActuationNode::tuning() const {
  ChunkExecutorTuning t;
  t.execute_steps = *execute_steps_;
  t.transition = *transition_ == "blend" ? Transition::kBlend : Transition::kReplace;
  t.blend_old_weight = *blend_old_weight_;
  t.latency_compensation = *latency_compensation_;
  t.watchdog_timeout_s = *watchdog_timeout_s_;
  return t;
}

ChunkExecutorOptions ActuationNode::executor_options() const {
  ChunkExecutorOptions o;
  o.control_rate_hz = *control_rate_hz_;
  o.action_dim = *action_dim_;
  o.position_min = *position_min_;
  o.position_max = *position_max_;
  o.max_velocity = *max_velocity_;
  o.initial_position = *initial_position_;
  o.tuning = tuning();
  return o;
}

Status ActuationNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(control_rate_hz_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(action_dim_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(execute_steps_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(transition_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(blend_old_weight_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(latency_compensation_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(position_min_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(position_max_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(max_velocity_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(initial_position_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(watchdog_timeout_s_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(sink_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(sink_path_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(publish_state_));
  // Checked here, not in activate(), so `edgevla launch --check` catches them.
  const std::string where = "node '" + name() + "'";
  EDGEVLA_RETURN_IF_ERROR(ChunkExecutor::validate(executor_options()).with_context(where));
  if (*sink_ == "csv" && sink_path_->empty()) {
    return invalid_argument(where + ": sink 'csv' needs sink_path (the file to write)");
  }
  if (*sink_ == "udp") {
    if (auto hp = split_host_port(*sink_path_); !hp) return hp.status().with_context(where);
  }
  EDGEVLA_ASSIGN_OR_RETURN(command_, spec.publisher<msgs::JointCommand>(
                                         "command", PublisherOptions{.never_wait = true}));
  if (*publish_state_) {
    EDGEVLA_ASSIGN_OR_RETURN(state_, spec.publisher<msgs::RobotState>(
                                         "state", PublisherOptions{.never_wait = true}));
  }
  EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::ActionChunk>(
      "chunks", QoS::keep_latest(), [this](const msgs::ActionChunk& m) { on_chunk(m); }));
  const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / *control_rate_hz_));
  return spec.timer("control", period, [this] { on_tick(); });
}

Status ActuationNode::activate() {
  auto executor = ChunkExecutor::create(executor_options());
  if (!executor) return executor.status().with_context("node '" + name() + "'");
  executor_ = std::move(*executor);
  newest_header_.reset();
  current_header_.reset();
  newest_id_ = current_id_ = -1;
  newest_observation_seq_.reset();
  current_observation_seq_.reset();
  sink_errors_ = 0;
  was_faulted_ = false;
  sink_out_.reset();
  if (*sink_ == "csv") {
    EDGEVLA_ASSIGN_OR_RETURN(sink_out_, CsvSink::open(*sink_path_, *action_dim_));
  } else if (*sink_ == "udp") {
    EDGEVLA_ASSIGN_OR_RETURN(sink_out_, UdpSink::open(*sink_path_, *action_dim_));
  } else if (*sink_ == "stdout") {
    sink_out_ = std::make_unique<StdoutSink>(name());
  }
  return Status::ok();
}

Status ActuationNode::deactivate() {
  if (executor_) {
    const ChunkExecutorCounters& c = executor_->counters();
    log().info(
        "node '{}': {} ticks, {} commands, {} chunks ({} rejected, {} superseded), {} holds, "
        "{} late ticks, {} position / {} velocity clamps, {} watchdog faults, {} sink errors, {} clock steps",
        name(), c.ticks, c.commands, c.chunks_received, c.chunks_rejected, c.chunks_superseded,
        c.holds, c.late_ticks, c.position_clamps, c.velocity_clamps, c.watchdog_faults,
        sink_errors_, clock_steps_);
  }
  sink_out_.reset();
  executor_.reset();
  return Status::ok();
}

void ActuationNode::on_chunk(const msgs::ActionChunk& chunk) {
  // The callback's stamp, not a fresh clock read: replay restores exactly this value, so a
  // decision on it (a chunk's age, the watchdog) comes out the same however late the callback ran.
  const std::int64_t received = callback_stamp_ns();
  const Tensor& actions = chunk.actions();
  if (!actions.device().is_cpu()) {
    report_bad_input("chunks",
                     invalid_argument("actions are not in CPU memory: " + actions.describe()));
    return;
  }
  auto dense = actions.contiguous();
  if (!dense) {
    report_bad_input("chunks", dense.status());
    return;
  }
  ChunkInput in;
  in.actions = {dense->data<float>(), static_cast<std::size_t>(dense->numel())};
  in.rows = dense->shape()[0];
  in.cols = dense->shape()[1];
  in.source_stamp_ns = chunk.header().source_stamp_ns;
  if (auto dt = chunk.message().number_field("dt_s")) in.dt_s = *dt;
  in.id = next_chunk_id_++;
  if (Status s = executor_->submit(in, received); !s.is_ok()) {
    report_bad_input("chunks", s);
    return;
  }
  newest_header_ = chunk.header();
  newest_id_ = in.id;
  newest_received_ns_ = received;
  newest_observation_seq_.reset();
  if (auto seq = chunk.message().int_field("observation_seq")) newest_observation_seq_ = *seq;
}

void ActuationNode::on_tick() {
  executor_->set_tuning(tuning());
  const std::int64_t now = callback_stamp_ns();  // as in on_chunk
  if (clock_is_live()) {
    // The two clocks read together (not the callback's stamp, taken earlier).
    const std::int64_t wall = now_ns();
    const std::int64_t steady = steady_now_ns();
    if (last_tick_steady_ns_ != 0) {
      // Wall and steady time advance together; a difference past scheduling noise is a step.
      const std::int64_t step = (wall - last_tick_wall_ns_) - (steady - last_tick_steady_ns_);
      if (step > kClockStepNs || step < -kClockStepNs) {
        executor_->clock_stepped(step);
        ++clock_steps_;
        log().warn("node '{}': the system clock stepped by {:+.3f} s between two ticks (NTP or an operator); "
                   "the watchdog counts only the time that passed ({} step(s) so far)",
                   name(), static_cast<double>(step) * 1e-9, clock_steps_);
      }
    }
    last_tick_wall_ns_ = wall;
    last_tick_steady_ns_ = steady;
  }
  std::optional<Command> cmd = executor_->tick(now);
  if (!cmd) return;  // no chunk yet and no initial_position
  if (cmd->chunk_id >= 0 && cmd->chunk_id == newest_id_ && current_id_ != newest_id_) {
    current_header_ = newest_header_;
    current_id_ = newest_id_;
    current_observation_seq_ = newest_observation_seq_;
    current_received_ns_ = newest_received_ns_;
  }
  const bool derived = cmd->chunk_id >= 0 && current_header_.has_value();
  const std::int64_t chunk_seq = derived ? static_cast<std::int64_t>(current_header_->seq) : -1;
  const ChunkExecutorCounters& n = executor_->counters();

  if (cmd->state == CommandState::kFault) {
    log_limit_.warn("watchdog", "node '" + name() + "': " + cmd->fault + ", holding");
  } else if (was_faulted_) {
    log().info("node '{}': watchdog: chunks resumed", name());
  }
  was_faulted_ = cmd->state == CommandState::kFault;

  if (sink_out_) {
    if (Status s = sink_out_->write({now, n.ticks, chunk_seq, &*cmd}); !s.is_ok()) {
      ++sink_errors_;
      log_limit_.warn("sink", "node '" + name() + "': " + s.message());
    }
  }

  auto position = Tensor::from_values(std::span<const double>(cmd->position),
                                      Shape{static_cast<std::int64_t>(cmd->position.size())});
  if (!position) {
    log_limit_.warn("publish", "node '" + name() + "': " + position.status().message());
    return;
  }
  if (*publish_state_) {
    // The simulated robot is where it was commanded, at the time of the command.
    auto st = msgs::RobotState::make(*position);
    if (st) {
      st->header().source_stamp_ns = now;
      if (Status s = state_.publish(std::move(*st)); !s.is_ok()) {
        log_limit_.warn("publish", "node '" + name() + "': " + s.message());
      }
    }
  }
  auto msg = msgs::JointCommand::make(std::move(*position));
  if (!msg) {
    log_limit_.warn("publish", "node '" + name() + "': " + msg.status().message());
    return;
  }
  if (derived) {
    msg->derive_from(*current_header_);
  } else {
    msg->header().source_stamp_ns = now;
  }
  const auto count = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  msg->set_field("tick", count(n.ticks));
  msg->set_field("state", std::string(command_state_name(cmd->state)));
  msg->set_field("chunk_seq", chunk_seq);
  msg->set_field("chunk_step", cmd->chunk_step);
  msg->set_field("chunk_wanted", cmd->chunk_wanted);
  msg->set_field("clamped", cmd->clamped);
  if (!cmd->fault.empty()) msg->set_field("fault", cmd->fault);
  if (derived && current_observation_seq_)
    msg->set_field("observation_seq", *current_observation_seq_);
  if (derived) msg->set_field("chunk_received_ns", current_received_ns_);
  msg->set_field("chunks_received", count(n.chunks_received));
  msg->set_field("chunks_rejected", count(n.chunks_rejected));
  msg->set_field("chunks_superseded", count(n.chunks_superseded));
  msg->set_field("holds", count(n.holds));
  msg->set_field("late_ticks", count(n.late_ticks));
  msg->set_field("position_clamps", count(n.position_clamps));
  msg->set_field("velocity_clamps", count(n.velocity_clamps));
  msg->set_field("watchdog_faults", count(n.watchdog_faults));
  msg->set_field("sink_errors", count(sink_errors_));
  if (Status s = command_.publish(std::move(*msg)); !s.is_ok()) {
    log_limit_.warn("publish", "node '" + name() + "': " + s.message());
  }
}

EDGEVLA_REGISTER_NODE(ActuationNode, "actuation",
                      "executes action chunks at a control rate: stride, replace/blend, latency "
                      "compensation, hold, limits, watchdog; commands to a topic and a sink");

}  // namespace edgevla::nodes
