// Counting heap allocations in a test binary: link tests/support/allocation_counter.cpp (it
// replaces the global operator new / delete) and bracket the code under test.
#pragma once

namespace edgevla::testing {

// Starts (resetting the count) or stops counting operator new calls, on every thread.
void count_allocations(bool on);
// operator new calls since counting last started.
long allocations();

}  // namespace edgevla::testing
