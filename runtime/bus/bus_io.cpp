#include "runtime/bus/bus_io.hpp"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstring>
#include <zmq_addon.hpp>

#include "msgs/schema.hpp"
#include "msgs/wire.hpp"
#include "runtime/shm/segment.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/heap.hpp"
#include "runtime/util/thread_name.hpp"

namespace edgevla {
namespace {

constexpr auto kPollPeriod = std::chrono::milliseconds(100);
// inotify catches registry changes at once; the periodic rescan only notices crashed peers.
constexpr std::int64_t kRescanPeriodNs = 2'000'000'000;
constexpr std::int64_t kStaleSweepPeriodNs = 30'000'000'000;
// After a peer process went away (a stage killed and restarting), what piled up meanwhile has
// been freed a few seconds later: the heap is given back then (runtime/util/heap.hpp).
constexpr std::int64_t kHeapReleaseDelayNs = 5'000'000'000;
// Largest tensor sent inline over ipc when the shared-memory pool is full.
constexpr std::size_t kInlineFallbackMaxBytes = 1 << 20;


std::span<const std::byte> bytes_of(const zmq::message_t& m) {
  return {static_cast<const std::byte*>(m.data()), m.size()};
}

void free_buffer_hold(void* /*data*/, void* hint) { delete static_cast<BufferPtr*>(hint); }

// Sends topic frame, envelope and tensor frames as one multipart message, never blocking.
Status send_multipart(zmq::socket_t& socket, const std::string& frame, const std::string& envelope,
                      std::vector<zmq::message_t>& parts) {
  constexpr auto kMore = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
  try {
    socket.send(zmq::buffer(frame), kMore);
    socket.send(zmq::buffer(envelope), parts.empty() ? zmq::send_flags::dontwait : kMore);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      socket.send(parts[i], i + 1 == parts.size() ? zmq::send_flags::dontwait : kMore);
    }
  } catch (const zmq::error_t& e) {
    return unavailable(e.what());
  }
  return Status::ok();
}

}  // namespace

BusIo::BusIo(Bus& bus, const BusOptions& options, const std::string& bus_id, Registry registry)
    : bus_(bus), options_(options), bus_id_(bus_id), registry_(std::move(registry)) {}

Expected<std::unique_ptr<BusIo>> BusIo::create(Bus& bus, const BusOptions& options,
                                               const std::string& bus_id) {
  auto reg = Registry::open(options.registry_dir);
  if (!reg) return reg.status();
  std::unique_ptr<BusIo> io(new BusIo(bus, options, bus_id, std::move(*reg)));
  EDGEVLA_RETURN_IF_ERROR(io->start());
  return io;
}

Status BusIo::start() {
  shm::remove_stale_segments();
  shm::PoolOptions po;
  const std::string tail = bus_id_.substr(bus_id_.find('/') + 1);  // pid/n
  po.name_prefix = shm::segment_prefix() + tail.substr(0, tail.find('/')) + "." +
                   tail.substr(tail.find('/') + 1);
  po.max_bytes = options_.shm_pool_bytes;
  po.transit_timeout_ns = options_.shm_transit_timeout_ns;
  pool_ = shm::Pool::create(po);
  if (options_.ring && options_.allowed_gids.empty()) create_ring(tail.substr(tail.find('/') + 1));

  self_.bus_id = bus_id_;
  self_.pid = static_cast<std::uint32_t>(::getpid());
  self_.host = local_hostname();
  self_.process = options_.process_name;
  self_.started_ns = wall_now_ns();
  self_.data_endpoint = "ipc://" + registry_.path_for(bus_id_, ".pub");
  self_.control_endpoint = "ipc://" + registry_.path_for(bus_id_, ".ctl");
  self_.ring_producer = true;
  try {
    // Bound before any socket with a ZAP domain: libzmq lets a connection through unasked
    // while no handler is bound (ZMQ_ZAP_ENFORCE_DOMAIN would refuse it, but is a draft option).
    zap_ = zmq::socket_t(ctx_, zmq::socket_type::rep);
    zap_.set(zmq::sockopt::linger, 0);
    zap_.bind("inproc://zeromq.zap.01");
    pub_ipc_ = zmq::socket_t(ctx_, zmq::socket_type::xpub);
    pub_ipc_.set(zmq::sockopt::linger, 0);
    pub_ipc_.set(zmq::sockopt::xpub_verboser, 1);
    pub_ipc_.set(zmq::sockopt::zap_domain, std::string(kZapData));
    pub_ipc_.bind(self_.data_endpoint);
    sub_ipc_ = zmq::socket_t(ctx_, zmq::socket_type::sub);
    sub_ipc_.set(zmq::sockopt::linger, 0);
    sub_ipc_.set(zmq::sockopt::zap_domain, std::string(kZapSubscribe));
    control_ = zmq::socket_t(ctx_, zmq::socket_type::rep);
    control_.set(zmq::sockopt::linger, 0);
    control_.set(zmq::sockopt::zap_domain, std::string(kZapControl));
    control_.bind(self_.control_endpoint);
  } catch (const zmq::error_t& e) {
    return unavailable(std::string("bus sockets: ") + e.what());
  }
  EDGEVLA_RETURN_IF_ERROR(open_tcp());
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ >= 0) {
    ::inotify_add_watch(inotify_fd_, registry_.dir().c_str(), IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE);
  }
  write_registry();
  rescan_registry();
  thread_ = std::thread([this] {
    name_this_thread("bus-io");
    run();
  });
  if (ring_) {
    ring_thread_ = std::thread([this] {
      name_this_thread("bus-ring");
      run_ring();
    });
  }
  return Status::ok();
}

