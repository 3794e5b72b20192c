#include "runtime/node/host.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "runtime/node/node_registry.hpp"
#include "runtime/node/node_runtime.hpp"
#include "runtime/shm/ready.hpp"
#include "runtime/util/thread_name.hpp"

namespace edgevla {

namespace {

// How long deactivate_all() waits for the inbound messages other processes already delivered:
// long enough for a first device import (device start-up in this process, seconds on a loaded
// machine), short of the launcher's 10 s stop limit.
constexpr std::int64_t kDrainInboundNs = 6'000'000'000;

// Attaches a fresh runtime to `node` and runs its configure().
Expected<std::shared_ptr<NodeRuntime>> configure_node(Node& node, Bus* bus, const NodeHostOptions& host,
                                                      const std::shared_ptr<std::atomic<bool>>& announce,
                                                      std::shared_ptr<NodeRuntime>& slot_rt) {
  auto rt = std::make_shared<NodeRuntime>();
  rt->options = node.options();
  rt->bus = bus;
  // Default seed: FNV-1a of the node name, so two runs of one graph draw the same numbers.
  std::uint64_t seed = 0xcbf29ce484222325ull;
  for (unsigned char c : node.name()) seed = (seed ^ c) * 0x100000001b3ull;
  rt->rng.set_state({seed, 0});
  rt->spin_ns = host.spin_ns;
  // The node's own value (a launch file's node key) wins over the host's.
  const std::int64_t upstream_spin_ns =
      rt->options.upstream_spin_us ? *rt->options.upstream_spin_us * 1000 : host.upstream_spin_ns;
  rt->waker->set_upstream_spin_ns(upstream_spin_ns);
  // Once one executor of the host spins, every node's callbacks announce themselves to theirs.
  if (upstream_spin_ns > 0) announce->store(true, std::memory_order_relaxed);
  rt->announce_upstream = announce;
  // A node that spins for upstream work spins as long for a block another process is still writing.
  shm::raise_ready_spin_ns(upstream_spin_ns);
  rt->manual_timers = host.manual_timers;
  slot_rt = rt;
  NodeSpec spec(*rt);
  Status s;
  try {
    s = node.configure(spec);
  } catch (const std::exception& e) {
    s = internal_error("node '" + node.name() + "': configure threw: " + e.what());
  } catch (...) {
    s = internal_error("node '" + node.name() + "': configure threw a non-standard exception");
  }
  if (!s.is_ok()) {
    // A node that rejects its configuration for another reason than a bad value (say, "set
    // topics or all") is often missing a param the user misspelt: say that first.
    if (!rt->declaration_failed) EDGEVLA_RETURN_IF_ERROR(rt->check_unknown_params());
    return s;
  }
  EDGEVLA_RETURN_IF_ERROR(rt->check_unknown_params());
  rt->state.store(NodeState::kConfigured);
  return rt;
}

}  // namespace

NodeHost::NodeHost(Bus& bus, NodeHostOptions options)
    : bus_(bus),
      options_(std::move(options)),
      announce_upstream_(std::make_shared<std::atomic<bool>>(options_.upstream_spin_ns > 0)) {
  bus_.set_control_handler([this](const ControlRequest& r) { return control(r); });
  if (options_.status_period.count() > 0) {
    auto w = bus_.advertise(options_.status_topic, "NodeStatus",
                            options_.process_name.empty() ? "host" : options_.process_name);
    if (w) {
      status_writer_ = *w;
      status_thread_ = std::thread([this] {
        name_this_thread("status");
        status_loop();
      });
    } else {
      logger().warn("NodeStatus disabled: {}", w.status().message());
    }
  }
}

NodeHost::~NodeHost() {
  bus_.set_control_handler(nullptr);  // no introspection call may run into a dying host
  {
    std::lock_guard lock(status_mu_);
    status_stop_ = true;
  }
  status_cv_.notify_all();
  if (status_thread_.joinable()) status_thread_.join();
  shutdown();
  if (status_writer_) bus_.unadvertise(status_writer_);
}

std::vector<NodeHost::SlotPtr> NodeHost::snapshot() const {
  std::lock_guard lock(mu_);
  return slots_;
}

Expected<Node*> NodeHost::add(const NodeOptions& options) {
  auto node = NodeRegistry::instance().create(options);
  if (!node) return node.status();
  return configure_and_add(std::move(*node));
}

Expected<Node*> NodeHost::add(std::unique_ptr<Node> node) { return configure_and_add(std::move(node)); }

Expected<Node*> NodeHost::configure_and_add(std::unique_ptr<Node> node) {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (find(node->name()) != nullptr) {
    return already_exists("two nodes are named '" + node->name() + "'; node names must be unique");
  }
  std::shared_ptr<NodeRuntime> rt;
  node->runtime_ = nullptr;
  if (options_.clock != nullptr) node->clock_ = options_.clock;
  auto configured = configure_node(*node, &bus_, options_, announce_upstream_, rt);
  if (!configured) return configured.status();
  node->runtime_ = *configured;
  node->runtime_->clock = node->clock_;
  Node* raw = node.get();
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    slots_.push_back(std::make_shared<Slot>(Slot{std::move(node), *configured}));
    for (const auto& s : slots_) names.push_back(s->node->name());
  }
  bus_.set_node_names(std::move(names));
  return raw;
}

