// Determinism across thread counts (docs/internals.md): a computation run with 1 thread and with 2
// must give bitwise identical results.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "tensor/threads.h"

namespace qkv::testing {

// Calls run() with 1 thread and then with 2, restores the thread count, and checks that the two
// results have the same bits. run() returns every value it wants compared, flattened.
inline void check_bitwise_identical_with_1_and_2_threads(const std::function<std::vector<float>()>& run) {
  const int saved = get_num_threads();
  set_num_threads(1);
  const std::vector<float> one = run();
  set_num_threads(2);
  const std::vector<float> two = run();
  set_num_threads(saved);
  REQUIRE(one.size() == two.size());
  CHECK((one.empty() || std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0));
}

}  // namespace qkv::testing
