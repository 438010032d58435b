// The doctest entry point for the whole suite; the suites live in the folders that mirror the library.
// `qkv_tests --child NAME ARGS...` runs a registered child instead (tests/child_process.h).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "child_process.h"

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--child")
    return qkv::testing::child_main(argv[2], std::vector<std::string>(argv + 3, argv + argc));
  return doctest::Context(argc, argv).run();
}
