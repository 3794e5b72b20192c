// Records topics into an MCAP bag. It subscribes through the bus like any node (zero-copy on
// the local transports) and writes on its own thread; publishers never wait for it. Each
// topic's queue is bounded in bytes: when the disk falls behind, the oldest queued messages
// are dropped, counted and reported, and memory stays bounded.
//
// The bag is self-describing for replay: at start (and whenever a new process appears) the
// recorder stores each running node's type, params and topics as "edgevla.node" metadata.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bag/foxglove.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "runtime/bus/bus.hpp"

namespace edgevla::bag {

struct RecorderOptions {
  std::string output;                      // the .mcap file
  std::vector<std::string> topics;         // record these ...
  bool all = false;                        // ... or every topic in the domain, as they appear
  mcap::Compression compression = mcap::Compression::kZstd;
  std::size_t chunk_bytes = 4 << 20;
  std::size_t max_queue_bytes = 512 << 20;           // per topic
  // false: an observer (never slows the graph; when a publisher's pool runs short, the
  // recorder loses first, counted). true: lossless within its declared backlog
  // (max_queue_bytes per topic): a pipeline subscriber whose messages are never taken back.
  bool lossless = false;
  std::chrono::milliseconds flush_period{500};        // a crash loses at most this much
  std::chrono::milliseconds discovery_period{500};    // new topics and processes
  std::map<std::string, std::string> info;            // extra edgevla.recording metadata
  // Also write Foxglove-decodable channels (runtime/bag/foxglove.hpp) beside each topic's own.
  bool foxglove = false;
  FoxgloveOptions foxglove_options;
  // Splitting: a new file for the first message after the current one holds split_bytes or has
  // recorded for split_duration (0: never); every part holds at least one message. The parts are <stem>_000.mcap, <stem>_001.mcap, ... beside
  // `output` (see part_path); each is a complete bag with its own schemas, channels, node
  // metadata and summary, so every bag tool takes any one of them. The recorder's memory stays
  // bounded however long it records (a bag's summary index grows with its chunks).
  std::uint64_t split_bytes = 0;
  std::chrono::seconds split_duration{0};
};

// The file of part `part` of a split recording: "runs/a.mcap", 2 -> "runs/a_002.mcap".
std::string part_path(const std::string& output, int part);

// Every message published on a recorded topic after the recorder subscribed is one of:
// written, dropped (QoS), dropped in transport, lost, rejected, or a write error.
struct RecorderStats {
  std::uint64_t written = 0;
  std::uint64_t dropped = 0;            // QoS: queue overflow, the disk fell behind
  std::uint64_t dropped_transport = 0;  // arrived, but its shared memory could not be held
                                        // (holder slots, taken back for the pipeline, gone)
  std::uint64_t lost = 0;               // never arrived: gaps in publishers' sequences (the
                                        // publisher's pool was full, the socket dropped it)
  std::uint64_t rejected = 0;           // arrived unusable (wrong type, failed schema, bad descriptor)
  std::uint64_t write_errors = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t device_copies = 0;      // tensors copied off a device (on the recorder's thread)
  std::uint64_t foxglove_written = 0;   // Foxglove messages derived (foxglove: true)
  std::uint64_t foxglove_skipped = 0;   // frames or tensors Foxglove cannot show: counted, not written
  int parts = 1;                        // files written (more than one when split)
  std::map<std::string, std::uint64_t> per_topic;
};

class Recorder {
 public:
  // Opens the bag, subscribes and starts writing.
  static Expected<std::unique_ptr<Recorder>> start(Bus& bus, RecorderOptions options);
  ~Recorder();
  // Unsubscribes, writes what is queued, closes the bag. Idempotent.
  Status stop();
  RecorderStats stats() const;
  // Topics being recorded now.
  std::vector<std::string> topics() const;

 private:
  Recorder(Bus& bus, RecorderOptions options) : bus_(bus), options_(std::move(options)) {}
  void subscribe(const std::string& topic);
  void discover();
  void snapshot_nodes();
  void run();
  Status write(const std::string& topic, const SubscriptionQueue::Stamped& s);
  Status write_recording_metadata();
  // The file the writer writes now, and whether it is time for the next part.
  std::string current_path() const;
  bool part_is_full(std::int64_t now_ns) const;
  // Opens the next part, then closes the current one (on the writer thread). When the next
  // cannot be opened, says so and goes on writing the current one.
  void next_part(std::int64_t now_ns);

  struct Topic {
    std::shared_ptr<SubscriptionQueue> queue;
    SubscriptionQueue::Stamped head;  // next message, taken out for the merge by arrival time
    std::uint16_t channel = 0;
    bool has_channel = false;
    std::atomic<std::uint64_t> written{0};  // by the writer thread; stats() reads it
  };

  Bus& bus_;
  RecorderOptions options_;
  std::unique_ptr<mcap::McapWriter> writer_;  // used by the writer thread only
  std::unique_ptr<FoxgloveWriter> foxglove_;  // likewise; null unless options_.foxglove
  std::atomic<std::uint64_t> foxglove_written_{0}, foxglove_skipped_{0};
  std::uint64_t foxglove_written_before_ = 0, foxglove_skipped_before_ = 0;  // in closed parts
  std::map<std::string, std::uint64_t> foxglove_skips_before_;
  bool split_ = false;
  int part_ = 0;
  std::int64_t part_started_ns_ = 0;
  std::uint64_t part_messages_ = 0;                // messages written into the open part
  std::uint64_t part_limit_bytes_ = 0;             // a failed switch retries one split_bytes later
  std::uint64_t bytes_before_part_ = 0;            // in closed parts
  std::atomic<int> parts_{1};
  std::set<std::string> foxglove_warned_;  // skip reasons already logged
  std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  mutable std::mutex mu_;
  std::map<std::string, Topic> topics_;
  // Per process (bus id): the nodes whose type, params and topics are in the bag. A process
  // adds its nodes one by one: one it lists that is not here yet is asked for again.
  std::map<std::string, std::set<std::string>> recorded_nodes_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  Status final_;
  std::atomic<std::uint64_t> written_{0}, write_errors_{0}, bytes_written_{0}, device_copies_{0};
  RateLimitedLog rate_log_;
};

}  // namespace edgevla::bag
