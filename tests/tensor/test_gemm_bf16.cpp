// gemm under qkv::MatmulPrecision::medium (tensor/precision.h, tensor/kernels/gemm_bf16.cpp):
// operands rounded to bfloat16, products summed in float32. Checked against a triple loop over the
// operands rounded here independently (frexp and round-half-to-even), with float32's tolerance for
// the sums, on every tail of the tile, both transposes, odd depths, several k and row blocks,
// alpha, beta, the bias, strided C; and against the float32 product within bfloat16's rounding.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "random_floats.h"
#include "tensor/error.h"
#include "tensor/kernels/gemm.h"
#include "tensor/precision.h"
#include "tensor/threads.h"

using namespace qkv::kernels;

namespace {

// Sets a matmul precision for one test and restores the default.
struct PrecisionScope {
  explicit PrecisionScope(qkv::MatmulPrecision p) { qkv::set_matmul_precision(p); }
  ~PrecisionScope() { qkv::set_matmul_precision(qkv::MatmulPrecision::highest); }
};

// x rounded to 8 significant bits, ties to even: bfloat16's rounding, computed from the value
// (the kernel works on the bits).
float round_to_bf16(float x) {
  if (x == 0.0f || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(static_cast<double>(x), &e);  // |m| in [0.5, 1)
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8));
}

struct Product {
  bool ta, tb;
  int64_t M, N, K, pad = 0;
  float alpha = 1.0f, beta = 0.0f;
  bool with_bias = false;

  int64_t lda() const { return (ta ? M : K) + pad; }
  int64_t ldb() const { return (tb ? K : N) + pad; }
  int64_t ldc() const { return N + pad; }
  std::vector<float> A() const { return random_floats((ta ? K : M) * lda(), 11); }
  std::vector<float> B() const { return random_floats((tb ? N : K) * ldb(), 12); }
  std::vector<float> C() const { return random_floats(M * ldc(), 13); }
  std::vector<float> bias() const { return random_floats(N, 14); }
  float a(const std::vector<float>& A, int64_t i, int64_t k) const {
    return ta ? A[k * lda() + i] : A[i * lda() + k];
  }
  float b(const std::vector<float>& B, int64_t k, int64_t j) const {
    return tb ? B[j * ldb() + k] : B[k * ldb() + j];
  }

  // gemm (or gemm_bias) at the current precision.
  std::vector<float> run() const {
    const std::vector<float> a = A(), b = B(), bias_values = bias();
    std::vector<float> c = C();
    if (with_bias)
      gemm_bias(ta, tb, M, N, K, a.data(), lda(), b.data(), ldb(), bias_values.data(), c.data(), ldc());
    else
      gemm(ta, tb, M, N, K, alpha, a.data(), lda(), b.data(), ldb(), beta, c.data(), ldc());
    return c;
  }
};

// Checks the medium-precision product (one of at least kMinBf16Product multiply-adds, so that it
// runs in bfloat16) element by element against the exact product of the rounded operands: within float32's
// error of a K-term sum (2·(K + 2)·eps·S, S the sum of the terms' magnitudes), where a wrong, missing or
// unrounded term is off by about S/K. (Rounding itself is checked exactly below.) Columns past N must keep
// their values.
void check_bf16(const Product& p) {
  CAPTURE(p.ta);
  CAPTURE(p.tb);
  CAPTURE(p.M);
  CAPTURE(p.N);
  CAPTURE(p.K);
  REQUIRE(p.M * p.N * p.K >= kMinBf16Product);
  const PrecisionScope medium(qkv::MatmulPrecision::medium);
  const std::vector<float> got = p.run(), C0 = p.C(), bias = p.bias();
  std::vector<float> A = p.A(), B = p.B();
  for (float& x : A) x = round_to_bf16(x);
  for (float& x : B) x = round_to_bf16(x);
  const float alpha = p.with_bias ? 1.0f : p.alpha, beta = p.with_bias ? 0.0f : p.beta;
  const double eps = std::numeric_limits<float>::epsilon();
  int64_t bad = 0;
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.ldc(); ++j) {
      const size_t at = static_cast<size_t>(i * p.ldc() + j);
      if (j >= p.N) {
        bad += got[at] != C0[at];
        continue;
      }
      double exact = 0, S = 0;
      for (int64_t k = 0; k < p.K; ++k) {
        const double term = static_cast<double>(p.a(A, i, k)) * p.b(B, k, j);
        exact += term, S += std::fabs(term);
      }
      double want = alpha * exact + (beta == 0.0f ? 0.0 : beta * C0[at]) + (p.with_bias ? bias[j] : 0.0);
      S = std::fabs(alpha) * S + (beta == 0.0f ? 0.0 : std::fabs(beta * C0[at])) +
          (p.with_bias ? std::fabs(bias[j]) : 0.0);
      bad += !(std::fabs(got[at] - want) <= 2.0 * (p.K + 2) * eps * S + 1e-30);
    }
  CHECK(bad == 0);
}

