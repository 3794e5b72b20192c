// The bus: topic-based publish/subscribe whose transport is chosen by where the peers live.
//  - same process: the message (and its tensor buffers) is handed over by reference;
//  - same host, other process: tensor bytes stay in shared memory, only a descriptor crosses
//    a ZeroMQ ipc socket;
//  - other host: ZeroMQ tcp, tensor frames sent straight from their buffers.
// Peers on one host find each other through the registry directory; other hosts are listed
// as tcp peers. Node code is the same in every case.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "msgs/message.hpp"
#include "runtime/bus/qos.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/bus/subscription_queue.hpp"
#include "runtime/bus/tcp_keys.hpp"
#include "runtime/util/log.hpp"
#include "runtime/util/stats.hpp"

namespace edgevla {

// A bus on another host whose tcp endpoint this bus subscribes to.
struct TcpPeer {
  std::string endpoint;    // "tcp://HOST:PORT"
  std::string server_key;  // z85 public key of the process listening there (empty only when insecure)
};

// The bus's tcp side. Every tcp connection is ZeroMQ CURVE (encrypted, and both ends
// authenticated by key) unless `insecure`.
struct TcpOptions {
  // Where this bus publishes to other hosts (empty: nowhere): "PORT" or "*" (any free port)
  // listens on 127.0.0.1 only; "tcp://HOST:PORT" listens on HOST.
  std::string listen;
  std::vector<TcpPeer> peers;
  // This process's key pair: its listener's server key, and the key it shows to its peers.
  CurveKeyPair key;
  // z85 public keys of the processes that may subscribe to `listen`; anyone else is refused
  // (counted as tcp_keys_refused).
  std::vector<std::string> allowed_keys;
  // Plaintext, unauthenticated tcp: anyone who reaches the port reads every topic, and anyone
  // who can reach a peer's port can feed this process. Warned about at every start.
  bool insecure = false;
  bool enabled() const { return !listen.empty() || !peers.empty(); }
};

// The ZeroMQ endpoint a tcp `listen` setting binds: loopback unless a host is named. An
// error names the setting and the forms it takes.
Expected<std::string> tcp_bind_endpoint(std::string_view listen);
// Whether `options` can run: keys present and well-formed, or `insecure`. The error names
// the missing or bad setting and the fix.
Status check_tcp_options(const TcpOptions& options);

struct BusOptions {
  std::string domain;                  // graphs in different domains never see each other
  std::string registry_dir;            // default: Registry::default_dir(domain)
  std::string process_name;            // shown by `edgevla node list`
  bool cross_process = true;           // false: in-process only (no sockets, no registry)
  TcpOptions tcp;                      // other hosts (off by default)
  // Besides processes of this uid, those whose gid is listed may connect to this bus's ipc
  // endpoints, and this bus takes data from their ipc endpoints (the effective gid the kernel
  // reports with SO_PEERCRED: a supplementary group does not count).
  std::vector<std::uint32_t> allowed_gids;
  std::size_t shm_pool_bytes = std::size_t{2} << 30;
  std::size_t inline_max_bytes = 4096;  // smaller tensors travel inside the message
  std::int64_t shm_transit_timeout_ns = 2'000'000'000;
  // After traffic, the I/O thread keeps polling this long before it sleeps: trims a thread
  // wake-up from cross-process latency at the cost of CPU. 0 = never spin.
  std::int64_t spin_ns = 0;
  // Upstream spinning across processes (the launch group's upstream_spin_us): while a node of
  // another process on this host runs a callback that publishes to this process, its ring
  // thread (and the spinning executors here) spin up to this long for the record. 0 = off.
  std::int64_t upstream_spin_ns = 0;
  // Shared-memory blocks of other processes this process holds for observer subscriptions at
  // once; past that an observer reads a copy (see SubscriptionRole).
  std::size_t observer_max_holds = 16;
  // Same-host delivery through this process's inbound shared-memory ring (one futex wake-up)
  // instead of ZeroMQ ipc. Off, or with allowed_gids set (other users' processes could not open
  // an owner-only ring), peers deliver to this process over ZeroMQ ipc as before.
  bool ring = true;
  std::uint32_t ring_slots = 1024;     // records the ring holds (a publisher waits up to 20 ms when full)
  std::uint32_t ring_slot_bytes = 8192;  // largest record; inline tensors of a larger one go to shared memory
};

// What a process's subscriptions to a topic ask of its publishers in other processes. kHeld:
// pipeline subscriptions that all only keep what arrives (QoS::triggers off), which take the
// topic as kPipeline does but are sent no upstream announcements.
enum class TopicInterest { kNone, kObserver, kHeld, kPipeline };

struct PublisherCounters {
  Counter published;
  Counter bytes;           // tensor bytes published
  Counter sent_remote;     // messages that went out on ipc or tcp
  Counter copied_to_shm;   // tensors copied into shared memory (published from heap)
  Counter errors;          // rejected by validation or transport
};

struct PublisherOptions {
  // Never wait for a reliable subscriber's queue: drop (counted) instead. For publishers in
  // control loops, which must not stall whatever their subscribers ask for.
  bool never_wait = false;
};

// One publisher's handle on a topic (created by Bus::advertise).
class TopicWriter {
 public:
  TopicWriter(std::string topic, std::string type, std::string node, std::string id, PublisherOptions options)
      : topic_(std::move(topic)), type_(std::move(type)), node_(std::move(node)), id_(std::move(id)),
        options_(options) {}
  const PublisherOptions& options() const { return options_; }
  const std::string& topic() const { return topic_; }
  // "<bus id>#<n>": unique per publisher, so receivers track sequence numbers per publisher.
  const std::string& id() const { return id_; }
  const std::string& type() const { return type_; }
  const std::string& node() const { return node_; }
  PublisherCounters& counters() { return counters_; }
  const PublisherCounters& counters() const { return counters_; }
  std::uint64_t next_seq() { return seq_.fetch_add(1, std::memory_order_relaxed) + 1; }
  // Where its tensors may live (Bus::publishes_on); read by its own node.
  Device device() const { return device_; }

