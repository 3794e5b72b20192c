// This process's memory: what it has resident, and giving freed heap memory back to the system. The C library keeps what a burst allocated
// (messages queued while a stage restarts, the buffers of a bag part being closed) in its
// free lists, so a long-running process's resident memory stays at its highest mark. On a
// Jetson the CPU and the GPU share that memory. Called after such bursts, not on a hot path.
#pragma once

#include <cstdint>

namespace edgevla {

// Returns the heap's free pages to the system (glibc: malloc_trim; elsewhere nothing). Takes
// the allocator's locks for its walk over the free lists: well under a millisecond for the
// heaps of edgevla's processes.
void release_free_heap();

// Sets the C library's allocator up for a process that runs for hours (launch groups, the
// recorder):
// - buffers of kHeapMapThresholdBytes and more are mapped on their own and unmapped when freed
//   (glibc otherwise raises that threshold, up to 32 MiB, after the first such buffer is freed,
//   and from then on keeps them in its free lists);
// - smaller buffers come from the heap and are reused, and the heap's top keeps up to
//   kHeapTrimThresholdBytes free: a stage that makes a few MB of short-lived buffers per
//   message (a frame pipeline's intermediate images) takes no page faults for them. With
//   256 KiB / 1 MiB, GR00T's 320x240 frame pipeline took ~1270 page faults a frame, 3-6x its
//   time (2-core VM); bursts (a queue while a stage restarts, a bag part's buffers) go back
//   through release_free_heap;
// - the threads share at most two arenas (the default, eight per core, keeps freed memory in
//   each thread's own).
// Does nothing where the user set the allocator up (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_,
// GLIBC_TUNABLES) or without glibc. Call once, early in main.
inline constexpr long kHeapMapThresholdBytes = 4L << 20;
inline constexpr long kHeapTrimThresholdBytes = 8L << 20;
void configure_process_heap();

// Resident set size of this process in bytes.
std::int64_t process_rss_bytes();
// Peak resident set size of this process (VmHWM) in bytes; -1 when unknown.
std::int64_t process_peak_rss_bytes();
// This process's private resident memory (RssAnon: heap, stacks) in bytes; -1 when unknown.
std::int64_t private_resident_bytes();

}  // namespace edgevla
