// The bus's cross-process side: ZeroMQ sockets, the shared-memory pool and mapper, registry
// discovery and the control endpoint, all driven by one I/O thread. Publishers call send()
// from their own threads; everything else happens on the I/O thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <zmq.hpp>

#include "runtime/bus/bus.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/bus/ring_interest.hpp"
#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "runtime/shm/ring.hpp"

namespace edgevla {

// The ZAP domains of the bus's sockets: which socket a ZAP request is about (see
// bus_io_peers.cpp and bus_io_tcp.cpp). A plaintext tcp socket gets none: nothing to check.
inline constexpr std::string_view kZapData = "edgevla.data";        // our XPUB: the peer subscribes
inline constexpr std::string_view kZapControl = "edgevla.control";  // our REP: the peer sends requests
inline constexpr std::string_view kZapSubscribe = "edgevla.sub";    // our SUB: the peer is a publisher
inline constexpr std::string_view kZapTcp = "edgevla.tcp";          // our tcp XPUB: a CURVE client subscribes

struct TransportCounters {
  Counter received;        // messages received from other processes
  Counter decode_errors;   // envelopes or descriptors that could not be decoded
  Counter duplicates;      // same message seen twice (e.g. over ipc and tcp)
  Counter sent_ipc;
  Counter sent_tcp;
  Counter inline_fallback; // tensors sent inline over ipc because the pool was full
  Counter dropped_pool_full;  // messages not sent to other processes: pool full, tensor too big to inline
  Counter peers_refused;  // ipc connections refused: the other end's uid and gid are not allowed
  Counter sent_ring;      // messages put into other processes' rings
  Counter received_ring;  // messages taken from this process's ring
  Counter dropped_ring_full;  // messages not delivered: the receiving process's ring was full
  Counter ring_unavailable;   // peers whose ring could not be opened (they get nothing from here)
  Counter upstream_spins_taken;   // ring spins for another process's announced callback that got its record
  Counter upstream_spins_missed;  // such spins that ended without a record (it published elsewhere, or late)
  Counter upstream_dead_cleared;  // announcers that died while busy, cleared
  Counter device_to_host;     // device tensors copied to the host to reach other processes
  Counter tcp_keys_refused;       // tcp clients refused: their key is not in allowed_keys
  Counter tcp_handshakes_failed;  // tcp connections that never got through the handshake
  Counter tcp_frames_rejected;    // tcp frames that failed CURVE authentication (connection dropped)
};

class BusIo {
 public:
  static Expected<std::unique_ptr<BusIo>> create(Bus& bus, const BusOptions& options,
                                                 const std::string& bus_id);
  ~BusIo();

  // Whether another process takes `topic` as a pipeline subscriber (not only observing it).
  bool remote_pipeline_receivers(const std::string& topic);
  // Sends to other processes that subscribed to the message's topic (none: returns at once).
  Status send(TopicWriter& writer, const Message& message);
  // Upstream announcements across processes (bus_io_ring.cpp): every same-host process that
  // takes `topic` as a pipeline and spins for upstream work is marked busy by this process
  // (once per table in `out`) and its ring thread interrupted; UpstreamAnnouncement::end()
  // withdraws it.
  void announce_upstream(const std::string& topic, std::vector<std::shared_ptr<RingInterestTable>>& out);
  // This process's interest in `topic` changed (subscribe, observe, unsubscribe).
  void set_interest(const std::string& topic, TopicInterest before, TopicInterest after);
  // Bus::drain_inbound: the ring thread takes what its ring holds, the I/O thread what its
  // sockets hold; waits for both up to `timeout_ns`.
  Status drain_inbound(std::int64_t timeout_ns);
  void registry_changed();
  Expected<BufferPtr> allocate_shm(std::size_t bytes) { return pool_->allocate(bytes); }
  // A block of the shared pool on `device` (shm::Pool::allocate_on): sent by descriptor and
  // read in place on that device by other processes.
  Expected<BufferPtr> allocate_shm_on(Device device, std::size_t bytes) { return pool_->allocate_on(device, bytes); }
  void set_control_handler(ControlHandler handler);
  // Adds transport, shm_pool, shm_mapper, tcp_endpoint and tcp_security keys to an open YAML map.
  void emit_stats(YAML::Emitter& out) const;
  const std::string& tcp_endpoint() const { return tcp_endpoint_; }

