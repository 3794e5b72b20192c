// Readiness of shared blocks across processes: a producer may publish a block before the device
// work that writes it is done (it arms the block, runtime/core/buffer.hpp: RemoteReady), and a
// reader in another process then waits until the producer says the bytes are written. The word
// they meet on is the segment header's `ready_generation` (a futex word in shared memory), so it
// works wherever shared memory does — discrete GPUs and Jetson alike, no device IPC handles.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/core/buffer.hpp"
#include "runtime/shm/segment.hpp"

namespace edgevla::shm {

// Marks generation `generation` of the block written (ok) or failed, and wakes its waiters.
// Lock-free and without allocation: callable from a device runtime's callback thread.
void mark_ready(SegmentHeader& header, std::uint32_t generation, bool ok);
// Whether the block's generation `generation` is marked written.
bool is_ready(const SegmentHeader& header, std::uint32_t generation);

// How long a reader spins on the word before it sleeps on the futex (a process-wide setting;
// nodes that spin for upstream work raise it to their upstream_spin_us), and how long it waits in
// all before it gives up on a producer that is alive but never signals.
void raise_ready_spin_ns(std::int64_t ns);
std::int64_t ready_spin_ns();
void set_ready_timeout_ns(std::int64_t ns);
std::int64_t ready_timeout_ns();

// The reader's side: the wait for generation `generation` of `segment`, as a ReadyFence on the
// buffer the mapper hands out (host readers wait(); a device stream's wait_on() waits on the
// host: the producer's work finished on the device before it signalled). Errors name the block,
// and say whether its producer died or its work failed.
class BlockReadyFence final : public ReadyFence {
 public:
  BlockReadyFence(std::shared_ptr<Segment> segment, std::uint32_t generation)
      : segment_(std::move(segment)), generation_(generation) {}
  Device device() const override { return segment_->device(); }
  Status wait() override;
  Status wait_on(void* stream) override;
  bool done() override;
  // How long the last wait() took, in ns (0 when the bytes were ready).
  std::int64_t waited_ns() const { return waited_ns_; }

 private:
  std::shared_ptr<Segment> segment_;
  std::uint32_t generation_;
  std::int64_t waited_ns_ = 0;
};

}  // namespace edgevla::shm
