// What a crashing edgevla process leaves behind: a backtrace on stderr (which the launcher
// and the tests keep in their logs) and, where the system writes them, a core file. The
// handler prints, restores the default action and re-raises, so the parent still sees the
// process killed by the same signal.
#pragma once

#include <string_view>

namespace edgevla {

// Installs the handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT. `process` names the
// process in the report (a launch group's name, say). No-op under AddressSanitizer and
// ThreadSanitizer, which report crashes themselves.
void install_crash_handler(std::string_view process);

// Raises the soft core-file limit to the hard limit (the kernel's core_pattern decides
// whether and where a core is written).
void enable_core_dumps();

}  // namespace edgevla
