// The process group's collectives, at whatever size the suite runs (1, 2 and 3 ranks in CTest).
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "dist/process_group.h"
#include "dist/sampler.h"
#include "tensor/error.h"
#include "tests/dist/dist_testing.h"

using dist_testing::group;
using dist_testing::same_on_every_rank;

TEST_CASE("all_reduce_sum adds every rank's values on every rank: floats and doubles and int64") {
  auto& g = group();
  const int r = g.rank(), n = g.size();
  std::vector<float> f = {1.0f + r, -2.0f * r, 0.5f};
  g.all_reduce_sum(std::span<float>(f));
  CHECK(f[0] == doctest::Approx(n + n * (n - 1) / 2.0));
  CHECK(f[1] == doctest::Approx(-1.0 * n * (n - 1)));
  CHECK(f[2] == doctest::Approx(0.5 * n));
  std::vector<double> d = {1e-3 * (r + 1)};
  g.all_reduce_sum(std::span<double>(d));
  CHECK(d[0] == doctest::Approx(1e-3 * n * (n + 1) / 2));
  int64_t big[1] = {(int64_t{1} << 40) + r};
  g.all_reduce_sum(std::span<int64_t>(big));
  CHECK(big[0] == n * (int64_t{1} << 40) + n * (n - 1) / 2);
  CHECK(same_on_every_rank(f));
}

TEST_CASE("broadcast copies the root's values to every rank and all_gather lays them out in rank order") {
  auto& g = group();
  const int root = g.size() - 1;  // not always 0
  std::vector<float> x = {static_cast<float>(g.rank()), 7.0f};
  g.broadcast(std::span<float>(x), root);
  CHECK(x == std::vector<float>{static_cast<float>(root), 7.0f});
  const float mine[2] = {static_cast<float>(g.rank()), 10.0f * g.rank()};
  std::vector<float> all(2 * static_cast<size_t>(g.size()));
  g.all_gather(std::span<const float>(mine), std::span<float>(all));
  for (int r = 0; r < g.size(); ++r) {
    CHECK(all[2 * r] == r);
    CHECK(all[2 * r + 1] == 10.0f * r);
  }
  g.barrier();
}

TEST_CASE("collectives refuse a root outside the group and an all_gather output of the wrong size") {
  auto& g = group();
  std::vector<float> x(3);
  CHECK_THROWS_WITH_AS(g.broadcast(std::span<float>(x), g.size()), doctest::Contains("is not a rank"), qkv::ValueError);
  std::vector<float> wrong(3 * static_cast<size_t>(g.size()) + 1);
  CHECK_THROWS_WITH_AS(g.all_gather(std::span<const float>(x), std::span<float>(wrong)),
                       doctest::Contains("need an output of"), qkv::ShapeError);
}

// Not bit for bit: at 3 ranks Open MPI's nonblocking all-reduce (libnbc) adds in another order than
// its blocking one (the tuned component), and the sums differ in the last bits.
TEST_CASE("the asynchronous all-reduce gives the blocking one's sum, the same bits on every rank") {
  auto& g = group();
  std::vector<float> a(10000), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.1f * i + g.rank());
  b = a;
  auto work = g.all_reduce_sum_async(std::span<float>(a));
  while (!work->test()) {
  }
  work->wait();
  g.all_reduce_sum(std::span<float>(b));
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
  CHECK(same_on_every_rank(a));
  if (g.size() <= 2) CHECK(a == b);  // two values add the same in either order
}

TEST_CASE("the fixed-order sum adds the ranks left to right in rank order, the same bits on every rank") {
  auto& g = group();
  // Values whose sum depends on the order of the additions: 1e8, 1, -1e8, 1, ...
  const float pattern[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = pattern[(i + static_cast<size_t>(g.rank())) % 4] * (1 + i % 3);
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    float sum = pattern[i % 4] * (1 + i % 3);
    for (size_t r = 1; r < static_cast<size_t>(g.size()); ++r) sum += pattern[(i + r) % 4] * (1 + i % 3);
    expected[i] = sum;
  }
  g.all_reduce_sum_fixed_order(std::span<float>(x));
  CHECK(x == expected);
  CHECK(same_on_every_rank(x));
}

TEST_CASE("the library's all-reduce gives every rank the same bits") {
  auto& g = group();
  std::vector<float> x(300000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(1e-3f * i * (g.rank() + 1)) * 1e4f;
  g.all_reduce_sum(std::span<float>(x));
  CHECK(same_on_every_rank(x));
}

TEST_CASE("the sampler: every rank the same count, together every example once, one permutation per epoch") {
  auto& g = group();
  for (const bool drop_last : {false, true}) {
    const int64_t n = 10;
    std::vector<int> seen(n, 0);
    int64_t per_rank = -1;
    for (int r = 0; r < g.size(); ++r) {
      const qkv::dist::DistributedSampler sampler(n, r, g.size(), 42, true, drop_last);
      const std::vector<int64_t> mine = sampler.indices(3);
      if (per_rank < 0) per_rank = static_cast<int64_t>(mine.size());
      CHECK(static_cast<int64_t>(mine.size()) == per_rank);
      for (int64_t i : mine) ++seen[static_cast<size_t>(i)];
    }
    const int64_t total = per_rank * g.size();
    CHECK(total == (drop_last ? n / g.size() * g.size() : (n + g.size() - 1) / g.size() * g.size()));
    int64_t covered = 0, twice = 0;
    for (int c : seen) {
      covered += c > 0;
      twice += c > 1;
    }
    if (drop_last) {
      CHECK(covered == total);
    } else {
      CHECK(covered == n);
      CHECK(twice == total - n);  // padded with the permutation's first examples
    }
  }
  const qkv::dist::DistributedSampler s(100, 0, 1, 7);
  CHECK(s.indices(0) != s.indices(1));
  CHECK(s.indices(1) == qkv::dist::DistributedSampler(100, 0, 1, 7).indices(1));
  CHECK(qkv::dist::shard(5, 1, 2) == std::vector<int64_t>{1, 3});
  CHECK(qkv::dist::shard(1, 2, 3).empty());
  CHECK_THROWS_AS(qkv::dist::shard(5, 2, 2), qkv::ValueError);
}
