// Elementwise maps and reductions over long rows, which are cut into pieces of fixed size so that
// threads can share them: the pieces must join up exactly, and the result must not depend on
// the number of threads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "random_floats.h"
#include "tensor/kernels/elementwise.h"
#include "tensor/kernels/reduce.h"
#include "tensor/threads.h"

using namespace qkv::kernels;

namespace {

// fn's output on 1 and on 2 threads.
std::pair<std::vector<float>, std::vector<float>> on_1_and_2_threads(
    const std::function<std::vector<float>()>& fn) {
  const int saved = qkv::get_num_threads();
  qkv::set_num_threads(1);
  std::vector<float> one = fn();
  qkv::set_num_threads(2);
  std::vector<float> two = fn();
  qkv::set_num_threads(saved);
  return {one, two};
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("elementwise maps over rows longer than a piece give every element its exact value") {
  const int64_t n = 3 * kPiece + 17;
  const std::vector<float> a = random_floats(2 * n, 1), b = random_floats(2 * n, 2),
                           bias = random_floats(n, 3);
  const auto [one, two] = on_1_and_2_threads([&] {
    std::vector<float> out(static_cast<size_t>(4 * 2 * n));
    float* o = out.data();
    unary_map(2 * n, a.data(), o, [](float x) { return x * x; });
    binary_map({2, n}, a.data(), {n, 1}, b.data(), {n, 1}, o + 2 * n, [](float x, float y) { return x - y; });
    binary_map({2, n}, a.data(), {n, 1}, bias.data(), {0, 1}, o + 4 * n,
               [](float x, float y) { return x * y; });
    ternary_map({2, n}, a.data(), {n, 1}, b.data(), {n, 1}, bias.data(), {0, 1}, o + 6 * n,
                [](float x, float y, float z) { return x > 0.0f ? y : z; });
    return out;
  });
  CHECK(bitwise_equal(one, two));
  int64_t bad = 0;
  for (int64_t i = 0; i < 2 * n; ++i) {
    const int64_t j = i % n;
    bad += one[i] != a[i] * a[i];
    bad += one[2 * n + i] != a[i] - b[i];
    bad += one[4 * n + i] != a[i] * bias[j];
    bad += one[6 * n + i] != (a[i] > 0.0f ? b[i] : bias[j]);
  }
  CHECK(bad == 0);
}

TEST_CASE("copy_strided copies a long transposed view piece by piece") {
  const int64_t rows = 3, cols = kPiece + 5;
  const std::vector<float> src = random_floats(rows * cols, 4);
  std::vector<float> dst(src.size());
  // dst (cols, rows) row-major = srcᵀ: the source is read with strides (1, cols).
  copy_strided({cols, rows}, src.data(), {1, cols}, dst.data(), {rows, 1});
  int64_t bad = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) bad += dst[j * rows + i] != src[i * cols + j];
  CHECK(bad == 0);
}

TEST_CASE("sum_dim over long rows and wide columns is close to exact and the same on any thread count") {
  const int64_t n = 5 * 16384 + 3, outer = 3;
  const std::vector<float> x = random_floats(outer * n, 5);
  const auto [one, two] = on_1_and_2_threads([&] {
    std::vector<float> out(static_cast<size_t>(outer));
    sum_dim(outer, n, 1, x.data(), out.data());
    return out;
  });
  CHECK(bitwise_equal(one, two));
  for (int64_t o = 0; o < outer; ++o) {
    double exact = 0.0;
    for (int64_t k = 0; k < n; ++k) exact += x[o * n + k];
    CHECK(std::fabs(one[o] - exact) < 1e-3);
  }
  // Over the first dim: each column is summed row by row in order, exactly like the naive loop.
  const int64_t rows = 37, inner = 1000;
  const std::vector<float> y = random_floats(rows * inner, 6);
  const auto [cols_one, cols_two] = on_1_and_2_threads([&] {
    std::vector<float> out(static_cast<size_t>(inner));
    sum_dim(1, rows, inner, y.data(), out.data());
    return out;
  });
  CHECK(bitwise_equal(cols_one, cols_two));
  int64_t bad = 0;
  for (int64_t i = 0; i < inner; ++i) {
    float naive = 0.0f;
    for (int64_t k = 0; k < rows; ++k) naive += y[k * inner + i];
    bad += cols_one[i] != naive;
  }
  CHECK(bad == 0);
}

TEST_CASE("sum_abs_pow is exact to double rounding and the same on any thread count") {
  const int64_t n = 4 * 16384 + 11;
  const std::vector<float> x = random_floats(n, 7);
  for (float p : {1.0f, 2.0f, 3.0f}) {
    CAPTURE(p);
    const auto [one, two] = on_1_and_2_threads(
        [&] { return std::vector<float>{static_cast<float>(sum_abs_pow(n, x.data(), p))}; });
    CHECK(bitwise_equal(one, two));
    double exact = 0.0;
    for (float v : x) exact += std::pow(std::fabs(static_cast<double>(v)), p);
    CHECK(std::fabs(sum_abs_pow(n, x.data(), p) - exact) < 1e-9 * exact);
  }
}
