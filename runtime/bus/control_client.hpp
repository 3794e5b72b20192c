// Client side of a bus's control endpoint (used by the CLI and tests).
#pragma once

#include <chrono>
#include <string>

#include "runtime/core/status.hpp"

namespace edgevla {

// Sends one request and waits for the YAML reply; unavailable when the process does not
// answer within `timeout`.
Expected<std::string> control_request(const std::string& endpoint, const std::string& command,
                                      const std::string& argument,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(3));

}  // namespace edgevla
