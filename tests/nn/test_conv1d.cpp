// nn::Conv1d and nn::functional::conv1d on channels-last sequences: the unfold1d op they are built
// on, a plain loop over the definition, PyTorch's golden values (tests/nn/char_golden.py), the
// initialization and the errors. Gradient checks: tests/nn/gradcheck_layers.cpp and
// tests/autograd/gradcheck_layer_ops.cpp.
#include <doctest/doctest.h>

#include <array>
#include <cmath>

#include "autograd/ops/unfold.h"
#include "nn/char_golden_testing.h"
#include "nn/conv1d.h"
#include "nn/functional/conv.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;
using V = std::vector<float>;

namespace {

// The definition, one output at a time: out[n, t, o] = b[o] + Σ_{c, j} w[o, c, j] · x[n, t − p + j·d, c].
Tensor conv1d_loop(const Tensor& x, const Tensor& w, const Tensor& b, int64_t p, int64_t d) {
  const int64_t N = x.size(0), L = x.size(1), C = x.size(2), O = w.size(0), K = w.size(2);
  const int64_t L_out = L + 2 * p - d * (K - 1);
  std::vector<float> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < L_out; ++t)
      for (int64_t o = 0; o < O; ++o) {
        double acc = b.at({o});
        for (int64_t c = 0; c < C; ++c)
          for (int64_t j = 0; j < K; ++j) {
            const int64_t s = t - p + j * d;
            if (s >= 0 && s < L) acc += static_cast<double>(w.at({o, c, j})) * x.at({n, s, c});
          }
        out.push_back(static_cast<float>(acc));
      }
  return tensor(out, {N, L_out, O});
}

}  // namespace

TEST_CASE("unfold1d lays out each window of a channels-last sequence as one row") {
  const Tensor x = tensor({{{1, 2}, {3, 4}, {5, 6}}});  // (1, 3, 2)
  const Tensor cols = unfold1d(x, 3, 1);
  CHECK(cols.shape() == Shape{1, 3, 6});
  CHECK(cols.to_vector() == V{0, 0, 1, 2, 3, 4,  //
                              1, 2, 3, 4, 5, 6,  //
                              3, 4, 5, 6, 0, 0});
  CHECK(unfold1d(x, 2, 0, 2).to_vector() == V{1, 2, 5, 6});  // one window, taps 0 and 2
}

TEST_CASE("unfold1d backward adds each window's gradient back to the positions it read") {
  const Tensor x = zeros({1, 3, 1}, true);
  unfold1d(x, 3, 1).sum().backward();
  CHECK(x.grad().to_vector() == V{2, 3, 2});  // the ends are read by two windows, the middle by three
}

TEST_CASE("conv1d matches the loop over its definition for every padding and dilation") {
  manual_seed(11);
  for (const auto& [L, K, p, d] : std::vector<std::array<int64_t, 4>>{
           {7, 3, 1, 1}, {5, 1, 0, 1}, {9, 5, 2, 1}, {6, 3, 0, 2}, {4, 5, 3, 1}}) {
    CAPTURE(L);
    CAPTURE(K);
    const Tensor x = randn({3, L, 4}), w = randn({5, 4, K}), b = randn({5});
    const V got = nn::functional::conv1d(x, w, b, p, d).to_vector(),
            want = conv1d_loop(x, w, b, p, d).to_vector();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  }
}

TEST_CASE("Conv1d matches the PyTorch golden values forward and backward") {
  for (const Conv1dGolden& g : kConv1dGoldens) {
    CAPTURE(g.L);
    CAPTURE(g.kernel);
    CAPTURE(g.padding);
    nn::Conv1d conv(g.C_in, g.C_out, g.kernel, g.padding, true, g.dilation);
    fill_parameter(conv.weight, 0);
    fill_parameter(conv.bias, 1);
    const Tensor x = wave({g.N, g.L, g.C_in}).detach().requires_grad_();
    const Tensor out = conv.forward(x);
    check_close(out, g.output);
    (out * probe(out.shape())).sum().backward();
    check_close(x.grad(), g.input_grad);
    check_close(conv.weight.grad(), g.weight_grad);
    check_close(conv.bias.grad(), g.bias_grad);
  }
}

TEST_CASE("Conv1d initializes like PyTorch within 1 over the square root of in_channels times kernel_size") {
  manual_seed(5);
  nn::Conv1d conv(8, 200, 3, 1);
  CHECK(conv.weight.shape() == Shape{200, 8, 3});
  const float bound = 1.0f / std::sqrt(24.0f);
  CHECK(conv.weight.abs().max().item() <= bound);
  CHECK(conv.weight.abs().max().item() > 0.95f * bound);
  CHECK(conv.bias.abs().max().item() <= bound);
  CHECK(conv.forward(zeros({2, 7, 8})).shape() == Shape{2, 7, 200});  // padding 1 keeps the length
  CHECK(nn::Conv1d(8, 4, 3).forward(zeros({2, 7, 8})).shape() == Shape{2, 5, 4});
}

TEST_CASE("Conv1d refuses inputs that are not channels-last and bad sizes") {
  nn::Conv1d conv(3, 4, 3, 1);
  CHECK_THROWS_WITH_AS(
      conv.forward(zeros({2, 3, 5})),
      "conv1d: input of shape (2,3,5) does not fit weight of shape (4,3,3): expected (N, L, 3), "
      "channels last",
      ShapeError);
  CHECK_THROWS_AS(conv.forward(zeros({5, 3})), ShapeError);
  CHECK_THROWS_WITH_AS(nn::Conv1d(3, 4, 5).forward(zeros({1, 2, 3})),
                       "unfold1d: a sequence of length 2 with padding 0 is shorter than the kernel's span 5",
                       ShapeError);
  CHECK_THROWS_AS(nn::Conv1d(3, 4, 0), ValueError);
  CHECK_THROWS_AS(nn::Conv1d(3, 4, 3, -1), ValueError);
}

TEST_CASE("Conv1d forward and backward are bitwise identical with 1 and 2 threads") {
  check_bitwise_identical_with_1_and_2_threads([] {
    manual_seed(2);
    nn::Conv1d conv(16, 32, 3, 1);
    const Tensor x = randn({64, 12, 16}, true);
    const Tensor out = conv.forward(x);
    (out * probe(out.shape())).sum().backward();
    V all = out.to_vector();
    for (const Tensor& t : {x.grad(), conv.weight.grad(), conv.bias.grad()}) {
      const V v = t.to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  });
}
