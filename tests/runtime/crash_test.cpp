// A crashing edgevla process leaves a backtrace in its log and still dies of its signal, so the
// launcher reports "killed by signal 11" and the log says where.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/util/crash.hpp"

namespace edgevla {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

[[gnu::noinline]] void crash_here(volatile int* p) { *p = 1; }

TEST(CrashHandler, PrintsABacktraceAndDiesOfTheSameSignal) {
  const std::string log = ::testing::TempDir() + "/crash_" + std::to_string(::getpid()) + ".log";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    if (f == nullptr) _exit(3);
    install_crash_handler("group test");
    enable_core_dumps();
    crash_here(nullptr);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(log);
  if (kSanitized) {
    // The sanitizer reports the crash itself and exits non-zero.
    EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text.str();
    return;
  }
  ASSERT_TRUE(WIFSIGNALED(status)) << text.str();
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_NE(text.str().find("process 'group test'"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("got signal 11 (SEGV)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("crash_test"), std::string::npos) << "no frame of the crashing binary:\n" << text.str();
  EXPECT_NE(text.str().find("end of backtrace"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace edgevla