constexpr bool kTrans[][2] = {{false, false}, {false, true}, {true, false}, {true, true}};

}  // namespace

TEST_CASE("round_to_bf16 keeps 8 significant bits and rounds ties to even") {
  CHECK(round_to_bf16(1.0f) == 1.0f);
  CHECK(round_to_bf16(1.0f + 1.0f / 256) == 1.0f);              // a tie below an even last bit: down
  CHECK(round_to_bf16(1.0f + 3.0f / 256) == 1.0f + 1.0f / 64);  // a tie above an odd last bit: up
  CHECK(round_to_bf16(1.0f + 1.0f / 128) == 1.0f + 1.0f / 128);
  CHECK(round_to_bf16(-3.14159f) == -3.140625f);
}

TEST_CASE("set_matmul_precision(medium) is refused exactly where the build has no bfloat16 kernel") {
  CHECK(qkv::get_matmul_precision() == qkv::MatmulPrecision::highest);
  // A value outside the enum (a cast integer) was stored, and gemm then took it for highest.
  CHECK_THROWS_WITH_AS(qkv::set_matmul_precision(static_cast<qkv::MatmulPrecision>(7)),
                       "set_matmul_precision: 7 is not a MatmulPrecision (highest or medium)", qkv::ValueError);
  CHECK(qkv::get_matmul_precision() == qkv::MatmulPrecision::highest);
  if (!qkv::bf16_matmul_available()) {
    CHECK_THROWS_AS(qkv::set_matmul_precision(qkv::MatmulPrecision::medium), qkv::ValueError);
    CHECK(qkv::get_matmul_precision() == qkv::MatmulPrecision::highest);
    return;
  }
  const PrecisionScope medium(qkv::MatmulPrecision::medium);
  CHECK(qkv::get_matmul_precision() == qkv::MatmulPrecision::medium);
}

// The smallest depth at least `k` that makes an M×N product reach the bfloat16 kernel, odd (a
// pair padded with a zero) when `odd`.
int64_t depth_for_bf16(int64_t M, int64_t N, int64_t k, bool odd) {
  const int64_t d = std::max(k, (kMinBf16Product + M * N - 1) / (M * N));
  return d % 2 == (odd ? 1 : 0) ? d : d + 1;
}

TEST_CASE("medium precision gemm sums the rounded operands' products in float32 on every tile tail") {
  if (!qkv::bf16_matmul_available()) return;  // the refusal is checked above
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans) {
    for (int64_t M : {int64_t{1}, cfg.mr - 1, cfg.mr + 1, cfg.mc + cfg.mr + 1})
      for (int64_t N : {int64_t{1}, cfg.nr - 1, cfg.nr + 1})
        for (bool odd : {false, true}) check_bf16({ta, tb, M, N, depth_for_bf16(M, N, 4 * cfg.kc + 5, odd)});
    check_bf16({ta, tb, 3, cfg.nc + cfg.nr + 1, 15});  // more columns than one B block
    Product scaled{ta, tb, 19, 35, depth_for_bf16(19, 35, 1, true), /*pad=*/5};
    scaled.alpha = -0.5f, scaled.beta = 0.5f;
    check_bf16(scaled);
    Product biased{ta, tb, 29, 37, depth_for_bf16(29, 37, 1, true), /*pad=*/3};
    biased.with_bias = true;
    check_bf16(biased);
  }
}