BusIo::~BusIo() {
  stop_.store(true);
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (ring_) ring_->wake();
  if (ring_thread_.joinable()) ring_thread_.join();
  for (auto& t : warm_threads_) t.join();
  registry_.remove(self_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
}

void BusIo::post(std::function<void()> command) {
  {
    std::lock_guard lock(cmd_mu_);
    commands_.push_back(std::move(command));
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void BusIo::set_interest(const std::string& topic, TopicInterest before, TopicInterest after) {
  post([this, topic, before, after] {
    const std::string f = wire::topic_frame(topic);
    const std::string obs = wire::observer_frame(topic);
    if (before == TopicInterest::kNone) {
      sub_ipc_.set(zmq::sockopt::subscribe, f);
      sub_tcp_.set(zmq::sockopt::subscribe, f);
    }
    // Observer interest is announced beside the topic's, so publishers count this process
    // among the topic's observers (and take its undelivered blocks back first when short).
    if (after == TopicInterest::kObserver) sub_ipc_.set(zmq::sockopt::subscribe, obs);
    if (before == TopicInterest::kObserver) sub_ipc_.set(zmq::sockopt::unsubscribe, obs);
    if (after == TopicInterest::kNone) {
      sub_ipc_.set(zmq::sockopt::unsubscribe, f);
      sub_tcp_.set(zmq::sockopt::unsubscribe, f);
    }
    if (ring_) {
      // Same-host publishers that deliver into rings read this interest from the ring itself.
      const RingRole role = after == TopicInterest::kPipeline || after == TopicInterest::kHeld ? RingRole::kPipeline
                            : after == TopicInterest::kObserver                                ? RingRole::kObserver
                                                                                               : RingRole::kNone;
      if (!set_ring_interest(*interest_, topic, role, after == TopicInterest::kHeld)) {
        rate_log_.warn("ring-interest", "this process takes more than " +
                                            std::to_string(RingInterestTable::kMaxTopics) +
                                            " topics; '" + topic + "' is not announced to same-host publishers");
      }
    }
    if (before == TopicInterest::kNone && after != TopicInterest::kNone) warm_devices(registry_.list());
    if (after == TopicInterest::kNone) {
      // A later subscription starts afresh: what was published meanwhile is not "lost".
      std::lock_guard lock(recv_mu_);
      std::erase_if(last_seq_, [&](const auto& kv) { return kv.first.starts_with(topic + "\n"); });
    }
  });
}

void BusIo::registry_changed() {
  registry_dirty_.store(true);
  post([] {});
}

void BusIo::set_control_handler(ControlHandler handler) {
  std::lock_guard lock(control_mu_);
  control_handler_ = std::move(handler);
}

void BusIo::write_registry() {
  registry_dirty_.store(false);
  bus_.describe(self_);
  if (Status s = registry_.write(self_); !s.is_ok()) rate_log_.warn("registry", s.message());
}

void BusIo::rescan_registry() {
  const auto entries = registry_.list();
  std::map<std::string, std::pair<std::string, std::uint32_t>> seen;
  for (const auto& e : entries) {
    if (e.bus_id == bus_id_ || e.data_endpoint.empty()) continue;
    // A peer that delivers into rings sends to this process through its ring only: listening
    // to its ZeroMQ publisher as well would deliver twice. No ZAP handshake vets such a peer,
    // so its process's credentials are checked here, as ZAP would (admit_peer).
    const bool via_ring = ring_ && e.ring_producer;
    if (via_ring && !connected_.contains(e.bus_id) && !ring_peer_allowed(e)) continue;
    seen[e.bus_id] = {e.data_endpoint, e.pid};
    if (!connected_.contains(e.bus_id) && !via_ring) {
      try {
        sub_ipc_.connect(e.data_endpoint);
        zmq_connected_.insert(e.bus_id);
      } catch (const zmq::error_t& err) {
        rate_log_.warn("connect:" + e.bus_id, "cannot connect to " + e.data_endpoint + ": " + err.what());
        seen.erase(e.bus_id);
      }
    }
  }
  for (const auto& [id, ep] : connected_) {
    if (seen.contains(id)) continue;
    if (zmq_connected_.erase(id) > 0) {
      try {
        sub_ipc_.disconnect(ep.first);
      } catch (const zmq::error_t&) {
      }
    }
    mapper_.forget_process(ep.second);
    release_heap_at_ = steady_now_ns() + kHeapReleaseDelayNs;
    // Sequence tracking of that bus's publishers ("<bus id>#k") is no longer needed.
    std::lock_guard lock(recv_mu_);
    std::erase_if(last_seq_, [&](const auto& kv) { return kv.first.find("\n" + id + "#") != std::string::npos; });
  }
  connected_ = std::move(seen);

  update_ring_peers(entries);
  warm_devices(entries);
}

void BusIo::drain_interest(zmq::socket_t& pub, std::unordered_map<std::string, int>& interest) {
  if (!pub) return;
  zmq::message_t m;
  while (pub.recv(m, zmq::recv_flags::dontwait)) {
    if (m.size() == 0) continue;
    const auto* p = static_cast<const char*>(m.data());
    std::string filter(p + 1, m.size() - 1);
    if (p[0] == 1) {
      ++interest[filter];
    } else if (p[0] == 0) {
      if (--interest[filter] <= 0) interest.erase(filter);
    }
  }
}

int BusIo::interest_in(const std::unordered_map<std::string, int>& interest, const std::string& frame,
                       const std::string& everything) const {
  int n = 0;
  if (auto it = interest.find(frame); it != interest.end()) n += it->second;
  if (auto it = interest.find(everything); it != interest.end()) n += it->second;
  return n;
}

Expected<Tensor> BusIo::host_copy(const Tensor& t) {
  // Straight into a shared-memory block when the pool has one (no second copy at send);
  // else through the heap.
  EDGEVLA_RETURN_IF_ERROR(t.buffer()->wait_ready());
  if (t.is_contiguous()) {
    if (auto block = pool_->allocate(t.nbytes())) {
      EDGEVLA_ASSIGN_OR_RETURN(Allocator * alloc, allocator_for(t.device()));
      EDGEVLA_RETURN_IF_ERROR(alloc->copy((*block)->data(), t.raw_data(), t.nbytes(), CopyKind::kToHost));
      return Tensor::from_buffer(std::move(*block), t.dtype(), t.shape());
    }
  }
  return t.to(Device::cpu());
}

bool BusIo::remote_pipeline_receivers(const std::string& topic) {
  for (const RingTarget& t : ring_targets_for(topic)) {
    if (t.role == RingRole::kPipeline) return true;
  }
  const std::string frame = wire::topic_frame(topic);
  std::lock_guard lock(send_mu_);
  drain_interest(pub_ipc_, ipc_interest_);
  drain_interest(pub_tcp_, tcp_interest_);
  const int receivers = interest_in(ipc_interest_, frame);
  const int observers =
      std::min(interest_in(ipc_interest_, wire::observer_frame(topic), wire::observer_frame("")), receivers);
  return receivers > observers || (pub_tcp_ && interest_in(tcp_interest_, frame) > 0);
}

Status BusIo::send(TopicWriter& writer, const Message& m) {
  const std::string frame = wire::topic_frame(m.header().topic);
  int ipc_receivers = 0;
  int ipc_observers = 0;
  bool tcp_wanted = false;
  {
    std::lock_guard lock(send_mu_);
    drain_interest(pub_ipc_, ipc_interest_);
    drain_interest(pub_tcp_, tcp_interest_);
    ipc_receivers = interest_in(ipc_interest_, frame);
    // Observers of this topic, and observers of every topic (a client on the empty prefix).
    ipc_observers = std::min(interest_in(ipc_interest_, wire::observer_frame(m.header().topic), wire::observer_frame("")),
                             ipc_receivers);
    tcp_wanted = pub_tcp_ && interest_in(tcp_interest_, frame) > 0;
  }
  const std::vector<RingTarget> ring_targets = ring_targets_for(m.header().topic);
  if (ipc_receivers == 0 && ring_targets.empty() && !tcp_wanted) return Status::ok();

  // Everything that can fail or take time (device checks, strided copies, heap->shm copies,
  // encoding) happens before the send lock, so one big publish does not stall the others.
  std::vector<Tensor> tensors;
  tensors.reserve(m.tensors().size());
  for (const auto& nt : m.tensors()) {
    // A device tensor in a device block of this process's pool crosses as a descriptor (read in
    // place on the device by the receivers); any other device tensor as a host copy (counted).
    const bool device = !nt.tensor.device().is_cpu() &&
                        !(nt.tensor.is_contiguous() && pool_->owns(*nt.tensor.buffer()));
    const RemoteReady* remote = nt.tensor.buffer()->remote_ready();
    if (!nt.tensor.device().is_cpu() && !device && !(remote != nullptr && remote->armed())) {
      // Read in place by another process, which cannot wait on this process's queued work: the
      // block goes out once its producer's work is done — unless the producer armed it, and
      // signals the readers itself when the work is done (runtime/shm/ready.hpp).
      EDGEVLA_RETURN_IF_ERROR(
          nt.tensor.buffer()->wait_ready().with_context("tensor '" + nt.name + "' for other processes"));
    }
    auto c = device ? host_copy(nt.tensor) : nt.tensor.contiguous();  // strided views: contiguous bytes
    if (device && c) counters_.device_to_host.add();
    if (!c) return c.status();
    tensors.push_back(std::move(*c));
  }
  if (ipc_receivers > 0 || !ring_targets.empty()) {
    const shm::Receivers receivers{static_cast<std::uint32_t>(ipc_receivers - ipc_observers),
                                   static_cast<std::uint32_t>(ipc_observers)};
    EDGEVLA_RETURN_IF_ERROR(send_ipc(writer, m, tensors, frame, receivers, ring_targets));
  }
  if (tcp_wanted) {
    // Other hosts get the bytes themselves: device blocks as host copies (counted).
    for (auto& t : tensors) {
      if (t.device().is_cpu()) continue;
      EDGEVLA_ASSIGN_OR_RETURN(t, host_copy(t));
      counters_.device_to_host.add();
    }
    EDGEVLA_RETURN_IF_ERROR(send_tcp(writer, m, tensors, frame));
  }
  return Status::ok();
}

Status BusIo::send_ipc(TopicWriter& writer, const Message& m, const std::vector<Tensor>& tensors,
                       const std::string& frame, shm::Receivers receivers, const std::vector<RingTarget>& rings) {
  std::vector<wire::TensorPlacement> placements;
  std::vector<const Tensor*> inline_tensors;
  std::vector<BufferPtr> blocks;  // shared-memory blocks this send points at
  std::string envelope;
  std::string record;  // the same for rings (ring_record)
  // Small tensors travel inside the message; a ring record that would not fit its slot sends
  // them through shared memory too (second attempt, inline limit 0).
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::size_t inline_max = attempt == 0 ? options_.inline_max_bytes : 0;
    placements.clear();
    inline_tensors.clear();
    blocks.clear();
    const auto send_inline = [&](const Tensor& t) {
      placements.emplace_back(std::in_place_index<0>, static_cast<std::uint32_t>(inline_tensors.size()));
      inline_tensors.push_back(&t);
    };
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      if (t.nbytes() <= inline_max && t.device().is_cpu()) {  // device bytes only by descriptor
        send_inline(t);
        continue;
      }
      BufferPtr block = t.buffer();
      std::size_t offset = t.offset();
      if (!pool_->owns(*block)) {
        auto copy = pool_->allocate(t.nbytes());
        if (!copy) {
          // Small tensors can still go inline; copying a large one through the socket would
          // only slow a publisher whose subscribers already cannot keep up.
          if (t.nbytes() > kInlineFallbackMaxBytes) {
            counters_.dropped_pool_full.add();
            return resource_exhausted(copy.status().message());
          }
          counters_.inline_fallback.add();
          rate_log_.warn("pool", "sending '" + m.tensors()[i].name + "' inline: " + copy.status().message());
          send_inline(t);
          continue;
        }
        std::memcpy((*copy)->data(), t.raw_data(), t.nbytes());
        writer.counters().copied_to_shm.add();
        block = std::move(*copy);
        offset = 0;
      }
      ShmLocation loc = *block->shm();
      loc.offset += offset;
      loc.size = t.nbytes();
      placements.push_back(std::move(loc));
      // Each block is counted once per receiver, however many tensors lie in it.
      if (std::find(blocks.begin(), blocks.end(), block) == blocks.end()) blocks.push_back(std::move(block));
    }
    envelope.clear();
    EDGEVLA_RETURN_IF_ERROR(wire::encode_envelope(m, placements, envelope));
    if (rings.empty()) break;
    record = ring_record(frame, envelope, inline_tensors);
    if (record.size() <= options_.ring_slot_bytes || inline_tensors.empty() || attempt == 1) break;
  }
  // Pending counts go up before the send, so a receiver that is faster than this thread
  // cannot decrement first; a failed send takes them back.
  shm::Receivers all = receivers;
  for (const RingTarget& r : rings) {
    (r.role == RingRole::kObserver ? all.observers : all.pipeline) += 1;
  }
  for (const auto& b : blocks) pool_->mark_sent(*b, all, m.header().topic);
  bool delivered = deliver_to_rings(writer, m.header().topic, record, blocks, rings);
  if (receivers.pipeline + receivers.observers > 0) {
    std::vector<zmq::message_t> parts;
    for (const Tensor* t : inline_tensors) parts.emplace_back(t->raw_data(), t->nbytes());  // small: copied
    Status sent;
    {
      std::lock_guard lock(send_mu_);
      sent = send_multipart(pub_ipc_, frame, envelope, parts);
    }
    if (!sent.is_ok()) {
      for (const auto& b : blocks) pool_->cancel_sent(*b, receivers);
      return sent.with_context("ipc send");
    }
    counters_.sent_ipc.add();
    delivered = true;
  }
  // `blocks` may be released now: the pending count keeps them until received.
  if (delivered) writer.counters().sent_remote.add();
  return Status::ok();
}

Status BusIo::send_tcp(TopicWriter& writer, const Message& m, const std::vector<Tensor>& tensors,
                       const std::string& frame) {
  std::vector<wire::TensorPlacement> placements;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    placements.emplace_back(std::in_place_index<0>, static_cast<std::uint32_t>(i));
  }
  std::string envelope;
  EDGEVLA_RETURN_IF_ERROR(wire::encode_envelope(m, placements, envelope));
  std::vector<zmq::message_t> parts;
  for (const Tensor& t : tensors) {
    // Zero copy: ZeroMQ sends from the tensor's buffer and releases our hold when done.
    auto* hold = new BufferPtr(t.buffer());
    parts.emplace_back(t.raw_data(), t.nbytes(), &free_buffer_hold, hold);
  }
  Status sent;
  {
    std::lock_guard lock(send_mu_);
    sent = send_multipart(pub_tcp_, frame, envelope, parts);
  }
  EDGEVLA_RETURN_IF_ERROR(sent.with_context("tcp send"));
  writer.counters().sent_remote.add();
  counters_.sent_tcp.add();
  return Status::ok();
}

