#include "runtime/bus/subscription_queue.hpp"

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

bool SubscriptionQueue::push(MessagePtr message, bool may_wait) {
  bool dropped = false;
  MessagePtr evicted;  // released outside the lock: dropping it may free a shm block
  {
    std::unique_lock lock(mu_);
    if (closed_) return true;  // detached meanwhile: not a subscriber any more
    counters_.received.add();
    if (queue_.size() >= qos_.depth && qos_.reliability == Reliability::kReliable) {
      if (may_wait) {
        space_.wait_for(lock, qos_.max_block, [&] { return closed_ || queue_.size() < qos_.depth; });
        if (closed_) return true;
      }
      if (queue_.size() >= qos_.depth) {
        counters_.dropped_timeout.add();
        evicted = std::move(queue_.front());
        queue_.pop_front();
        dropped = true;
      }
    } else if (queue_.size() >= qos_.depth) {
      counters_.dropped_overflow.add();
      evicted = std::move(queue_.front());
      queue_.pop_front();
      dropped = true;
    }
    queue_.push_back(std::move(message));
  }
  waker_->notify();
  return !dropped;
}

MessagePtr SubscriptionQueue::pop() {
  MessagePtr m;
  {
    std::lock_guard lock(mu_);
    if (queue_.empty()) return nullptr;
    m = std::move(queue_.front());
    queue_.pop_front();
  }
  if (qos_.reliability == Reliability::kReliable) space_.notify_one();
  return m;
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
  std::deque<MessagePtr> old;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    old.swap(queue_);
  }
  space_.notify_all();
}

}  // namespace edgevla