 private:
  friend class Bus;
  Device device_ = Device::cpu();  // where its tensors may live (Bus::publishes_on; under the bus's lock)
  std::string topic_;
  std::string type_;
  std::string node_;
  std::string id_;
  PublisherOptions options_;
  std::atomic<std::uint64_t> seq_{0};
  PublisherCounters counters_;
};

// A request on a bus's control endpoint: a command and one argument.
struct ControlRequest {
  std::string command;
  std::string argument;
};
// Answers with YAML text, or a Status that is sent back as the error.
using ControlHandler = std::function<Expected<std::string>(const ControlRequest&)>;

class BusIo;

struct RingInterestTable;

// What one running callback announced (Bus::announce_upstream); end() withdraws it all.
struct UpstreamAnnouncement {
  std::vector<std::shared_ptr<Waker>> local;
  std::vector<std::shared_ptr<RingInterestTable>> remote;  // other processes' ring tables (mapping kept)
  void end();
  ~UpstreamAnnouncement() { end(); }
};

class Bus {
 public:
  static Expected<std::unique_ptr<Bus>> create(BusOptions options);
  ~Bus();
  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;

  // "<host>/<pid>/<n>", unique per bus instance.
  const std::string& id() const { return id_; }
  const BusOptions& options() const { return options_; }
  // The bound tcp endpoint (e.g. "tcp://127.0.0.1:40311"), or empty without tcp.listen.
  std::string tcp_endpoint() const;

  // Declares that `node` publishes `type` on `topic`. A topic carries one type.
  Expected<std::shared_ptr<TopicWriter>> advertise(std::string_view topic, std::string_view type,
                                                   std::string_view node, PublisherOptions options = {});
  void unadvertise(const std::shared_ptr<TopicWriter>& writer);
  // Stamps the header (seq, publish stamp, hop), validates, delivers locally and remotely.
  Status publish(TopicWriter& writer, Message&& message);
  // Delivers a recorded message with its header as recorded (bag playback): only the topic
  // is set to the writer's (which may be a remap of the recorded one).
  Status republish(TopicWriter& writer, Message&& message);

  // Declares that `writer` may publish tensors on `device` (an engine's outputs left on a GPU).
  // Refused while a subscription to the topic in this process takes neither device tensors nor
  // host copies of them (QoS device_tensors / host_tensors): the error names that node and the
  // fix; such a subscription attaching later is refused the same way. Other processes always
  // get host copies and need nothing.
  Status publishes_on(TopicWriter& writer, Device device);

