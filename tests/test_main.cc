// main() of every test binary. Test binaries never take main() from a library (SystemC
// ships one that would silently run zero tests), and a binary that would run zero
// tests fails instead of passing.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  if (!::testing::GTEST_FLAG(list_tests) && ::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "error: this test binary ran zero tests\n");
    return 1;
  }
  return rc;
}
