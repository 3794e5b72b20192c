#include "runtime/bus/bus.hpp"

#include <unistd.h>

#include <algorithm>

#include <yaml-cpp/yaml.h>

#include "msgs/schema.hpp"
#include "runtime/bus/bus_io.hpp"
#include "runtime/bus/ring_interest.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla {
namespace {

std::atomic<int> g_bus_counter{0};

Status check_topic_name(std::string_view topic) {
  if (topic.empty() || topic.front() != '/') {
    return invalid_argument("topic '" + std::string(topic) + "' must start with '/'");
  }
  for (char c : topic) {
    if (c == '\0' || c == ' ' || c == '\n') {
      return invalid_argument("topic '" + std::string(topic) + "' contains a blank or NUL");
    }
  }
  return Status::ok();
}

}  // namespace

Bus::Bus(BusOptions options) : options_(std::move(options)) {
  if (options_.domain.empty()) options_.domain = Registry::default_domain();
  if (options_.registry_dir.empty()) options_.registry_dir = Registry::default_dir(options_.domain);
  id_ = local_hostname() + "/" + std::to_string(::getpid()) + "/" + std::to_string(++g_bus_counter);
}

Expected<std::unique_ptr<Bus>> Bus::create(BusOptions options) {
  std::unique_ptr<Bus> bus(new Bus(std::move(options)));
  if (bus->options_.cross_process) {
    auto io = BusIo::create(*bus, bus->options_, bus->id_);
    if (!io) return io.status();
    bus->io_ = std::move(*io);
  }
  return bus;
}

Bus::~Bus() { io_.reset(); }

std::string Bus::tcp_endpoint() const { return io_ ? io_->tcp_endpoint() : std::string(); }

Expected<std::shared_ptr<TopicWriter>> Bus::advertise(std::string_view topic, std::string_view type,
                                                      std::string_view node, PublisherOptions options) {
  EDGEVLA_RETURN_IF_ERROR(check_topic_name(topic));
  if (type.empty()) return invalid_argument("publisher on '" + std::string(topic) + "' has no type");
  std::shared_ptr<TopicWriter> writer;
  {
    std::lock_guard lock(mu_);
    writer = std::make_shared<TopicWriter>(std::string(topic), std::string(type), std::string(node),
                                           id_ + "#" + std::to_string(++writers_created_), options);
    TopicEntry& e = topics_[std::string(topic)];
    std::erase_if(e.writers, [](const auto& w) { return w.expired(); });
    if (!e.writers.empty() && e.type != type) {
      std::string other;
      if (auto w = e.writers.front().lock()) other = w->node();
      return already_exists("topic '" + std::string(topic) + "' already carries " + e.type +
                            " (published by node '" + other + "'); node '" + std::string(node) +
                            "' cannot publish " + std::string(type) + " on it — remap one of them");
    }
    e.type = std::string(type);
    e.writers.push_back(writer);
  }
  if (io_) io_->registry_changed();
  return writer;
}

void Bus::unadvertise(const std::shared_ptr<TopicWriter>& writer) {
  {
    std::lock_guard lock(mu_);
    auto it = topics_.find(writer->topic());
    if (it == topics_.end()) return;
    std::erase_if(it->second.writers, [&](const auto& w) {
      auto p = w.lock();
      return !p || p == writer;
    });
  }
  if (io_) io_->registry_changed();
}

std::shared_ptr<const Bus::QueueList> Bus::queues_for(const std::string& topic) const {
  std::lock_guard lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return nullptr;
  return it->second.queues;
}

void Bus::dispatch(const MessagePtr& m, const QueueList& queues, std::uint64_t lost, bool may_wait) {
  for (const auto& q : queues) {
    if (!q->type().empty() && q->type() != m->type()) {
      q->counters().rejected.add();
      rate_log_.warn("type:" + q->owner() + ":" + q->topic(),
                     "topic '" + q->topic() + "' carries " + m->type() + " but node '" +
                         q->owner() + "' subscribed to it expecting " + q->type() +
                         "; message dropped — fix the remap or the subscription type");
      continue;
    }
    if (lost) q->counters().lost.add(lost);
    q->push(m, may_wait && !q->qos().observer());  // publishers never wait for observers
  }
}

Status Bus::publish(TopicWriter& w, Message&& m) { return send(w, std::move(m), /*stamp=*/true); }