void BusIo::handle_message(std::vector<zmq::message_t>& parts, bool shm_allowed, std::int64_t arrival_ns) {
  counters_.received.add();
  auto topic = parts.empty() ? Expected<std::string_view>(data_loss("empty message"))
                             : wire::parse_topic_frame(bytes_of(parts[0]));
  if (!topic) {
    counters_.decode_errors.add();
    bus_.reject_remote("?", topic.status().message());
    return;
  }
  if (parts.size() < 2) {
    counters_.decode_errors.add();
    bus_.reject_remote(std::string(*topic), "malformed message with " + std::to_string(parts.size()) +
                                                " frame(s); expected topic, envelope, tensors");
    return;
  }
  const std::string topic_name(*topic);
  std::vector<wire::Frame> frames;
  frames.reserve(parts.size() - 2);
  for (std::size_t i = 2; i < parts.size(); ++i) {
    auto owner = std::make_shared<zmq::message_t>(std::move(parts[i]));
    frames.push_back({bytes_of(*owner), owner});
  }
  // One pending count per block and message; observers hold a bounded number of blocks.
  const bool observer = bus_.observes_only(topic_name);
  std::vector<std::pair<std::string, std::uint32_t>> seen_blocks;
  Status transport_drop;
  wire::ShmResolver resolver;
  if (shm_allowed) {
    resolver = [&](const ShmLocation& loc) -> Expected<BufferPtr> {
      auto key = std::make_pair(loc.segment, loc.generation);
      const bool first = std::find(seen_blocks.begin(), seen_blocks.end(), key) == seen_blocks.end();
      if (first) seen_blocks.push_back(std::move(key));
      auto buffer = mapper_.acquire(loc, {.observer = observer, .take_pending = first});
      if (!buffer) {
        const StatusCode c = buffer.status().code();
        if (c == StatusCode::kResourceExhausted || c == StatusCode::kUnavailable || c == StatusCode::kNotFound) {
          transport_drop = buffer.status();
        }
      }
      return buffer;
    };
  }
  auto decoded = wire::decode(bytes_of(parts[1]), frames, resolver);
  if (!decoded && !transport_drop.is_ok()) {
    // A well-formed message this process could not hold: a transport drop, accounted by its
    // sequence number so the next message does not count it again as lost.
    if (auto id = wire::peek_sequence(bytes_of(parts[1]))) {
      if (auto lost = advance_sequence(topic_name, id->publisher, id->seq)) bus_.lost_remote(topic_name, *lost);
    }
    bus_.drop_remote(topic_name, decoded.status().message());
    return;
  }
  if (!decoded) {
    counters_.decode_errors.add();
    bus_.reject_remote(topic_name, decoded.status().message());
    return;
  }
  Message& m = *decoded;
  if (m.header().topic != topic_name) {
    counters_.decode_errors.add();
    bus_.reject_remote(topic_name, "envelope names topic '" + m.header().topic +
                                       "' but was sent on '" + topic_name + "'");
    return;
  }
  if (const MessageSchema* schema = find_schema(m.type())) {
    if (Status s = validate(m, *schema); !s.is_ok()) {
      counters_.decode_errors.add();
      bus_.reject_remote(topic_name, s.message());
      return;
    }
  }
  const auto lost = advance_sequence(topic_name, m.header().publisher, m.header().seq);
  if (!lost) {
    counters_.duplicates.add();
    return;
  }
  m.header().arrival_ns = arrival_ns;
  bus_.deliver_remote(std::make_shared<const Message>(std::move(m)), *lost);
}

