#include "runtime/node/node.hpp"

#include "msgs/wire.hpp"

#include "runtime/node/node_runtime.hpp"

#include <future>

namespace edgevla {

namespace {
// The node whose callback runs on this thread (null outside callbacks).
thread_local const NodeRuntime* t_callback_runtime = nullptr;
}  // namespace


std::string_view node_state_name(NodeState s) {
  switch (s) {
    case NodeState::kUnconfigured: return "unconfigured";
    case NodeState::kConfigured: return "inactive";
    case NodeState::kActive: return "active";
    case NodeState::kFinalized: return "finalized";
  }
  return "?";
}

namespace {
const SystemClock kSystemClock;
}

Node::Node(const NodeOptions& options) : options_(options), clock_(&kSystemClock) {}

Node::~Node() = default;

Bus* Node::bus() const { return runtime_ ? runtime_->bus : nullptr; }

Rng& Node::rng() {
  static thread_local Rng unbound;  // a node used outside a host (unit tests of node code)
  return runtime_ ? runtime_->rng : unbound;
}

std::int64_t Node::callback_stamp_ns() const {
  return runtime_ && t_callback_runtime == runtime_.get() ? runtime_->callback_stamp_ns : now_ns();
}

void Node::report_bad_input(std::string_view what, const Status& why) {
  if (runtime_) runtime_->bad_inputs.add();
  rate_log_.warn(what, "node '" + name() + "': " + std::string(what) + ": " + why.message());
}

void NodeSpec::declare_load(std::int64_t bytes) { rt_.load_bytes = bytes; }

void Node::report_engine(std::string description) {
  if (!runtime_) return;
  std::lock_guard lock(runtime_->engine_mu);
  runtime_->engine = std::move(description);
}

void Node::report_memory(std::int64_t bytes) {
  if (runtime_) runtime_->memory_bytes.store(bytes, std::memory_order_relaxed);
}

// PublisherHandle --------------------------------------------------------------------------

Status PublisherHandle::publish(Message&& message) const {
  if (!state_) return failed_precondition("publish on an empty publisher handle");
  if (!state_->active.load(std::memory_order_acquire) || !state_->writer) {
    return failed_precondition("node '" + state_->node + "' cannot publish on '" + state_->topic +
                               "' while it is not active");
  }
  // Callback stamps, generator state and input marks describe the running callback; they are
  // read on the node's executor thread only (a publish from any other thread carries none).
  if (state_->runtime != nullptr && t_callback_runtime == state_->runtime) {
    message.header().rng = state_->runtime->callback_rng;
    message.header().callback_stamp_ns = state_->runtime->callback_stamp_ns;
    auto& marks = message.header().inputs;
    marks.clear();
    for (const auto& sub : state_->runtime->subscriptions) {
      const std::int64_t pub = sub->last_publish_ns.load(std::memory_order_relaxed);
      if (pub != 0) marks.push_back({sub->queue->topic(), pub, sub.get() == state_->runtime->callback_subscription.load(std::memory_order_relaxed)});
    }
    message.header().taken = std::move(state_->runtime->taken);
    message.header().taken_lost = state_->runtime->taken_lost;
    state_->runtime->taken.clear();
    state_->runtime->taken_lost = 0;
  }
  return state_->bus->publish(*state_->writer, std::move(message));
}

Status PublisherHandle::publishes_on(Device device) const {
  if (!state_ || !state_->bus) return Status::ok();  // a dry-run configure: nothing to check against
  std::shared_ptr<TopicWriter> w;
  {
    std::lock_guard lock(state_->writer_mu);
    w = state_->writer;
  }
  if (!w) return failed_precondition("publisher '" + state_->name + "' is not active (declare devices in activate())");
  if (w->device() == device) return Status::ok();
  return state_->bus->publishes_on(*w, device);
}

Expected<Tensor> PublisherHandle::loan(DType dtype, const Shape& shape, Device device) const {
  if (!device.is_cpu()) EDGEVLA_RETURN_IF_ERROR(publishes_on(device));
  if (state_ && state_->bus) return state_->bus->loan_for(state_->topic, dtype, shape, device);
  if (!device.is_cpu()) return Tensor::empty(dtype, shape, device);
  return Tensor::empty(dtype, shape);
}

const std::string& PublisherHandle::topic() const {
  static const std::string kNone;
  return state_ ? state_->topic : kNone;
}

// NodeSpec ------------------------------------------------------------------------------------

const std::string& NodeSpec::node_name() const { return rt_.options.name; }

void NodeSpec::seed_rng(std::uint64_t seed) { rt_.rng.set_state({seed, 0}); }

std::string resolve_topic(const NodeOptions& o, std::string_view name, bool apply_remaps) {
  if (apply_remaps) {
    if (auto it = o.remaps.find(std::string(name)); it != o.remaps.end()) name = it->second;
  }
  std::string topic;
  if (name.starts_with('/')) {
    topic = std::string(name);
  } else {
    topic = "/" + (o.ns.empty() ? "" : (o.ns.starts_with('/') ? o.ns.substr(1) : o.ns) + "/") +
            std::string(name);
  }
  if (apply_remaps) {
    if (auto it = o.remaps.find(topic); it != o.remaps.end()) topic = it->second;
  }
  return topic;
}

std::string NodeSpec::resolve_topic(std::string_view name) const { return edgevla::resolve_topic(rt_.options, name); }

Expected<ParamValue> NodeSpec::declare_value(const std::string& name, ParamType type,
                                             ParamValue default_value, const ParamInfo& info, bool int32) {
  auto v = resolve_value(name, type, std::move(default_value), info, int32);
  if (!v) rt_.declaration_failed = true;
  return v;
}

Expected<ParamValue> NodeSpec::resolve_value(const std::string& name, ParamType type,
                                             ParamValue default_value, const ParamInfo& info, bool int32) {
  const std::string where = "node '" + rt_.options.name + "': param '" + name + "'";
  for (const auto& p : rt_.params) {
    if (p.name == name) return already_exists(where + " is declared twice");
  }
  if (Status s = check_param_value(default_value, info, int32); !s.is_ok()) {
    return internal_error(where + " default " + s.message());
  }
  ParamDescriptor d{name, type, default_value, default_value, info, "default", int32, nullptr};
  if (auto it = rt_.options.params.find(name); it != rt_.options.params.end()) {
    const std::string origin = it->second.origin.empty() ? "" : " (" + it->second.origin + ")";
    auto v = param_from_yaml(it->second.value, type);
    if (!v) return invalid_argument(where + " " + v.status().message() + origin);
    if (Status s = check_param_value(*v, info, int32); !s.is_ok()) {
      return out_of_range(where + " = " + s.message() + origin);
    }
    d.value = std::move(*v);
    d.origin = it->second.origin;
  }
  rt_.params.push_back(d);
  return d.value;
}

void NodeSpec::bind_param(std::function<void(const ParamValue&)> apply) {
  rt_.params.back().apply = std::move(apply);
}

Expected<PublisherHandle> NodeSpec::publisher(std::string_view name, std::string_view type,
                                              PublisherOptions options) {
  for (const auto& p : rt_.publishers) {
    if (p->name == name) {
      return already_exists("node '" + rt_.options.name + "' declares publisher '" +
                            std::string(name) + "' twice");
    }
  }
  auto s = std::make_shared<PublisherHandle::State>();
  s->name = std::string(name);
  s->topic = resolve_topic(name);
  s->type = std::string(type);
  s->runtime = &rt_;
  s->node = rt_.options.name;
  s->options = options;
  s->bus = rt_.bus;
  rt_.publishers.push_back(s);
  return PublisherHandle(std::move(s));
}

Status NodeSpec::subscribe_any(std::string_view name, std::string type, QoS qos,
                               std::function<void(const MessagePtr&)> callback) {
  for (const auto& s : rt_.subscriptions) {
    if (s->name == name) {
      return already_exists("node '" + rt_.options.name + "' declares subscription '" +
                            std::string(name) + "' twice");
    }
  }
  if (auto it = rt_.options.qos.find(std::string(name)); it != rt_.options.qos.end()) {
    // The launch file picks depth, role and host copies; whether the callback takes device
    // tensors, and whether what arrives triggers work, is the node's code.
    const bool takes_device = qos.device_tensors;
    const bool triggers = qos.triggers;
    qos = it->second;
    qos.device_tensors = qos.device_tensors || takes_device;
    qos.triggers = triggers;
  }
  auto e = std::make_unique<SubscriptionEntry>();
  e->name = std::string(name);
  e->queue = std::make_shared<SubscriptionQueue>(resolve_topic(name), std::move(type), qos,
                                                 rt_.options.name, rt_.waker);
  e->callback = std::move(callback);
  rt_.subscriptions.push_back(std::move(e));
  return Status::ok();
}

Status NodeSpec::timer(std::string_view name, std::chrono::nanoseconds period,
                       std::function<void()> callback) {
  if (period.count() <= 0) {
    return invalid_argument("node '" + rt_.options.name + "': timer '" + std::string(name) +
                            "' needs a positive period");
  }
  auto t = std::make_unique<TimerEntry>();
  t->name = std::string(name);
  t->period_ns = period.count();
  t->callback = std::move(callback);
  rt_.timers.push_back(std::move(t));
  return Status::ok();
}

// NodeRuntime ---------------------------------------------------------------------------------

void NodeRuntime::post(std::function<void()> command) {
  {
    std::lock_guard lock(commands_mu);
    if (running.load(std::memory_order_acquire)) {
      commands.push_back(std::move(command));
      command = nullptr;
    }
  }
  if (command) {
    command();  // no executor thread: nothing else runs the node's code now
  } else {
    waker->notify();
  }
}

bool NodeRuntime::post_and_wait(std::function<void()> command, std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  post([command = std::move(command), done] {
    command();
    done->set_value();
  });
  return future.wait_for(timeout) == std::future_status::ready;
}

bool NodeRuntime::run_commands() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard lock(commands_mu);
    batch.swap(commands);
  }
  for (auto& c : batch) c();
  return !batch.empty();
}

