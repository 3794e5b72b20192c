// Devices started ahead of their first block (see BusIo::warm_devices in bus_io.hpp).
#include "runtime/bus/bus_io.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/log.hpp"

namespace edgevla {

void BusIo::warm_devices(const std::vector<RegistryEntry>& entries) {
  for (const auto& e : entries) {
    if (e.bus_id == bus_id_) continue;
    for (const auto& t : e.publishers) {
      if (t.device.empty() || warmed_devices_.contains(t.device) || !bus_.takes(t.topic)) continue;
      warmed_devices_.insert(t.device);
      auto device = parse_device(t.device);
      if (!device || device->is_cpu()) {
        rate_log_.warn("warm:" + t.device, "peer " + e.bus_id + " names device '" + t.device + "' for '" + t.topic +
                                               "', which this process does not know; its tensors arrive when they do");
        continue;
      }
      const std::string why = "'" + t.topic + "' from " + e.bus_id;
      warm_threads_.emplace_back([this, d = *device, why] {
        const std::int64_t start = steady_now_ns();
        Status st;
        if (auto alloc = allocator_for(d); !alloc) {
          st = alloc.status();
        } else {
          st = (*alloc)->warm(d.index);
        }
        if (!st.is_ok()) {
          rate_log_.warn("warm:" + d.to_string(), "could not start " + d.to_string() + " ahead for " + why + ": " +
                                                       st.message() + "; its first block will say why it cannot be read");
          return;
        }
        logger().info("bus: started {} ahead for {} ({:.0f} ms)", d.to_string(), why,
                      static_cast<double>(steady_now_ns() - start) / 1e6);
      });
    }
  }
}

}  // namespace edgevla
