# Helpers shared by every edgevla target.

# Warnings as errors on our own targets only (never on global flags).
function(edgevla_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-missing-field-initializers)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports false -Wrestrict positives inside std::string operator+ (GCC bug 105651).
    target_compile_options(${target} PRIVATE -Wno-restrict)
    # ... and false -Wmaybe-uninitialized ones on std::variant moves after inlining (GCC bug 80635).
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
endfunction()

# edgevla_add_test(<name> SOURCES a.cpp ... [LIBS lib ...] [LABELS l ...] [TIMEOUT s])
# One GoogleTest executable registered with ctest, discovered per test case.
function(edgevla_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  edgevla_warnings(${name})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  # Tests find the edgevla binary and the source tree without any environment set up.
  target_compile_definitions(${name} PRIVATE
    EDGEVLA_TEST_BIN_DIR="${PROJECT_BINARY_DIR}/bin" EDGEVLA_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(props TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)
    list(APPEND props LABELS ${T_LABELS})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 30 PROPERTIES ${props})
endfunction()