Status NodeRuntime::check_unknown_params() const {
  for (const auto& [key, ov] : options.params) {
    bool declared = false;
    for (const auto& p : params) declared = declared || p.name == key;
    if (declared) continue;
    std::string known;
    for (const auto& p : params) known += (known.empty() ? "" : ", ") + p.name;
    return invalid_argument("node '" + options.name + "' (type " + options.type +
                            ") has no param '" + key + "'" +
                            (ov.origin.empty() ? "" : " (set in " + ov.origin + ")") +
                            "; declared params: " + (known.empty() ? "none" : known));
  }
  return Status::ok();
}

namespace {

template <class F>
void invoke_guarded(NodeRuntime& rt, const std::string& what, CallbackStats& stats, F&& f,
                    const Message* input = nullptr) {
  const NodeRuntime* outer = t_callback_runtime;
  t_callback_runtime = &rt;
  rt.callback_rng = rt.rng.state();
  rt.callback_stamp_ns = rt.clock != nullptr ? rt.clock->now_ns() : wall_now_ns();
  if (input != nullptr) {
    if (rt.taken.size() >= wire::kMaxTaken) {  // keep the newest half
      const auto drop = static_cast<std::ptrdiff_t>(rt.taken.size() / 2);
      rt.taken.erase(rt.taken.begin(), rt.taken.begin() + drop);
      rt.taken_lost += static_cast<std::uint32_t>(drop);
    }
    rt.taken.push_back({input->header().topic, input->header().publish_stamp_ns, rt.callback_stamp_ns});
  }
  // Executors downstream that spin for upstream work (here and in other processes on this
  // host) start spinning now: what this callback publishes is then taken without waking a
  // sleeping thread.
  UpstreamAnnouncement announced;
  if (rt.bus != nullptr && rt.announce_upstream && rt.announce_upstream->load(std::memory_order_relaxed)) {
    for (const auto& p : rt.publishers) {
      if (p->active.load(std::memory_order_acquire)) rt.bus->announce_upstream(p->topic, rt.waker.get(), announced);
    }
  }
  const std::int64_t t0 = steady_now_ns();
  try {
    f();
  } catch (const std::exception& e) {
    stats.errors.add();
    rt.rate_log.error(what, "node '" + rt.options.name + "': callback '" + what +
                                "' threw: " + e.what() + " (the node keeps running)");
  } catch (...) {
    stats.errors.add();
    rt.rate_log.error(what, "node '" + rt.options.name + "': callback '" + what +
                                "' threw a non-standard exception (the node keeps running)");
  }
  stats.latency.record(steady_now_ns() - t0);
  stats.count.add();
  announced.end();
  t_callback_runtime = outer;
}

}  // namespace

