// The CPU backend: OpenBLAS GEMMs plus fused loops, on a pool of `threads` threads. Each model
// family's engines (cpu/<family>/) register themselves as backend "cpu" when the library loads.
#pragma once

#include "runtime/backends/backend.hpp"
