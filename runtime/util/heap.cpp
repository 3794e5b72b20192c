#include "runtime/util/heap.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace edgevla {
namespace {

// A "Name:   123 kB" field of /proc/self/status in bytes; -1 when absent.
std::int64_t status_field_bytes(const std::string& name) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ':') {
      return std::stoll(line.substr(name.size() + 1)) * 1024;  // in kB
    }
  }
  return -1;
}

}  // namespace

void configure_process_heap() {
#if defined(__GLIBC__)
  for (const char* user : {"MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    if (std::getenv(user) != nullptr) return;
  }
  ::mallopt(M_MMAP_THRESHOLD, kHeapMapThresholdBytes);  // fixed: no raising after frees
  ::mallopt(M_TRIM_THRESHOLD, kHeapTrimThresholdBytes);
  ::mallopt(M_ARENA_MAX, 2);
#endif
}

void release_free_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

std::int64_t process_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::int64_t pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return pages_rss * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

std::int64_t process_peak_rss_bytes() { return status_field_bytes("VmHWM"); }

std::int64_t private_resident_bytes() { return status_field_bytes("RssAnon"); }

}  // namespace edgevla