Status NodeHost::activate(Slot& slot) {
  NodeRuntime& rt = *slot.rt;
  if (rt.state.load() != NodeState::kConfigured) {
    return failed_precondition("node '" + slot.node->name() + "' is " +
                               std::string(node_state_name(rt.state.load())) + ", not inactive");
  }
  std::vector<std::shared_ptr<TopicWriter>> writers;
  auto undo = [&] {
    for (auto& p : rt.publishers) {
      p->active.store(false);
      std::lock_guard lock(p->writer_mu);
      if (p->writer) bus_.unadvertise(p->writer);
      p->writer.reset();
    }
  };
  for (auto& p : rt.publishers) {
    auto w = bus_.advertise(p->topic, p->type, p->node, p->options);
    if (!w) {
      undo();
      return w.status();
    }
    {
      std::lock_guard lock(p->writer_mu);
      p->writer = *w;
    }
    p->active.store(true, std::memory_order_release);
  }
  Status s;
  try {
    s = slot.node->activate();
  } catch (const std::exception& e) {
    s = internal_error(std::string("activate threw: ") + e.what());
  } catch (...) {
    s = internal_error("activate threw a non-standard exception");
  }
  if (!s.is_ok()) {
    undo();
    return s.with_context("node '" + slot.node->name() + "' failed to activate");
  }
  for (auto& sub : rt.subscriptions) {
    if (Status a = bus_.attach(sub->queue); !a.is_ok()) {
      for (auto& other : rt.subscriptions) bus_.detach(other->queue);
      [[maybe_unused]] Status d = slot.node->deactivate();
      undo();
      return a.with_context("node '" + slot.node->name() + "'");
    }
  }
  rt.running.store(true, std::memory_order_release);
  rt.executor = std::thread([&rt] { rt.run_executor(); });
  name_thread(rt.executor, "x:" + rt.options.name);
  rt.state.store(NodeState::kActive);
  return Status::ok();
}

Status NodeHost::deactivate(Slot& slot) {
  NodeRuntime& rt = *slot.rt;
  if (rt.state.load() != NodeState::kActive) return Status::ok();
  rt.running.store(false, std::memory_order_release);
  rt.waker->notify();
  if (rt.executor.joinable()) rt.executor.join();
  rt.run_commands();  // param changes posted while it was stopping still apply
  for (auto& sub : rt.subscriptions) bus_.detach(sub->queue);
  Status s;
  try {
    s = slot.node->deactivate();
  } catch (const std::exception& e) {
    s = internal_error(std::string("deactivate threw: ") + e.what());
  } catch (...) {
    s = internal_error("deactivate threw a non-standard exception");
  }
  for (auto& p : rt.publishers) {
    p->active.store(false);
    std::lock_guard lock(p->writer_mu);
    if (p->writer) bus_.unadvertise(p->writer);
    p->writer.reset();
  }
  rt.state.store(NodeState::kConfigured);
  return s.with_context("node '" + slot.node->name() + "' deactivate");
}

