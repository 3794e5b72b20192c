// Handing file descriptors from one process to another of the same user: the way a process
// lets others map memory that has no name in /dev/shm (device memory exported as a file
// descriptor, memfd). The owner runs an FdServer on an abstract unix socket (no file is left
// behind, whatever happens to the process); a peer connects, names what it wants, and gets the
// descriptor back through SCM_RIGHTS. Only peers the owner's policy admits (by default the
// same uid, read from the kernel's SO_PEERCRED) get anything.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "runtime/core/status.hpp"

namespace edgevla::shm {

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct FdPeer {
  std::uint32_t uid = 0, gid = 0, pid = 0;
};

class FdServer {
 public:
  // What a request names -> a descriptor for the reply, which the server owns and closes once
  // sent (make it with duplicate_fd while whatever guards the original is held, so the owner
  // may close its own at any time), or an error sent back as text.
  using Lookup = std::function<Expected<UniqueFd>(std::string_view key, const FdPeer& peer)>;
  // Whether a peer may ask at all (default: the same uid as this process).
  using Admit = std::function<bool(const FdPeer& peer)>;

  // Listens on the abstract socket `name` (no leading NUL; at most 100 bytes) on its own thread.
  static Expected<std::unique_ptr<FdServer>> start(std::string name, Lookup lookup, Admit admit = {});
  ~FdServer();
  FdServer(const FdServer&) = delete;
  FdServer& operator=(const FdServer&) = delete;

  const std::string& name() const { return name_; }
  std::uint64_t served() const { return served_.load(); }
  std::uint64_t refused() const { return refused_.load(); }  // peers not admitted, unknown keys

 private:
  FdServer() = default;
  void serve();
  void answer(int conn);

  std::string name_;
  Lookup lookup_;
  Admit admit_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd that wakes the thread to stop
  std::thread thread_;
  std::atomic<std::uint64_t> served_{0}, refused_{0};
};

// A close-on-exec duplicate of `fd` (for FdServer::Lookup).
Expected<UniqueFd> duplicate_fd(int fd);

// Asks the FdServer listening on `name` for the descriptor named `key`. Errors: nobody listens
// (the owner is gone), the owner refused (its reason), no answer within `timeout`.
Expected<UniqueFd> request_fd(const std::string& name, std::string_view key,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));

}  // namespace edgevla::shm