TEST_CASE("medium precision leaves products under kMinBf16Product in float32, to the bit") {
  if (!qkv::bf16_matmul_available()) return;
  for (auto [ta, tb] : kTrans)
    for (Product p : {Product{ta, tb, 1, 1, 7}, Product{ta, tb, 64, 45, 16}, Product{ta, tb, 13, 33, 300}}) {
      REQUIRE(p.M * p.N * p.K < kMinBf16Product);
      const std::vector<float> fp32 = p.run();
      const PrecisionScope medium(qkv::MatmulPrecision::medium);
      const std::vector<float> got = p.run();
      CHECK(std::memcmp(got.data(), fp32.data(), got.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("medium precision stays within bfloat16's rounding of the float32 product") {
  if (!qkv::bf16_matmul_available()) return;
  // Each operand moves by at most 2⁻⁸ of itself, so each term by at most about 2⁻⁷: the product is
  // off by at most 2⁻⁷·S (and float32's error), and by much more than float32's error, so the two
  // precisions do differ.
  const Product p{false, true, 64, 96, 256};
  const std::vector<float> fp32 = p.run();
  std::vector<float> bf16;
  {
    const PrecisionScope medium(qkv::MatmulPrecision::medium);
    bf16 = p.run();
  }
  double worst = 0, differ = 0;
  const std::vector<float> A = p.A(), B = p.B();
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) {
      double S = 0;
      for (int64_t k = 0; k < p.K; ++k) S += std::fabs(static_cast<double>(p.a(A, i, k)) * p.b(B, k, j));
      const double d = std::fabs(bf16[i * p.N + j] - fp32[i * p.N + j]);
      worst = std::max(worst, d / S);
      differ += d > 0;
    }
  CHECK(worst <= std::ldexp(1.0, -7) + 2.0 * (p.K + 2) * std::numeric_limits<float>::epsilon());
  CHECK(differ > 0.9 * p.M * p.N);
}

TEST_CASE("medium precision gemm on small integers is exact, every term once") {
  if (!qkv::bf16_matmul_available()) return;
  // Integers up to 15 are bfloat16 values, and the sums of their products here stay below 2²⁴:
  // every step is exact, so a term missing, repeated or paired with the wrong one shows to the bit.
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans)
    for (const Product& p : {Product{ta, tb, cfg.mc + cfg.mr + 1, cfg.nr + 1, 4 * cfg.kc + 5, /*pad=*/2},
                             Product{ta, tb, 5, 3, depth_for_bf16(5, 3, 1, true)}}) {
      CAPTURE(p.M);
      std::vector<float> A = p.A(), B = p.B();
      for (float& x : A) x = std::round(x * 15.0f);
      for (float& x : B) x = std::round(x * 15.0f);
      std::vector<float> C(static_cast<size_t>(p.M * p.ldc()), -1.0f);
      const PrecisionScope medium(qkv::MatmulPrecision::medium);
      gemm(ta, tb, p.M, p.N, p.K, 1.0f, A.data(), p.lda(), B.data(), p.ldb(), 0.0f, C.data(), p.ldc());
      int64_t bad = 0;
      for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.ldc(); ++j) {
          double exact = -1.0;  // the padding keeps its value
          if (j < p.N) {
            exact = 0.0;
            for (int64_t k = 0; k < p.K; ++k) exact += static_cast<double>(p.a(A, i, k)) * p.b(B, k, j);
          }
          bad += C[i * p.ldc() + j] != exact;
        }
      CHECK(bad == 0);
    }
}

TEST_CASE("medium precision rounds each operand to nearest bfloat16, ties to even, in every packing path") {
  if (!qkv::bf16_matmul_available()) return;
  // C = A·B with every element of A equal to x and of B equal to 1 is K·bf16(x), exactly. K = 40
  // packs 32 values of a line with SIMD and the last 8 one at a time (lines along k), or pairs
  // of k across 16 lines with SIMD (one k across lines), for each transpose.
  const int64_t M = 64, N = 64, K = 40;
  const std::pair<float, float> cases[] = {
      {1.0f + 3.0f / 512, 1.0f + 1.0f / 128},  // nearer the value above
      {1.0f + 1.0f / 256, 1.0f},               // a tie: to the even 1.0
      {1.0f + 3.0f / 256, 1.0f + 1.0f / 64},   // a tie: to the even 1 + 2⁻⁶
      {-2.0f - 1.0f / 512, -2.0f},             // nearer the value below, negative
      {1e-39f, 0.0f},                          // a denormal: zero, as VDPBF16PS reads it
  };
  for (auto [ta, tb] : kTrans)
    for (auto [x, rounded] : cases) {
      CAPTURE(x);
      const std::vector<float> A(M * K, x), B(K * N, 1.0f);
      std::vector<float> C(M * N);
      const PrecisionScope medium(qkv::MatmulPrecision::medium);
      gemm(ta, tb, M, N, K, 1.0f, A.data(), ta ? M : K, B.data(), tb ? K : N, 0.0f, C.data(), N);
      CHECK(std::count(C.begin(), C.end(), K * rounded) == M * N);
    }
}

TEST_CASE("medium precision with beta 0 never reads C, and a NaN of A reaches its row only") {
  if (!qkv::bf16_matmul_available()) return;
  const int64_t M = 40, N = 50, K = 70;
  std::vector<float> A = random_floats(M * K, 21), B = random_floats(K * N, 22);
  std::vector<float> C(M * N, std::numeric_limits<float>::quiet_NaN());
  A[7 * K + 3] = std::numeric_limits<float>::quiet_NaN();
  const PrecisionScope medium(qkv::MatmulPrecision::medium);
  gemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
  int64_t nan_rows = 0, nans_elsewhere = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const bool nan = std::isnan(C[i * N + j]);
      if (i == 7)
        nan_rows += nan;
      else
        nans_elsewhere += nan;
    }
  CHECK(nan_rows == N);
  CHECK(nans_elsewhere == 0);
}

