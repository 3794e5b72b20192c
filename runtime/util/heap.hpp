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

// Resident set size of this process in bytes.
std::int64_t process_rss_bytes();
// Peak resident set size of this process (VmHWM) in bytes; -1 when unknown.
std::int64_t process_peak_rss_bytes();
// This process's private resident memory (RssAnon: heap, stacks) in bytes; -1 when unknown.
std::int64_t private_resident_bytes();

}  // namespace edgevla
