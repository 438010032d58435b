// The counter-based generator: reproducible, independent of threads, and with the right moments.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "qkv.h"

using namespace qkv;

TEST_CASE("manual_seed makes rand and randn reproducible") {
  manual_seed(42);
  const std::vector<float> a = randn({100}).to_vector(), u = rand({10}).to_vector();
  manual_seed(42);
  CHECK(randn({100}).to_vector() == a);
  CHECK(rand({10}).to_vector() == u);
  manual_seed(43);
  CHECK(randn({100}).to_vector() != a);
}

TEST_CASE("generator state can be saved and restored") {
  Generator g(7);
  randn({5}, false, &g);
  const GeneratorState s = g.state();
  const std::vector<float> next = randn({8}, false, &g).to_vector();
  g.set_state(s);
  CHECK(randn({8}, false, &g).to_vector() == next);
}

TEST_CASE("one draw of n values equals the same n values drawn in pieces") {
  // Element i depends only on (seed, offset + i): how the work is split cannot change it.
  Generator whole(3), pieces(3);
  const std::vector<float> all = rand({1000}, false, &whole).to_vector();
  std::vector<float> parts = rand({300}, false, &pieces).to_vector();
  const std::vector<float> rest = rand({700}, false, &pieces).to_vector();
  parts.insert(parts.end(), rest.begin(), rest.end());
  CHECK(parts == all);
}

TEST_CASE("random values have the expected distributions") {
  Generator g(11);
  const int n = 200000;
  const std::vector<float> u = rand({n}, false, &g).to_vector();
  const std::vector<float> z = randn({n}, false, &g).to_vector();
  double su = 0, sz = 0, szz = 0;
  float lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    su += u[i], sz += z[i], szz += z[i] * z[i];
    lo = std::min(lo, u[i]), hi = std::max(hi, u[i]);
  }
  // Means within ~5 standard errors: 1/sqrt(12n) ≈ 6.5e-4 and 1/sqrt(n) ≈ 2.2e-3.
  CHECK(std::fabs(su / n - 0.5) < 3.5e-3);
  CHECK(std::fabs(sz / n) < 1.2e-2);
  CHECK(std::fabs(szz / n - 1.0) < 1.5e-2);
  CHECK(lo >= 0.0f);
  CHECK(hi < 1.0f);
  const std::vector<float> b = normal({4}, 5.0f, 0.0f).to_vector();
  CHECK(b == std::vector<float>(4, 5.0f));
}

TEST_CASE("randint and randperm stay in range") {
  Generator g(5);
  const IndexTensor r = randint(3, 7, {1000}, &g);
  CHECK(r.min() == 3);
  CHECK(r.max() == 6);
  const IndexTensor p = randperm(50, &g);
  std::set<int64_t> seen(p.values().begin(), p.values().end());
  CHECK(seen.size() == 50);
  CHECK(*seen.rbegin() == 49);
  CHECK_THROWS_AS(randint(2, 2, {1}), ValueError);
}

TEST_CASE("fill_bernoulli draws two values per draw deterministically with mean p") {
  const int64_t n = 200001;
  std::vector<float> a(n), b(n), c(n + 1);
  Generator g(13), h(13), k(13);
  g.fill_bernoulli(a.data(), n, 0.2f);
  h.fill_bernoulli(b.data(), n, 0.2f);
  CHECK(a == b);
  CHECK(g.state().offset == (n + 1) / 2);  // the documented advance: ceil(n/2)
  // The odd last value comes from the low half of its draw, as in a pair: n values are a prefix of n + 1.
  k.fill_bernoulli(c.data(), n + 1, 0.2f);
  CHECK(std::vector<float>(c.begin(), c.begin() + n) == a);
  double sum = 0;
  for (float v : a) {
    CHECK((v == 0.0f || v == 1.0f));
    sum += v;
  }
  // Within 5 standard errors: sqrt(0.2 · 0.8 / n) ≈ 8.9e-4.
  CHECK(std::fabs(sum / n - 0.2) < 4.5e-3);
  // Neighbours come from the two halves of one draw: they must not be correlated.
  double both = 0;
  for (int64_t i = 0; i + 1 < n; i += 2) both += a[i] * a[i + 1];
  CHECK(std::fabs(both / (n / 2) - 0.04) < 3e-3);
  std::vector<float> d(n);
  Generator other(14);
  other.fill_bernoulli(d.data(), n, 0.2f);
  CHECK(d != a);
}

TEST_CASE("next_below stays in range and covers it") {
  qkv::Generator gen(42);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t r = gen.next_below(7);
    REQUIRE(r < 7);
    ++seen[r];
  }
  for (int count : seen) CHECK(count > 850);  // 1000 expected; 850 is > 4 standard deviations off
  CHECK_THROWS_AS(gen.next_below(0), qkv::ValueError);
}

TEST_CASE("next_uniform lies between 0 and 1 with mean one half and advances the state") {
  qkv::Generator gen(7);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = gen.next_uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  CHECK(sum / 10000 == doctest::Approx(0.5).epsilon(0.02));
  CHECK(gen.state().offset == 10000);
}

TEST_CASE("shuffle is a permutation fixed by the seed") {
  std::vector<int> a(50), b(50);
  for (int i = 0; i < 50; ++i) a[i] = b[i] = i;
  qkv::Generator g1(3), g2(3);
  qkv::shuffle(a, g1);
  qkv::shuffle(b, g2);
  CHECK(a == b);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i) CHECK(sorted[i] == i);
  int fixed = 0;
  for (int i = 0; i < 50; ++i) fixed += a[i] == i;
  CHECK(fixed < 10);  // a uniform permutation fixes one point on average
}
