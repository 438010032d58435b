// Bilinear resampling of a grid of vectors (nn/functional/interpolate.h), as the ViT carries a
// learned table of positions to another grid: against PyTorch's interpolate, and its gradient.
#include <doctest/doctest.h>

#include <cmath>

#include "gradcheck_registry.h"
#include "nn/functional/interpolate.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;

QKV_GRADCHECK("resize_bilinear up and down", {In::normal({3, 2, 2})},
              [](const Inputs& x) { return nn::functional::resize_bilinear(x[0], 5, 1); });

TEST_CASE("resize_bilinear matches PyTorch's bilinear interpolate (align_corners=False)") {
  // tests/nn/resize_golden.py
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[static_cast<size_t>(i)] = static_cast<float>(std::pow(i, 1.5));
  const Tensor x = tensor(values, {2, 3, 2});
  const std::vector<std::pair<Shape, std::vector<float>>> golden = {
      {{3, 5, 2}, {0,        1,        1.131371f, 2.678461f, 2.828427f, 5.196153f, 5.931371f, 8.786665f,
                   8,        11.18034f, 7.348469f, 9.76013f,  9.500251f, 12.29531f, 12.72792f, 16.09808f,
                   16.978f,  20.7382f, 19.81139f, 23.83161f, 14.69694f, 18.52026f, 17.86913f, 21.91216f,
                   22.62742f, 27,      28.02463f, 32.68972f, 31.62278f, 36.48287f}},
      {{4, 7, 2}, {0,         1,         0.404061f, 1.59945f,  1.616244f, 3.397801f, 2.828427f, 5.196152f,
                   5.044816f, 7.760804f, 7.261204f, 10.32546f, 8,         11.18034f, 3.674235f, 5.380065f,
                   4.260512f, 6.132501f, 6.019343f, 8.389808f, 7.778175f, 10.64711f, 10.40425f, 13.58663f,
                   13.03033f, 16.52614f, 13.90569f, 17.50597f, 11.0227f,  14.14019f, 11.97341f, 15.1986f,
                   14.82554f, 18.37382f, 17.67767f, 21.54904f, 21.12313f, 25.23827f, 24.56859f, 28.9275f,
                   25.71708f, 30.15724f, 14.69694f, 18.52026f, 15.82986f, 19.73165f, 19.22864f, 23.36583f,
                   22.62742f, 27,        26.48257f, 31.06409f, 30.33772f, 35.12817f, 31.62278f, 36.48287f}},
      {{1, 2, 2}, {8.693333f, 11.34462f, 18.04052f, 21.89822f}},
  };
  for (const auto& [shape, expected] : golden) {
    CAPTURE(shape_str(shape));
    const Tensor y = nn::functional::resize_bilinear(x, shape[0], shape[1]);
    REQUIRE(y.shape() == shape);
    const std::vector<float> got = y.to_vector();
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(2e-6));
  }
  CHECK((nn::functional::resize_bilinear(x, 2, 3) - x).abs().max().item() == 0.0f);  // the same size: itself
  CHECK_THROWS_AS(nn::functional::resize_bilinear(randn({2, 3}), 4, 4), ShapeError);
  CHECK_THROWS_AS(nn::functional::resize_bilinear(x, 0, 4), ValueError);
}
