// The fused dropout op (autograd/ops/dropout.cpp) and nn::functional::dropout on top of it.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/ops/dropout.h"
#include "qkv.h"
#include "thread_testing.h"

using namespace qkv;

TEST_CASE("dropout in training zeroes about p of the elements and scales the rest by 1/(1-p)") {
  Generator g(3);
  const int64_t n = 100001;
  const float p = 0.3f;
  const std::vector<float> y = nn::functional::dropout(ones({n}), p, true, &g).to_vector();
  int64_t zeros_seen = 0, others = 0;
  double sum = 0;
  for (float v : y) {
    sum += v;
    if (v == 0.0f) ++zeros_seen;
    else if (v != 1.0f / (1.0f - p)) ++others;
  }
  CHECK(others == 0);
  // Within 5 standard errors: sqrt(p(1-p)/n) ≈ 1.45e-3 for the fraction, and E[y] = 1.
  CHECK(std::abs(static_cast<double>(zeros_seen) / n - p) < 7.5e-3);
  CHECK(std::abs(sum / n - 1.0) < 1.1e-2);
  CHECK(g.state().offset == (n + 1) / 2);  // two elements per draw
}

TEST_CASE("dropout in eval or with p = 0 is the identity") {
  const Tensor x = randn({4, 5}, true);
  const Tensor y = nn::functional::dropout(x, 0.5f, /*training=*/false);
  CHECK(y.data() == x.data());
  CHECK(nn::functional::dropout(x, 0.0f, true).data() == x.data());
  nn::Dropout drop(0.5f);
  drop.eval();
  CHECK(drop.forward(x).to_vector() == x.to_vector());
  CHECK_THROWS_AS(nn::functional::dropout(x, 1.0f, true), ValueError);
}

TEST_CASE("fused dropout equals the input times the Bernoulli mask of the same generator state") {
  Generator a(11), b(11);
  const Tensor x = randn({7, 9});
  const Tensor y = dropout(x, 0.25f, a);
  Tensor mask = Tensor::empty({7, 9});
  b.fill_bernoulli(mask.data(), mask.numel(), 0.75f);
  CHECK(y.to_vector() == (x * (mask * (1.0f / 0.75f))).to_vector());
  CHECK(a.state().offset == b.state().offset);
}

TEST_CASE("dropout backward multiplies the gradient by the forward's mask, also for a strided gradient") {
  Generator g(5);
  const Tensor x = ones({6, 8}, true);
  const Tensor y = dropout(x, 0.5f, g);
  // A gradient that arrives transposed in memory: (y·w).sum() with w = wᵀᵀ.
  const Tensor w = randn({8, 6}).t();
  (y * w).sum().backward();
  CHECK(x.grad().to_vector() == (y * w).to_vector());  // x = 1, so y is mask·scale
  Generator h(5);
  CHECK(dropout(ones({6, 8}), 0.5f, h).to_vector() == y.to_vector());
}

TEST_CASE("dropout masks are bitwise identical with 1 and 2 threads") {
  qkv::testing::check_bitwise_identical_with_1_and_2_threads([] {
    Generator g(9);
    Generator values(8);
    const Tensor x = randn({300, 301}, true, &values);  // above the parallel threshold, odd count
    const Tensor y = dropout(x, 0.1f, g);
    y.sum().backward();
    std::vector<float> all = y.to_vector();
    const std::vector<float> gx = x.grad().to_vector();
    all.insert(all.end(), gx.begin(), gx.end());
    return all;
  });
}
