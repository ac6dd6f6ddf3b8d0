// main() of the public-API test programs: points libfabric at the provider in
// this build tree unless the environment already says where (ctest sets both
// variables), so a test binary also runs by hand.
#include <cstdlib>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  setenv("FI_PROVIDER_PATH", IWARPX_FI_PROVIDER_BUILD_DIR, 0);
  setenv("FI_PROVIDER", "iwarpx", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
