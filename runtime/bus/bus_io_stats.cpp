// The bus transport's statistics (control command "bus", `edgevla node stats --bus`): its counters,
// the shared-memory pool it publishes from and the mapper it receives through.
#include <yaml-cpp/yaml.h>

#include "runtime/bus/bus_io.hpp"

namespace edgevla {

void BusIo::emit_stats(YAML::Emitter& out) const {
  const auto p = pool_->stats();
  const auto m = mapper_.stats();
  auto kv = [&out](const char* k, std::uint64_t v) { out << YAML::Key << k << YAML::Value << v; };
  out << YAML::Key << "transport" << YAML::Value << YAML::BeginMap;
  kv("received", counters_.received.get());
  kv("decode_errors", counters_.decode_errors.get());
  kv("duplicates", counters_.duplicates.get());
  kv("sent_ipc", counters_.sent_ipc.get());
  kv("sent_tcp", counters_.sent_tcp.get());
  kv("inline_fallback", counters_.inline_fallback.get());
  kv("dropped_pool_full", counters_.dropped_pool_full.get());
  kv("peers_refused", counters_.peers_refused.get());
  kv("sent_ring", counters_.sent_ring.get());
  kv("received_ring", counters_.received_ring.get());
  kv("dropped_ring_full", counters_.dropped_ring_full.get());
  kv("ring_unavailable", counters_.ring_unavailable.get());
  kv("device_to_host", counters_.device_to_host.get());
  if (options_.upstream_spin_ns > 0) {
    kv("upstream_spins_taken", counters_.upstream_spins_taken.get());
    kv("upstream_spins_missed", counters_.upstream_spins_missed.get());
    kv("upstream_dead_cleared", counters_.upstream_dead_cleared.get());
  }
  kv("heap_releases", heap_releases_.load(std::memory_order_relaxed));
  emit_tcp_stats(out);
  if (ring_) {
    const shm::RingCounters rc = ring_->counters();
    kv("ring_popped", rc.popped);
    kv("ring_skipped_stale", rc.skipped);
  }
  out << YAML::EndMap << YAML::Key << "shm_pool" << YAML::Value << YAML::BeginMap;
  kv("segments", p.segments);
  kv("bytes", p.bytes);
  kv("in_use", p.in_use);
  kv("allocations", p.allocations);
  kv("created", p.created);
  kv("recycled", p.recycled);
  kv("transit_expired", p.transit_expired);
  kv("trimmed", p.trimmed);
  kv("dead_holders_cleared", p.dead_holders_cleared);
  kv("exhausted", p.exhausted);
  out << YAML::Key << "slot_refusals" << YAML::Value << YAML::BeginMap;
  for (const auto& [topic, n] : p.slot_refusals) kv(topic.c_str(), n);
  out << YAML::EndMap;
  out << YAML::Key << "observer_reclaims" << YAML::Value << YAML::BeginMap;
  for (const auto& [topic, n] : p.observer_reclaims) kv(topic.c_str(), n);
  out << YAML::EndMap;
  out << YAML::EndMap << YAML::Key << "shm_mapper" << YAML::Value << YAML::BeginMap;
  kv("acquired", m.acquired);
  kv("recycled_before_read", m.recycled_before_read);
  kv("vanished", m.vanished);
  kv("unlinked_dropped", m.unlinked_dropped);
  kv("bad_descriptor", m.bad_descriptor);
  kv("slots_full", m.slots_full);
  kv("observer_holds", m.observer_holds);
  kv("observer_copies", m.observer_copies);
  kv("awaited_producer", m.awaited);
  kv("mapped", m.mapped);
  out << YAML::EndMap;
  if (!tcp_endpoint_.empty()) out << YAML::Key << "tcp_endpoint" << YAML::Value << tcp_endpoint_;
  if (options_.tcp.enabled()) {
    out << YAML::Key << "tcp_security" << YAML::Value << (options_.tcp.insecure ? "insecure" : "curve");
    // Public: what other processes list in allowed_keys or server_key to reach this one.
    if (!options_.tcp.insecure) out << YAML::Key << "tcp_public_key" << YAML::Value << options_.tcp.key.public_key;
  }
}

}  // namespace edgevla
