// Running a launch: one process per group. A single-group launch runs in the calling
// process; with several groups the caller becomes a supervisor that starts each group's
// process in order (waiting for it to report its nodes active), restarts groups marked
// respawn, and on SIGINT/SIGTERM stops them in reverse order.
#pragma once

#include <string>
#include <vector>

#include "runtime/launch/launch_file.hpp"

namespace edgevla {

struct LaunchRunOptions {
  std::string launch_file;         // passed to child processes
  std::vector<std::string> sets;   // passed to child processes
  double duration_s = 0;           // stop after this long (0: run until a signal)
  std::string self_exe = "/proc/self/exe";
};

// Blocks SIGINT, SIGTERM and SIGCHLD in the calling thread (and the threads it starts later),
// so the launcher can wait for them synchronously. Call first thing in main(). Threads that
// libraries started before main (a BLAS thread pool, one per core) do not block them: a signal
// the kernel gives one of those is handed on to the calling thread instead of ending the process.
void block_launch_signals();

// Waits up to `timeout_ns` for SIGINT, SIGTERM or SIGCHLD (blocked by block_launch_signals in
// the calling thread); returns the signal, or 0 on timeout.
int wait_launch_signal(std::int64_t timeout_ns);

// Runs the whole launch; returns the process exit code (0 on a clean, signalled shutdown).
// The order run_launch starts groups in: the recorder first (so it sees everything), then the
// heaviest declared load first (each ready before the next), so a graph that does not fit in
// memory fails at its largest load before the light stages run; file order otherwise.
std::vector<const GroupDescription*> start_order(const LaunchDescription& launch);

int run_launch(const LaunchDescription& launch, const LaunchRunOptions& options);

// Runs one group in this process. `ready_fd` >= 0: write "ok\n" there once every node is
// active, or "error: ...\n" if start-up failed.
int run_group(const LaunchDescription& launch, const std::string& group, double duration_s,
              int ready_fd);

}  // namespace edgevla
