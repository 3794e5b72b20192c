// One pause of a spin-wait loop: tells the core a thread is spinning (frees its sibling
// hyper-thread, saves power) without giving up the CPU.
#pragma once

namespace edgevla {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace edgevla
