// The queue between the bus and one subscription. Many producers (publishers in this
// process, the bus's receive thread), one consumer (the subscribing node's executor).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "msgs/message.hpp"
#include "runtime/bus/qos.hpp"
#include "runtime/bus/waker.hpp"
#include "runtime/util/stats.hpp"

namespace edgevla {

// Every message a publisher sent after this subscription began is accounted exactly once:
//   sent = received + rejected + dropped_transport + lost
//   received = taken + dropped_overflow + dropped_timeout + queued now
// (taken: popped by the subscriber; `delivered` counts those its callback ran for).
struct SubscriptionCounters {
  Counter received;           // messages offered to the queue
  Counter dropped_overflow;   // QoS: oldest dropped because the queue was full (best effort)
  Counter dropped_timeout;    // QoS, reliable: the publisher waited max_block and then dropped
  Counter rejected;           // wrong type, failed schema, undecodable, bad shm descriptor
  Counter dropped_transport;  // arrived, but its shared memory could not be held (holder slots
                              // full, recycled before read, segment gone)
  Counter lost;               // gaps in the publisher's sequence numbers: never arrived (the
                              // publisher's pool was full, the socket dropped it)
  Counter taken;              // popped from the queue
  Counter delivered;          // handed to the callback
  Counter device_copies;      // QoS host_tensors: messages whose device tensors were copied to the host
};

class SubscriptionQueue {
 public:
  // `type` empty accepts any message type (recorder, topic echo).
  SubscriptionQueue(std::string topic, std::string type, QoS qos, std::string owner,
                    std::shared_ptr<Waker> waker);

  const std::string& topic() const { return topic_; }
  const std::string& type() const { return type_; }
  const QoS& qos() const { return qos_; }
  const std::string& owner() const { return owner_; }
  // The subscribing executor's waker (null for queues drained by other means).
  const std::shared_ptr<Waker>& waker() const { return waker_; }

  // Offers a message. Best effort never blocks; reliable blocks up to qos.max_block unless
  // `may_wait` is false (a publisher that must never wait), then drops at once like best effort.
  // Returns false when a message (this or an older one) was dropped.
  bool push(MessagePtr message, bool may_wait = true);
  // The oldest queued message, or nullptr.
  MessagePtr pop();
  struct Stamped {
    MessagePtr message;
    std::int64_t arrival_ns = 0;  // wall clock when the bus queued it
  };
  // The oldest queued message with its arrival time (message null when empty).
  Stamped pop_stamped();
  std::size_t size() const;
  // Accepts messages (attach).
  void open();
  // Drops everything queued and refuses further pushes until open() (detach); not counted as
  // drops, and a publisher waiting for room is released at once.
  void close();

  SubscriptionCounters& counters() { return counters_; }
  const SubscriptionCounters& counters() const { return counters_; }

 private:
  std::string topic_;
  std::string type_;
  QoS qos_;
  std::string owner_;
  std::shared_ptr<Waker> waker_;
  mutable std::mutex mu_;
  std::condition_variable space_;
  std::deque<Stamped> queue_;
  std::size_t bytes_ = 0;  // tensor bytes queued (tracked when qos.max_bytes is set)
  bool closed_ = false;
  SubscriptionCounters counters_;
  std::atomic<bool> device_refusal_logged_{false};
};

}  // namespace edgevla
