// Names the calling thread as `top -H`, `perf`, gdb and /proc/<pid>/task/*/comm show it, so a
// busy or spinning thread can be told apart from the others of a graph's process (an executor
// is "x:<node>", a thread pool's worker "pool", the bus's threads "bus-io" / "bus-ring").
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>
#include <thread>

namespace edgevla {

// Linux keeps 15 bytes of a thread's name: a longer one is cut there.
inline void name_thread(pthread_t thread, std::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(thread, cut.c_str());
}

inline void name_this_thread(std::string_view name) { name_thread(pthread_self(), name); }

// Named by its creator: the name is there when the call returns.
inline void name_thread(std::thread& thread, std::string_view name) { name_thread(thread.native_handle(), name); }

}  // namespace edgevla
