// Gradient clipping (optim/clip.h), against norms worked out by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "optim/clip.h"
#include "qkv.h"

using namespace qkv;
using V = std::vector<float>;

namespace {

Tensor with_grad(const V& grad) {
  Tensor p = zeros({static_cast<int64_t>(grad.size())}, true);
  p.set_grad(tensor(grad, {static_cast<int64_t>(grad.size())}));
  return p;
}

}  // namespace

TEST_CASE("clip_grad_norm_ scales all gradients together by max_norm over the total norm") {
  // Gradients (3, 4) and (12): total 2-norm √(9 + 16 + 144) = 13. max_norm 6.5 scales by
  // 6.5 / (13 + 1e-6), about one half.
  Tensor a = with_grad({3, 4}), b = with_grad({12}), no_grad = zeros({2}, true);
  const double total = optim::clip_grad_norm_({a, b, no_grad}, 6.5);
  CHECK(total == doctest::Approx(13.0));
  const double f = 6.5 / (13.0 + 1e-6);
  CHECK(a.grad().at({0}) == doctest::Approx(3 * f));
  CHECK(a.grad().at({1}) == doctest::Approx(4 * f));
  CHECK(b.grad().at({0}) == doctest::Approx(12 * f));
  CHECK_FALSE(no_grad.grad().defined());
}

TEST_CASE("clip_grad_norm_ divides by the norm plus 1e-6 as PyTorch does") {
  // At a tiny norm the 1e-6 shows: |g| = 2e-6 clipped to 1e-6 scales by 1e-6 / 3e-6 = 1/3, where
  // max_norm / norm alone would give 1/2.
  Tensor a = with_grad({2e-6f});
  CHECK(optim::clip_grad_norm_({a}, 1e-6) == doctest::Approx(2e-6).scale(0));
  CHECK(a.grad().at({0}) == doctest::Approx(2e-6 / 3).epsilon(1e-6).scale(0));
}

TEST_CASE("clip_grad_norm_ leaves gradients under max_norm unchanged") {
  Tensor a = with_grad({0.3f, -0.4f});
  CHECK(optim::clip_grad_norm_({a}, 1.0) == doctest::Approx(0.5));
  CHECK(a.grad().to_vector() == V{0.3f, -0.4f});
}

TEST_CASE("clip_grad_norm_ supports the infinity and 1 norms") {
  Tensor a = with_grad({1, -6}), b = with_grad({2});
  // Largest |g| = 6; max_norm 3 halves everything.
  CHECK(optim::clip_grad_norm_({a, b}, 3.0, INFINITY) == doctest::Approx(6.0));
  CHECK(a.grad().at({1}) == doctest::Approx(-6 * 3 / (6 + 1e-6)));
  Tensor c = with_grad({1, -2}), d = with_grad({-3});
  // Σ|g| = 6.
  CHECK(optim::clip_grad_norm_({c, d}, 100.0, 1.0) == doctest::Approx(6.0));
  CHECK_THROWS_AS(optim::clip_grad_norm_({c}, 1.0, 0.5), ValueError);
}

TEST_CASE("clip_grad_norm_ with a NaN gradient returns NaN and poisons every gradient") {
  Tensor a = with_grad({NAN, 1}), b = with_grad({2});
  CHECK(std::isnan(optim::clip_grad_norm_({a, b}, 1.0)));
  CHECK(std::isnan(b.grad().at({0})));
}

TEST_CASE("clip_grad_value_ clamps every gradient element") {
  Tensor a = with_grad({-3, 0.5f, 2});
  optim::clip_grad_value_({a}, 1.0);
  CHECK(a.grad().to_vector() == V{-1, 0.5f, 1});
}
