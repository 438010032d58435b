// nn::functional::masked_max: max-over-time pooling of sequences of different lengths.
#include <doctest/doctest.h>

#include <cmath>

#include "nn/functional/pooling.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using V = std::vector<float>;
namespace F = qkv::nn::functional;

TEST_CASE("masked_max takes the max over each sequence's first valid_lens positions only") {
  // Two sequences of L = 3 positions, F = 2 features; the padding holds large values that must not win.
  const Tensor x = tensor({{{1, -5}, {4, -2}, {99, 99}},  //
                           {{-3, 7}, {99, 99}, {99, 99}}});
  CHECK(F::masked_max(x, IndexTensor{2, 1}).to_vector() == V{4, -2, -3, 7});
  CHECK(F::masked_max(x, IndexTensor{3, 3}).to_vector() == V{99, 99, 99, 99});
}

TEST_CASE("masked_max sends the gradient to the picked position and none to the padding") {
  const Tensor x = tensor({{{1, 6}, {4, -2}, {9, 9}},  //
                           {{-3, 7}, {8, 8}, {9, 9}}},
                          true);
  (F::masked_max(x, IndexTensor{2, 1}) * tensor({{1, 2}, {3, 4}})).sum().backward();
  CHECK(x.grad().to_vector() == V{0, 2, 1, 0, 0, 0,  //
                                  3, 4, 0, 0, 0, 0});
}

TEST_CASE("masked_max gives the gradient of tied values to the first as PyTorch's max over a dim does") {
  const Tensor x = tensor({2, 5, 5, 5}, {1, 4, 1}, true);
  F::masked_max(x, IndexTensor{3}).sum().backward();
  CHECK(x.grad().to_vector() == V{0, 1, 0, 0});
}

TEST_CASE("masked_max refuses a length of 0 or past the sequence and shapes that do not fit") {
  const Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(
      F::masked_max(x, IndexTensor{2, 0}),
      "masked_max: valid_lens[1] is 0, expected a length in [1, 3] (the max over no position is "
      "undefined)",
      ValueError);
  CHECK_THROWS_AS(F::masked_max(x, IndexTensor{4, 1}), ValueError);
  CHECK_THROWS_AS(F::masked_max(x, IndexTensor{1, 1, 1}), ShapeError);
  CHECK_THROWS_AS(F::masked_max(zeros({2, 3}), IndexTensor{1, 1}), ShapeError);
}

TEST_CASE("masked_max propagates NaN from a valid position and ignores it in the padding") {
  const Tensor x = tensor({1, NAN, 3, 1, 2, NAN}, {2, 3, 1});
  const V out = F::masked_max(x, IndexTensor{3, 2}).to_vector();
  CHECK(std::isnan(out[0]));
  CHECK(out[1] == 2.0f);
}
