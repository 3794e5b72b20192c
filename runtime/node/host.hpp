// NodeHost: runs the nodes of one process. It creates nodes from the registry, walks them
// through their lifecycle in a chosen order, runs one executor thread per active node,
// publishes NodeStatus for each and answers introspection requests on the bus's control
// endpoint (`edgevla node list`, `edgevla param dump`).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bus/bus.hpp"
#include "runtime/node/node.hpp"
#include "runtime/node/params.hpp"
#include "runtime/util/heap.hpp"  // process_rss_bytes, process_peak_rss_bytes

namespace edgevla {

struct NodeRuntime;

struct NodeHostOptions {
  std::string process_name;
  std::string status_topic = "/edgevla/status";
  std::chrono::milliseconds status_period{1000};  // 0 turns NodeStatus off
  std::int64_t spin_ns = 0;  // executors spin this long before sleeping (latency vs CPU)
  // Executors spin up to this long while a node of this host that publishes to them runs a
  // callback, and callbacks announce themselves to them (0: off). Trades up to one core per
  // waiting stage for taking each hand-over without a thread wake-up. A node's own
  // NodeOptions::upstream_spin_us wins over it.
  std::int64_t upstream_spin_ns = 0;
  const Clock* clock = nullptr;  // the nodes' clock (default: the system clock); replay drives one
  bool manual_timers = false;    // timers fire only through fire_timers() (replay drives them)
};

struct TopicBinding {
  std::string name;   // as declared by the node
  std::string topic;  // after namespace and remaps
  std::string type;   // message type ("" for any)
};
struct NodeTopics {
  std::vector<TopicBinding> subscriptions;
  std::vector<TopicBinding> publishers;
};

struct CallbackReport {
  std::string node;
  std::string name;
  std::string kind;  // "subscription" or "timer"
  std::uint64_t count = 0;
  std::uint64_t errors = 0;
  std::int64_t p50_ns = 0;
  std::int64_t p99_ns = 0;
  std::int64_t max_ns = 0;
  std::int64_t delay_p50_ns = 0;
  std::int64_t delay_p99_ns = 0;
  // Subscriptions: of the messages from other processes (count), the delay's two parts.
  std::uint64_t remote = 0;
  std::int64_t transport_p50_ns = 0;
  std::int64_t handoff_p50_ns = 0;
  std::uint64_t dropped = 0;   // queue overflow + reliable timeouts + transport losses
  std::uint64_t rejected = 0;  // wrong type / malformed
  std::uint64_t overruns = 0;
};

class NodeHost {
 public:
  // One host per bus (the host owns the bus's control endpoint); the bus must outlive it.
  explicit NodeHost(Bus& bus, NodeHostOptions options = {});
  ~NodeHost();
  NodeHost(const NodeHost&) = delete;
  NodeHost& operator=(const NodeHost&) = delete;

  // Creates a node of a registered type and configures it. Param errors name node, key and
  // origin; nothing is added on error.
  Expected<Node*> add(const NodeOptions& options);
  // Adds a node built by the caller (tests, embedding) and configures it.
  Expected<Node*> add(std::unique_ptr<Node> node);

  // Activates nodes heaviest declared load first (then in the order they were added); if one fails, those already activated are
  // deactivated again and the error returned.
  Status activate_all();
  // Deactivates in reverse order (callbacks stop before each node's deactivate()). First, what
  // other processes already delivered to this one is taken into the queues (Bus::drain_inbound,
  // up to 6 s), so a recorder stopped after the publishers keeps their last messages.
  Status deactivate_all();
  // Deactivates (if needed) and destroys every node, last added first.
  void shutdown();

  Node* find(std::string_view name) const;
  std::vector<CallbackReport> callback_reports() const;
  std::uint64_t bad_inputs(std::string_view node) const;
  // Upstream spinning (NodeHostOptions::upstream_spin_ns) of a node's executor: waits that took
  // their work while spinning, waits that stopped spinning without it, and upstream callbacks
  // running now.
  struct UpstreamSpins {
    std::uint64_t taken = 0;
    std::uint64_t missed = 0;
    std::int32_t busy = 0;
  };
  UpstreamSpins upstream_spins(std::string_view node) const;
  std::string nodes_yaml() const;
  Expected<std::string> params_yaml(std::string_view node) const;
  // Changes a param of a running node. `value` is YAML text, checked like a params-file value;
  // read-only params are refused. Applied on the node's executor thread between callbacks.
  Status set_param(std::string_view node, std::string_view key, std::string_view value);
  // Replay: sets a node's generator state before the callback it should reproduce. Returns
  // once applied (on the node's thread when it is active).
  Status set_rng_state(std::string_view node, const RngState& state);
  // What a configured node subscribes to and publishes.
  Expected<NodeTopics> topics_of(std::string_view node) const;
  // Periods of the timers the node declared (ns), in declaration order.
  Expected<std::vector<std::int64_t>> timer_periods(std::string_view node) const;
  // Runs each of the node's timers once on its executor and returns when they are done
  // (with NodeHostOptions::manual_timers, the only way they run).
  Status fire_timers(std::string_view node);
  // Subscription callbacks the node has completed so far (replay waits on it).
  std::uint64_t subscription_callbacks(std::string_view node) const;

 private:
  struct Slot {
    std::unique_ptr<Node> node;
    std::shared_ptr<NodeRuntime> rt;
  };
  using SlotPtr = std::shared_ptr<Slot>;
  // The nodes, in add order. Slots stay alive while a snapshot holds them.
  std::vector<SlotPtr> snapshot() const;
  // The slot of the node named `name`; not_found names it.
  Expected<SlotPtr> slot_named(std::string_view name) const;
  Expected<Node*> configure_and_add(std::unique_ptr<Node> node);
  Status activate(Slot& slot);
  Status deactivate(Slot& slot);
  void publish_status();
  void status_loop();
  Expected<std::string> control(const ControlRequest& request);

  Bus& bus_;
  NodeHostOptions options_;
  // Whether any executor of this host spins for upstream work (then callbacks announce).
  std::shared_ptr<std::atomic<bool>> announce_upstream_;
  // lifecycle_mu_ orders add/activate/deactivate/shutdown (node code runs under it);
  // mu_ guards only the slot list, so introspection never waits for a slow activate().
  std::mutex lifecycle_mu_;
  mutable std::mutex mu_;
  std::vector<SlotPtr> slots_;
  mutable std::mutex params_mu_;  // param descriptors (param set vs dump)
  std::shared_ptr<TopicWriter> status_writer_;
  std::thread status_thread_;
  std::mutex status_mu_;
  std::condition_variable status_cv_;
  bool status_stop_ = false;
};

// Configures a node with no bus, to validate a launch before anything starts. Returns the
// declared params, or the first error (unknown type, bad or unknown param).
Expected<std::vector<ParamDescriptor>> dry_configure(const NodeOptions& options);
// The same, with the load the node declared (for ordering activation across processes).
struct DryRun {
  std::vector<ParamDescriptor> params;
  std::int64_t load_bytes = 0;
  std::vector<std::string> names;   // declared publisher and subscription names
  std::vector<std::string> topics;  // the topics they resolve to (after namespace and remaps)
  std::vector<std::string> default_topics;  // ... and without remaps (a remap key may name one)
};
Expected<DryRun> dry_run(const NodeOptions& options);

}  // namespace edgevla