Status Bus::republish(TopicWriter& w, Message&& m) { return send(w, std::move(m), /*stamp=*/false); }

Status Bus::send(TopicWriter& w, Message&& m, bool stamp) {
  const auto fail = [&](Status s) {
    w.counters().errors.add();
    return s.with_context("node '" + w.node() + "' publishing on '" + w.topic() + "'");
  };
  if (m.type() != w.type()) {
    return fail(invalid_argument("message type is '" + m.type() + "' but the publisher was declared for '" +
                                 w.type() + "'"));
  }
  if (const MessageSchema* schema = find_schema(m.type())) {
    if (Status s = validate(m, *schema); !s.is_ok()) return fail(s);
  }
  Header& h = m.header();
  h.topic = w.topic();
  h.arrival_ns = 0;  // sent from here (a republished message arrived earlier, not now)
  if (stamp) {
    h.seq = w.next_seq();
    h.publish_stamp_ns = wall_now_ns();
    if (h.source_stamp_ns == 0) h.source_stamp_ns = h.publish_stamp_ns;
    h.publisher = w.id();
    h.trace.push_back({w.node(), h.publish_stamp_ns});
  }
  std::uint64_t bytes = 0;
  for (const auto& t : m.tensors()) bytes += t.tensor.nbytes();
  w.counters().published.add();
  w.counters().bytes.add(bytes);

  auto message = std::make_shared<const Message>(std::move(m));
  if (auto queues = queues_for(w.topic())) dispatch(message, *queues, 0, !w.options().never_wait);
  if (io_) {
    // Local subscribers already have the message; a failed remote send is a counted drop.
    if (Status s = io_->send(w, *message); !s.is_ok()) {
      w.counters().errors.add();
      rate_log_.warn("send:" + w.topic(), "node '" + w.node() + "': message on '" + w.topic() +
                                              "' not sent to other processes: " + s.message());
    }
  }
  return Status::ok();
}

void UpstreamAnnouncement::end() {
  for (const auto& w : local) w->upstream_ends();
  local.clear();
  for (const auto& t : remote) ring_withdraw_upstream(*t, static_cast<std::uint32_t>(::getpid()));
  remote.clear();
}

void Bus::announce_upstream(const std::string& topic, const Waker* self, UpstreamAnnouncement& announcement) const {
  if (auto queues = queues_for(topic)) {
    for (const auto& q : *queues) {
      const auto& w = q->waker();
      if (!w || w.get() == self || !w->spins_for_upstream() || !q->qos().triggers) continue;
      if (std::find(announcement.local.begin(), announcement.local.end(), w) != announcement.local.end()) continue;
      announcement.local.push_back(w);
      w->upstream_begins();
    }
  }
  if (io_) io_->announce_upstream(topic, announcement.remote);
}

void Bus::upstream_wakers(std::vector<std::shared_ptr<Waker>>& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [topic, e] : topics_) {
    for (const auto& q : *e.queues) {
      const auto& w = q->waker();
      if (!w || !w->spins_for_upstream() || q->qos().observer() || !q->qos().triggers) continue;
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
    }
  }
}

TopicInterest Bus::interest_of(const QueueList& queues) {
  if (queues.empty()) return TopicInterest::kNone;
  bool pipeline = false;
  for (const auto& q : queues) {
    if (q->qos().observer()) continue;
    if (q->qos().triggers) return TopicInterest::kPipeline;
    pipeline = true;
  }
  return pipeline ? TopicInterest::kHeld : TopicInterest::kObserver;
}

bool Bus::takes(const std::string& topic) const {
  auto queues = queues_for(topic);
  return queues && !queues->empty();
}

bool Bus::observes_only(const std::string& topic) const {
  auto queues = queues_for(topic);
  return queues && interest_of(*queues) == TopicInterest::kObserver;
}

namespace {

Status device_refused(const SubscriptionQueue& q, const TopicWriter& w) {
  return failed_precondition(
      "node '" + q.owner() + "' subscribes to '" + q.topic() + "', where node '" + w.node() + "' publishes tensors on " +
      w.device().to_string() + ", but takes neither device tensors nor host copies; a node that reads tensor bytes "
      "on the CPU asks for host copies: in the launch file, give node '" + q.owner() + "' `qos: {<subscription>: \"" +
      q.qos().on_host().to_string() + "\"}`");
}

}  // namespace

