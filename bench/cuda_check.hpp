// CHECK_CUDA for edgevla's CUDA bench programs: a failed runtime call prints itself and exits.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                               \
  do {                                                              \
    const cudaError_t e_ = (x);                                     \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                 \
    }                                                               \
  } while (0)
