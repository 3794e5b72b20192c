// Node: one stage of a graph. Lifecycle (driven by NodeHost, so a launcher can order heavy
// loads): configure (declare params, publishers, subscriptions, timers; cheap, no I/O) ->
// activate (load weights, allocate; then callbacks start) -> deactivate (callbacks stopped
// first) -> shutdown (the node is destroyed). All callbacks of one node run on that node's
// own executor thread, one at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "msgs/types.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/bus/qos.hpp"
#include "runtime/node/params.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/log.hpp"
#include "runtime/util/rng.hpp"

namespace edgevla {

class Bus;
class TopicWriter;
struct NodeRuntime;

struct NodeOptions {
  std::string name;                            // unique in the graph
  std::string type;                            // registered type name
  std::string ns;                              // namespace prepended to relative topic names
  ParamOverrides params;                       // from params files, launch file, --set
  std::map<std::string, std::string> remaps;   // declared name (or resolved topic) -> topic
  std::map<std::string, QoS> qos;              // subscription name -> QoS override
  std::string origin;                          // where the node was declared ("launch/x.yaml:12")
  // How long this node's executor spins while a node upstream of it in this process runs a
  // callback (the launch file's node key); unset: the host's (its group's) value.
  std::optional<std::int64_t> upstream_spin_us;
};

// The topic a node's declared name resolves to: the node's namespace for relative names, then
// its remaps (by name, then by resolved topic) unless `apply_remaps` is false.
std::string resolve_topic(const NodeOptions& options, std::string_view name, bool apply_remaps = true);

// A publisher handle. Valid to publish while the node is active.
class PublisherHandle {
 public:
  PublisherHandle() = default;
  // Stamps and sends. Errors (inactive node, schema violation, transport) are returned and
  // counted; the message is not sent.
  Status publish(Message&& message) const;
  // A writable tensor whose bytes other processes can read without a copy (shared memory), or
  // on `device` (an accelerator's pool) when every pipeline subscriber of the topic is in this
  // process: they get it as is; observers elsewhere (a recorder) get host copies.
  // A device loan declares the device first (publishes_on).
  Expected<Tensor> loan(DType dtype, const Shape& shape, Device device = Device::cpu()) const;
  // Declares, in activate(), that this publisher's tensors may live on `device` (an engine's
  // outputs on a GPU): refused, naming the node and the fix, while a subscriber in this process
  // takes neither device tensors nor host copies (see QoS::device_tensors).
  Status publishes_on(Device device) const;
  const std::string& topic() const;

  struct State;  // defined in runtime/node/node_runtime.hpp

