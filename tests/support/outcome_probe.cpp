// Not a test by itself: tests/support/check_outcomes.cmake runs it to check what ctest will
// see from edgevla's test main. FailingSetUp.* must exit 1 (a failed set-up is a failure, though
// gtest prints its tests as skipped); AbsentDevice.* must exit 77 (not run); Mixed.* (one test
// skipped, one passed) must exit 0.
#include <gtest/gtest.h>

namespace {

class FailingSetUp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(1, 2) << "the suite's set-up failed"; }
};
TEST_F(FailingSetUp, WouldPass) { EXPECT_TRUE(true); }

TEST(AbsentDevice, Camera) { GTEST_SKIP() << "no /dev/video0 here"; }

TEST(Mixed, Skips) { GTEST_SKIP() << "no GPU here"; }
TEST(Mixed, Passes) { EXPECT_EQ(2, 2); }

}  // namespace
