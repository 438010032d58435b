// The FMA peak probe: a rate, measured quickly enough to run before every benchmark.
#include <doctest/doctest.h>

#include <chrono>

#include "bench/peak.h"

TEST_CASE("peak_gflops measures a rate in a fraction of a second") {
  const auto start = std::chrono::steady_clock::now();
  const double one = qkv::bench::peak_gflops(1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Even the portable build's scalar chains run at one FMA a cycle, 2 FLOPs at ~1 GHz and more.
  CHECK(one > 1.0);
  CHECK(one < 1e5);
  CHECK(seconds < 1.0);
  CHECK(qkv::bench::peak_gflops(0) > 1.0);  // read as one thread
}
