#include "runtime/util/heap.hpp"

#include <cstdio>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace edgevla {

void release_free_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

std::int64_t private_resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "RssAnon:", 8) == 0 && std::sscanf(line + 8, "%lld", &kb) == 1) break;
  }
  std::fclose(f);
  return kb < 0 ? 0 : static_cast<std::int64_t>(kb) * 1024;
}

}  // namespace edgevla