std::optional<std::uint64_t> BusIo::advance_sequence(const std::string& topic, const std::string& publisher,
                                                     std::uint64_t seq) {
  auto& last = last_seq_[topic + "\n" + publisher];
  if (seq <= last) return std::nullopt;
  const std::uint64_t lost = last != 0 && seq > last + 1 ? seq - last - 1 : 0;
  last = seq;
  return lost;
}

int BusIo::receive(zmq::socket_t& socket, bool shm_allowed) {
  if (!socket) return 0;
  int taken = 0;
  for (; taken < 256; ++taken) {  // bounded, so control requests and discovery are not starved
    std::vector<zmq::message_t> parts;
    try {
      if (!zmq::recv_multipart(socket, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
    } catch (const zmq::error_t& e) {
      rate_log_.warn("recv", std::string("receive failed: ") + e.what());
      break;
    }
    const std::int64_t arrival = wall_now_ns();
    std::lock_guard lock(recv_mu_);
    handle_message(parts, shm_allowed, arrival);
  }
  return taken;
}

void BusIo::serve_control() {
  std::vector<zmq::message_t> parts;
  try {
    if (!zmq::recv_multipart(control_, std::back_inserter(parts), zmq::recv_flags::dontwait)) return;
  } catch (const zmq::error_t&) {
    return;
  }
  ControlRequest req;
  if (!parts.empty()) req.command = parts[0].to_string();
  if (parts.size() > 1) req.argument = parts[1].to_string();
  Expected<std::string> reply = std::string();
  if (req.command == "bus") {
    reply = bus_.stats_yaml();
  } else {
    std::lock_guard lock(control_mu_);
    if (control_handler_) {
      reply = control_handler_(req);
    } else {
      reply = not_found("this process hosts no nodes");
    }
  }
  try {
    if (reply) {
      control_.send(zmq::str_buffer("ok"), zmq::send_flags::sndmore);
      control_.send(zmq::buffer(*reply), zmq::send_flags::none);
    } else {
      control_.send(zmq::str_buffer("error"), zmq::send_flags::sndmore);
      control_.send(zmq::buffer(reply.status().message()), zmq::send_flags::none);
    }
  } catch (const zmq::error_t&) {
  }
}

void BusIo::run() {
  std::int64_t last_rescan = steady_now_ns();
  std::int64_t last_sweep = last_rescan;
  std::int64_t last_traffic = 0;
  std::vector<zmq::pollitem_t> items = {
      {sub_ipc_.handle(), 0, ZMQ_POLLIN, 0},
      {sub_tcp_.handle(), 0, ZMQ_POLLIN, 0},
      {control_.handle(), 0, ZMQ_POLLIN, 0},
      {zap_.handle(), 0, ZMQ_POLLIN, 0},
      {nullptr, wake_fd_, ZMQ_POLLIN, 0},
      {nullptr, inotify_fd_, ZMQ_POLLIN, 0},
  };
  if (inotify_fd_ < 0) items.pop_back();
  // The tcp sockets' monitors, when they exist, after the fixed items.
  std::size_t listen_monitor_item = 0, peers_monitor_item = 0;
  if (listen_monitor_) {
    listen_monitor_item = items.size();
    items.push_back({listen_monitor_.handle(), 0, ZMQ_POLLIN, 0});
  }
  if (peers_monitor_) {
    peers_monitor_item = items.size();
    items.push_back({peers_monitor_.handle(), 0, ZMQ_POLLIN, 0});
  }
  while (!stop_.load()) {
    const bool spinning = options_.spin_ns > 0 && steady_now_ns() - last_traffic < options_.spin_ns;
    try {
      zmq::poll(items.data(), items.size(), spinning ? std::chrono::milliseconds(0) : kPollPeriod);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) rate_log_.warn("poll", std::string("poll failed: ") + e.what());
      continue;
    }
    // Handshakes first: a peer's connection waits for this answer.
    if (items[3].revents & ZMQ_POLLIN) serve_zap();
    if (items[4].revents & ZMQ_POLLIN) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(wake_fd_, &v, sizeof v);
      std::vector<std::function<void()>> cmds;
      {
        std::lock_guard lock(cmd_mu_);
        cmds.swap(commands_);
      }
      for (auto& c : cmds) {
        try {
          c();
        } catch (const std::exception& e) {
          rate_log_.warn("command", std::string("bus command failed: ") + e.what());
        }
      }
    }
    if (listen_monitor_item && (items[listen_monitor_item].revents & ZMQ_POLLIN)) {
      serve_tcp_monitor(listen_monitor_, /*listener=*/true);
    }
    if (peers_monitor_item && (items[peers_monitor_item].revents & ZMQ_POLLIN)) {
      serve_tcp_monitor(peers_monitor_, /*listener=*/false);
    }
    reconnect_tcp_peers();
    bool rescan = false;
    if (inotify_fd_ >= 0 && (items[5].revents & ZMQ_POLLIN)) {
      char buf[4096];
      while (::read(inotify_fd_, buf, sizeof buf) > 0) {
      }
      rescan = true;
    }
    if (items[0].revents & ZMQ_POLLIN) receive(sub_ipc_, /*shm_allowed=*/true);
    if (items[1].revents & ZMQ_POLLIN) receive(sub_tcp_, /*shm_allowed=*/false);
    if ((items[0].revents | items[1].revents) & ZMQ_POLLIN) last_traffic = steady_now_ns();
    if (items[2].revents & ZMQ_POLLIN) serve_control();
    if (registry_dirty_.load()) write_registry();
    const std::int64_t now = steady_now_ns();
    if (rescan || now - last_rescan > kRescanPeriodNs) {
      last_rescan = now;
      rescan_registry();
      std::lock_guard lock(send_mu_);
      drain_interest(pub_ipc_, ipc_interest_);
      drain_interest(pub_tcp_, tcp_interest_);
    }
    if (now - last_sweep > kStaleSweepPeriodNs) {
      last_sweep = now;
      shm::remove_stale_segments();
    }
    if (release_heap_at_ != 0 && now >= release_heap_at_) {
      release_heap_at_ = 0;
      release_free_heap();
      ++heap_releases_;
    }
  }
}

}  // namespace edgevla