Status NodeHost::activate_all() {
  std::lock_guard lifecycle(lifecycle_mu_);
  auto slots = snapshot();
  // Heaviest declared load first; nodes without one keep their order after them.
  std::stable_sort(slots.begin(), slots.end(), [](const SlotPtr& a, const SlotPtr& b) {
    return a->rt->load_bytes > b->rt->load_bytes;
  });
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i]->rt->load_bytes > 0) {
      logger().info("activating '{}' ({:.1f} MB to load)", slots[i]->node->name(),
                    static_cast<double>(slots[i]->rt->load_bytes) / 1e6);
    }
    if (slots[i]->rt->state.load() == NodeState::kActive) continue;
    if (Status s = activate(*slots[i]); !s.is_ok()) {
      for (std::size_t j = i; j-- > 0;) [[maybe_unused]] Status d = deactivate(*slots[j]);
      return s;
    }
  }
  return Status::ok();
}

Status NodeHost::deactivate_all() {
  std::lock_guard lifecycle(lifecycle_mu_);
  const auto slots = snapshot();
  if (std::any_of(slots.begin(), slots.end(), [](const auto& s) { return s->rt->state.load() == NodeState::kActive; })) {
    if (Status d = bus_.drain_inbound(kDrainInboundNs); !d.is_ok()) logger().warn("stopping: {}", d.message());
  }
  Status first;
  for (std::size_t i = slots.size(); i-- > 0;) {
    Status s = deactivate(*slots[i]);
    if (!s.is_ok()) {
      logger().error("{}", s.message());
      if (first.is_ok()) first = s;
    }
  }
  return first;
}

void NodeHost::shutdown() {
  [[maybe_unused]] Status s = deactivate_all();
  std::lock_guard lifecycle(lifecycle_mu_);
  std::vector<SlotPtr> dying;
  {
    std::lock_guard lock(mu_);
    dying.swap(slots_);
  }
  while (!dying.empty()) {  // last added first
    dying.back()->rt->state.store(NodeState::kFinalized);
    dying.pop_back();
  }
}

Expected<NodeHost::SlotPtr> NodeHost::slot_named(std::string_view name) const {
  for (auto& s : snapshot()) {
    if (s->node->name() == name) return s;
  }
  return not_found("no node named '" + std::string(name) + "' in this process");
}

Node* NodeHost::find(std::string_view name) const {
  auto slot = slot_named(name);
  return slot ? (*slot)->node.get() : nullptr;
}

std::vector<CallbackReport> NodeHost::callback_reports() const {
  std::vector<CallbackReport> out;
  auto fill = [](CallbackReport& r, const CallbackStats& s) {
    r.count = s.count.get();
    r.errors = s.errors.get();
    r.p50_ns = s.latency.quantile_ns(0.5);
    r.p99_ns = s.latency.quantile_ns(0.99);
    r.max_ns = s.latency.max_ns();
    r.delay_p50_ns = s.delay.quantile_ns(0.5);
    r.delay_p99_ns = s.delay.quantile_ns(0.99);
    r.remote = s.transport.count();
    r.transport_p50_ns = s.transport.quantile_ns(0.5);
    r.handoff_p50_ns = s.handoff.quantile_ns(0.5);
    r.overruns = s.overruns.get();
  };
  for (const auto& slotp : snapshot()) {
    const Slot& slot = *slotp;
    for (const auto& sub : slot.rt->subscriptions) {
      CallbackReport r{slot.node->name(), sub->name, "subscription"};
      fill(r, sub->stats);
      const auto& c = sub->queue->counters();
      r.dropped = c.dropped_overflow.get() + c.dropped_timeout.get() + c.lost.get();
      r.rejected = c.rejected.get();
      out.push_back(r);
    }
    for (const auto& t : slot.rt->timers) {
      CallbackReport r{slot.node->name(), t->name, "timer"};
      fill(r, t->stats);
      out.push_back(r);
    }
  }
  return out;
}

std::uint64_t NodeHost::bad_inputs(std::string_view node) const {
  for (const auto& s : snapshot()) {
    if (s->node->name() == node) return s->rt->bad_inputs.get();
  }
  return 0;
}

NodeHost::UpstreamSpins NodeHost::upstream_spins(std::string_view node) const {
  for (const auto& s : snapshot()) {
    if (s->node->name() == node) {
      return {s->rt->waker->upstream_spins_taken(), s->rt->waker->upstream_spins_missed(), s->rt->waker->upstream_busy()};
    }
  }
  return {};
}

