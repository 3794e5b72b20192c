# GPU tests (ctest label `gpu`). Built whenever the cuda backend is; on a machine without a GPU
# every test skips itself and ctest reports the executable as not run (exit 77), never passed.
edgevla_add_test(cuda_kernels_test SOURCES gpu/cuda_kernels_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
edgevla_add_test(cuda_attention_test SOURCES gpu/cuda_attention_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
