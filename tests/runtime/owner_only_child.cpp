// A bus of another uid for owner_only_test: started as root, it drops to the given uid and
// gid, publishes a small RobotState (inline, no shared memory) every 20 ms and keeps its bus
// statistics in a file, until SIGTERM or the time limit.
//   owner_only_child <uid> <gid> <registry dir> <topic> <stats file> <seconds> [allowed gid...]
#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "msgs/types.hpp"
#include "runtime/bus/bus.hpp"

namespace {

void write_stats(const edgevla::Bus& bus, const std::string& path) {
  {
    std::ofstream f(path + ".tmp", std::ios::trunc);
    f << bus.stats_yaml();
  }
  std::rename((path + ".tmp").c_str(), path.c_str());  // readers never see half a file
}

}  // namespace

int main(int argc, char** argv) {
  using namespace edgevla;
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: %s uid gid registry_dir topic stats_file seconds [allowed_gid...]\n",
                 argv[0]);
    return 2;
  }
  const auto uid = static_cast<uid_t>(std::strtoul(argv[1], nullptr, 10));
  const auto gid = static_cast<gid_t>(std::strtoul(argv[2], nullptr, 10));
  if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0 ||
      ::geteuid() != uid) {
    std::perror("dropping to the child's uid");
    return 3;
  }
  // Blocked before the bus starts its threads, so SIGTERM is taken only by sigtimedwait below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  BusOptions o;
  o.registry_dir = argv[3];
  o.process_name = "owner_only_child";
  for (int i = 7; i < argc; ++i)
    o.allowed_gids.push_back(static_cast<std::uint32_t>(std::strtoul(argv[i], nullptr, 10)));
  auto bus = Bus::create(o);
  if (!bus) {
    std::fprintf(stderr, "bus: %s\n", bus.status().to_string().c_str());
    return 4;
  }
  auto writer = (*bus)->advertise(argv[4], "RobotState", "child");
  if (!writer) {
    std::fprintf(stderr, "advertise: %s\n", writer.status().to_string().c_str());
    return 5;
  }
  const std::string stats = argv[5];
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(argv[6]));
  for (int tick = 0; std::chrono::steady_clock::now() < until; ++tick) {
    auto position = Tensor::empty(DType::kF32, Shape{3});
    if (!position) return 6;
    for (int j = 0; j < 3; ++j) position->data<float>()[j] = static_cast<float>(tick + j);
    auto m = msgs::RobotState::make(std::move(*position));
    if (!m) return 6;
    if (Status s = (*bus)->publish(**writer, std::move(*m)); !s.is_ok()) {
      std::fprintf(stderr, "publish: %s\n", s.to_string().c_str());
    }
    if (tick % 5 == 0) write_stats(**bus, stats);
    const timespec period{0, 20'000'000};
    if (::sigtimedwait(&stop, nullptr, &period) > 0) break;
  }
  write_stats(**bus, stats);
  return 0;
}