TEST_CASE("medium precision gemm_bias and gemm_batched give one gemm's result, for 1 and 2 threads") {
  if (!qkv::bf16_matmul_available()) return;
  const int saved = qkv::get_num_threads();
  const PrecisionScope medium(qkv::MatmulPrecision::medium);
  // gemm_bias: the product, then the bias, to the bit, on any thread count.
  Product biased{false, true, 300, 70, 200};
  biased.with_bias = true;
  qkv::set_num_threads(1);
  const std::vector<float> one = biased.run();
  qkv::set_num_threads(2);
  CHECK(biased.run() == one);
  Product plain = biased;
  plain.with_bias = false;
  std::vector<float> want = plain.run();
  const std::vector<float> bias = biased.bias();
  for (int64_t i = 0; i < plain.M; ++i)
    for (int64_t j = 0; j < plain.N; ++j) want[i * plain.N + j] += bias[j];
  CHECK(one == want);
  // gemm_batched: products of 64³ (above kMinBf16Product) spread one per thread, each as gemm.
  const int64_t batch = 6, n = 64, size = n * n;
  const std::vector<float> A = random_floats(batch * size, 31), B = random_floats(batch * size, 32);
  std::vector<float> batched(batch * size), single(batch * size);
  gemm_batched(batch, false, true, n, n, n, 1.0f, A.data(), n, size, B.data(), n, size, 0.0f, batched.data(),
               n, size);
  qkv::set_num_threads(1);
  for (int64_t b = 0; b < batch; ++b)
    gemm(false, true, n, n, n, 1.0f, A.data() + b * size, n, B.data() + b * size, n, 0.0f,
         single.data() + b * size, n);
  CHECK(batched == single);
  qkv::set_num_threads(saved);
}

TEST_CASE("medium precision gemm is bitwise identical for 1 and 2 threads") {
  if (!qkv::bf16_matmul_available()) return;
  const int saved = qkv::get_num_threads();
  const GemmConfig cfg = gemm_config();
  for (auto [ta, tb] : kTrans) {
    Product p{ta, tb, 2 * cfg.mc + 5, 3 * cfg.nr + 1, 2 * cfg.kc + 3};
    p.beta = 0.75f;
    const PrecisionScope medium(qkv::MatmulPrecision::medium);
    qkv::set_num_threads(1);
    const std::vector<float> one = p.run();
    qkv::set_num_threads(2);
    const std::vector<float> two = p.run();
    CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
  }
  qkv::set_num_threads(saved);
}
