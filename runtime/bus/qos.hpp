// Quality of service of one subscription: how deep its queue is and what happens when full.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/core/status.hpp"

namespace edgevla {

// Who a subscription serves. Pipeline subscribers are the graph's own nodes: their messages
// are never given up for anyone else's. Observers (topic echo/hz, a recorder that is not
// lossless, the Python client, anything attached to look) never slow the pipeline: publishers
// never wait for them, they hold a bounded number of shared-memory blocks (beyond that they
// read a copy), and when a publisher's pool runs short their undelivered blocks are taken back
// first (their drops are counted).
enum class SubscriptionRole { kPipeline, kObserver };

enum class Reliability {
  kBestEffort,  // a full queue drops its oldest message (counted); publishers never wait
  kReliable,    // a full queue makes the publisher wait up to max_block, then drop (counted)
};

struct QoS {
  std::size_t depth = 10;
  Reliability reliability = Reliability::kBestEffort;
  std::chrono::milliseconds max_block{100};
  // Also bounds the tensor bytes queued (0: no bound); the oldest messages go first.
  std::size_t max_bytes = 0;
  SubscriptionRole role = SubscriptionRole::kPipeline;
  // Tensors on an accelerator reach this subscription as host copies, made on the subscriber's
  // side when it takes the message (counted: device_copies); off, they arrive as they were
  // published (a CPU node that reads tensor bytes wants this on).
  bool host_tensors = false;
  // The callback takes tensors on an accelerator as they are (it copies them itself, or its
  // engine reads them there). Declared by the node's code, not by a launch file: a launch
  // file's QoS for the subscription keeps it. A subscription with neither this nor
  // host_tensors is refused, when it attaches, on a topic whose publisher in this process
  // declared device tensors (Bus::publishes_on), and rejects (counted) any that still arrive.
  bool device_tensors = false;
  // What arrives here starts work on the graph's path: the callback publishes, or decides what
  // is published next. False for an input the node only keeps for later work (a robot state, a
  // prompt, a second camera beside the one that triggers): its executor does not spin while an
  // upstream callback that publishes here runs (upstream_spin_us), and that callback's start
  // does not wake it, as the hand-over gains nothing there. Declared by the node's code, like
  // device_tensors: a launch file's QoS for the subscription keeps it.
  bool triggers = true;

  static QoS keep_last(std::size_t depth) { return {depth, Reliability::kBestEffort, {}, 0}; }
  // Only the newest message matters (a controller reading the latest state).
  static QoS keep_latest() { return keep_last(1); }
  static QoS reliable(std::size_t depth, std::chrono::milliseconds max_block) {
    return {depth, Reliability::kReliable, max_block, 0};
  }
  static QoS sensor_data() { return keep_last(5); }
  QoS as_observer() const {
    QoS q = *this;
    q.role = SubscriptionRole::kObserver;
    return q;
  }
  bool observer() const { return role == SubscriptionRole::kObserver; }
  QoS on_host() const {
    QoS q = *this;
    q.host_tensors = true;
    return q;
  }
  QoS taking_device_tensors() const {
    QoS q = *this;
    q.device_tensors = true;
    return q;
  }
  QoS held_input() const {
    QoS q = *this;
    q.triggers = false;
    return q;
  }
  // Whether a device tensor may reach the callback (as it is or as a host copy).
  bool accepts_device_tensors() const { return host_tensors || device_tensors; }

  // "keep_last:10", "keep_latest", "reliable:10" or "reliable:10:250ms"; "observer:" in front
  // for an observer ("observer:keep_last:5"); ",device:cpu" behind for host_tensors
  // ("keep_last:5,device:cpu").
  std::string to_string() const;
};

Expected<QoS> parse_qos(std::string_view text);

}  // namespace edgevla
