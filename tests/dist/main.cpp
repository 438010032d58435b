// The dist suite's main: every rank runs every test case, in the same order, so that the
// collectives of each case meet. The exit code is the same on every rank: failed if any rank failed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>

#include "dist/world.h"
#include "tests/dist/dist_testing.h"

namespace {
qkv::dist::World* the_world = nullptr;
}

namespace dist_testing {
qkv::dist::ProcessGroup& group() { return the_world->group(); }
}  // namespace dist_testing

int main(int argc, char** argv) {
  qkv::dist::World world(argc, argv);
  the_world = &world;
  doctest::Context context(argc, argv);
  const int failed = context.run() != 0 ? 1 : 0;
  int64_t any[1] = {failed};
  world.group().all_reduce_sum(std::span<int64_t>(any));
  if (world.is_root())
    std::printf("dist suite: %d rank(s) (%s), %lld failed\n", world.size(), world.group().backend().c_str(),
                static_cast<long long>(any[0]));
  return any[0] == 0 ? 0 : 1;
}
