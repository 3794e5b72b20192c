// `edgevla bridge foxglove`: the live graph in Foxglove (runtime/bridge/foxglove_bridge.hpp).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "runtime/bridge/foxglove_bridge.hpp"
#include "runtime/cli/cli.hpp"
#include "runtime/util/clock.hpp"

namespace edgevla::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

}  // namespace

int bridge_foxglove(const BridgeFoxgloveOptions& o) {
  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
  bridge::FoxgloveBridgeOptions bo;
  bo.host = o.host;
  bo.port = o.port;
  bo.topics = o.topics;
  bo.publish_topics = o.publish_topics;
  auto images = bag::parse_foxglove_images(o.images);
  if (!images) {
    std::fprintf(stderr, "%s\n", images.status().message().c_str());
    return 1;
  }
  bo.foxglove.images = *images;
  bo.foxglove.jpeg_quality = o.jpeg_quality;
  BusOptions busopts;
  busopts.process_name = "bridge foxglove";
  auto bus = Bus::create(busopts);
  if (!bus) {
    std::fprintf(stderr, "%s\n", bus.status().message().c_str());
    return 1;
  }
  auto b = bridge::FoxgloveBridge::start(**bus, bo);
  if (!b) {
    std::fprintf(stderr, "%s\n", b.status().message().c_str());
    return 1;
  }
  // One line on stdout with the address (scripts read the port from it when --port 0).
  std::printf("foxglove bridge: ws://%s:%d (domain %s, %s); Ctrl-C stops\n", o.host.c_str(), (*b)->port(),
              (*bus)->options().domain.c_str(), o.topics.empty() ? "every topic" : "the topics given");
  std::fflush(stdout);
  const std::int64_t until = o.duration_s > 0 ? steady_now_ns() + static_cast<std::int64_t>(o.duration_s * 1e9) : 0;
  while (!g_stop.load() && (until == 0 || steady_now_ns() < until)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  (*b)->stop();
  const auto st = (*b)->stats();
  std::fprintf(stderr, "foxglove bridge: sent %llu message(s) on %llu channel(s); %llu dropped for slow clients, "
               "%llu frame(s)/tensor(s) Foxglove cannot show skipped\n",
               static_cast<unsigned long long>(st.sent), static_cast<unsigned long long>(st.channels),
               static_cast<unsigned long long>(st.dropped_slow), static_cast<unsigned long long>(st.skipped));
  return 0;
}

}  // namespace edgevla::cli