 private:
  BusIo(Bus& bus, const BusOptions& options, const std::string& bus_id, Registry registry);
  Status start();
  // The tcp sockets (bus_io_tcp.cpp): CURVE unless insecure, monitored for handshake failures.
  Status open_tcp();
  // Whether a CURVE client of our tcp XPUB may connect: its key is in allowed_keys.
  bool admit_tcp_client(std::string_view mechanism, std::string_view credential, std::string_view address);
  // Counts and logs the handshake and authentication failures a tcp socket's monitor reports.
  void serve_tcp_monitor(zmq::socket_t& monitor, bool listener);
  void emit_tcp_stats(YAML::Emitter& out) const;
  // Connects the peer at `endpoint` afresh after `delay_ns` (I/O thread; see bus_io_tcp.cpp).
  void schedule_tcp_reconnect(const std::string& endpoint, std::int64_t delay_ns);
  void reconnect_tcp_peers();
  void run();
  void post(std::function<void()> command);
  void drain_interest(zmq::socket_t& pub, std::unordered_map<std::string, int>& interest);
  // Peers subscribed to `frame` plus those subscribed to `everything` (by default the empty
  // prefix, which matches every topic).
  int interest_in(const std::unordered_map<std::string, int>& interest, const std::string& frame,
                  const std::string& everything = {}) const;
  // `tensors` are the message's tensors, contiguous and on the CPU; `frame` its topic frame.
  struct RingPeer;
  // A host copy of device tensor `t`, in a shared-memory block when the pool has room.
  Expected<Tensor> host_copy(const Tensor& t);
  struct RingTarget {
    std::shared_ptr<RingPeer> peer;
    RingRole role;
  };
  // ZeroMQ ipc to `receivers` (counted by role) and the ring of each of `rings`.
  Status send_ipc(TopicWriter& writer, const Message& message, const std::vector<Tensor>& tensors,
                  const std::string& frame, shm::Receivers receivers, const std::vector<RingTarget>& rings);
  Status send_tcp(TopicWriter& writer, const Message& message, const std::vector<Tensor>& tensors,
                  const std::string& frame);
  // Takes up to 256 queued messages from `socket`; how many it took.
  int receive(zmq::socket_t& socket, bool shm_allowed);
  // Ring delivery (bus_io_ring.cpp).
  void create_ring(const std::string& n);
  void update_ring_peers(const std::vector<RegistryEntry>& entries);
  std::vector<RingTarget> ring_targets_for(const std::string& topic);
  static std::string ring_record(const std::string& frame, const std::string& envelope,
                                 const std::vector<const Tensor*>& inline_tensors);
  bool deliver_to_rings(TopicWriter& writer, const std::string& topic, const std::string& record,
                        const std::vector<BufferPtr>& blocks, const std::vector<RingTarget>& rings);
  // The ring thread: takes records from this process's ring and hands them to handle_message.
  void run_ring();
  // Takes one record from the ring to the bus.
  void take_record(const std::string& record);
  // The ring thread answers drain request `ask`: takes records until the ring is empty.
  void answer_drain(std::uint64_t ask);
  // The ring thread while other processes announced upstream work: spins for their records,
  // with this process's spinning executors told, until none is busy or upstream_spin_ns.
  void spin_for_upstream(std::string& record);
  // A ring record back into the frames a ZeroMQ message would have had; false when malformed.
  static bool split_record(const std::string& record, std::vector<zmq::message_t>& parts);
  // `arrival_ns`: when the frames were taken from the ring or socket (wall clock).
  void handle_message(std::vector<zmq::message_t>& frames, bool shm_allowed, std::int64_t arrival_ns);
  // Records `seq` as the publisher's latest on `topic`: the messages missing before it, or
  // nullopt when it is not newer (a duplicate).
  std::optional<std::uint64_t> advance_sequence(const std::string& topic, const std::string& publisher,
                                                std::uint64_t seq);
  void rescan_registry();
  // Starts, on a thread of its own, each device on which a same-host peer publishes a topic
  // this process takes, once per device (bus_io_devices.cpp): the first device block then
  // imports without stalling the receive thread on the device's start-up (seconds on a loaded
  // machine, during which every other topic of this process would wait).
  void warm_devices(const std::vector<RegistryEntry>& entries);
  // Whether a same-host peer that delivers into rings may give this process data (its
  // process's uid, as ZAP checks it for ZeroMQ connections); counts and warns when not.
  bool ring_peer_allowed(const RegistryEntry& e);
  void write_registry();
  void serve_control();
  // Answers libzmq's ZAP requests: whether a connection of one of our ipc sockets may go on.
  void serve_zap();
  bool admit_peer(std::string_view domain, std::string_view address);

