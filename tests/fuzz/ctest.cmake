# Registers the brief fuzz runs with ctest; include()d from tests/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/fuzz/ctest.cmake)
# fuzz_build configures and builds the fuzz project (its own clang project, tests/fuzz/) under
# ${PROJECT_BINARY_DIR}/fuzz; then fuzz_<target>_brief fuzzes each target for a few seconds
# from its committed seeds, so every decoder's harness and corpus are exercised on each run.
# Without clang (or its libFuzzer runtime) every one of them reports "skipped" (exit 77),
# never "passed". Longer runs: tests/fuzz/run_fuzz.sh 600, or bench/fuzz 600 for a report.
set(EDGEVLA_FUZZ_TARGETS envelope descriptor mcap launch control safetensors norm_stats
    groot_processor pi0_tokenizer groot_tokenizer image)
set(EDGEVLA_FUZZ_BRIEF_SECONDS 5)
find_program(EDGEVLA_FUZZ_CLANGXX NAMES clang++ clang++-14)
find_program(EDGEVLA_FUZZ_CLANG NAMES clang clang-14)
if(NOT EDGEVLA_FUZZ_CLANGXX OR NOT EDGEVLA_FUZZ_CLANG)
  # Still registered: run_fuzz.sh finds no clang and exits 77, which ctest shows as skipped.
  message(STATUS "edgevla: clang not found; the fuzz tests will report as skipped")
  set(EDGEVLA_FUZZ_CLANG clang)
  set(EDGEVLA_FUZZ_CLANGXX clang++)
endif()
set(_fuzz_env
    "EDGEVLA_FUZZ_BUILD_DIR=${PROJECT_BINARY_DIR}/fuzz"
    "EDGEVLA_FUZZ_CC=${EDGEVLA_FUZZ_CLANG}"
    "EDGEVLA_FUZZ_CXX=${EDGEVLA_FUZZ_CLANGXX}")

add_test(NAME fuzz_build COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_fuzz.sh 0)
set_tests_properties(fuzz_build PROPERTIES
  TIMEOUT 1200
  LABELS "fuzz"
  FIXTURES_SETUP edgevla_fuzz_built
  SKIP_RETURN_CODE 77
  # The clang build uses the cores it finds.
  PROCESSORS 2
  ENVIRONMENT "${_fuzz_env}")

foreach(target IN LISTS EDGEVLA_FUZZ_TARGETS)
  add_test(NAME fuzz_${target}_brief
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_fuzz.sh ${EDGEVLA_FUZZ_BRIEF_SECONDS}
                   ${PROJECT_BINARY_DIR}/fuzz ${target})
  set_tests_properties(fuzz_${target}_brief PROPERTIES
    TIMEOUT 120
    LABELS "fuzz"
    FIXTURES_REQUIRED edgevla_fuzz_built
    SKIP_RETURN_CODE 77
    ENVIRONMENT "${_fuzz_env};EDGEVLA_FUZZ_NO_BUILD=1")
endforeach()
