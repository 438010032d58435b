// The Transformer sublayer helpers of d2l 11.7: PositionWiseFFN and AddNorm.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "nn/add_norm.h"
#include "nn/ffn.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;

namespace {

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [n, t] : m.named_parameters()) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("PositionWiseFFN applies the same two-layer MLP at every position") {
  nn::PositionWiseFFN ffn(3, 5, 2);
  CHECK(names(ffn) == std::vector<std::string>{"dense1.weight", "dense1.bias", "dense2.weight", "dense2.bias"});
  const Tensor x = randn({2, 4, 3});
  const Tensor y = ffn.forward(x);
  CHECK(y.shape() == Shape{2, 4, 2});
  // Position (1, 2) by hand: W2·relu(W1·x + b1) + b2.
  const Tensor xp = x.select(0, 1).select(0, 2);
  const Tensor h = (ffn.dense1->weight.matmul(xp) + ffn.dense1->bias).relu();
  const Tensor expected = ffn.dense2->weight.matmul(h) + ffn.dense2->bias;
  for (int64_t k = 0; k < 2; ++k) CHECK(y.at({1, 2, k}) == doctest::Approx(expected.at({k})).epsilon(1e-5));
  CHECK_THROWS_AS(ffn.forward(randn({2, 4})), ShapeError);
}

TEST_CASE("AddNorm normalizes the residual sum and drops out Y only in training") {
  nn::AddNorm an(4, 0.5f);
  CHECK(names(an) == std::vector<std::string>{"ln.weight", "ln.bias"});
  const Tensor X = randn({2, 3, 4}), Y = randn({2, 3, 4});
  an.eval();
  const Tensor out = an.forward(X, Y);
  CHECK(out.shape() == Shape{2, 3, 4});
  // With ln's initial weight 1 and bias 0, out is the plain normalization of X + Y.
  const Tensor s = X + Y;
  const Tensor c = s - s.mean({-1}, true);
  const Tensor expected = c / ((c * c).mean({-1}, true) + 1e-5f).sqrt();
  const std::vector<float> got = out.to_vector(), want = expected.to_vector();
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  an.train();
  CHECK(an.forward(X, Y).to_vector() != got);  // dropout on Y: some of its elements are zeroed
  CHECK_THROWS_WITH_AS(an.forward(X, randn({2, 4})),
                       "AddNorm: X of shape (2,3,4) and Y of shape (2,4) must have the same shape", ShapeError);
}

TEST_CASE("AddNorm frees the sublayer output it is handed before the norm allocates its own") {
  const int64_t rows = 256, D = 64, bytes = rows * D * 4, statistics = 2 * rows * 4;
  nn::AddNorm an(D, 0.5f);
  const Tensor X = randn({rows, D}, true);
  for (const bool training : {false, true}) {
    an.train(training);
    const int64_t before = memory_stats().live_bytes;
    reset_peak_memory();
    const Tensor out = an.forward(X, X * 2.0f);  // Y handed over: nobody else holds it
    // The sum of Y and X (its dropout too, in training) is made while Y is alive; then Y is freed,
    // and the norm's output and per-row statistics come beside the sum, which the norm saves.
    const int64_t at_sum = (training ? 3 : 2) * bytes, at_norm = 2 * bytes + statistics;
    CHECK(memory_stats().peak_bytes - before == std::max(at_sum, at_norm));
  }
}