  Bus& bus_;
  BusOptions options_;
  std::string bus_id_;
  Registry registry_;
  RegistryEntry self_;
  std::string tcp_endpoint_;

  zmq::context_t ctx_{1};
  // The context's ZAP handler (inproc://zeromq.zap.01), served by the I/O thread. Declared
  // first so that it is bound before, and closed after, every socket that asks it.
  zmq::socket_t zap_;
  // Publishing sockets and the subscription interest they report; guarded by send_mu_.
  std::mutex send_mu_;
  zmq::socket_t pub_ipc_;
  zmq::socket_t pub_tcp_;
  std::unordered_map<std::string, int> ipc_interest_;
  std::unordered_map<std::string, int> tcp_interest_;

  // I/O-thread sockets.
  zmq::socket_t sub_ipc_;
  zmq::socket_t sub_tcp_;
  zmq::socket_t control_;
  // Handshake events of pub_tcp_ and sub_tcp_ (null without tcp).
  zmq::socket_t listen_monitor_;
  zmq::socket_t peers_monitor_;
  std::unordered_set<std::string> tcp_allowed_;  // client public keys, 32 bytes each
  std::map<std::string, std::int64_t> tcp_reconnects_;  // peer endpoint -> when (steady ns)
  std::map<std::string, int> tcp_failures_;  // peer endpoint -> protocol errors since its last handshake
  int wake_fd_ = -1;
  int inotify_fd_ = -1;

  std::mutex cmd_mu_;
  std::vector<std::function<void()>> commands_;
  std::atomic<bool> registry_dirty_{true};
  std::atomic<bool> stop_{false};
  std::int64_t release_heap_at_ = 0;              // steady ns; 0: nothing to give back (I/O thread)
  std::atomic<std::uint64_t> heap_releases_{0};  // times the freed heap was given back
  std::thread thread_;

  std::map<std::string, std::pair<std::string, std::uint32_t>> connected_;  // bus id -> endpoint, pid
  std::unordered_set<std::string> zmq_connected_;  // peers whose ZeroMQ ipc publisher sub_ipc_ listens to
  std::unordered_map<std::string, std::uint64_t> last_seq_;  // topic \n publisher -> seq
  std::unordered_set<std::string> refused_peers_;  // warned about once each (I/O thread)
  std::unordered_set<std::string> warmed_devices_;  // started or starting (I/O thread)
  std::vector<std::thread> warm_threads_;           // joined at destruction
  std::mutex recv_mu_;  // handle_message and the sequence map: the I/O and ring threads

  // This process's inbound ring (null: peers use ZeroMQ ipc), its interest table, its thread.
  std::unique_ptr<shm::Ring> ring_;
  RingInterestTable* interest_ = nullptr;
  std::thread ring_thread_;
  // Drain requests (drain_inbound): asked by any thread, answered by the ring thread once its
  // ring was found empty after the request, and by the I/O thread once its sockets were.
  std::mutex drain_mu_;
  std::condition_variable drain_cv_;
  std::atomic<std::uint64_t> drain_asked_{0};
  std::uint64_t ring_drained_ = 0;     // guarded by drain_mu_
  std::uint64_t sockets_drained_ = 0;  // guarded by drain_mu_
  std::atomic<bool> taking_record_{false};  // the ring thread is inside take_record()
  // Rings of peers on this host, opened at discovery; read by publishers in send().
  struct RingPeer {
    std::string bus_id;
    std::uint32_t pid = 0;
    std::unique_ptr<shm::Ring> ring;
    RingInterestTable* interest = nullptr;  // in its ring: read, and written by announcements
    std::atomic<bool> congested{false};  // its ring stayed full through a publisher's wait
  };
  std::mutex peers_mu_;
  std::vector<std::shared_ptr<RingPeer>> ring_peers_;
  ControlHandler control_handler_;
  std::mutex control_mu_;

  std::shared_ptr<shm::Pool> pool_;
  shm::Mapper mapper_{1024, options_.observer_max_holds};
  TransportCounters counters_;
  RateLimitedLog rate_log_;
};

}  // namespace edgevla
