#include "runtime/bag/recorder.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "runtime/bag/bag_codec.hpp"
#include "runtime/bus/control_client.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/heap.hpp"
#include "runtime/util/thread_name.hpp"

namespace edgevla::bag {

std::string part_path(const std::string& output, int part) {
  const std::filesystem::path p(output);
  char n[16];
  std::snprintf(n, sizeof(n), "_%03d", part);
  return (p.parent_path() / (p.stem().string() + n + p.extension().string())).string();
}

namespace {
mcap::McapWriterOptions writer_options(const RecorderOptions& o) {
  mcap::McapWriterOptions wo;
  wo.compression = o.compression;
  wo.chunk_size = o.chunk_bytes;
  return wo;
}
}  // namespace

Expected<std::unique_ptr<Recorder>> Recorder::start(Bus& bus, RecorderOptions options) {
  if (options.output.empty()) return invalid_argument("recorder needs an output file (-o run.mcap)");
  if (options.topics.empty() && !options.all) {
    return invalid_argument("recorder needs topics to record (--topics a,b) or --all");
  }
  const bool split = options.split_bytes > 0 || options.split_duration.count() > 0;
  auto writer = mcap::McapWriter::open(split ? part_path(options.output, 0) : options.output, writer_options(options));
  if (!writer) return writer.status();
  std::unique_ptr<Recorder> r(new Recorder(bus, std::move(options)));
  r->writer_ = std::move(*writer);
  r->split_ = split;
  r->part_started_ns_ = steady_now_ns();
  r->part_limit_bytes_ = r->options_.split_bytes;
  if (r->options_.foxglove) r->foxglove_ = std::make_unique<FoxgloveWriter>(*r->writer_, r->options_.foxglove_options);
  EDGEVLA_RETURN_IF_ERROR(r->write_recording_metadata());
  for (const auto& t : r->options_.topics) r->subscribe(t);
  r->discover();
  r->running_.store(true);
  r->thread_ = std::thread([p = r.get()] {
    name_this_thread("recorder");
    p->run();
  });
  return r;
}

Recorder::~Recorder() { (void)stop(); }

Status Recorder::write_recording_metadata() {
  mcap::StringMap info = {{"domain", bus_.options().domain},
                          {"host", local_hostname()},
                          {"pid", std::to_string(::getpid())},
                          {"started_ns", std::to_string(wall_now_ns())},
                          {"recorder", "edgevla"}};
  if (split_) {
    info["part"] = std::to_string(part_);
    if (part_ > 0) info["previous_part"] = std::filesystem::path(part_path(options_.output, part_ - 1)).filename().string();
  }
  for (const auto& [k, v] : options_.info) info[k] = v;
  return writer_->write_metadata("edgevla.recording", info);
}

std::string Recorder::current_path() const { return split_ ? part_path(options_.output, part_) : options_.output; }

bool Recorder::part_is_full(std::int64_t now_ns) const {
  if (!split_ || part_messages_ == 0) return false;
  if (options_.split_bytes > 0 && writer_->stats().bytes_written >= part_limit_bytes_) return true;
  return options_.split_duration.count() > 0 &&
         now_ns - part_started_ns_ >= std::chrono::nanoseconds(options_.split_duration).count();
}

void Recorder::next_part(std::int64_t now_ns) {
  const std::string next = part_path(options_.output, part_ + 1);
  auto opened = mcap::McapWriter::open(next, writer_options(options_));
  if (!opened) {
    // Keep recording into the part that is open; try again one split later.
    rate_log_.error("split", "recorder cannot start the next part '" + next + "': " + opened.status().message() +
                                 "; still writing '" + current_path() + "'");
    part_started_ns_ = now_ns;
    part_limit_bytes_ = writer_->stats().bytes_written + options_.split_bytes;
    return;
  }
  (void)writer_->write_metadata("edgevla.next_part", {{"file", std::filesystem::path(next).filename().string()}});
  std::unique_ptr<mcap::McapWriter> old = std::move(writer_);
  writer_ = std::move(*opened);
  if (foxglove_) {
    foxglove_written_before_ += foxglove_->written();
    for (const auto& [why, n] : foxglove_->skips()) {
      foxglove_skips_before_[why] += n;
      foxglove_skipped_before_ += n;
    }
    foxglove_ = std::make_unique<FoxgloveWriter>(*writer_, options_.foxglove_options);
  }
  // The old part's summary (written at close) and the new part's own schemas and channels.
  if (Status s = old->close(); !s.is_ok()) {
    write_errors_.fetch_add(1);
    rate_log_.error("split", "recorder could not close part '" + current_path() + "': " + s.message());
  }
  bytes_before_part_ += old->stats().bytes_written;
  old.reset();
  // The closed part's buffers and summary index were allocated beside the new part's: give
  // them back, or the recorder would stay at two writers' worth of memory.
  release_free_heap();
  ++part_;
  part_messages_ = 0;
  parts_.store(part_ + 1);
  part_started_ns_ = now_ns;
  part_limit_bytes_ = options_.split_bytes;
  {
    std::lock_guard lock(mu_);
    for (auto& [topic, t] : topics_) t.has_channel = false;
    recorded_nodes_.clear();  // every part carries the nodes' params for replay
  }
  (void)write_recording_metadata();
  discover();
}

void Recorder::subscribe(const std::string& topic) {
  std::lock_guard lock(mu_);
  if (topics_.contains(topic)) return;
  QoS qos = QoS::keep_last(1 << 20);
  qos.max_bytes = options_.max_queue_bytes;
  if (!options_.lossless) qos = qos.as_observer();
  qos = qos.taking_device_tensors();  // copied to the host on the recorder's thread
  auto queue = std::make_shared<SubscriptionQueue>(topic, "", qos, "recorder", waker_);
  if (Status s = bus_.attach(queue); !s.is_ok()) {
    rate_log_.warn("attach:" + topic, "recorder cannot subscribe to '" + topic + "': " + s.message());
    return;
  }
  topics_[topic].queue = std::move(queue);
}

void Recorder::discover() {
  auto reg = Registry::open(bus_.options().registry_dir);
  if (!reg) return;
  const auto entries = reg->list();
  if (options_.all) {
    for (const auto& e : entries) {
      for (const auto& p : e.publishers) subscribe(p.topic);
    }
    RegistryEntry self;
    bus_.describe(self);
    for (const auto& p : self.publishers) subscribe(p.topic);
  }
  // Nodes of processes not seen before: their type, params and topics, for replay.
  for (const auto& e : entries) {
    std::set<std::string>& written = recorded_nodes_[e.bus_id];
    if (std::all_of(e.nodes.begin(), e.nodes.end(), [&](const std::string& n) { return written.contains(n); })) continue;
    auto nodes = control_request(e.control_endpoint, "nodes", "", std::chrono::seconds(1));
    if (!nodes) continue;  // try again next round
    try {
      const YAML::Node root = YAML::Load(*nodes);
      for (const auto& n : root["nodes"]) {
        const std::string name = n["name"].as<std::string>();
        if (!written.insert(name).second) continue;
        auto params = control_request(e.control_endpoint, "params", name, std::chrono::seconds(1));
        YAML::Emitter subs, pubs;
        subs << n["subscriptions"];
        pubs << n["publishers"];
        (void)writer_->write_metadata("edgevla.node", {{"name", name},
                                                       {"type", n["type"].as<std::string>("")},
                                                       {"process", e.process},
                                                       {"params", params ? *params : ""},
                                                       {"subscriptions", subs.c_str()},
                                                       {"publishers", pubs.c_str()}});
      }
    } catch (const YAML::Exception& ex) {
      rate_log_.warn("snapshot", "recorder could not read the nodes of process " + e.process + ": " + ex.what());
    }
  }
}

Status Recorder::write(const std::string& topic, const SubscriptionQueue::Stamped& s) {
  const Message& m = *s.message;
  Topic* t = nullptr;
  {
    std::lock_guard lock(mu_);
    t = &topics_.at(topic);
  }
  if (!t->has_channel) {
    const auto schema = writer_->add_schema(m.type(), kSchemaEncoding, schema_text(m.type(), m.version()));
    t->channel = writer_->add_channel(topic, kMessageEncoding, schema,
                                      {{"edgevla.type", m.type()}, {"edgevla.type_version", std::to_string(m.version())}});
    t->has_channel = true;
  }
  const auto log_time = static_cast<std::uint64_t>(s.arrival_ns);
  const auto pub_time = static_cast<std::uint64_t>(m.header().publish_stamp_ns);
  std::size_t payload = 1024;  // envelope
  for (const auto& nt : m.tensors()) payload += nt.tensor.nbytes() + 64;
  EDGEVLA_RETURN_IF_ERROR(writer_->write_message_with(
      t->channel, static_cast<std::uint32_t>(m.header().seq), log_time, pub_time,
      [&](std::string& out) {
        std::uint64_t copies = 0;
        Status st = append_record(m, out, &copies);
        device_copies_.fetch_add(copies, std::memory_order_relaxed);
        return st;
      },
      payload));
  t->written.fetch_add(1, std::memory_order_relaxed);
  if (foxglove_) {
    // Device tensors were copied to the host for the record above; the conversion copies its own.
    EDGEVLA_RETURN_IF_ERROR(foxglove_->write(m, topic, static_cast<std::uint32_t>(m.header().seq), log_time, pub_time));
    std::uint64_t skipped = foxglove_skipped_before_;
    for (const auto& [why, n] : foxglove_->skips()) {
      skipped += n;
      // Once per reason: the count goes into the bag (edgevla.foxglove_skipped) and the final log
      // line; the edgevla channel keeps what the Foxglove view skipped.
      if (foxglove_warned_.insert(why).second) {
        rate_log_.warn("foxglove:" + why, "recorder: Foxglove view skipped: " + why +
                                              " (counted; the topic's edgevla channel keeps it)");
      }
    }
    foxglove_skipped_.store(skipped, std::memory_order_relaxed);
    foxglove_written_.store(foxglove_written_before_ + foxglove_->written(), std::memory_order_relaxed);
  }
  return Status::ok();
}

void Recorder::run() {
  std::int64_t last_flush = steady_now_ns();
  // Registry files are written asynchronously: look again soon after starting.
  std::int64_t last_discovery = last_flush - options_.discovery_period.count() * 1'000'000 + 50'000'000;
  std::uint64_t reported_drops = 0;
  std::uint64_t unflushed = 0;
  std::int64_t last_heap_release = last_flush;
  for (;;) {
    const std::uint32_t seen = waker_->epoch();
    // Merge the topics by arrival time: refill each topic's head, write the earliest.
    std::string next;
    SubscriptionQueue::Stamped head;
    std::uint64_t drops = 0;
    {
      std::lock_guard lock(mu_);
      std::int64_t best = 0;
      for (auto& [topic, t] : topics_) {
        if (!t.head.message) t.head = t.queue->pop_stamped();
        drops += t.queue->counters().dropped_overflow.get();
        if (t.head.message && (next.empty() || t.head.arrival_ns < best)) {
          best = t.head.arrival_ns;
          next = topic;
        }
      }
      if (!next.empty()) head = std::move(topics_.at(next).head);
    }
    if (drops > reported_drops) {
      rate_log_.warn("drops", "recorder is falling behind: " + std::to_string(drops - reported_drops) +
                                  " more message(s) dropped (" + std::to_string(drops) +
                                  " in all); the disk is slower than the data — record fewer topics or use lz4");
      reported_drops = drops;
    }
    if (head.message) {
      // A full part is closed when the next message comes, so that no part is left empty
      // (a recording that stops right after a part filled up ends with that part).
      if (const std::int64_t at = steady_now_ns(); part_is_full(at)) {
        next_part(at);
        unflushed = 0;
        last_flush = at;
      }
      if (Status s = write(next, head); !s.is_ok()) {
        write_errors_.fetch_add(1);
        rate_log_.error("write", "recorder cannot write to '" + current_path() + "': " + s.message());
      } else {
        written_.fetch_add(1);
        ++part_messages_;
        ++unflushed;
      }
      bytes_written_.store(bytes_before_part_ + writer_->stats().bytes_written);
    } else if (!running_.load()) {
      break;  // stopped and drained
    }
    const std::int64_t now = steady_now_ns();
    if (unflushed && now - last_flush > options_.flush_period.count() * 1'000'000) {
      if (Status s = writer_->flush(); !s.is_ok()) rate_log_.error("write", s.message());
      last_flush = now;
      unflushed = 0;
    }
    if (now - last_discovery > options_.discovery_period.count() * 1'000'000) {
      discover();
      last_discovery = now;
    }
    // The chunk buffers the writer cycles through (megabytes each) leave freed memory in the C
    // library's lists; giving it back once a minute keeps the recorder's RSS at what it uses.
    if (now - last_heap_release > 60'000'000'000) {
      release_free_heap();
      last_heap_release = now;
    }
    if (!head.message && running_.load()) {
      waker_->wait(seen, now + options_.flush_period.count() * 1'000'000 / 2);
    }
  }
}

Status Recorder::stop() {
  if (!thread_.joinable()) return final_;
  {
    // Stop subscribing but keep what is queued: it is written before the bag is closed.
    std::lock_guard lock(mu_);
    for (auto& [topic, t] : topics_) bus_.detach(t.queue, /*keep_queued=*/true);
  }
  running_.store(false);
  waker_->notify();
  thread_.join();
  discover();  // nodes that came up since the last round still go into the bag
  {
    // What did not make it into the bag, per topic and why: `bag info` shows it.
    std::lock_guard lock(mu_);
    std::map<std::string, std::string> drops;
    for (const auto& [topic, t] : topics_) {
      const auto& c = t.queue->counters();
      drops[topic] = "written " + std::to_string(t.written.load()) + ", dropped_overflow " +
                     std::to_string(c.dropped_overflow.get()) + ", dropped_transport " +
                     std::to_string(c.dropped_transport.get()) + ", lost_in_transport " + std::to_string(c.lost.get()) +
                     ", rejected " + std::to_string(c.rejected.get()) + ", queued_at_stop " +
                     std::to_string(t.queue->size());
    }
    (void)writer_->write_metadata("edgevla.recorder_drops", drops);
    if (foxglove_ && (!foxglove_->skips().empty() || !foxglove_skips_before_.empty())) {
      std::map<std::string, std::uint64_t> all = foxglove_skips_before_;
      for (const auto& [why, n] : foxglove_->skips()) all[why] += n;
      std::map<std::string, std::string> skips;
      for (const auto& [why, n] : all) skips[why] = std::to_string(n);
      (void)writer_->write_metadata("edgevla.foxglove_skipped", skips);
    }
  }
  final_ = writer_->close();
  bytes_written_.store(bytes_before_part_ + writer_->stats().bytes_written);
  return final_;
}

RecorderStats Recorder::stats() const {
  RecorderStats s;
  s.written = written_.load();
  s.write_errors = write_errors_.load();
  s.device_copies = device_copies_.load();
  s.bytes_written = bytes_written_.load();
  s.foxglove_written = foxglove_written_.load();
  s.foxglove_skipped = foxglove_skipped_.load();
  s.parts = parts_.load();
  std::lock_guard lock(mu_);
  for (const auto& [topic, t] : topics_) {
    s.dropped += t.queue->counters().dropped_overflow.get();
    s.lost += t.queue->counters().lost.get();
    s.dropped_transport += t.queue->counters().dropped_transport.get();
    s.rejected += t.queue->counters().rejected.get();
    s.per_topic[topic] = t.written.load(std::memory_order_relaxed);
  }
  return s;
}

std::vector<std::string> Recorder::topics() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [topic, t] : topics_) out.push_back(topic);
  return out;
}

}  // namespace edgevla::bag
