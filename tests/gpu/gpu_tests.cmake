# GPU tests (ctest label `gpu`). Built whenever the cuda backend is; on a machine without a GPU
# every test skips itself and ctest reports the executable as not run (exit 77), never passed.
edgevla_add_test(cuda_kernels_test SOURCES gpu/cuda_kernels_test.cpp gpu/cuda_rope_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
edgevla_add_test(cuda_attention_test SOURCES gpu/cuda_attention_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# The attention's other forms: wide blocks, the warpgroup kernel (Hopper only), rotated walks.
# Their host references take most of the time (WarpgroupKernelMatchesOtherShapes: 64 s alone on
# the H200's host, past 120 s with the whole suite at -j16 beside it, run 59): a longer limit.
edgevla_add_test(cuda_attention_forms_test SOURCES gpu/cuda_attention_forms_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu TIMEOUT 600)
edgevla_add_test(cuda_flow_step_test SOURCES gpu/cuda_flow_step_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# The pi0 / pi0.5 engines of the cuda backend against the CPU backend (numerics, graphs, budget).
edgevla_add_test(cuda_pi0_test SOURCES gpu/cuda_pi0_test.cpp
                 LIBS edgevla_runtime edgevla_backend_cpu edgevla_cuda_kernels CUDA::cudart LABELS gpu TIMEOUT 600)
add_dependencies(cuda_pi0_test edgevla_backend_cuda)
# Its action head following the backbone's cache layer by layer (same actions, bound blocks, timings).
edgevla_add_test(cuda_pi0_layered_test SOURCES gpu/cuda_pi0_layered_test.cpp
                 LIBS edgevla_runtime edgevla_backend_cpu edgevla_cuda_kernels CUDA::cudart LABELS gpu TIMEOUT 600)
add_dependencies(cuda_pi0_layered_test edgevla_backend_cuda)
# The GR00T N1.6 engines of the cuda backend against the CPU backend (numerics, graphs, bad input).
edgevla_add_test(cuda_groot_test SOURCES gpu/cuda_groot_test.cpp gpu/cuda_groot_refusals_test.cpp
                 LIBS edgevla_runtime edgevla_model edgevla_backend_cpu edgevla_cuda_kernels CUDA::cudart LABELS gpu
                 TIMEOUT 600)
add_dependencies(cuda_groot_test edgevla_backend_cuda)
# Both families' engines with prompts padded to no bucket at all (EDGEVLA_CUDA_ROW_BUCKET=1: every
# row count its own graph, rows not a multiple of 8): against the CPU, and the graphs' replays.
foreach(fam groot pi0)
  if(fam STREQUAL "groot")
    set(filter "*CudaGroot.MatchesTheCpuBackend*:*CudaGroot.GraphsAndEmbodimentSwitches*")
  else()
    set(filter "*CudaPi0.MatchesTheCpuBackend*:*CudaPi0.TheDeviceCacheHandOver*")
  endif()
  add_test(NAME cuda_${fam}_row_bucket_1 COMMAND cuda_${fam}_test --gtest_filter=${filter})
  set_tests_properties(cuda_${fam}_row_bucket_1 PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT EDGEVLA_CUDA_ROW_BUCKET=1)
endforeach()
# Both families with the backbones' own kernels chained (EDGEVLA_CUDA_BACKBONE_CHAIN=1): against the
# CPU, the graphs' replays, and pi0's layer-by-layer hand-overs (per-layer events, a bound cache).
add_test(NAME cuda_groot_backbone_chain COMMAND cuda_groot_test
         --gtest_filter=*CudaGroot.MatchesTheCpuBackend*:*CudaGroot.GraphsAndEmbodimentSwitches*)
add_test(NAME cuda_pi0_backbone_chain COMMAND cuda_pi0_test
         --gtest_filter=*CudaPi0.MatchesTheCpuBackend*:*CudaPi0.TheDeviceCacheHandOver*)
add_test(NAME cuda_pi0_layered_backbone_chain COMMAND cuda_pi0_layered_test)
set_tests_properties(cuda_groot_backbone_chain cuda_pi0_backbone_chain cuda_pi0_layered_backbone_chain PROPERTIES
                     LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600 ENVIRONMENT EDGEVLA_CUDA_BACKBONE_CHAIN=1)
# Both families with the vision towers' residual stream in f32 (EDGEVLA_CUDA_TOWER_STREAM=0; bf16
# is the default): against the CPU at the families' tolerances, and the graphs' replays.
add_test(NAME cuda_groot_tower_stream_f32 COMMAND cuda_groot_test
         --gtest_filter=*CudaGroot.MatchesTheCpuBackend*:*CudaGroot.GraphsAndEmbodimentSwitches*)
add_test(NAME cuda_pi0_tower_stream_f32 COMMAND cuda_pi0_test
         --gtest_filter=*CudaPi0.MatchesTheCpuBackend*:*CudaPi0.TheDeviceCacheHandOver*)
set_tests_properties(cuda_groot_tower_stream_f32 cuda_pi0_tower_stream_f32 PROPERTIES
                     LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600 ENVIRONMENT EDGEVLA_CUDA_TOWER_STREAM=0)
edgevla_add_test(cuda_groot_kernels_test SOURCES gpu/cuda_groot_kernels_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
edgevla_add_test(cuda_gemm_test SOURCES gpu/cuda_gemm_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
edgevla_add_test(cuda_gemm_plans_test SOURCES gpu/cuda_gemm_plans_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# The warpgroup few-rows GEMM (Hopper only): numerics with and without its GeGLU, replays, refusals.
edgevla_add_test(cuda_wgmma_gemm_test SOURCES gpu/cuda_wgmma_gemm_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# The many-rows warpgroup GEMM of the vision towers (Hopper only): each row size and epilogue
# against the host, the plan, replays, refusals.
edgevla_add_test(cuda_wide_gemm_test SOURCES gpu/cuda_wide_gemm_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# Its norm epilogue (Hopper only): the residual the same bits as k parts + the norm kernel.
edgevla_add_test(cuda_wgmma_norm_test SOURCES gpu/cuda_wgmma_norm_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# A head's projections and attention in one kernel (Hopper only): against the host, replays, refusals.
edgevla_add_test(cuda_wgmma_heads_test SOURCES gpu/cuda_wgmma_heads_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# The warpgroup GEMM on int8 weights (Hopper only): quantisation, products, replays, refusals.
edgevla_add_test(cuda_wgmma_w8_test SOURCES gpu/cuda_wgmma_w8_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# The MLP half as one kernel (Hopper only): bit for bit the two warpgroup GEMMs it replaces.
edgevla_add_test(cuda_wgmma_mlp_test SOURCES gpu/cuda_wgmma_mlp_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# The chained few-rows GEMM: numerics, plan, refusals, and chained / captured runs bit-exact.
edgevla_add_test(cuda_chain_gemm_test SOURCES gpu/cuda_chain_gemm_test.cpp
                 LIBS edgevla_cuda_kernels LABELS gpu)
# Per-node replay of a CPU-recorded bag against the cuda action head.
add_test(NAME cuda_replay COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/cuda_replay_test.sh
         $<TARGET_FILE:edgevla> ${PROJECT_SOURCE_DIR})
set_tests_properties(cuda_replay PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME cuda_launch COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/cuda_launch_test.sh
         $<TARGET_FILE:edgevla> ${PROJECT_SOURCE_DIR})
set_tests_properties(cuda_launch PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
# Device memory shared with another process by descriptor (the cuda allocator + fd channel).
# Serial: a test there reads the device's free memory, which other GPU tests running beside it
# change.
edgevla_add_test(cuda_shareable_test SOURCES gpu/cuda_shareable_test.cpp
                 LIBS edgevla_runtime edgevla_backends CUDA::cudart LABELS gpu SERIAL)
add_dependencies(cuda_shareable_test edgevla_backend_cuda)
# Ready fences: a stream waits on the device for a fenced input, a host copy on the host, a reader
# in another process for the producer's signal. Serial: they time how long a stream stood waiting,
# which GPU work of other test processes (time-sliced contexts) changes.
edgevla_add_test(cuda_fence_test SOURCES gpu/cuda_fence_test.cpp
                 LIBS edgevla_runtime edgevla_backends edgevla_cuda_kernels CUDA::cudart LABELS gpu SERIAL)
add_dependencies(cuda_fence_test edgevla_backend_cuda)
