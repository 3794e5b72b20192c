#include "runtime/model/row_pass.hpp"

#include <atomic>

namespace edgevla::model {
namespace {

bool cpu_has_avx2() {
#ifdef EDGEVLA_ROW_PASS_SHUFFLE
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

std::atomic<bool>& shuffle_passes() {
  static std::atomic<bool> on{cpu_has_avx2()};
  return on;
}

}  // namespace

bool use_shuffle_passes(bool on) {
  const bool now = on && cpu_has_avx2();
  shuffle_passes().store(now, std::memory_order_relaxed);
  return now;
}

bool shuffle_passes_on() { return shuffle_passes().load(std::memory_order_relaxed); }

}  // namespace edgevla::model