void NodeRuntime::fire_timers() {
  for (auto& t : timers) invoke_guarded(*this, t->name, t->stats, t->callback);
}

void NodeRuntime::run_executor() {
  const std::int64_t start = steady_now_ns();
  for (auto& t : timers) t->next_ns = start + t->period_ns;
  std::size_t rr = 0;  // round-robin start, so one busy topic cannot starve another
  while (running.load(std::memory_order_acquire)) {
    const std::uint32_t seen = waker->epoch();
    bool worked = run_commands();
    std::int64_t next_deadline = 0;
    const std::int64_t now = steady_now_ns();
    for (auto& t : timers) {
      if (manual_timers) break;
      if (now >= t->next_ns) {
        t->stats.delay.record(now - t->next_ns);
        invoke_guarded(*this, t->name, t->stats, t->callback);
        t->next_ns += t->period_ns;
        const std::int64_t after = steady_now_ns();
        if (after >= t->next_ns) {
          const std::int64_t missed = (after - t->next_ns) / t->period_ns + 1;
          t->stats.overruns.add(static_cast<std::uint64_t>(missed));
          t->next_ns += missed * t->period_ns;
        }
        worked = true;
      }
      if (next_deadline == 0 || t->next_ns < next_deadline) next_deadline = t->next_ns;
    }
    const std::size_t n = subscriptions.size();
    for (std::size_t k = 0; k < n; ++k) {
      auto& s = *subscriptions[(rr + k) % n];
      MessagePtr m = s.queue->pop();
      if (!m) continue;
      const std::int64_t start = wall_now_ns();
      s.stats.delay.record(start - m->header().publish_stamp_ns);
      if (const std::int64_t arrival = m->header().arrival_ns; arrival != 0) {
        s.stats.transport.record(arrival - m->header().publish_stamp_ns);
        s.stats.handoff.record(start - arrival);
      }
      s.queue->counters().delivered.add();
      s.last_publish_ns.store(m->header().publish_stamp_ns, std::memory_order_relaxed);
      callback_subscription.store(&s, std::memory_order_relaxed);
      invoke_guarded(*this, s.name, s.stats, [&] { s.callback(m); }, m.get());
      callback_subscription.store(nullptr, std::memory_order_relaxed);
      worked = true;
    }
    if (n) rr = (rr + 1) % n;
    if (!worked) waker->wait(seen, next_deadline, spin_ns);
  }
}

}  // namespace edgevla
