# Run at build time (cmake -P) after a test executable is linked: lists its GoogleTest cases
# and writes the ctest file that registers each one as its own test. edgevla's own discovery
# (not gtest_discover_tests) so that no output pattern turns a test into "skipped": a test is
# skipped only when its executable exits 77 (tests/support/gtest_main.cpp).
# Inputs: EXE, OUT, WORKDIR, TIMEOUT, LABELS (;-list, may be empty), SERIAL (TRUE: RUN_SERIAL),
# DISCOVERY_TIMEOUT.
execute_process(COMMAND "${EXE}" --gtest_list_tests
                WORKING_DIRECTORY "${WORKDIR}"
                TIMEOUT ${DISCOVERY_TIMEOUT}
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "listing the tests of ${EXE} failed (${rc}): ${errors}${listing}")
endif()
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(suite "")
set(count 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  # Comments after '#' carry type and value parameters; names never contain '#'.
  string(REGEX REPLACE "#.*" "" name "${line}")
  string(STRIP "${name}" stripped)
  if(line MATCHES "^ ")
    if(suite STREQUAL "")
      message(FATAL_ERROR "unexpected test listing line from ${EXE}: '${line}'")
    endif()
    set(test "${suite}${stripped}")
    string(APPEND script "add_test([==[${test}]==] [==[${EXE}]==] [==[--gtest_filter=${test}]==])\n")
    string(APPEND script "set_tests_properties([==[${test}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKDIR}]==]"
                         " TIMEOUT ${TIMEOUT} SKIP_RETURN_CODE 77")
    if(NOT LABELS STREQUAL "")
      string(APPEND script " LABELS [==[${LABELS}]==]")
    endif()
    if(SERIAL)
      string(APPEND script " RUN_SERIAL TRUE")
    endif()
    string(APPEND script ")\n")
    math(EXPR count "${count} + 1")
  else()
    set(suite "${stripped}")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${EXE} lists no tests")
endif()
file(WRITE "${OUT}" "${script}")
