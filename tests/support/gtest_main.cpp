// main() of every edgevla GoogleTest executable. ctest sees three outcomes:
//   passed  - exit 0, at least one test passed;
//   failed  - any failure, a failed SetUpTestSuite/TearDownTestSuite included (gtest then
//             prints its tests as skipped, but the run is a failure and exits 1);
//   not run - exit 77 (SKIP_RETURN_CODE), only when nothing failed and every selected test
//             skipped itself because a device is absent (GTEST_SKIP with the reason).
// No skip pattern is matched against the output, so no failing test can read as skipped.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& u = *::testing::UnitTest::GetInstance();
  if (rc == 0 && u.skipped_test_count() > 0 && u.successful_test_count() == 0 && u.failed_test_count() == 0 &&
      !u.ad_hoc_test_result().Failed()) {
    std::fprintf(stderr, "edgevla: not run: every selected test skipped itself (see its reason above)\n");
    return 77;
  }
  return rc;
}
