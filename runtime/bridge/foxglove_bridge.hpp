// The live graph in Foxglove: a WebSocket server speaking the Foxglove WebSocket protocol
// (subprotocol foxglove.websocket.v1), read-only. It observes the domain's topics on the bus
// (an observer: it never slows the graph and loses first) and serves each one as the channels
// a Foxglove recording holds (runtime/bag/foxglove.hpp): T/compressed or T/raw for camera
// frames, T/plot for the numbers, JSON with JSON schemas.
//
// Protocol: on connect, serverInfo and advertise of every channel known; channels of topics
// seen later are
// advertised as they appear. subscribe/unsubscribe take effect at once; a subscribed channel's
// messages go out as binary frames: opcode 0x01, subscription id (u32 LE), publish time in ns
// (u64 LE), the JSON message. Anything else a client sends gets a status message naming it.
// A client that reads slower than the graph publishes loses frames (counted), not memory.
// Read-only unless asked: with `publish_topics`, serverInfo offers the clientPublish
// capability and a client may advertise a channel on one of those topics (encoding json,
// schemaName Prompt or RobotState) and send its messages as binary frames (opcode 0x01,
// channel id u32 LE, the JSON: {"text": "..."} or {"position": [...]}), which go onto the bus
// as edgevla messages from publisher "foxglove_bridge". Nothing else can be published;
// services and params are never offered.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/bag/foxglove.hpp"
#include "runtime/bus/bus.hpp"

namespace edgevla::bridge {

inline constexpr const char* kFoxgloveSubprotocol = "foxglove.websocket.v1";

struct FoxgloveBridgeOptions {
  std::string host = "127.0.0.1";       // 0.0.0.0 serves other machines too
  int port = 8765;                      // Foxglove's default; 0: any free port (see port())
  std::vector<std::string> topics;      // empty: every topic in the domain, as they appear
  bag::FoxgloveOptions foxglove;        // how frames are sent
  std::size_t max_client_queue_bytes = 64 << 20;  // per client; beyond it frames are dropped
  std::chrono::milliseconds discovery_period{500};
  // Topics clients may publish to (Prompt or RobotState messages); empty: read-only.
  std::vector<std::string> publish_topics;
};

struct FoxgloveBridgeStats {
  std::uint64_t clients = 0;          // connected now
  std::uint64_t channels = 0;         // advertised
  std::uint64_t sent = 0;             // message frames sent
  std::uint64_t dropped_slow = 0;     // frames a slow client did not get
  std::uint64_t skipped = 0;          // frames or tensors Foxglove cannot show
  std::uint64_t client_published = 0;  // client messages put on the bus
  std::uint64_t client_rejected = 0;   // client advertisements or messages refused
};

class FoxgloveBridge {
 public:
  // Listens and starts observing; the error names the address when it cannot listen.
  static Expected<std::unique_ptr<FoxgloveBridge>> start(Bus& bus, FoxgloveBridgeOptions options);
  virtual ~FoxgloveBridge() = default;
  // The port listened on (the one chosen when options.port was 0).
  virtual int port() const = 0;
  virtual FoxgloveBridgeStats stats() const = 0;
  // Closes every connection and stops observing. Idempotent.
  virtual void stop() = 0;
};

}  // namespace edgevla::bridge
