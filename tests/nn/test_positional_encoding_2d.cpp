// 2-D sinusoidal positional encoding (seed 004): its channel layout (x half, then y half), its values,
// the per-axis rotation property, and the module.
#include <doctest/doctest.h>

#include <cmath>

#include "gradcheck_registry.h"
#include "nn/positional_encoding.h"
#include "nn/positional_encoding_2d.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;

TEST_CASE("sinusoidal_table_2d puts the encoding of x in the first half and of y in the second") {
  const int64_t H = 5, W = 7, D = 12;
  const Tensor P = nn::sinusoidal_table_2d(H, W, D);
  REQUIRE(P.shape() == Shape{H, W, D});
  const Tensor px = nn::sinusoidal_table(W, D / 2), py = nn::sinusoidal_table(H, D / 2);
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) {
      CHECK(P.select(0, y).select(0, x).narrow(0, 0, D / 2).to_vector() == px.select(0, x).to_vector());
      CHECK(P.select(0, y).select(0, x).narrow(0, D / 2, D / 2).to_vector() == py.select(0, y).to_vector());
    }
}

TEST_CASE("sinusoidal_table_2d follows the seed formula with D over 2 in the exponent") {
  // Seed 004: PE(x, 2i) = sin(x / 10000^(2i/(D/2))), PE(x, 2i+1) = cos(...), the same for y, in double.
  const int64_t H = 6, W = 9, D = 16, half = D / 2;
  const Tensor P = nn::sinusoidal_table_2d(H, W, D);
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x)
      for (int64_t i = 0; i < half / 2; ++i) {
        const double w = 1.0 / std::pow(10000.0, 2.0 * i / half);
        CHECK(P.at({y, x, 2 * i}) == doctest::Approx(std::sin(x * w)).epsilon(1e-5));
        CHECK(P.at({y, x, 2 * i + 1}) == doctest::Approx(std::cos(x * w)).epsilon(1e-5));
        CHECK(P.at({y, x, half + 2 * i}) == doctest::Approx(std::sin(y * w)).epsilon(1e-5));
        CHECK(P.at({y, x, half + 2 * i + 1}) == doctest::Approx(std::cos(y * w)).epsilon(1e-5));
      }
  // By hand, D = 8: channel 2 of (y, x) = (2, 3) is sin(3/10000^(2/4)) = sin(0.03) = 0.0299955;
  // channel 7 is cos(2/100) = 0.9998000.
  const Tensor small = nn::sinusoidal_table_2d(4, 4, 8);
  CHECK(small.at({2, 3, 2}) == doctest::Approx(0.0299955).epsilon(1e-5));
  CHECK(small.at({2, 3, 7}) == doctest::Approx(0.9998000).epsilon(1e-6));
}

TEST_CASE("sinusoidal_table_2d shifted along one axis rotates that axis's half and keeps the other") {
  // Per axis, the 1-D property (d2l 10.6.3.2): moving δ along x turns pair j of the x half by δ·ω_j,
  // ω_j = 1/10000^(2j/(D/2)), whatever the position; the y half does not change. Likewise along y.
  const int64_t H = 20, W = 24, D = 16, half = D / 2;
  const Tensor P = nn::sinusoidal_table_2d(H, W, D);
  for (const int64_t delta : {1, 4, 11})
    for (const int64_t y : {0, 3, 8})
      for (const int64_t x : {0, 5, 12}) {
        for (int64_t j = 0; j < half / 2; ++j) {
          const double w = 1.0 / std::pow(10000.0, 2.0 * j / half);
          const double c = std::cos(delta * w), s = std::sin(delta * w);
          for (const int64_t axis : {0, 1}) {  // 0: along x (the first half), 1: along y (the second half)
            const int64_t ys = axis == 1 ? y + delta : y, xs = axis == 0 ? x + delta : x,
                          k = axis * half + 2 * j;
            const double a = P.at({y, x, k}), b = P.at({y, x, k + 1});
            CHECK(P.at({ys, xs, k}) == doctest::Approx(c * a + s * b).epsilon(1e-4));
            CHECK(P.at({ys, xs, k + 1}) == doctest::Approx(-s * a + c * b).epsilon(1e-4));
          }
        }
        CHECK(P.select(0, y).select(0, x + delta).narrow(0, half, half).to_vector() ==
              P.select(0, y).select(0, x).narrow(0, half, half).to_vector());
        CHECK(P.select(0, y + delta).select(0, x).narrow(0, 0, half).to_vector() ==
              P.select(0, y).select(0, x).narrow(0, 0, half).to_vector());
      }
}

TEST_CASE("PositionalEncoding2D adds the top-left H by W corner of its table to every grid") {
  nn::PositionalEncoding2D pe(8, 0.5f, 6, 10);
  pe.eval();
  CHECK(pe.P.shape() == Shape{6, 10, 8});
  CHECK(pe.state_dict().empty());
  const Tensor X = randn({2, 3, 5, 8});
  const Tensor Y = pe.forward(X);
  REQUIRE(Y.shape() == Shape{2, 3, 5, 8});
  const Tensor P = nn::sinusoidal_table_2d(3, 5, 8);  // a grid's table does not depend on the maximum
  for (int64_t b = 0; b < 2; ++b) CHECK(Y.select(0, b).to_vector() == (X.select(0, b) + P).to_vector());
  // Flattened to a sequence, token y·W + x carries the encoding of (x, y).
  CHECK(Y.flatten(1, 2).select(1, 2 * 5 + 4).to_vector() == Y.select(1, 2).select(1, 4).to_vector());
  pe.train();
  int64_t zeros_seen = 0;
  for (float v : pe.forward(X).to_vector()) zeros_seen += v == 0.0f;
  CHECK(zeros_seen > 0);  // dropout after the addition, in training only
  CHECK(pe.summary() ==
        "PositionalEncoding2D(num_hiddens=8, max_height=6, max_width=10)\n"
        "  dropout: Dropout(p=0.500000)\n");
}

TEST_CASE("PositionalEncoding2D rejects channels not divisible by 4 a wrong shape and a grid too large") {
  CHECK_THROWS_WITH_AS(
      nn::PositionalEncoding2D(6, 0.0f),
      "sinusoidal_table_2d: got height 64, width 64 and 6 channels; need positive sizes and channels "
      "divisible by 4 (two halves of sin/cos pairs)",
      ValueError);
  nn::PositionalEncoding2D pe(4, 0.0f, 3, 5);
  CHECK_THROWS_WITH_AS(pe.forward(zeros({2, 15, 4})),
                       "PositionalEncoding2D: input of shape (2,15,4) must be (B, H, W, 4)", ShapeError);
  CHECK_THROWS_WITH_AS(
      pe.forward(zeros({1, 3, 6, 4})),
      "PositionalEncoding2D: a grid of height 3 and width 6 exceeds max_height 3 or max_width 5", ShapeError);
  CHECK_THROWS_AS(pe.forward(zeros({1, 4, 5, 4})), ShapeError);
}

QKV_GRADCHECK_MODULE(
    "PositionalEncoding2D", {In::normal({2, 2, 3, 4})},
    [] { return std::make_shared<nn::PositionalEncoding2D>(4, 0.0f, 4, 4); },
    [](nn::PositionalEncoding2D& m, const Inputs& x) { return m.forward(x[0]); });
