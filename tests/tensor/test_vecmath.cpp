// The vectorizable exp, sigmoid and tanh of tensor/kernels/vecmath.h against double-precision libm.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tensor/kernels/vecmath.h"

using namespace qkv::kernels;

namespace {

// Calls check(x) for about 100,000 finite floats spread over the whole range: every 40009th bit
// pattern, so every exponent is visited with many mantissas.
template <class F>
void for_sample_floats(F check) {
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 40009) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isfinite(x)) check(x);
  }
}

double relative_error(float got, double want) { return std::fabs(got - want) / std::fabs(want); }

}  // namespace

TEST_CASE("vexp is within 2 ulp of exp and never overflows") {
  double worst = 0.0;
  for_sample_floats([&](float x) {
    if (x >= -87.0f && x <= 88.0f) worst = std::max(worst, relative_error(vexp(x), std::exp(static_cast<double>(x))));
  });
  CHECK(worst < 2e-7);
  CHECK(vexp(0.0f) == 1.0f);
  CHECK(vexp(1000.0f) > 1e38f);
  CHECK(std::isfinite(vexp(1000.0f)));
  CHECK(vexp(-1000.0f) > 0.0f);
  CHECK(vexp(-1000.0f) < 1.3e-38f);  // e^-87.3
  CHECK(std::isnan(vexp(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("vsigmoid and vtanh are within 3e-7 relative of the exact functions") {
  double worst_sigmoid = 0.0, worst_tanh = 0.0;
  for_sample_floats([&](float x) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    if (s > 1e-30) worst_sigmoid = std::max(worst_sigmoid, relative_error(vsigmoid(x), s));
    const double t = std::tanh(static_cast<double>(x));
    if (t != 0.0) worst_tanh = std::max(worst_tanh, relative_error(vtanh(x), t));
  });
  CHECK(worst_sigmoid < 3e-7);
  CHECK(worst_tanh < 3e-7);
  // The ends of the range, and odd symmetry.
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(vsigmoid(inf) == 1.0f);
  CHECK(vsigmoid(-inf) < 1e-38f);
  CHECK(vtanh(inf) == 1.0f);
  CHECK(vtanh(-inf) == -1.0f);
  CHECK(vtanh(-0.3f) == -vtanh(0.3f));
  CHECK(vtanh(2.0f) == -vtanh(-2.0f));
  CHECK(std::isnan(vtanh(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(vsigmoid(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("vnormal_cdf is within 3e-7 of the normal distribution function") {
  double worst = 0.0;
  for_sample_floats([&](float x) {
    if (std::fabs(x) > 40.0f) return;
    const double want = 0.5 * std::erfc(-static_cast<double>(x) / std::sqrt(2.0));
    worst = std::max(worst, std::fabs(vnormal_cdf(x) - want));
  });
  CHECK(worst < 3e-7);
  CHECK(vnormal_cdf(0.0f) == doctest::Approx(0.5f).epsilon(1e-7));
  CHECK(vnormal_cdf(1e30f) == 1.0f);
  CHECK(vnormal_cdf(-1e30f) == 0.0f);
  // Past |x| = 13.2 the tails are exactly 0 and 1 (Φ(−14) is 8e-45), not vexp's clamped floor,
  // which left 3.6e-40 here and let x·φ(x) grow with x in GELU's gradient.
  CHECK(vnormal_cdf(-14.0f) == 0.0f);
  CHECK(vnormal_cdf(14.0f) == 1.0f);
  CHECK(std::isnan(vnormal_cdf(std::numeric_limits<float>::quiet_NaN())));
}
