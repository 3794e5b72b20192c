#include "runtime/shm/fd_channel.hpp"

#include <fcntl.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace edgevla::shm {
namespace {

constexpr std::size_t kMaxKey = 512;
constexpr std::size_t kMaxName = sizeof(sockaddr_un::sun_path) - 1;

std::string errno_text() { return std::strerror(errno); }

// The abstract address of `name`: a NUL, then the name (not NUL-terminated).
socklen_t abstract_address(const std::string& name, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// Reply: one status byte ('+' with the descriptor attached, '-' followed by the reason).
Status send_reply(int conn, bool ok, std::string_view text, int fd) {
  std::string body(1, ok ? '+' : '-');
  body.append(text);
  iovec iov{body.data(), body.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (ok) {
    std::memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  if (::sendmsg(conn, &msg, MSG_NOSIGNAL) < 0) return unavailable("fd reply: " + errno_text());
  return Status::ok();
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Expected<std::unique_ptr<FdServer>> FdServer::start(std::string name, Lookup lookup, Admit admit) {
  if (name.empty() || name.size() > kMaxName - 1) {
    return invalid_argument("fd channel name '" + name + "' must have 1.." + std::to_string(kMaxName - 1) + " bytes");
  }
  auto s = std::unique_ptr<FdServer>(new FdServer());
  s->name_ = std::move(name);
  s->lookup_ = std::move(lookup);
  const uid_t own = ::geteuid();
  s->admit_ = admit ? std::move(admit) : Admit([own](const FdPeer& p) { return p.uid == own; });
  s->listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return unavailable("fd channel socket: " + errno_text());
  sockaddr_un addr;
  const socklen_t len = abstract_address(s->name_, addr);
  if (::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return unavailable("fd channel '" + s->name_ + "' cannot listen: " + errno_text() +
                       (errno == EADDRINUSE ? " (another process already serves this name)" : ""));
  }
  if (::listen(s->listen_fd_, 64) != 0) return unavailable("fd channel listen: " + errno_text());
  s->stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->stop_fd_ < 0) return unavailable("fd channel eventfd: " + errno_text());
  s->thread_ = std::thread([raw = s.get()] { raw->serve(); });
  return s;
}

FdServer::~FdServer() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void FdServer::serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    answer(conn);
    ::close(conn);
  }
}

void FdServer::answer(int conn) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    refused_.fetch_add(1);
    return;
  }
  const FdPeer peer{static_cast<std::uint32_t>(cred.uid), static_cast<std::uint32_t>(cred.gid),
                    static_cast<std::uint32_t>(cred.pid)};
  // A request is one packet, read before any answer (closing on an unread packet would reset
  // the connection and lose the answer); a peer that says nothing within a second is dropped.
  pollfd p{conn, POLLIN, 0};
  if (::poll(&p, 1, 1000) <= 0) {
    refused_.fetch_add(1);
    return;
  }
  char key[kMaxKey];
  const ssize_t n = ::recv(conn, key, sizeof(key), 0);
  if (n <= 0) {
    refused_.fetch_add(1);
    return;
  }
  if (!admit_(peer)) {
    refused_.fetch_add(1);
    [[maybe_unused]] Status s = send_reply(conn, false, "not admitted: uid " + std::to_string(peer.uid), -1);
    return;
  }
  auto fd = lookup_(std::string_view(key, static_cast<std::size_t>(n)), peer);
  if (!fd) {
    refused_.fetch_add(1);
    [[maybe_unused]] Status s = send_reply(conn, false, fd.status().message(), -1);
    return;
  }
  served_.fetch_add(1);  // counted before the answer leaves, so a requester sees it counted
  if (!send_reply(conn, true, "", fd->get()).is_ok()) served_.fetch_sub(1);
}

Expected<UniqueFd> duplicate_fd(int fd) {
  UniqueFd dup(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!dup) return unavailable("cannot duplicate descriptor " + std::to_string(fd) + ": " + errno_text());
  return dup;
}

Expected<UniqueFd> request_fd(const std::string& name, std::string_view key, std::chrono::milliseconds timeout) {
  if (key.empty() || key.size() > kMaxKey) return invalid_argument("fd request key must have 1.." + std::to_string(kMaxKey) + " bytes");
  if (name.empty() || name.size() > kMaxName - 1) return invalid_argument("fd channel name '" + name + "' is not valid");
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return unavailable("fd request socket: " + errno_text());
  sockaddr_un addr;
  const socklen_t len = abstract_address(name, addr);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return unavailable("nobody serves descriptors at '" + name + "' (" + errno_text() +
                       "): the process that owns the memory has exited");
  }
  if (::send(sock.get(), key.data(), key.size(), MSG_NOSIGNAL) < 0) {
    return unavailable("fd request to '" + name + "': " + errno_text());
  }
  pollfd p{sock.get(), POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (ready <= 0) return unavailable("no answer from '" + name + "' within " + std::to_string(timeout.count()) + " ms");
  char body[1024];
  iovec iov{body, sizeof(body)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(sock.get(), &msg, MSG_CMSG_CLOEXEC);
  if (n <= 0) return unavailable("'" + name + "' closed without answering (the owner refused the connection)");
  UniqueFd got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
      got = UniqueFd(fd);
    }
  }
  if (body[0] != '+') {
    return failed_precondition("'" + name + "' refused '" + std::string(key) + "': " +
                               std::string(body + 1, static_cast<std::size_t>(n - 1)));
  }
  if (!got) return internal_error("'" + name + "' answered without a descriptor");
  return got;
}

}  // namespace edgevla::shm