  // Starts/stops delivering the queue's topic into it. Detaching drops what is queued unless
  // `keep_queued` (a recorder drains its queue to the bag after it stops subscribing).
  Status attach(std::shared_ptr<SubscriptionQueue> queue);
  void detach(const std::shared_ptr<SubscriptionQueue>& queue, bool keep_queued = false);
  // Hands every message that other processes have already delivered to this process (in its
  // inbound ring, or queued on its ZeroMQ sockets) to the subscription queues, waiting up to
  // `timeout_ns` for a record still being taken (e.g. the first import of a device block, which
  // starts the device in this process). A node host calls it before its nodes stop, so a
  // recorder stopped after the graph's publishers still writes what they sent. Returns
  // a timeout error naming what is left when the time ran out; ok without other processes.
  Status drain_inbound(std::int64_t timeout_ns);

  // A writable CPU tensor in shared memory: publish it and other processes read these very
  // bytes. Falls back to the heap (with a warning) when shared memory is unavailable.
  Expected<Tensor> loan(DType dtype, const Shape& shape);
  // A tensor for `topic` on `device` when every pipeline subscriber of the topic is in this
  // process (they read it there without a copy; observers in other processes get host copies);
  // else a host loan as above, which the producer fills straight from the device.
  Expected<Tensor> loan_for(const std::string& topic, DType dtype, const Shape& shape, Device device);

  // Upstream announcements: a node's callback that publishes to `topic` began. The executors
  // of this process that take `topic` in a subscription that triggers work (QoS::triggers) and
  // spin for upstream work (Waker::spins_for_upstream, except `self`), and the same-host
  // processes that take it so and spin for it, are told (once each per announcement) until
  // announcement.end().
  void announce_upstream(const std::string& topic, const Waker* self, UpstreamAnnouncement& announcement) const;
  // Every executor of this process that spins for upstream work and takes a topic in a
  // subscription that triggers work (the ring thread tells them when another process
  // announced), appended once each.
  void upstream_wakers(std::vector<std::shared_ptr<Waker>>& out) const;

  void set_node_names(std::vector<std::string> names);
  void set_control_handler(ControlHandler handler);
  // YAML summary of topics, transports, pool and drops (control command "bus").
  std::string stats_yaml() const;

  // Called by the transport: a message from another process, with `lost` messages missing
  // before it in its publisher's sequence.
  void deliver_remote(const MessagePtr& message, std::uint64_t lost);
  // Called by the transport: a message for `topic` could not be decoded.
  void reject_remote(const std::string& topic, const std::string& reason);
  // Called by the transport: a well-formed message for `topic` whose shared memory could not
  // be held (slots full, recycled before read, segment gone): a transport drop.
  void drop_remote(const std::string& topic, const std::string& reason);
  // True when every subscription of this process to `topic` is an observer.
  bool observes_only(const std::string& topic) const;
  // True when some subscription of this process takes `topic`.
  bool takes(const std::string& topic) const;
  // Called by the transport: `n` messages on `topic` never arrived (sequence gap).
  void lost_remote(const std::string& topic, std::uint64_t n);

  // Snapshot of what this bus publishes and subscribes (for the registry).
  void describe(RegistryEntry& entry) const;

 private:
  explicit Bus(BusOptions options);

  using QueueList = std::vector<std::shared_ptr<SubscriptionQueue>>;
  struct TopicEntry {
    std::string type;  // from the first publisher
    std::vector<std::weak_ptr<TopicWriter>> writers;
    std::shared_ptr<const QueueList> queues = std::make_shared<QueueList>();
  };

  Status send(TopicWriter& writer, Message&& message, bool stamp);
  std::shared_ptr<const QueueList> queues_for(const std::string& topic) const;
  static TopicInterest interest_of(const QueueList& queues);
  // Adds one to `counter` of every subscription of `topic` and logs (rate-limited) why.
  void count_remote(const std::string& topic, Counter SubscriptionCounters::*counter, const char* verb,
                    const std::string& reason);
  void dispatch(const MessagePtr& message, const QueueList& queues, std::uint64_t lost, bool may_wait);

  BusOptions options_;
  std::string id_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, TopicEntry> topics_;
  std::vector<std::string> node_names_;
  std::uint64_t writers_created_ = 0;
  std::unique_ptr<BusIo> io_;
  mutable RateLimitedLog rate_log_;
};

}  // namespace edgevla
