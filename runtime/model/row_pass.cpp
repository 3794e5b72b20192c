#include "runtime/model/row_pass.hpp"

#include <atomic>

namespace edgevla::model {
namespace {

// AVX2 on x86-64 (asked of the CPU); NEON on aarch64 (always there).
bool cpu_has_shuffle_form() {
#if defined(EDGEVLA_ROW_PASS_SHUFFLE)
  return __builtin_cpu_supports("avx2");
#elif defined(EDGEVLA_ROW_PASS_NEON)
  return true;
#else
  return false;
#endif
}

std::atomic<bool>& shuffle_passes() {
  static std::atomic<bool> on{cpu_has_shuffle_form()};
  return on;
}

}  // namespace

bool use_shuffle_passes(bool on) {
  const bool now = on && cpu_has_shuffle_form();
  shuffle_passes().store(now, std::memory_order_relaxed);
  return now;
}

bool shuffle_passes_on() { return shuffle_passes().load(std::memory_order_relaxed); }

}  // namespace edgevla::model
