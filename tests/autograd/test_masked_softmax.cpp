// The fused masked_softmax op against d2l's composed masked_softmax (masked_fill with -1e6, then
// softmax), forward and backward; its fully-masked-row rule, threads and errors. Its
// finite-difference checks are in gradcheck_layer_ops.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops/softmax.h"
#include "nn/attention_testing.h"
#include "nn/attention.h"
#include "nn/functional/attention.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/reference_mode.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

struct Run {
  Tensor y, dx;
};

// Forward, and the gradient of Σ y ⊙ r for a fixed random r.
Run run(bool fused, const Tensor& x0, const IndexTensor& lens) {
  Tensor x = x0.detach().clone().requires_grad_();
  const Tensor y = fused ? masked_softmax(x, lens) : d2l_masked_softmax(x, lens);
  Generator g(5);
  (y * randn(y.shape(), false, &g)).sum().backward();
  return {y.detach(), x.grad()};
}

}  // namespace

TEST_CASE("fused masked_softmax matches d2l's masked_fill then softmax forward and backward") {
  Generator g(1);
  const Tensor x = randn({3, 4, 7}, false, &g) * 3.0f;
  const IndexTensor per_example{7, 1, 4};                                      // (B)
  const IndexTensor per_query({1, 2, 3, 4, 7, 7, 7, 7, 5, 1, 6, 2}, {3, 4});  // (B, Q)
  for (const IndexTensor& lens : {per_example, per_query}) {
    CAPTURE(lens);
    const Run fused = run(true, x, lens), ref = run(false, x, lens);
    check_close(fused.y, ref.y, 1e-6f);
    check_close(fused.dx, ref.dx, 1e-5f);
  }
}

TEST_CASE("fused masked_softmax matches d2l's on rows of every length around the vector width") {
  // Rows are reduced in groups of 16 and a padded last group: lengths 1 to 50 cover rows in one
  // partial group, in whole groups and in both, with -inf logits (which get weight 0) scattered in.
  Generator g(7);
  Tensor x = randn({1, 50, 50}, false, &g) * 3.0f;
  float* data = x.data();
  for (int64_t i = 0; i < 50; ++i)
    for (int64_t j = 1; j < 50; ++j)
      if ((7 * i + j) % 11 == 0) data[i * 50 + j] = -std::numeric_limits<float>::infinity();
  std::vector<int64_t> lengths(50);
  for (int64_t i = 0; i < 50; ++i) lengths[static_cast<size_t>(i)] = i + 1;
  const IndexTensor lens(lengths, {1, 50});
  const Run fused = run(true, x, lens), ref = run(false, x, lens);
  check_close(fused.y, ref.y, 1e-6f);
  check_close(fused.dx, ref.dx, 1e-5f);
  check_close(fused.y.sum({-1}), ones({1, 50}), 1e-6f);
}

TEST_CASE("the valid-lengths masked_softmax is one node of the graph reading X directly") {
  const Tensor x = randn({2, 3, 4}, true);
  const Tensor y = nn::functional::masked_softmax(x, IndexTensor{2, 4});
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->op == "masked_softmax");
  REQUIRE(y.grad_fn()->inputs.size() == 1);
  CHECK(y.grad_fn()->inputs[0].leaf == x.shared_impl());  // no mask or fill op in between
}

TEST_CASE("masked_softmax gives exactly zero weight and zero gradient past valid_len") {
  const Tensor x = tensor({{{5, 1, 9, -2}, {0, 0, 0, 0}}}, true);
  const Tensor y = masked_softmax(x, IndexTensor{2});
  // e^5 : e^1 → 0.98201379, 0.01798621 (numpy: np.exp([5, 1]) / np.exp([5, 1]).sum()).
  check_values(y, {0.98201379f, 0.01798621f, 0, 0, 0.5f, 0.5f, 0, 0}, 1e-6f);
  CHECK(y.at({0, 0, 2}) == 0.0f);
  CHECK(y.at({0, 1, 3}) == 0.0f);
  (y * tensor({{{1, 2, 3, 4}, {5, 6, 7, 8}}})).sum().backward();
  const std::vector<float> dx = x.grad().to_vector();
  CHECK(dx[2] == 0.0f);
  CHECK(dx[3] == 0.0f);
  CHECK(dx[6] == 0.0f);
  CHECK(dx[7] == 0.0f);
}

TEST_CASE("masked_softmax over heads shares each example's lengths like d2l's repeat_interleave") {
  // d2l's MultiHeadAttention folds H heads into the batch, (B·H, Q, K), and repeats valid_lens per
  // head; the op takes (B, H, Q, K) and the (B) or (B, Q) lengths as they are.
  Generator g(2);
  const Tensor x = randn({2, 3, 4, 5}, false, &g);
  const IndexTensor per_example{3, 5}, per_query({1, 2, 3, 4, 5, 0, 2, 4}, {2, 4});
  check_close(masked_softmax(x, per_example),
              d2l_masked_softmax(x.reshape({6, 4, 5}), per_example.repeat_interleave(3)).reshape({2, 3, 4, 5}), 1e-6f);
  const IndexTensor repeated({1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 5, 0, 2, 4, 5, 0, 2, 4, 5, 0, 2, 4}, {6, 4});
  // Row (b=1, q=1) has length 0: d2l spreads it evenly (0.2) over the hidden keys, the op gives zeros.
  const Tensor ours = masked_softmax(x, per_query), d2l = d2l_masked_softmax(x.reshape({6, 4, 5}), repeated);
  for (int64_t h = 0; h < 3; ++h) {
    check_close(ours.select(0, 0).select(0, h), d2l.select(0, h), 1e-6f);
    check_close(ours.select(0, 1).select(0, h).select(0, 0), d2l.select(0, 3 + h).select(0, 0), 1e-6f);
    check_close(ours.select(0, 1).select(0, h).select(0, 1), zeros({5}), 0.0f);
    check_close(d2l.select(0, 3 + h).select(0, 1), full({5}, 0.2f), 1e-6f);
  }
}