Status Bus::drain_inbound(std::int64_t timeout_ns) { return io_ ? io_->drain_inbound(timeout_ns) : Status::ok(); }

Status Bus::publishes_on(TopicWriter& writer, Device device) {
  {
    std::lock_guard lock(mu_);
    writer.device_ = device;
    if (device.is_cpu()) return Status::ok();
    if (auto it = topics_.find(writer.topic()); it != topics_.end()) {
      for (const auto& q : *it->second.queues) {
        if (!q->qos().accepts_device_tensors()) {
          writer.device_ = Device::cpu();
          return device_refused(*q, writer);
        }
      }
    }
  }
  // Said in the registry: processes that take the topic start the device before its first block.
  if (io_) io_->registry_changed();
  return Status::ok();
}

Status Bus::attach(std::shared_ptr<SubscriptionQueue> queue) {
  EDGEVLA_RETURN_IF_ERROR(check_topic_name(queue->topic()));
  const std::string topic = queue->topic();
  queue->open();
  TopicInterest before, after;
  {
    std::lock_guard lock(mu_);
    TopicEntry& e = topics_[topic];
    if (!queue->qos().accepts_device_tensors()) {
      for (const auto& weak : e.writers) {
        if (auto w = weak.lock(); w && !w->device_.is_cpu()) return device_refused(*queue, *w);
      }
    }
    auto list = std::make_shared<QueueList>(*e.queues);
    before = interest_of(*list);
    list->push_back(std::move(queue));
    after = interest_of(*list);
    e.queues = std::move(list);
  }
  if (io_) {
    if (before != after) io_->set_interest(topic, before, after);
    io_->registry_changed();
  }
  return Status::ok();
}

void Bus::detach(const std::shared_ptr<SubscriptionQueue>& queue, bool keep_queued) {
  TopicInterest before, after;
  {
    std::lock_guard lock(mu_);
    auto it = topics_.find(queue->topic());
    if (it == topics_.end()) return;
    auto list = std::make_shared<QueueList>(*it->second.queues);
    before = interest_of(*list);
    std::erase(*list, queue);
    after = interest_of(*list);
    it->second.queues = std::move(list);
  }
  if (!keep_queued) queue->close();  // pushes racing with this detach are dropped, not queued
  if (io_) {
    if (before != after) io_->set_interest(queue->topic(), before, after);
    io_->registry_changed();
  }
}

Expected<Tensor> Bus::loan(DType dtype, const Shape& shape) {
  EDGEVLA_ASSIGN_OR_RETURN(std::size_t bytes, checked_nbytes(dtype, shape));
  if (io_) {
    auto buffer = io_->allocate_shm(bytes);
    if (buffer) return Tensor::from_buffer(std::move(*buffer), dtype, shape);
    rate_log_.warn("loan", "shared memory loan of " + std::to_string(bytes) +
                               " bytes failed, using the heap (one copy per remote send): " +
                               buffer.status().message());
  }
  return Tensor::empty(dtype, shape);
}

Expected<Tensor> Bus::loan_for(const std::string& topic, DType dtype, const Shape& shape, Device device) {
  if (device.is_cpu()) return loan(dtype, shape);
  if (io_ && io_->remote_pipeline_receivers(topic)) {
    // Subscribers in other processes: a device block of the shared pool, which they map on the
    // same device (no host round trip); a host loan when the device cannot export memory.
    EDGEVLA_ASSIGN_OR_RETURN(std::size_t bytes, checked_nbytes(dtype, shape));
    auto buffer = io_->allocate_shm_on(device, bytes);
    if (buffer) return Tensor::from_buffer(std::move(*buffer), dtype, shape);
    rate_log_.warn("device_loan", "'" + topic + "' goes to other processes through host memory: " +
                                      buffer.status().message());
    return loan(dtype, shape);
  }
  return Tensor::empty(dtype, shape, device);
}

void Bus::set_node_names(std::vector<std::string> names) {
  {
    std::lock_guard lock(mu_);
    node_names_ = std::move(names);
  }
  if (io_) io_->registry_changed();
}

void Bus::set_control_handler(ControlHandler handler) {
  if (io_) io_->set_control_handler(std::move(handler));
}

