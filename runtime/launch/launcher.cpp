#include "runtime/launch/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "runtime/bus/bus.hpp"
#include "runtime/node/host.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla {
namespace {

sigset_t launch_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

// The thread that waits for the launch signals (the one that called block_launch_signals).
std::atomic<pid_t> g_signal_thread{0};

// Runs on a thread that does not block the launch signals (one started before main): sends the
// signal on to the waiting thread, where it is blocked and so stays pending for sigtimedwait.
extern "C" void forward_launch_signal(int sig) {
  const int saved = errno;
  const pid_t tid = g_signal_thread.load(std::memory_order_relaxed);
  if (tid > 0) ::syscall(SYS_tgkill, ::getpid(), tid, sig);
  errno = saved;
}

void write_all(int fd, const std::string& s) {
  if (fd < 0) return;
  [[maybe_unused]] auto n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
}

// A group process's heartbeat to its supervisor: one byte on the ready socket every `period`,
// never blocking (a supervisor that does not read loses beats, not this process's time) and
// never raising SIGPIPE (a supervisor that is gone ends the beats, not the process).
class Heartbeat {
 public:
  Heartbeat(int fd, double timeout_s) : fd_(fd) {
    if (fd_ < 0 || timeout_s <= 0) return;
    const auto period = std::chrono::duration<double>(std::min(0.5, timeout_s / 5));
    thread_ = std::thread([this, period] {
      std::unique_lock lock(mu_);
      while (!stop_) {
        [[maybe_unused]] auto n = ::send(fd_, "h", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        cv_.wait_for(lock, period, [this] { return stop_; });
      }
    });
  }
  ~Heartbeat() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

void block_launch_signals() {
  const sigset_t set = launch_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  g_signal_thread.store(static_cast<pid_t>(::syscall(SYS_gettid)));
  // Without a handler, a process-directed SIGTERM that the kernel gives a thread not blocking
  // it (while the waiting thread is busy, e.g. starting nodes) ends the process at once.
  struct sigaction sa {};
  sa.sa_handler = forward_launch_signal;
  sa.sa_flags = SA_RESTART;
  sigfillset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    // A SIGINT the shell set to be ignored (a background job) stays ignored.
    if (old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

int wait_launch_signal(std::int64_t timeout_ns) {
  const sigset_t set = launch_signals();
  timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  const int sig = ::sigtimedwait(&set, nullptr, &ts);
  return sig < 0 ? 0 : sig;
}

int run_group(const LaunchDescription& launch, const std::string& group_name, double duration_s,
              int ready_fd) {
  const GroupDescription* group = nullptr;
  for (const auto& g : launch.groups) {
    if (g.name == group_name) group = &g;
  }
  auto fail = [&](const Status& s) {
    logger().error("group '{}': {}", group_name, s.message());
    write_all(ready_fd, "error: " + s.message() + "\n");
    if (ready_fd >= 0) ::close(ready_fd);
    return 1;
  };
  if (group == nullptr) return fail(not_found("the launch has no group named '" + group_name + "'"));
  if (ready_fd >= 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the supervisor
    if (::getppid() == 1) return 1;
  }
  BusOptions bo;
  bo.process_name = group->name;
  bo.tcp = group->tcp;
  bo.allowed_gids = group->allowed_gids;
  bo.shm_pool_bytes = static_cast<std::size_t>(group->shm_pool_mb) << 20;
  bo.spin_ns = group->spin_us * 1000;
  const unsigned cores = std::thread::hardware_concurrency();
  const std::int64_t upstream_spin_us = effective_upstream_spin_us(*group, cores);
  if (upstream_spin_us != group->upstream_spin_us) {
    logger().info("group '{}': upstream_spin_us {} is off on this machine of {} core(s) (it needs {} or more: "
                  "spinning executors would take the cores the stages need)",
                  group->name, group->upstream_spin_us, cores, kUpstreamSpinMinCores);
  }
  bo.upstream_spin_ns = upstream_spin_us * 1000;
  auto bus = Bus::create(bo);
  if (!bus) return fail(bus.status());
  int code = 0;
  {
    NodeHostOptions ho;
    ho.process_name = group->name;
    ho.spin_ns = group->spin_us * 1000;
    ho.upstream_spin_ns = upstream_spin_us * 1000;
    NodeHost host(**bus, ho);
    for (NodeOptions n : group->nodes) {
      if (n.upstream_spin_us && *n.upstream_spin_us > 0 && cores < kUpstreamSpinMinCores) {
        logger().info("node '{}': upstream_spin_us {} is off on this machine of {} core(s)", n.name,
                      *n.upstream_spin_us, cores);
        n.upstream_spin_us = 0;
      }
      auto added = host.add(n);
      if (!added) return fail(added.status().with_context(n.origin));
    }
    if (Status s = host.activate_all(); !s.is_ok()) return fail(s);
    logger().info("group '{}': {} node(s) active (pid {})", group->name, group->nodes.size(), ::getpid());
    write_all(ready_fd, "ok\n");
    // The ready socket then carries the heartbeat (and is closed with it).
    Heartbeat heartbeat(ready_fd, group->heartbeat_timeout_s);

    const std::int64_t deadline = duration_s > 0 ? steady_now_ns() + static_cast<std::int64_t>(duration_s * 1e9) : 0;
    for (;;) {
      const std::int64_t left = deadline ? deadline - steady_now_ns() : 1'000'000'000;
      if (left <= 0) break;
      const int sig = wait_launch_signal(std::min<std::int64_t>(left, 1'000'000'000));
      if (sig == SIGINT || sig == SIGTERM) break;
    }
    logger().info("group '{}': shutting down", group->name);
    if (Status s = host.deactivate_all(); !s.is_ok()) code = 1;
    host.shutdown();
  }
  return code;
}

namespace {

struct Spawned {
  pid_t pid = -1;
  int beat_fd = -1;  // the ready socket, then the heartbeat (non-blocking)
};

struct Child {
  const GroupDescription* group = nullptr;
  pid_t pid = -1;
  int beat_fd = -1;
  std::int64_t last_beat_ns = 0;
  bool hung = false;              // killed by the supervisor for want of a heartbeat
  int respawns = 0;
  bool done = false;              // exited for good
  std::int64_t restart_at_ns = 0; // pending respawn

  void started(const Spawned& s) {
    pid = s.pid;
    beat_fd = s.beat_fd;
    last_beat_ns = steady_now_ns();
    hung = false;
  }
  void close_beats() {
    if (beat_fd >= 0) ::close(beat_fd);
    beat_fd = -1;
  }
  // Reads the beats that came; kills the process when none came for the group's timeout.
  void check_heartbeat(std::int64_t now) {
    if (pid <= 0 || beat_fd < 0 || group->heartbeat_timeout_s <= 0 || hung) return;
    char buf[256];
    for (;;) {
      const ssize_t n = ::recv(beat_fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        last_beat_ns = now;
        continue;
      }
      if (n == 0) close_beats();  // the process closed it: it is exiting (waitpid tells how)
      break;
    }
    if (beat_fd < 0) return;
    const double silent_s = static_cast<double>(now - last_beat_ns) * 1e-9;
    if (silent_s < group->heartbeat_timeout_s) return;
    logger().error("group '{}' (pid {}) sent no heartbeat for {:.1f} s (heartbeat_timeout_s {}): stopped (SIGSTOP), "
                   "frozen or starved; killing it", group->name, pid, silent_s, group->heartbeat_timeout_s);
    hung = true;
    ::kill(pid, SIGKILL);
  }
};

// Starts one group's process and waits for it to report ready. Returns the pid and the
// heartbeat socket, or the error.
Expected<Spawned> spawn_group(const GroupDescription& g, const LaunchRunOptions& o) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return unavailable(std::string("socketpair: ") + std::strerror(errno));
  }
  std::vector<std::string> args = {"edgevla", "__group", o.launch_file, "--group", g.name, "--ready-fd", "3"};
  for (const auto& s : o.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  const pid_t pid = ::fork();
  if (pid < 0) return unavailable(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Own process group: a terminal's Ctrl-C reaches only the supervisor, which then stops
    // the groups one by one in reverse start order.
    ::setpgid(0, 0);
    ::dup2(fds[1], 3);  // dup2 clears O_CLOEXEC on the new descriptor
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(o.self_exe.c_str(), argv.data());
    _exit(127);
  }
  ::close(fds[1]);
  std::string reply;
  pollfd p{fds[0], POLLIN, 0};
  const std::int64_t deadline = steady_now_ns() + 600'000'000'000;  // heavy loads can be slow
  while (steady_now_ns() < deadline) {
    const int sig = wait_launch_signal(0);
    if (sig == SIGINT || sig == SIGTERM) {  // asked to stop while starting
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
      ::close(fds[0]);
      return unavailable("interrupted while starting group '" + g.name + "'");
    }
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
    if (reply.find('\n') != std::string::npos) break;
  }
  if (reply.starts_with("ok")) {
    ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    return Spawned{pid, fds[0]};
  }
  ::close(fds[0]);
  if (reply.empty() && steady_now_ns() >= deadline) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return timeout_error("group '" + g.name + "' did not report its nodes active within 600 s; stopped it");
  }
  ::kill(pid, SIGKILL);  // it reported an error or closed the pipe: make sure it is gone
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (reply.starts_with("error: ")) {
    return failed_precondition("group '" + g.name + "' failed to start: " + reply.substr(7, reply.find('\n') - 7));
  }
  return failed_precondition("group '" + g.name + "' exited before reporting ready");
}

void stop_children(std::vector<Child>& children) {
  for (auto it = children.rbegin(); it != children.rend(); ++it) {
    it->close_beats();
    if (it->pid <= 0) continue;
    ::kill(it->pid, SIGTERM);
    const std::int64_t deadline = steady_now_ns() + 10'000'000'000;
    int status = 0;
    while (::waitpid(it->pid, &status, WNOHANG) == 0) {
      if (steady_now_ns() > deadline) {
        logger().warn("group '{}' did not stop within 10 s; killing it", it->group->name);
        ::kill(it->pid, SIGKILL);
        ::waitpid(it->pid, &status, 0);
        break;
      }
      ::usleep(5000);
    }
    it->pid = -1;
  }
}

}  // namespace

std::vector<const GroupDescription*> start_order(const LaunchDescription& launch) {
  std::vector<const GroupDescription*> order;
  for (const auto& g : launch.groups) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const GroupDescription* a, const GroupDescription* b) {
    const bool ra = a->name == "record", rb = b->name == "record";
    if (ra != rb) return ra;
    return a->load_bytes > b->load_bytes;
  });
  return order;
}

int run_launch(const LaunchDescription& launch, const LaunchRunOptions& o) {
  if (launch.groups.size() == 1) return run_group(launch, launch.groups[0].name, o.duration_s, -1);

  const std::vector<const GroupDescription*> order = start_order(launch);
  std::vector<Child> children;
  for (const GroupDescription* gp : order) {
    const GroupDescription& g = *gp;
    auto spawned = spawn_group(g, o);
    if (!spawned) {
      logger().error("{}", spawned.status().message());
      stop_children(children);
      return 1;
    }
    children.push_back({.group = &g});
    children.back().started(*spawned);
    logger().info("group '{}' started (pid {})", g.name, spawned->pid);
  }
  const std::int64_t deadline = o.duration_s > 0 ? steady_now_ns() + static_cast<std::int64_t>(o.duration_s * 1e9) : 0;
  bool stop = false;
  int code = 0;
  while (!stop) {
    if (deadline && steady_now_ns() >= deadline) break;
    const int sig = wait_launch_signal(100'000'000);
    if (sig == SIGINT || sig == SIGTERM) break;
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (auto& c : children) {
        if (c.pid != pid) continue;
        c.pid = -1;
        c.close_beats();
        const std::string how = c.hung ? "was killed for want of a heartbeat"
                                : WIFEXITED(status) ? "exited with code " + std::to_string(WEXITSTATUS(status))
                                                    : "was killed by signal " + std::to_string(WTERMSIG(status));
        if (c.group->respawn && c.respawns < c.group->max_respawns) {
          logger().warn("group '{}' {}; restarting in {} s (restart {} of {})", c.group->name, how,
                        c.group->respawn_delay_s, c.respawns + 1, c.group->max_respawns);
          c.restart_at_ns = steady_now_ns() + static_cast<std::int64_t>(c.group->respawn_delay_s * 1e9);
        } else {
          std::string why = c.group->respawn ? "; it used all " + std::to_string(c.group->max_respawns) +
                                                   " restart(s) (max_respawns), giving up on it"
                                             : " (respawn is off)";
          if (c.group->name == "record") {
            why += ": the recording stops here (what it wrote is kept; `edgevla bag info` tells whether it "
                   "was cut short and `edgevla bag recover` rewrites it)";
          }
          why += c.group->required ? "; stopping the launch (the group is required)"
                                   : "; the launch goes on without it and will exit 1";
          logger().error("group '{}' {}{}", c.group->name, how, why);
          c.done = true;
          code = 1;
          if (c.group->required) stop = true;
        }
      }
    }
    const std::int64_t now = steady_now_ns();
    for (auto& c : children) c.check_heartbeat(now);
    for (auto& c : children) {
      if (c.restart_at_ns == 0 || steady_now_ns() < c.restart_at_ns) continue;
      c.restart_at_ns = 0;
      ++c.respawns;
      auto spawned = spawn_group(*c.group, o);
      if (spawned) {
        c.started(*spawned);
        logger().info("group '{}' restarted (pid {}, restart {})", c.group->name, spawned->pid, c.respawns);
      } else {
        logger().error("{}", spawned.status().message());
        c.restart_at_ns = steady_now_ns() + static_cast<std::int64_t>(c.group->respawn_delay_s * 1e9);
      }
    }
    bool any = false;
    for (const auto& c : children) any = any || !c.done;
    if (!any) break;
  }
  logger().info("stopping {} group(s)", children.size());
  stop_children(children);
  return code;
}

}  // namespace edgevla
