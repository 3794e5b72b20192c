// Runs edgevla (or any program) as a child process for multi-process tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace edgevla::testing {

// Starts this test binary again (/proc/self/exe, no arguments) with `env` ("K=V") added to its
// environment: a test's child mode, which the binary picks from its environment before gtest runs.
// The child's pid, or -1.
inline pid_t spawn_self(std::vector<std::string> env) {
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe";
  char* argv[] = {exe.data(), nullptr};
  pid_t child = 0;
  if (::posix_spawn(&child, exe.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  return child;
}

class Process {
 public:
  // Starts `args[0]` with `args`, extra environment `env` ("K=V"), stdout/stderr to files.
  Process(std::vector<std::string> args, std::vector<std::string> env, const std::string& log_prefix)
      : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
    pid_ = ::fork();
    if (pid_ == 0) {
      // Unblock what the test runner may have blocked, so SIGINT/SIGTERM behave normally.
      sigset_t all;
      sigfillset(&all);
      ::sigprocmask(SIG_UNBLOCK, &all, nullptr);
      const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }

  // Exit code (128+signal when killed), or -1 if still running after `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    if (exited_) return code_;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  std::string out() const { return slurp(out_path_); }
  std::string err() const { return slurp(err_path_); }

  static std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// Runs to completion and returns {exit code, stdout, stderr}.
struct RunResult {
  int code;
  std::string out;
  std::string err;
};
inline RunResult run(std::vector<std::string> args, std::vector<std::string> env, const std::string& log_prefix,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  Process p(std::move(args), std::move(env), log_prefix);
  const int code = p.wait(timeout);
  return {code, p.out(), p.err()};
}

}  // namespace edgevla::testing
