# Registers the brief envelope fuzz run with ctest; include()d from tests/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/fuzz/ctest.cmake)
# The fuzzer is its own clang project (tests/fuzz/CMakeLists.txt) that run_fuzz.sh configures
# and builds under ${PROJECT_BINARY_DIR}/fuzz on first run (~15 s of compiling on 2 cores),
# then fuzzes for 20 s. Longer runs on demand: tests/fuzz/run_fuzz.sh 600.
find_program(EDGEVLA_FUZZ_CLANGXX NAMES clang++ clang++-14)
find_program(EDGEVLA_FUZZ_CLANG NAMES clang clang-14)
if(NOT EDGEVLA_FUZZ_CLANGXX OR NOT EDGEVLA_FUZZ_CLANG)
  message(STATUS "edgevla: clang not found, so the envelope fuzz test is not registered")
  return()
endif()

add_test(NAME fuzz_envelope_brief
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_fuzz.sh 20)
set_tests_properties(fuzz_envelope_brief PROPERTIES
  TIMEOUT 400
  LABELS "fuzz"
  # The clang build uses the cores it finds; the fuzzer itself one.
  PROCESSORS 2
  ENVIRONMENT "EDGEVLA_FUZZ_BUILD_DIR=${PROJECT_BINARY_DIR}/fuzz;EDGEVLA_FUZZ_CC=${EDGEVLA_FUZZ_CLANG};EDGEVLA_FUZZ_CXX=${EDGEVLA_FUZZ_CLANGXX}")