void Bus::deliver_remote(const MessagePtr& m, std::uint64_t lost) {
  // The receive thread serves every topic of this process: it must never wait on one queue.
  if (auto queues = queues_for(m->header().topic)) dispatch(m, *queues, lost, /*may_wait=*/false);
}

void Bus::lost_remote(const std::string& topic, std::uint64_t n) {
  if (n == 0) return;
  if (auto queues = queues_for(topic)) {
    for (const auto& q : *queues) q->counters().lost.add(n);
  }
}

void Bus::drop_remote(const std::string& topic, const std::string& reason) {
  count_remote(topic, &SubscriptionCounters::dropped_transport, "lost", reason);
}

void Bus::reject_remote(const std::string& topic, const std::string& reason) {
  count_remote(topic, &SubscriptionCounters::rejected, "dropped", reason);
}

void Bus::count_remote(const std::string& topic, Counter SubscriptionCounters::*counter, const char* verb,
                       const std::string& reason) {
  std::string nodes;
  if (auto queues = queues_for(topic)) {
    for (const auto& q : *queues) {
      (q->counters().*counter).add();
      nodes += (nodes.empty() ? "" : ", ") + q->owner();
    }
  }
  rate_log_.warn(std::string(verb) + ":" + topic, std::string(verb) + " a message on '" + topic + "'" +
                                                      (nodes.empty() ? "" : " for node(s) " + nodes) + ": " + reason);
}

void Bus::describe(RegistryEntry& e) const {
  std::lock_guard lock(mu_);
  e.nodes = node_names_;
  e.publishers.clear();
  e.subscriptions.clear();
  for (const auto& [topic, entry] : topics_) {
    for (const auto& w : entry.writers) {
      if (auto p = w.lock()) {
        e.publishers.push_back({topic, p->type(), p->node(), p->device().is_cpu() ? "" : p->device().to_string()});
      }
    }
    for (const auto& q : *entry.queues) e.subscriptions.push_back({topic, q->type(), q->owner()});
  }
}

std::string Bus::stats_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "bus" << YAML::Value << id_;
  out << YAML::Key << "topics" << YAML::Value << YAML::BeginMap;
  {
    std::lock_guard lock(mu_);
    for (const auto& [topic, entry] : topics_) {
      out << YAML::Key << topic << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "type" << YAML::Value << (entry.type.empty() ? "*" : entry.type);
      out << YAML::Key << "publishers" << YAML::Value << YAML::BeginSeq;
      for (const auto& w : entry.writers) {
        if (auto p = w.lock()) {
          const auto& c = p->counters();
          out << YAML::Flow << YAML::BeginMap << YAML::Key << "node" << YAML::Value << p->node()
              << YAML::Key << "id" << YAML::Value << p->id() << YAML::Key << "published" << YAML::Value
              << c.published.get() << YAML::Key << "bytes" << YAML::Value << c.bytes.get() << YAML::Key
              << "sent_remote" << YAML::Value << c.sent_remote.get() << YAML::Key << "copied_to_shm"
              << YAML::Value << c.copied_to_shm.get() << YAML::Key << "errors" << YAML::Value
              << c.errors.get() << YAML::EndMap;
        }
      }
      out << YAML::EndSeq << YAML::Key << "subscribers" << YAML::Value << YAML::BeginSeq;
      for (const auto& q : *entry.queues) {
        const auto& c = q->counters();
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "node" << YAML::Value << q->owner() << YAML::Key
            << "qos" << YAML::Value << q->qos().to_string() << YAML::Key << "received" << YAML::Value
            << c.received.get() << YAML::Key << "delivered" << YAML::Value << c.delivered.get() << YAML::Key
            << "dropped_overflow" << YAML::Value << c.dropped_overflow.get() << YAML::Key << "dropped_timeout"
            << YAML::Value << c.dropped_timeout.get() << YAML::Key << "rejected" << YAML::Value
            << c.rejected.get() << YAML::Key << "lost" << YAML::Value << c.lost.get() << YAML::Key << "device_copies"
            << YAML::Value << c.device_copies.get() << YAML::EndMap;
      }
      out << YAML::EndSeq << YAML::EndMap;
    }
  }
  out << YAML::EndMap;
  if (io_) io_->emit_stats(out);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace edgevla