std::string NodeHost::nodes_yaml() const {
  const auto reports = callback_reports();
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "process" << YAML::Value << options_.process_name
      << YAML::Key << "pid" << YAML::Value << ::getpid() << YAML::Key << "bus" << YAML::Value
      << bus_.id() << YAML::Key << "rss_bytes" << YAML::Value << process_rss_bytes();
  out << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const auto& slotp : snapshot()) {
    const Slot& slot = *slotp;
    const NodeRuntime& rt = *slot.rt;
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << slot.node->name() << YAML::Key
        << "type" << YAML::Value << slot.node->type() << YAML::Key << "state" << YAML::Value
        << std::string(node_state_name(rt.state.load())) << YAML::Key << "bad_inputs"
        << YAML::Value << rt.bad_inputs.get();
    if (const std::int64_t mem = rt.memory_bytes.load(std::memory_order_relaxed); mem >= 0) {
      out << YAML::Key << "memory_bytes" << YAML::Value << mem;
    }
    {
      std::lock_guard lock(rt.engine_mu);
      if (!rt.engine.empty()) out << YAML::Key << "engine" << YAML::Value << rt.engine;
    }
    if (rt.waker->spins_for_upstream()) {
      out << YAML::Key << "upstream_spin" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "taken"
          << YAML::Value << rt.waker->upstream_spins_taken() << YAML::Key << "missed" << YAML::Value
          << rt.waker->upstream_spins_missed() << YAML::EndMap;
    }
    out << YAML::Key << "publishers" << YAML::Value << YAML::BeginSeq;
    for (const auto& p : rt.publishers) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p->name
          << YAML::Key << "topic" << YAML::Value << p->topic << YAML::Key << "type" << YAML::Value
          << p->type;
      std::shared_ptr<TopicWriter> writer;
      {
        std::lock_guard lock(p->writer_mu);
        writer = p->writer;
      }
      if (writer) {
        const auto& c = writer->counters();
        out << YAML::Key << "published" << YAML::Value << c.published.get() << YAML::Key
            << "sent_remote" << YAML::Value << c.sent_remote.get() << YAML::Key << "errors"
            << YAML::Value << c.errors.get();
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::Key << "subscriptions" << YAML::Value << YAML::BeginSeq;
    for (const auto& s : rt.subscriptions) {
      const auto& c = s->queue->counters();
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s->name
          << YAML::Key << "topic" << YAML::Value << s->queue->topic() << YAML::Key << "type"
          << YAML::Value << (s->queue->type().empty() ? "*" : s->queue->type()) << YAML::Key
          << "qos" << YAML::Value << s->queue->qos().to_string() << YAML::Key << "received"
          << YAML::Value << c.received.get() << YAML::Key << "dropped_overflow" << YAML::Value
          << c.dropped_overflow.get() << YAML::Key << "dropped_timeout" << YAML::Value
          << c.dropped_timeout.get() << YAML::Key << "lost" << YAML::Value << c.lost.get()
          << YAML::Key << "rejected" << YAML::Value << c.rejected.get() << YAML::Key << "queued"
          << YAML::Value << s->queue->size();
      // An input the node only keeps (QoS::triggers off): not spun for upstream.
      if (!s->queue->qos().triggers) out << YAML::Key << "held" << YAML::Value << true;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::Key << "callbacks" << YAML::Value << YAML::BeginSeq;
    for (const auto& r : reports) {
      if (r.node != slot.node->name()) continue;
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << r.name
          << YAML::Key << "kind" << YAML::Value << r.kind << YAML::Key << "count" << YAML::Value
          << r.count << YAML::Key << "errors" << YAML::Value << r.errors << YAML::Key << "p50_us"
          << YAML::Value << r.p50_ns / 1000.0 << YAML::Key << "p99_us" << YAML::Value
          << r.p99_ns / 1000.0 << YAML::Key << "max_us" << YAML::Value << r.max_ns / 1000.0
          << YAML::Key << "dropped" << YAML::Value << r.dropped << YAML::Key << "overruns"
          << YAML::Value << r.overruns << YAML::Key << "delay_p50_us" << YAML::Value << r.delay_p50_ns / 1000.0
          << YAML::Key << "delay_p99_us" << YAML::Value << r.delay_p99_ns / 1000.0;
      if (r.remote > 0) {
        // From other processes: the delay's parts before and after the message arrived here.
        out << YAML::Key << "remote" << YAML::Value << r.remote << YAML::Key << "transport_p50_us" << YAML::Value
            << r.transport_p50_ns / 1000.0 << YAML::Key << "handoff_p50_us" << YAML::Value
            << r.handoff_p50_ns / 1000.0;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Expected<std::string> NodeHost::params_yaml(std::string_view node) const {
  for (const auto& slotp : snapshot()) {
    const Slot& slot = *slotp;
    if (slot.node->name() != node) continue;
    std::lock_guard lock(params_mu_);  // param set may be changing a descriptor
    YAML::Emitter out;
    out.SetDoublePrecision(15);
    out << YAML::BeginMap << YAML::Key << slot.node->name() << YAML::Value << YAML::BeginMap;
    for (const auto& p : slot.rt->params) {
      out << YAML::Key << p.name << YAML::Value;
      emit_param_value(out, p.value);
      std::string comment = std::string(param_type_name(p.type));
      if (!p.info.description.empty()) comment += ": " + p.info.description;
      if (p.origin != "default") comment += " [from " + p.origin + "]";
      out << YAML::Comment(comment);
    }
    out << YAML::EndMap << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
  }
  return not_found("no node named '" + std::string(node) + "' in this process");
}

Status NodeHost::set_param(std::string_view node, std::string_view key, std::string_view value) {
  for (const auto& slotp : snapshot()) {
    if (slotp->node->name() != node) continue;
    NodeRuntime& rt = *slotp->rt;
    std::lock_guard lock(params_mu_);
    const std::string where = "node '" + std::string(node) + "': param '" + std::string(key) + "'";
    for (auto& d : rt.params) {
      if (d.name != key) continue;
      EDGEVLA_ASSIGN_OR_RETURN(ParamValue v, param_value_from_text(value, d, where));
      d.value = v;
      d.origin = "param set";
      rt.post([apply = d.apply, nv = std::move(v)] { apply(nv); });
      return Status::ok();
    }
    return not_found(where + " is not declared");
  }
  return not_found("no node named '" + std::string(node) + "' in this process");
}

Status NodeHost::set_rng_state(std::string_view node, const RngState& state) {
  EDGEVLA_ASSIGN_OR_RETURN(const SlotPtr slot, slot_named(node));
  NodeRuntime& rt = *slot->rt;
  if (!rt.post_and_wait([&rt, state] { rt.rng.set_state(state); }, std::chrono::seconds(10))) {
    return timeout_error("node '" + std::string(node) + "' is busy: its generator state was not set within 10 s");
  }
  return Status::ok();
}

Expected<std::vector<std::int64_t>> NodeHost::timer_periods(std::string_view node) const {
  EDGEVLA_ASSIGN_OR_RETURN(const SlotPtr slot, slot_named(node));
  std::vector<std::int64_t> out;
  for (const auto& t : slot->rt->timers) out.push_back(t->period_ns);
  return out;
}

Status NodeHost::fire_timers(std::string_view node) {
  EDGEVLA_ASSIGN_OR_RETURN(const SlotPtr slot, slot_named(node));
  NodeRuntime& rt = *slot->rt;
  if (!rt.post_and_wait([&rt] { rt.fire_timers(); }, std::chrono::seconds(60))) {
    return timeout_error("node '" + std::string(node) + "': its timers did not run within 60 s");
  }
  return Status::ok();
}

Expected<NodeTopics> NodeHost::topics_of(std::string_view node) const {
  EDGEVLA_ASSIGN_OR_RETURN(const SlotPtr slot, slot_named(node));
  NodeTopics t;
  for (const auto& s : slot->rt->subscriptions) t.subscriptions.push_back({s->name, s->queue->topic(), s->queue->type()});
  for (const auto& p : slot->rt->publishers) t.publishers.push_back({p->name, p->topic, p->type});
  return t;
}

std::uint64_t NodeHost::subscription_callbacks(std::string_view node) const {
  std::uint64_t n = 0;
  for (const auto& slotp : snapshot()) {
    if (slotp->node->name() != node) continue;
    for (const auto& sub : slotp->rt->subscriptions) n += sub->stats.count.get();
  }
  return n;
}

Expected<std::string> NodeHost::control(const ControlRequest& r) {
  if (r.command == "nodes") return nodes_yaml();
  if (r.command == "params") return params_yaml(r.argument);
  if (r.command == "set") {
    EDGEVLA_ASSIGN_OR_RETURN(ParamSetRequest set, parse_param_set(r.argument));
    EDGEVLA_RETURN_IF_ERROR(set_param(set.node, set.key, set.value));
    return params_yaml(set.node);
  }
  return invalid_argument("unknown control command '" + r.command + "' (nodes, params, set, bus)");
}

void NodeHost::publish_status() {
  std::vector<Message> out;
  {
    const auto reports = callback_reports();
    const std::int64_t rss = process_rss_bytes();
    const std::int64_t peak = process_peak_rss_bytes();
    for (const auto& slotp : snapshot()) {
      const Slot& slot = *slotp;
      Message m("NodeStatus", 1);
      m.set_field("node", slot.node->name());
      m.set_field("type", slot.node->type());
      m.set_field("state", std::string(node_state_name(slot.rt->state.load())));
      m.set_field("pid", static_cast<std::int64_t>(::getpid()));
      m.set_field("process_rss_bytes", rss);
      m.set_field("process_peak_rss_bytes", peak);
      m.set_field("bad_inputs", static_cast<std::int64_t>(slot.rt->bad_inputs.get()));
      if (const std::int64_t mem = slot.rt->memory_bytes.load(std::memory_order_relaxed); mem >= 0) {
        m.set_field("memory_bytes", mem);
      }
      {
        std::lock_guard lock(slot.rt->engine_mu);
        if (!slot.rt->engine.empty()) m.set_field("engine", slot.rt->engine);
      }
      if (slot.rt->load_bytes > 0) m.set_field("load_bytes", slot.rt->load_bytes);
      for (const auto& r : reports) {
        if (r.node != slot.node->name()) continue;
        const std::string k = "cb." + r.name + ".";
        m.set_field(k + "count", static_cast<std::int64_t>(r.count));
        m.set_field(k + "p50_us", r.p50_ns / 1000.0);
        m.set_field(k + "p99_us", r.p99_ns / 1000.0);
        m.set_field(k + "dropped", static_cast<std::int64_t>(r.dropped));
        m.set_field(k + "errors", static_cast<std::int64_t>(r.errors));
      }
      out.push_back(std::move(m));
    }
  }
  for (auto& m : out) {
    if (Status s = bus_.publish(*status_writer_, std::move(m)); !s.is_ok()) {
      logger().debug("NodeStatus: {}", s.message());
    }
  }
}

void NodeHost::status_loop() {
  std::unique_lock lock(status_mu_);
  while (!status_cv_.wait_for(lock, options_.status_period, [this] { return status_stop_; })) {
    lock.unlock();
    publish_status();
    lock.lock();
  }
}

Expected<DryRun> dry_run(const NodeOptions& options) {
  auto node = NodeRegistry::instance().create(options);
  if (!node) return node.status();
  std::shared_ptr<NodeRuntime> rt;
  auto configured = configure_node(**node, nullptr, NodeHostOptions{}, std::make_shared<std::atomic<bool>>(false), rt);
  if (!configured) return configured.status();
  DryRun out{(*configured)->params, (*configured)->load_bytes, {}, {}, {}};
  const NodeRuntime& r = **configured;
  auto add = [&](const std::string& name, const std::string& topic) {
    out.names.push_back(name);
    out.topics.push_back(topic);
    out.default_topics.push_back(resolve_topic(options, name, /*apply_remaps=*/false));
  };
  for (const auto& p : r.publishers) add(p->name, p->topic);
  for (const auto& sub : r.subscriptions) add(sub->name, sub->queue->topic());
  for (auto& p : out.params) p.apply = nullptr;  // they point into the node destroyed here
  return out;
}

Expected<std::vector<ParamDescriptor>> dry_configure(const NodeOptions& options) {
  EDGEVLA_ASSIGN_OR_RETURN(DryRun run, dry_run(options));
  return std::move(run.params);
}

}  // namespace edgevla