TEST_CASE("masked_softmax gives a fully masked row all-zero weights and a zero gradient") {
  // Hidden by valid_len 0 (row 0) or by -inf logits (row 1; masks arrive as -inf). A plain softmax
  // of row 1 is NaN; d2l's -1e6 would give row 0 uniform weights 1/3.
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = tensor({{{1, 2, 3}, {-inf, -inf, -inf}, {-inf, 0, std::log(3.0f)}}}, true);
  const Tensor y = masked_softmax(x, IndexTensor({0, 3, 3}, {1, 3}));
  check_values(y, {0, 0, 0, 0, 0, 0, 0, 0.25f, 0.75f}, 1e-6f);
  (y * tensor({{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}})).sum().backward();
  const std::vector<float> dx = x.grad().to_vector();
  for (int i = 0; i < 7; ++i) CHECK(dx[static_cast<size_t>(i)] == 0.0f);
  // Row 2: dx = y ⊙ (g - Σ g y) with g = (8, 9) on the visible keys, Σ g y = 8.75.
  CHECK(dx[7] == doctest::Approx(0.25 * (8 - 8.75)));
  CHECK(dx[8] == doctest::Approx(0.75 * (9 - 8.75)));
}

TEST_CASE("masked_softmax without valid_lens is the softmax over the last dim") {
  Generator g(3);
  const Tensor x = randn({2, 3, 6}, false, &g);
  check_close(masked_softmax(x, IndexTensor()), x.softmax(-1), 1e-6f);
  check_close(masked_softmax(x.transpose(0, 2), IndexTensor()), x.transpose(0, 2).softmax(-1), 1e-6f);
}

TEST_CASE("fused masked_softmax gives bitwise identical results with 1 and 2 threads") {
  auto once = [] {
    Generator g(4);
    Tensor x = randn({16, 4, 64, 64}, true, &g);
    const Tensor y = masked_softmax(x, randint(0, 65, {16, 64}, &g));
    (y * randn(y.shape(), false, &g)).sum().backward();
    std::vector<float> out = y.to_vector();
    const std::vector<float> dx = x.grad().to_vector();
    out.insert(out.end(), dx.begin(), dx.end());
    return out;
  };
  check_bitwise_identical_with_1_and_2_threads(once);
}

TEST_CASE("masked_softmax names the shapes and lengths that do not fit") {
  const Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(masked_softmax(x, IndexTensor{1, 2, 3}),
                       "masked_softmax: valid_lens of shape (3) does not fit X of shape (2,3,4): expected (2) or (2,3)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(masked_softmax(x, IndexTensor{2, 5}),
                       "masked_softmax: valid length 5 (element 1 of valid_lens) is out of range [0, 4] for X of shape "
                       "(2,3,4)",
                       IndexError);
  CHECK_THROWS_AS(masked_softmax(x, IndexTensor{-1, 2}), IndexError);
  CHECK_THROWS_WITH_AS(masked_softmax(zeros({3, 4}), IndexTensor{1, 2, 3}),
                       "masked_softmax: with valid_lens, X must be (B, Q, K) or (B, H, Q, K), got shape (3,4)", ShapeError);
  CHECK_THROWS_AS(masked_softmax(scalar_tensor(1.0f), IndexTensor()), ShapeError);
}

TEST_CASE("masked_softmax gives NaN for a visible NaN or +inf score, in both modes, not a masked row's zeros") {
  // Before, a row whose visible scores were all NaN (or NaN beside -inf) came out as all-zero
  // weights, the rule for a fully masked row, so NaN in gave a clean 0 out.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = tensor({{{nan, nan, nan}, {nan, -inf, -inf}, {inf, inf, 1}, {1, nan, 2}, {1, 2, nan},
                            {-inf, -inf, -inf}}});
  const IndexTensor lens({3, 3, 3, 3, 2, 3}, {1, 6});
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    const std::vector<float> y = masked_softmax(x, lens).to_vector();
    for (size_t i = 0; i < 12; ++i) CHECK_MESSAGE(std::isnan(y[i]), i);  // rows 0 to 3: NaN throughout
    // Row 4: the NaN is past the valid length, hidden; row 5 is fully masked: zeros, as documented.
    CHECK(y[12] == doctest::Approx(1 / (1 + std::exp(1.0f))));
    CHECK(y[14] == 0.0f);
    for (size_t i = 15; i < 18; ++i) CHECK(y[i] == 0.0f);
  }
}

TEST_CASE("attention with a NaN in W_q gives NaN out, fused, composed and in the reference mode") {
  manual_seed(5);
  nn::MultiHeadAttention mha(4, 4, 4, 4, 2, 0.0f);
  mha.eval();
  {
    NoGradGuard no_grad;
    Tensor w = mha.W_q->weight;
    for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = std::numeric_limits<float>::quiet_NaN();
  }
  const Tensor q = randn({2, 3, 4});
  for (const bool fused : {true, false}) {
    for (const bool reference : {false, true}) {
      CAPTURE(fused);
      CAPTURE(reference);
      mha.fused = fused;
      const ReferenceModeGuard mode(reference);
      const std::vector<float> out = mha.forward(q, q, q, IndexTensor({3, 2}, {2})).to_vector();
      for (const float v : out) CHECK(std::isnan(v));
    }
  }
}
