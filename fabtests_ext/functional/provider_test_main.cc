// main() of the public-API test programs: points libfabric at the provider in
// this build tree unless the environment already says where (ctest sets both
// variables), so a test binary also runs by hand. `--env=NAME=VALUE` (any
// number, after gtest's own flags are taken out) sets NAME for the run:
// gtest_discover_tests keeps only the first entry of an ENVIRONMENT list
// (its PROPERTIES are split at every ';'), so a discovered test that needs
// more variables passes them here through EXTRA_ARGS.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  setenv("FI_PROVIDER_PATH", IWARPX_FI_PROVIDER_BUILD_DIR, 0);
  setenv("FI_PROVIDER", "iwarpx", 0);
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    constexpr const char* kEnv = "--env=";
    if (std::strncmp(argv[i], kEnv, std::strlen(kEnv)) != 0) {
      std::fprintf(stderr, "unknown argument %s (want --env=NAME=VALUE)\n", argv[i]);
      return 2;
    }
    const std::string kv(argv[i] + std::strlen(kEnv));
    const size_t eq = kv.find('=');
    if (eq == 0 || eq == std::string::npos) {
      std::fprintf(stderr, "bad argument %s (want --env=NAME=VALUE)\n", argv[i]);
      return 2;
    }
    setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
  return RUN_ALL_TESTS();
}
