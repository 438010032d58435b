// The vectorized softmax kernels (tensor/kernels/softmax.cpp) against the reference loops, on
// every vector tail, large and masked logits, infinities and NaN, forward and backward; and the
// reference mode, which runs the reference loops.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "random_floats.h"
#include "tensor/factories.h"
#include "tensor/kernels/softmax.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

using namespace qkv::kernels;

namespace {

// Fast and reference agree within tol[i] (equal infinities agree; a NaN must be NaN in both).
int64_t mismatches(const std::vector<float>& fast, const std::vector<float>& ref,
                   const std::vector<float>& tol) {
  int64_t bad = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    if (fast[i] == ref[i]) continue;
    if (std::isnan(ref[i]) || std::isnan(fast[i])) {
      bad += std::isnan(ref[i]) != std::isnan(fast[i]);
      continue;
    }
    bad += !(std::fabs(fast[i] - ref[i]) <= tol[i]);
  }
  return bad;
}

// Forward and backward of both kernels on (outer, n, inner), fast against reference. The backward subtracts a
// row sum that the two kernels add up in different orders, each within n·eps·Σ|terms| of the exact sum;
// element k sees that error times its probability p_k.
void check_shape(int64_t outer, int64_t n, int64_t inner, const std::vector<float>& x) {
  CAPTURE(outer);
  CAPTURE(n);
  CAPTURE(inner);
  const std::vector<float> dy = random_floats(outer * n * inner, 7, -1.0f, 1.0f);
  const float eps = std::numeric_limits<float>::epsilon();
  for (bool log : {false, true}) {
    CAPTURE(log);
    std::vector<float> y(x.size()), y_ref(x.size()), dx(x.size()), dx_ref(x.size()), tol(x.size());
    softmax_forward(outer, n, inner, x.data(), y.data(), log);
    softmax_forward_reference(outer, n, inner, x.data(), y_ref.data(), log);
    // softmax: exp within a few ulp, the row sum within n·eps; log_softmax: x - shift, cancelling.
    for (size_t i = 0; i < x.size(); ++i)
      tol[i] = log ? 8 * eps * (std::fabs(y_ref[i]) + std::fabs(x[i])) : (8 + n) * eps * y_ref[i];
    CHECK(mismatches(y, y_ref, tol) == 0);
    softmax_backward(outer, n, inner, y_ref.data(), dy.data(), dx.data(), log);
    softmax_backward_reference(outer, n, inner, y_ref.data(), dy.data(), dx_ref.data(), log);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        float row = 0.0f;  // Σ_j |dy_j| (times p_j for softmax)
        for (int64_t k = 0; k < n; ++k) {
          const int64_t at = (o * n + k) * inner + i;
          row += std::fabs(dy[at]) * (log ? 1.0f : y_ref[at]);
        }
        for (int64_t k = 0; k < n; ++k) {
          const int64_t at = (o * n + k) * inner + i;
          const float p = log ? std::exp(y_ref[at]) : y_ref[at];
          tol[at] = 4 * eps * (std::fabs(dx_ref[at]) + std::fabs(dy[at])) + 2 * n * eps * p * row + 1e-7f;
        }
      }
    CHECK(mismatches(dx, dx_ref, tol) == 0);
  }
}

}  // namespace

TEST_CASE("fast softmax matches the reference on every row length up to 70 and along other dims") {
  for (int64_t n = 1; n <= 70; ++n) check_shape(3, n, 1, random_floats(3 * n, n, -4.0f, 4.0f));
  check_shape(5, 1000, 1, random_floats(5 * 1000, 1, -20.0f, 20.0f));
  check_shape(4, 9, 3, random_floats(4 * 9 * 3, 2, -4.0f, 4.0f));
}

TEST_CASE("fast softmax matches the reference on huge masked infinite and NaN logits") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t n = 19;
  std::vector<float> x = random_floats(6 * n, 3, -4.0f, 4.0f);
  x[0] = 1e30f;                                           // row 0: one huge logit
  for (int64_t k = 10; k < n; ++k) x[1 * n + k] = -1e6f;  // row 1: masked past position 10
  x[2 * n + 4] = -inf;                                    // row 2: one -inf
  x[3 * n + 5] = inf;                                     // row 3: +inf makes the row NaN
  x[4 * n + 6] = nan;                                     // row 4: NaN makes the row NaN
  for (int64_t k = 0; k < n; ++k) x[5 * n + k] = -inf;    // row 5: all -inf, NaN
  check_shape(6, n, 1, x);
  std::vector<float> y(x.size());
  softmax_forward(6, n, 1, x.data(), y.data(), false);
  CHECK(y[0] == 1.0f);
  for (int64_t k = 10; k < n; ++k) CHECK(y[1 * n + k] == 0.0f);
  CHECK(y[2 * n + 4] == 0.0f);
  CHECK(std::isnan(y[3 * n]));
  CHECK(std::isnan(y[4 * n]));
}

TEST_CASE("fast softmax gives bitwise the same rows on 1 and 2 threads") {
  const int saved = qkv::get_num_threads();
  const int64_t rows = 4096, n = 37;
  const std::vector<float> x = random_floats(rows * n, 4, -5.0f, 5.0f);
  std::vector<float> one(x.size()), two(x.size());
  qkv::set_num_threads(1);
  softmax_forward(rows, n, 1, x.data(), one.data(), false);
  qkv::set_num_threads(2);
  softmax_forward(rows, n, 1, x.data(), two.data(), false);
  qkv::set_num_threads(saved);
  CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
}

TEST_CASE("in the reference mode softmax and log_softmax run the plain loops forward and backward") {
  const int64_t rows = 64, n = 37;
  const std::vector<float> x = random_floats(rows * n, 5, -5.0f, 5.0f), dy = random_floats(rows * n, 6);
  const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (const bool log : {false, true}) {
    CAPTURE(log);
    // The plain loops' values and gradients, and the tensor op's in each mode.
    std::vector<float> y(x.size()), dx(x.size());
    softmax_forward_reference(rows, n, 1, x.data(), y.data(), log);
    softmax_backward_reference(rows, n, 1, y.data(), dy.data(), dx.data(), log);
    const auto op = [&](bool reference) {
      const qkv::ReferenceModeGuard mode(reference);
      const qkv::Tensor input = qkv::tensor(x, {rows, n}, true);
      const qkv::Tensor out = log ? input.log_softmax(-1) : input.softmax(-1);
      (out * qkv::tensor(dy, {rows, n})).sum().backward();
      return std::pair{out.to_vector(), input.grad().to_vector()};
    };
    const auto [fast_y, fast_dx] = op(false);
    const auto [plain_y, plain_dx] = op(true);
    // The vectorized exp rounds differently (in the values of softmax, in the gradient of
    // log_softmax, whose values subtract one shift per row): had the reference mode run the fast
    // kernels, the checks of bits below would fail.
    REQUIRE((!same_bits(fast_y, y) || !same_bits(fast_dx, dx)));
    CHECK(same_bits(plain_y, y));
    CHECK(same_bits(plain_dx, dx));
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(std::fabs(fast_y[i] - y[i]) <= 1e-6f * (1.0f + std::fabs(y[i])));
      CHECK(std::fabs(fast_dx[i] - dx[i]) <= 1e-5f);
    }
  }
}
