# cmake -D PROBE=<outcome_probe> -P check_outcomes.cmake: the exit codes ctest maps to
# failed / not run / passed (tests/support/gtest_main.cpp).
foreach(case "FailingSetUp.*=1" "AbsentDevice.*=77" "Mixed.*=0")
  string(REPLACE "=" ";" pair "${case}")
  list(GET pair 0 filter)
  list(GET pair 1 want)
  execute_process(COMMAND "${PROBE}" "--gtest_filter=${filter}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc STREQUAL want)
    message(FATAL_ERROR "tests matching ${filter} exit ${rc}; ctest needs ${want} there")
  endif()
  message(STATUS "${filter}: exit ${rc} as expected")
endforeach()
