# Helpers shared by every edgevla target.

# Warnings as errors on our own targets only (never on global flags). The host compiler's flags go
# to C++ sources; a target with CUDA sources gets nvcc's own.
function(edgevla_warnings target)
  set(cxx -Wall -Wextra -Werror -Wno-missing-field-initializers)
  if(EDGEVLA_SANITIZE)
    # Sanitizer instrumentation makes GCC's flow warnings (-Warray-bounds inside fmt, ...)
    # report code that is fine; they stay warnings there, and errors in normal builds.
    list(APPEND cxx -Wno-error)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports false -Wrestrict positives inside std::string operator+ (GCC bug 105651),
    # and false -Wmaybe-uninitialized ones on std::variant moves after inlining (GCC bug 80635).
    list(APPEND cxx -Wno-restrict -Wno-maybe-uninitialized)
  endif()
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${cxx}>"
                                           "$<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings>")
endfunction()

# edgevla_add_test(<name> SOURCES a.cpp ... [LIBS lib ...] [LABELS l ...] [TIMEOUT s])
# One GoogleTest executable registered with ctest, one ctest test per test case, listed after
# each link (cmake/edgevla_discover_tests.cmake). Its main() is tests/support/gtest_main.cpp:
# only an executable exiting 77 (every selected test skipped itself: a device is absent)
# reports "not run"; a failed suite set-up is a failure.
function(edgevla_add_test name)
  # SERIAL: its tests run alone (ctest RUN_SERIAL), e.g. those that read device-wide free memory.
  cmake_parse_arguments(T "SERIAL" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  edgevla_warnings(${name})
  # The code under test lives in the libraries, built as the build type says; a test's own code
  # (assertions, fixtures, small references) compiles at -O1 in optimised builds: a third less
  # compile time for the large test files, and the same IEEE results (no contraction, no fast math).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo)$")
    target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-O1>")
  endif()
  target_link_libraries(${name} PRIVATE ${T_LIBS} edgevla_gtest_main GTest::gtest)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  # Tests find the edgevla binary and the source tree without any environment set up.
  target_compile_definitions(${name} PRIVATE
    EDGEVLA_TEST_BIN_DIR="${PROJECT_BINARY_DIR}/bin" EDGEVLA_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_tests.cmake")
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D "EXE=$<TARGET_FILE:${name}>" -D "OUT=${ctest_file}"
            -D "WORKDIR=${CMAKE_CURRENT_BINARY_DIR}" -D "TIMEOUT=${T_TIMEOUT}" -D "LABELS=${T_LABELS}" -D "SERIAL=${T_SERIAL}"
            -D DISCOVERY_TIMEOUT=30 -P "${PROJECT_SOURCE_DIR}/cmake/edgevla_discover_tests.cmake"
    BYPRODUCTS "${ctest_file}"
    VERBATIM)
  # ctest reads the file if it exists; a test executable that was never built registers a
  # test that fails and says so.
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/${name}_include.cmake"
       "if(EXISTS \"${ctest_file}\")\n  include(\"${ctest_file}\")\nelse()\n"
       "  add_test(${name}_NOT_BUILT ${name}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_CURRENT_BINARY_DIR}/${name}_include.cmake")
endfunction()