 private:
  friend class NodeSpec;
  explicit PublisherHandle(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

// Typed publisher: Publisher<msgs::Image>.
template <class M>
class Publisher final : public PublisherHandle {
 public:
  Publisher() = default;
  explicit Publisher(PublisherHandle h) : PublisherHandle(std::move(h)) {}
};

// What a node declares in configure(). Bound to the node's runtime by NodeHost.
class NodeSpec {
 public:
  explicit NodeSpec(NodeRuntime& runtime) : rt_(runtime) {}

  template <class T>
  Status declare(Param<T>& p) {
    using S = typename ParamTraits<T>::Storage;
    auto v = declare_value(p.name_, ParamTraits<T>::kType, ParamValue(S(p.default_)), p.info_,
                           std::is_same_v<T, int>);
    if (!v) return v.status();
    p.value_ = static_cast<T>(std::get<S>(*v));
    bind_param([&p](const ParamValue& nv) { p.value_ = static_cast<T>(std::get<S>(nv)); });
    return Status::ok();
  }

  template <class M>
  Expected<Publisher<M>> publisher(std::string_view name, PublisherOptions options = {}) {
    auto h = publisher(name, M::schema().type, options);
    if (!h) return h.status();
    return Publisher<M>(std::move(*h));
  }
  // Untyped publisher for custom message types.
  Expected<PublisherHandle> publisher(std::string_view name, std::string_view type,
                                      PublisherOptions options = {});

  // Typed subscription: the callback gets a validated view (msgs::Image, ...).
  template <class M, class F>
  Status subscribe(std::string_view name, QoS qos, F&& callback) {
    return subscribe_any(name, std::string(M::schema().type), qos,
                         [cb = std::forward<F>(callback)](const MessagePtr& m) { cb(M(m)); });
  }
  // Any message type when `type` is empty; the callback gets the shared message.
  Status subscribe_any(std::string_view name, std::string type, QoS qos,
                       std::function<void(const MessagePtr&)> callback);

  // Declares how many bytes activate() will load (weights, engines). Hosts and the launcher
  // activate the heaviest nodes first, so a graph that does not fit in memory fails at the
  // first, largest load rather than after everything else started.
  void declare_load(std::int64_t bytes);

  // A fixed-rate timer on the node's executor; missed periods are skipped and counted.
  Status timer(std::string_view name, std::chrono::nanoseconds period, std::function<void()> callback);

  const std::string& node_name() const;
  // Seeds the node's generator (default: a hash of the node name). Call in configure().
  void seed_rng(std::uint64_t seed);
  // The topic a declared name resolves to, after namespace and remaps.
  std::string resolve_topic(std::string_view name) const;

 private:
  Expected<ParamValue> declare_value(const std::string& name, ParamType type, ParamValue default_value,
                                     const ParamInfo& info, bool int32);
  Expected<ParamValue> resolve_value(const std::string& name, ParamType type, ParamValue default_value,
                                     const ParamInfo& info, bool int32);
  // Attaches the setter of the param declared last (for `edgevla param set`).
  void bind_param(std::function<void(const ParamValue&)> apply);
  NodeRuntime& rt_;
};

class Node {
 public:
  explicit Node(const NodeOptions& options);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Declares params, publishers, subscriptions and timers. Must not load heavy resources.
  virtual Status configure(NodeSpec& spec) = 0;
  // Acquires resources (weights, devices, buffers). Callbacks start after it returns ok.
  virtual Status activate() = 0;
  // Releases what activate() acquired. Callbacks have already stopped.
  virtual Status deactivate() = 0;

  const std::string& name() const { return options_.name; }
  const std::string& type() const { return options_.type; }
  const NodeOptions& options() const { return options_; }

 protected:
  // The node's clock (wall clock in a graph, recorded stamps in replay).
  std::int64_t now_ns() const { return clock_->now_ns(); }
  // Whether the node clock is the live system clock (see Clock::live).
  bool clock_is_live() const { return clock_->live(); }
  // The node clock when the running callback began: recorded in the header of every message
  // the callback publishes and restored by replay, so a decision taken on it (a timeout, an
  // age) replays exactly. Outside a callback, now_ns().
  std::int64_t callback_stamp_ns() const;
  // The node's random generator. Use it for all randomness: its state when a callback starts
  // is stamped on every message published from that callback, so replay reproduces the draws.
  Rng& rng();
  spdlog::logger& log() const { return logger(); }
  // Counts a bad input and logs it at most once a second per `what`; the node carries on.
  void report_bad_input(std::string_view what, const Status& why);
  // Reports the memory this node holds (its NodeStatus carries it as memory_bytes): lets a
  // table of a one-process graph say which node uses what, where process RSS cannot.
  void report_memory(std::int64_t bytes);
  // Reports the inference engine this node runs (backend, device, precision), shown by
  // `node info` and carried by NodeStatus as `engine`.
  void report_engine(std::string description);
  // The bus this node runs on, for infrastructure nodes that subscribe to topics found at run
  // time (the recorder); null during a dry-run configure. Stage nodes use NodeSpec instead.
  Bus* bus() const;

 private:
  friend class NodeHost;
  NodeOptions options_;
  const Clock* clock_;
  RateLimitedLog rate_log_;
  std::shared_ptr<NodeRuntime> runtime_;
};

}  // namespace edgevla
