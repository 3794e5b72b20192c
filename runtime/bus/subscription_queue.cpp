#include "runtime/bus/subscription_queue.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "runtime/util/clock.hpp"

namespace edgevla {

SubscriptionQueue::SubscriptionQueue(std::string topic, std::string type, QoS qos,
                                     std::string owner, std::shared_ptr<Waker> waker)
    : topic_(std::move(topic)),
      type_(std::move(type)),
      qos_(qos),
      owner_(std::move(owner)),
      waker_(std::move(waker)) {
  if (qos_.depth == 0) qos_.depth = 1;
}

namespace {

std::size_t tensor_bytes(const Message& m) {
  std::size_t n = 0;
  for (const auto& t : m.tensors()) n += t.tensor.nbytes();
  return n;
}

}  // namespace

bool SubscriptionQueue::push(MessagePtr message, bool may_wait) {
  const std::int64_t arrival = wall_now_ns();
  const std::size_t bytes = qos_.max_bytes ? tensor_bytes(*message) : 0;
  bool dropped = false;
  std::deque<Stamped> evicted;  // released outside the lock: dropping may free a shm block
  {
    std::unique_lock lock(mu_);
    if (closed_) return true;  // detached meanwhile: not a subscriber any more
    counters_.received.add();
    const auto evict_oldest = [&](Counter& counter) {
      counter.add();
      if (qos_.max_bytes) bytes_ -= tensor_bytes(*queue_.front().message);
      evicted.push_back(std::move(queue_.front()));
      queue_.pop_front();
      dropped = true;
    };
    if (queue_.size() >= qos_.depth && qos_.reliability == Reliability::kReliable) {
      if (may_wait) {
        space_.wait_for(lock, qos_.max_block, [&] { return closed_ || queue_.size() < qos_.depth; });
        if (closed_) return true;
      }
      if (queue_.size() >= qos_.depth) evict_oldest(counters_.dropped_timeout);
    } else if (queue_.size() >= qos_.depth) {
      evict_oldest(counters_.dropped_overflow);
    }
    while (qos_.max_bytes && !queue_.empty() && bytes_ + bytes > qos_.max_bytes) {
      evict_oldest(counters_.dropped_overflow);
    }
    queue_.push_back({std::move(message), arrival});
    bytes_ += bytes;
  }
  waker_->notify();
  return !dropped;
}

MessagePtr SubscriptionQueue::pop() { return pop_stamped().message; }

namespace {

std::string first_device(const Message& m) {
  for (const auto& t : m.tensors()) {
    if (!t.tensor.device().is_cpu()) return t.tensor.device().to_string();
  }
  return "cpu";
}

}  // namespace

SubscriptionQueue::Stamped SubscriptionQueue::pop_stamped() {
  for (;;) {
    Stamped s;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return s;
      s = std::move(queue_.front());
      queue_.pop_front();
      counters_.taken.add();
      if (qos_.max_bytes) bytes_ -= tensor_bytes(*s.message);
    }
    if (qos_.reliability == Reliability::kReliable) space_.notify_one();
    const auto& tensors = s.message->tensors();
    if (qos_.device_tensors ||
        std::all_of(tensors.begin(), tensors.end(), [](const auto& t) { return t.tensor.device().is_cpu(); })) {
      return s;
    }
    // Device tensors that came from another process (device blocks of its pool, mapped here)
    // are copied to the host for a subscription that asked for neither: the publisher there
    // could not know this subscriber. In one process such a subscription is refused earlier.
    const bool from_other_process = std::all_of(tensors.begin(), tensors.end(), [](const auto& t) {
      return t.tensor.device().is_cpu() || (t.tensor.buffer() && t.tensor.buffer()->shm().has_value());
    });
    if (!qos_.host_tensors && !from_other_process) {
      // Never hand a device pointer to a callback that did not ask for one (a publisher that
      // did not declare its device, Bus::publishes_on, gets here): rejected, counted, said once.
      counters_.rejected.add();
      if (!device_refusal_logged_.exchange(true)) {
        spdlog::error("node '{}' got a message on '{}' with tensors on {} and dropped it: the subscription takes "
                      "neither device tensors nor host copies; give it the QoS '{}' in the launch file",
                      owner_, topic_, first_device(*s.message), qos_.on_host().to_string());
      }
      continue;
    }
    // Host copies of device tensors, here on the subscriber's side (the publisher never waits).
    auto copy = std::make_shared<Message>(*s.message);
    copy->clear_tensors();
    bool ok = true;
    for (const auto& t : tensors) {
      auto host = t.tensor.to(Device::cpu());
      if (!host) {
        ok = false;
        counters_.rejected.add();  // no host copy (no backend for its device): counted as unusable
        break;
      }
      copy->set_tensor(t.name, std::move(*host));
    }
    if (!ok) continue;
    counters_.device_copies.add();
    s.message = std::move(copy);
    return s;
  }
}

std::size_t SubscriptionQueue::size() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void SubscriptionQueue::open() {
  std::lock_guard lock(mu_);
  closed_ = false;
}

void SubscriptionQueue::close() {
  std::deque<Stamped> old;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    old.swap(queue_);
    bytes_ = 0;
  }
  space_.notify_all();
}

}  // namespace edgevla
