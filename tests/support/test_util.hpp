// Helpers shared by edgevla tests.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::testing {

// Removes `path` (a file or folder a test made in the temporary directory, outside a scratch
// folder object) when the test program exits normally, so a test run leaves nothing behind.
inline void remove_at_exit(const std::string& path) {
  struct Paths {
    std::mutex mu;
    std::vector<std::string> list;
    ~Paths() {
      for (const std::string& p : list) {
        std::error_code ec;
        std::filesystem::remove_all(p, ec);
      }
    }
  };
  static Paths paths;
  std::lock_guard lock(paths.mu);
  paths.list.push_back(path);
}

// A registry domain no other test (or concurrently running ctest job) uses. Its registry
// folder (the bus's default, runtime/bus/registry.cpp: $XDG_RUNTIME_DIR or /tmp, then
// edgevla-<uid>/<domain>) is removed when the test program exits, with whatever the test's
// buses and child processes left in it.
inline std::string unique_domain(const std::string& tag) {
  static std::atomic<int> counter{0};
  std::string domain = "t" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" + tag;
  const char* own = std::getenv("EDGEVLA_REGISTRY_DIR");
  if (own == nullptr || *own == '\0') {
    const char* run = std::getenv("XDG_RUNTIME_DIR");
    const std::string base = run != nullptr && *run != '\0' ? run : "/tmp";
    remove_at_exit(base + "/edgevla-" + std::to_string(::getuid()) + "/" + domain);
  }
  return domain;
}

// Polls `done` until it returns true or `timeout` passes; returns the final value.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done();
}

// How much longer than in a normal build a test waits for a graph to do its work:
// EDGEVLA_TEST_TIME_SCALE (scripts/sanitize sets it; sanitizer builds run several times
// slower). Counts and contents asserted stay the same; only the time given grows.
inline double time_scale() {
  const char* s = std::getenv("EDGEVLA_TEST_TIME_SCALE");
  const double v = s ? std::atof(s) : 1.0;
  return v >= 1.0 ? v : 1.0;
}

// The source tree and the build's bin/ directory (compiled in; the environment may override).
inline std::string source_dir() {
  const char* d = std::getenv("EDGEVLA_SOURCE_DIR");
  return d ? d : EDGEVLA_TEST_SOURCE_DIR;
}
inline std::string bin_dir() {
  const char* d = std::getenv("EDGEVLA_BIN");
  return d ? d : EDGEVLA_TEST_BIN_DIR;
}

}  // namespace edgevla::testing

#define EXPECT_OK(expr)                                  \
  do {                                                   \
    const ::edgevla::Status edgevla_s_ = (expr);         \
    EXPECT_TRUE(edgevla_s_.is_ok()) << edgevla_s_.to_string(); \
  } while (0)
#define ASSERT_OK(expr)                                  \
  do {                                                   \
    const ::edgevla::Status edgevla_s_ = (expr);         \
    ASSERT_TRUE(edgevla_s_.is_ok()) << edgevla_s_.to_string(); \
  } while (0)
