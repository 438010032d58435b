// Sinusoidal positional encoding (d2l 10.6.3): its values, the relative-position property the seeds
// derive, and the module's behaviour.
#include <doctest/doctest.h>

#include <cmath>

#include "gradcheck_registry.h"
#include "nn/positional_encoding.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;

TEST_CASE("sinusoidal_table matches sin and cos of position over 10000 to the 2j over d") {
  // d2l's plotting example: encoding_dim 32, num_steps 60. Expected values in double precision,
  // straight from the formula; the table is float32, so agreement is to float rounding of the
  // argument (position up to 59, ulp about 4e-6).
  const int64_t D = 32, T = 60;
  const Tensor P = nn::sinusoidal_table(T, D);
  REQUIRE(P.shape() == Shape{T, D});
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < D / 2; ++j) {
      const double x = static_cast<double>(i) / std::pow(10000.0, 2.0 * static_cast<double>(j) / D);
      CHECK(P.at({i, 2 * j}) == doctest::Approx(std::sin(x)).epsilon(2e-5));
      CHECK(P.at({i, 2 * j + 1}) == doctest::Approx(std::cos(x)).epsilon(2e-5));
    }
  // Row 0 is (0, 1, 0, 1, ...); column 6 of row 1 is sin(1/10000^(6/32)) = sin(0.17783) = 0.17689.
  CHECK(P.at({0, 0}) == 0.0f);
  CHECK(P.at({0, 1}) == 1.0f);
  CHECK(P.at({1, 6}) == doctest::Approx(0.176896).epsilon(1e-5));
}

TEST_CASE("P at position i plus delta is a fixed rotation of P at i for every frequency") {
  // d2l 10.6.3.2: [p(i+δ,2j), p(i+δ,2j+1)] = [[cos δω, sin δω], [-sin δω, cos δω]] · [p(i,2j), p(i,2j+1)]
  // with ω = 1/10000^(2j/d); the rotation depends on δ only, not on i.
  const int64_t D = 16, T = 64;
  const Tensor P = nn::sinusoidal_table(T, D);
  for (int64_t delta : {1, 3, 10, 25})
    for (int64_t i : {int64_t{0}, int64_t{5}, int64_t{20}, T - 1 - delta})
      for (int64_t j = 0; j < D / 2; ++j) {
        const double w = 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(j) / D);
        const double c = std::cos(delta * w), s = std::sin(delta * w);
        const double a = P.at({i, 2 * j}), b = P.at({i, 2 * j + 1});
        CHECK(P.at({i + delta, 2 * j}) == doctest::Approx(c * a + s * b).epsilon(1e-4));
        CHECK(P.at({i + delta, 2 * j + 1}) == doctest::Approx(-s * a + c * b).epsilon(1e-4));
      }
}

TEST_CASE("PositionalEncoding adds P to every sequence of the batch and keeps P out of state_dict") {
  nn::PositionalEncoding pe(4, 0.5f, 10);
  pe.eval();
  const Tensor X = randn({2, 3, 4});
  const Tensor Y = pe.forward(X);
  REQUIRE(Y.shape() == Shape{2, 3, 4});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t k = 0; k < 4; ++k) CHECK(Y.at({b, t, k}) == X.at({b, t, k}) + pe.P.at({t, k}));
  CHECK(pe.state_dict().empty());
  CHECK(pe.P.shape() == Shape{10, 4});
  pe.train();
  const std::vector<float> dropped = pe.forward(X).to_vector();
  int64_t zeros = 0;
  for (float v : dropped) zeros += v == 0.0f;
  CHECK(zeros > 0);  // dropout after the addition, in training only
}

TEST_CASE("PositionalEncoding rejects a wrong width a sequence past max_len an odd width and a base of 1") {
  nn::PositionalEncoding pe(4, 0.0f, 5);
  CHECK_THROWS_WITH_AS(pe.forward(zeros({1, 3, 6})), "PositionalEncoding: input of shape (1,3,6) must be (B, T, 4)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(pe.forward(zeros({1, 6, 4})), "PositionalEncoding: sequence length 6 exceeds max_len 5",
                       ShapeError);
  CHECK_THROWS_AS(nn::PositionalEncoding(5, 0.0f), ValueError);
  CHECK_THROWS_AS(nn::sinusoidal_table(0, 4), ValueError);
  CHECK_THROWS_WITH_AS(nn::sinusoidal_table(4, 4, 1.0f), "sinusoidal_table: base must be greater than 1, got 1.000000",
                       ValueError);
}

QKV_GRADCHECK_MODULE("PositionalEncoding", {In::normal({2, 3, 6})},
                     [] { return std::make_shared<nn::PositionalEncoding>(6, 0.0f, 8); },
                     [](nn::PositionalEncoding& m, const Inputs& x) { return m.forward(x[0]); });
