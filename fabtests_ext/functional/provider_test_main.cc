// main() of the public-API test programs: points libfabric at the provider in
// this build tree unless the environment already says where (ctest sets both
// variables), so a test binary also runs by hand.
//
// --iwarpx-env=NAME=VALUE (any number, after gtest's own flags are taken)
// sets NAME=VALUE in the environment before any test runs, overriding it.
// CMake's gtest_discover_tests passes EXTRA_ARGS verbatim but splits a
// list-valued ENVIRONMENT property ("A;B" sets only A), so a second
// variable for a discovered test set goes here (fabtests_msg_sctp:
// FI_IWARPX_LLP=sctp).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  setenv("FI_PROVIDER_PATH", IWARPX_FI_PROVIDER_BUILD_DIR, 0);
  setenv("FI_PROVIDER", "iwarpx", 0);
  ::testing::InitGoogleTest(&argc, argv);
  constexpr const char kEnvFlag[] = "--iwarpx-env=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], kEnvFlag, sizeof(kEnvFlag) - 1) != 0) {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
    const std::string spec(argv[i] + sizeof(kEnvFlag) - 1);
    const size_t eq = spec.find('=');
    if (eq == 0 || eq == std::string::npos) {
      std::fprintf(stderr, "%s: expected NAME=VALUE\n", argv[i]);
      return 2;
    }
    setenv(spec.substr(0, eq).c_str(), spec.substr(eq + 1).c_str(), 1);
  }
  return RUN_ALL_TESTS();
}
