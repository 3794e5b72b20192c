#include "runtime/util/crash.hpp"

#include <execinfo.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EDGEVLA_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EDGEVLA_SANITIZED 1
#endif
#endif

namespace edgevla {
#ifndef EDGEVLA_SANITIZED
namespace {

char g_process[64] = "edgevla";

// Only async-signal-safe calls from here on: write(2), backtrace_symbols_fd, signal, raise.
void write_str(const char* s) { [[maybe_unused]] auto n = ::write(2, s, std::strlen(s)); }

void write_int(long v) {
  char buf[24];
  int i = sizeof buf;
  buf[--i] = '\0';
  const bool neg = v < 0;
  unsigned long u = neg ? static_cast<unsigned long>(-v) : static_cast<unsigned long>(v);
  do {
    buf[--i] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0 && i > 1);
  if (neg && i > 0) buf[--i] = '-';
  write_str(buf + i);
}

void on_crash(int sig) {
  write_str("\nedgevla: process '");
  write_str(g_process);
  write_str("' (pid ");
  write_int(static_cast<long>(::getpid()));
  write_str(", thread ");
  write_int(static_cast<long>(::gettid()));
  write_str(") got signal ");
  write_int(sig);
  write_str(" (");
  write_str(sigabbrev_np(sig) != nullptr ? sigabbrev_np(sig) : "?");
  write_str("); backtrace:\n");
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, 2);
  write_str("edgevla: end of backtrace (addresses resolve with addr2line -Cfe <binary>)\n");
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace
#endif

void install_crash_handler(std::string_view process) {
#ifndef EDGEVLA_SANITIZED
  const std::size_t n = std::min(process.size(), sizeof g_process - 1);
  std::memcpy(g_process, process.data(), n);
  g_process[n] = '\0';
  // backtrace() loads libgcc on first use, which allocates: do it now, not in the handler.
  void* warm[2];
  (void)::backtrace(warm, 2);
  // The handler runs on its own stack, so a stack overflow is reported too.
  static char alt_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
#else
  (void)process;
#endif
}

void enable_core_dumps() {
  rlimit r{};
  if (::getrlimit(RLIMIT_CORE, &r) == 0 && r.rlim_cur != r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_CORE, &r);
  }
}

}  // namespace edgevla
