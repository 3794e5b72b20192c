// What the runtime keeps per node: declared params, publishers, subscriptions, timers, the
// executor and statistics. Internal to runtime/node; nodes see only NodeSpec and handles.
#pragma once

#include <atomic>
#include <mutex>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bus/bus.hpp"
#include "runtime/bus/subscription_queue.hpp"
#include "runtime/bus/waker.hpp"
#include "runtime/node/node.hpp"
#include "runtime/util/rng.hpp"
#include "runtime/util/stats.hpp"

namespace edgevla {

enum class NodeState { kUnconfigured, kConfigured, kActive, kFinalized };
std::string_view node_state_name(NodeState state);

struct CallbackStats {
  Counter count;
  Counter errors;            // callbacks that threw (caught, logged, counted)
  LatencyHistogram latency;  // time spent in the callback
  LatencyHistogram delay;    // subscription: publish -> callback start; timer: lateness
  // Subscription messages from other processes, `delay` split at their arrival here:
  LatencyHistogram transport;  // publish -> taken from the ring or socket (send, ring, wake-up)
  LatencyHistogram handoff;    // taken -> callback start (decode, dispatch, executor wake-up)
  Counter overruns;          // timer periods skipped because the previous run was late
};

struct SubscriptionEntry {
  std::string name;
  std::atomic<std::int64_t> last_publish_ns{0};  // publish stamp of the newest message taken
  std::shared_ptr<SubscriptionQueue> queue;
  std::function<void(const MessagePtr&)> callback;
  CallbackStats stats;
};

struct TimerEntry {
  std::string name;
  std::int64_t period_ns = 0;
  std::int64_t next_ns = 0;
  std::function<void()> callback;
  CallbackStats stats;
};

struct PublisherHandle::State {
  NodeRuntime* runtime = nullptr;  // the publishing node (its generator state goes in headers)
  std::string name;
  std::string topic;
  std::string type;
  std::string node;
  PublisherOptions options;
  Bus* bus = nullptr;
  // Set at activate, reset at deactivate (under writer_mu); publish() reads it only while
  // `active`, introspection (another thread) under writer_mu.
  std::shared_ptr<TopicWriter> writer;
  mutable std::mutex writer_mu;
  std::atomic<bool> active{false};
};

struct NodeRuntime {
  NodeOptions options;
  Bus* bus = nullptr;  // null during a dry-run configure (launch validation)
  std::vector<ParamDescriptor> params;
  std::vector<std::shared_ptr<PublisherHandle::State>> publishers;
  std::vector<std::unique_ptr<SubscriptionEntry>> subscriptions;
  std::vector<std::unique_ptr<TimerEntry>> timers;
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  // Set while some executor of this host spins for upstream work: the node's callbacks then
  // announce themselves to the executors they publish to (shared by the host's nodes).
  std::shared_ptr<const std::atomic<bool>> announce_upstream;
  Counter bad_inputs;
  // Resident bytes the node itself accounts for (weights it touched, its buffers); -1: none.
  std::atomic<std::int64_t> memory_bytes{-1};
  // The inference engine a model stage runs ("cuda:0 bf16 ..."), once activated; empty: none.
  mutable std::mutex engine_mu;
  std::string engine;
  // Bytes activate() will load (declared in configure): heavy nodes are activated first.
  std::int64_t load_bytes = 0;
  Rng rng;
  RngState callback_rng;  // generator state when the running callback began
  std::int64_t callback_stamp_ns = 0;  // node clock when the running callback began
  std::atomic<const SubscriptionEntry*> callback_subscription{nullptr};  // whose callback runs (none: a timer)
  // Input callbacks run since the node last published (executor thread only); the next
  // publish carries them in its header (`taken`) and starts a new list.
  std::vector<TakenInput> taken;
  std::uint32_t taken_lost = 0;
  const Clock* clock = nullptr;        // the node's clock
  bool declaration_failed = false;  // a declare() was refused (bad value) during configure
  std::atomic<NodeState> state{NodeState::kUnconfigured};
  std::atomic<bool> running{false};
  std::int64_t spin_ns = 0;
  bool manual_timers = false;  // timers fire only through fire_timers() (replay)
  std::thread executor;
  RateLimitedLog rate_log;

  // Commands run on the executor thread between callbacks (param updates); run at once when
  // the node has no executor thread running.
  std::mutex commands_mu;
  std::vector<std::function<void()>> commands;
  void post(std::function<void()> command);
  // Like post, but returns only once the command has run (or `timeout` passed: false).
  bool post_and_wait(std::function<void()> command, std::chrono::milliseconds timeout);
  bool run_commands();

  // Runs every timer callback once, now (on the calling thread: use through post_and_wait).
  void fire_timers();
  // Runs callbacks until `running` turns false (the node's executor thread).
  void run_executor();
  // Params given from outside that no declaration consumed: "node 'x': unknown param ...".
  Status check_unknown_params() const;
};

}  // namespace edgevla
