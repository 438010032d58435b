// Forward values of the ops, against values worked out by hand (or with the identity named in the
// test). Gradients are checked by the gradcheck registry; here we check what the ops compute.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "autograd/ops/linear.h"
#include "autograd/ops_golden_values.h"
#include "qkv.h"
#include "tensor/reference_mode.h"

using namespace qkv;
using V = std::vector<float>;

namespace {

void check_close(const Tensor& t, const V& expected, float tol = 1e-5f) {
  const V got = t.to_vector();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(tol));
}

}  // namespace

TEST_CASE("binary ops broadcast like NumPy") {
  const Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK((a + tensor({10, 20, 30})).to_vector() == V{11, 22, 33, 14, 25, 36});
  CHECK((a - tensor({1, 2}, Shape{2, 1})).to_vector() == V{0, 1, 2, 2, 3, 4});
  CHECK((a * tensor({2}, Shape{1})).to_vector() == V{2, 4, 6, 8, 10, 12});
  CHECK((a / 2.0f).to_vector() == V{0.5f, 1, 1.5f, 2, 2.5f, 3});
  CHECK((10.0f - a).to_vector() == V{9, 8, 7, 6, 5, 4});
  CHECK((6.0f / a).to_vector() == V{6, 3, 2, 1.5f, 1.2f, 1});
  // (2,1,3) + (4,1) → (2,4,3)
  const Tensor b = arange(6.0f).reshape({2, 1, 3}) + arange(4.0f).reshape({4, 1});
  CHECK(b.shape() == Shape{2, 4, 3});
  CHECK(b.at({1, 2, 0}) == 5.0f);
  CHECK_THROWS_WITH_AS(a + tensor({1, 2}), "add: shapes (2,3) and (2) cannot be broadcast: dim 1 has sizes 3 and 2",
                       ShapeError);
}

TEST_CASE("unary math ops compute the textbook functions") {
  const Tensor x = tensor({-2.0f, -0.5f, 0.0f, 0.5f, 2.0f});
  check_close(x.exp(), {std::exp(-2.0f), std::exp(-0.5f), 1, std::exp(0.5f), std::exp(2.0f)});
  check_close(x.tanh(), {std::tanh(-2.0f), std::tanh(-0.5f), 0, std::tanh(0.5f), std::tanh(2.0f)});
  check_close(x.sigmoid(), {1 / (1 + std::exp(2.0f)), 1 / (1 + std::exp(0.5f)), 0.5f, 1 / (1 + std::exp(-0.5f)),
                            1 / (1 + std::exp(-2.0f))});
  CHECK(x.relu().to_vector() == V{0, 0, 0, 0.5f, 2});
  CHECK(x.abs().to_vector() == V{2, 0.5f, 0, 0.5f, 2});
  CHECK(x.clamp(-1, 1).to_vector() == V{-1, -0.5f, 0, 0.5f, 1});
  CHECK(x.pow(2.0f).to_vector() == V{4, 0.25f, 0, 0.25f, 4});
  // GELU(x) = x·Φ(x); Φ(0.5) = 0.691462461, Φ(2) = 0.977249868 (normal table).
  check_close(x.gelu(), {-2 * (1 - 0.977249868f), -0.5f * (1 - 0.691462461f), 0, 0.5f * 0.691462461f, 2 * 0.977249868f},
              1e-4f);
  // The tanh approximation is within 1e-3 of the exact GELU on this range.
  const V exact = x.gelu().to_vector(), approx = x.gelu(true).to_vector();
  for (size_t i = 0; i < exact.size(); ++i) CHECK(std::fabs(exact[i] - approx[i]) < 1e-3f);
  check_close(tensor({4.0f, 0.25f}).sqrt(), {2, 0.5f});
  check_close(tensor({4.0f, 0.25f}).rsqrt(), {0.5f, 2});
  check_close(tensor({1.0f, std::exp(1.0f)}).log(), {0, 1});
  // sigmoid does not overflow for large |x|
  CHECK(tensor({-100.0f, 100.0f}).sigmoid().to_vector() == V{std::exp(-100.0f) / (1 + std::exp(-100.0f)), 1.0f});
}

TEST_CASE("the fast GELU and its gradient are within 3e-7 of the reference mode's libm form") {
  // The fast path computes Φ and φ with vecmath.h; the reference mode with erfc and exp.
  std::vector<float> values;
  for (int i = -4000; i <= 4000; ++i) values.push_back(static_cast<float>(i) / 500.0f);
  const Tensor fast_x = tensor(values, {static_cast<int64_t>(values.size())}, true);
  const Tensor fast = fast_x.gelu();
  fast.sum().backward();
  Tensor plain_x = tensor(values, {static_cast<int64_t>(values.size())}, true), plain;
  {
    ReferenceModeGuard reference;
    plain = plain_x.gelu();
    plain.sum().backward();
  }
  const V f = fast.to_vector(), p = plain.to_vector(), fg = fast_x.grad().to_vector(), pg = plain_x.grad().to_vector();
  float worst = 0, worst_grad = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    worst = std::max(worst, std::fabs(f[i] - p[i]) / (1.0f + std::fabs(values[i])));
    worst_grad = std::max(worst_grad, std::fabs(fg[i] - pg[i]) / (1.0f + std::fabs(values[i])));
  }
  CHECK(worst < 3e-7f);
  CHECK(worst_grad < 3e-7f);
}

TEST_CASE("the fast GELU is exact in its tails: x and gradient 1 above and 0 and gradient 0 below") {
  // vexp clamps its argument at −87.3 and never returns 0, so x·φ(x) stayed finite: at 3e38 the
  // gradient was 2.46, at −3e38 −1.46. The reference mode (libm's erfc and exp) is exact there.
  const float big = std::numeric_limits<float>::max();
  const V values{1e3f, -1e3f, 1e20f, -1e20f, 3e38f, -3e38f, big, -big, std::nextafter(big, 0.0f),
                 -std::nextafter(big, 0.0f)};
  const int64_t n = static_cast<int64_t>(values.size());
  const Tensor fast_x = tensor(values, {n}, true);
  const Tensor fast = fast_x.gelu();
  fast.sum().backward();
  Tensor plain_x = tensor(values, {n}, true), plain;
  {
    ReferenceModeGuard reference;
    plain = plain_x.gelu();
    plain.sum().backward();
  }
  const V f = fast.to_vector(), p = plain.to_vector(), fg = fast_x.grad().to_vector(), pg = plain_x.grad().to_vector();
  for (size_t i = 0; i < values.size(); ++i) {
    CAPTURE(values[i]);
    const bool above = values[i] > 0;
    CHECK(f[i] == (above ? values[i] : 0.0f));
    CHECK(fg[i] == (above ? 1.0f : 0.0f));
    CHECK(f[i] == p[i]);
    CHECK(fg[i] == pg[i]);
  }
}

TEST_CASE("maximum minimum where and masked_fill select elementwise") {
  const Tensor a = tensor({1, 5, 3}), b = tensor({4, 2, 3});
  CHECK(maximum(a, b).to_vector() == V{4, 5, 3});
  CHECK(minimum(a, b).to_vector() == V{1, 2, 3});
  CHECK(where(tensor({1, 0, 1}), a, b).to_vector() == V{1, 2, 3});
  CHECK(a.masked_fill(tensor({0, 1, 0}), -1e6f).to_vector() == V{1, -1e6f, 3});
  CHECK(a.gt(b).to_vector() == V{0, 1, 0});
  CHECK(a.eq(3.0f).to_vector() == V{0, 0, 1});
  CHECK(a.le(b).to_vector() == V{1, 0, 1});
  CHECK_THROWS_AS(a.masked_fill(ones({2, 3}), 0.0f), ShapeError);  // the mask may not grow the input
}

TEST_CASE("reductions over dims with keepdim") {
  const Tensor x = arange(24.0f).reshape({2, 3, 4});
  CHECK(x.sum().item() == 276.0f);  // 0 + 1 + ... + 23
  CHECK(x.sum({1}).shape() == Shape{2, 4});
  CHECK(x.sum({1}).to_vector() == V{12, 15, 18, 21, 48, 51, 54, 57});
  CHECK(x.sum({0, 2}, true).shape() == Shape{1, 3, 1});
  CHECK(x.sum({0, 2}, true).to_vector() == V{60, 92, 124});  // Σ over i,k of 12i + 4j + k
  CHECK(x.sum({-1, 0}).to_vector() == V{60, 92, 124});
  CHECK(x.mean({2}).to_vector() == V{1.5f, 5.5f, 9.5f, 13.5f, 17.5f, 21.5f});
  // var of 0,1,2,3 = (2.25 + 0.25 + 0.25 + 2.25) / 3 (unbiased) = 5/3; biased: 5/4
  CHECK(tensor({0, 1, 2, 3}).var().item() == doctest::Approx(5.0 / 3));
  CHECK(tensor({0, 1, 2, 3}).var({}, 0).item() == doctest::Approx(1.25));
  CHECK(tensor({3, -4}).norm().item() == doctest::Approx(5));
  CHECK(tensor({3, -4}).norm(1.0f).item() == doctest::Approx(7));
  CHECK(tensor({3, -4}).norm(INFINITY).item() == doctest::Approx(4));
  CHECK(tensor({{3, 4}, {6, 8}}).norm(2.0f, {1}, true).to_vector() == V{5, 10});
  CHECK(zeros({0, 3}).sum({0}).to_vector() == V{0, 0, 0});
  CHECK_THROWS_AS(x.sum({3}), IndexError);
  CHECK_THROWS_AS(x.sum({1, -2}), IndexError);
}

TEST_CASE("the infinity norm splits its gradient evenly among tied maxima as PyTorch does") {
  Tensor x = tensor({{3, -3, 1}, {0, 2, -1}}, true);
  const Tensor n = x.norm(INFINITY, {1});
  CHECK(n.to_vector() == V{3, 2});
  n.sum().backward();
  // Row 0: |3| and |-3| tie, each gets ±1/2; row 1: the single maximum 2 gets 1.
  CHECK(x.grad().to_vector() == V{0.5f, -0.5f, 0, 0, 1, 0});
  CHECK(std::isnan(tensor({1, NAN}).norm(INFINITY).item()));
}

TEST_CASE("max and min give values and first indices and propagate NaN") {
  const Tensor x = tensor({{1, 7, 7}, {9, -2, 0}});
  auto [values, index] = x.max(1);
  CHECK(values.to_vector() == V{7, 9});
  CHECK(index.values() == std::vector<int64_t>{1, 0});  // the first of the tied 7s
  auto [mins, argmins] = x.min(0, true);
  CHECK(mins.shape() == Shape{1, 3});
  CHECK(mins.to_vector() == V{1, -2, 0});
  CHECK(argmins.values() == std::vector<int64_t>{0, 1, 1});
  CHECK(x.max().item() == 9.0f);
  CHECK(x.argmax(1).values() == std::vector<int64_t>{1, 0});
  CHECK(x.argmin(-1).values() == std::vector<int64_t>{0, 1});
  CHECK(std::isnan(tensor({1.0f, NAN, 3.0f}).max().item()));
  CHECK_THROWS_AS(zeros({2, 0}).max(1), ShapeError);
}

TEST_CASE("max and min over all elements split the gradient evenly among ties as torch.max does") {
  Tensor x = tensor({1.0f, 3.0f, 3.0f}, true);
  x.max().backward();
  CHECK(x.grad().to_vector() == V{0, 0.5f, 0.5f});
  Tensor y = tensor({{2.0f, -1.0f}, {-1.0f, -1.0f}}, true);
  (y.min() * 6.0f).backward();
  CHECK(y.grad().to_vector() == V{0, 2, 2, 2});
}

TEST_CASE("max along a dim sends the gradient to the first maximal element only") {
  Tensor x = tensor({2.0f, 5.0f, 5.0f}, true);
  x.max(0).first.backward();
  CHECK(x.grad().to_vector() == V{0, 1, 0});
}

TEST_CASE("matmul covers matrices batches broadcasting and vectors") {
  const Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  const Tensor b = tensor({{7, 8}, {9, 10}, {11, 12}});
  CHECK(a.matmul(b).to_vector() == V{58, 64, 139, 154});
  CHECK(a.matmul(tensor({1, 0, -1})).to_vector() == V{-2, -2});                // (2,3)·(3) → (2)
  CHECK(tensor({1, 1}).matmul(a).to_vector() == V{5, 7, 9});                   // (2)·(2,3) → (3)
  CHECK(tensor({1, 2, 3}).matmul(tensor({4, 5, 6})).item() == 32.0f);          // dot → 0-d
  CHECK(tensor({1, 2, 3}).matmul(tensor({4, 5, 6})).dim() == 0);
  // Transposed views go through the kernel's transpose flags: (Bᵀ·Aᵀ)ᵀ = A·B.
  CHECK(b.t().matmul(a.t()).t().to_vector() == V{58, 64, 139, 154});
  // A batch of 2 against a shared matrix, and broadcast batch dims (2,1) × (3) → (2,3).
  const Tensor batch = stack({a, a * 2.0f});
  CHECK(batch.matmul(b).to_vector() == V{58, 64, 139, 154, 116, 128, 278, 308});
  const Tensor x = randn({2, 1, 4, 5}), y = randn({3, 5, 2});
  const Tensor z = x.matmul(y);
  CHECK(z.shape() == Shape{2, 3, 4, 2});
  const Tensor expected = x.select(0, 1).squeeze(0).matmul(y.select(0, 2));
  const V got = z.select(0, 1).select(0, 2).to_vector(), want = expected.to_vector();
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
  CHECK(zeros({3, 0}).matmul(zeros({0, 2})).to_vector() == V(6, 0.0f));  // K = 0: a zero matrix
}

TEST_CASE("linear_with_bias of no input features gives the bias at every row") {
  const Tensor b = tensor({1.0f, 2.0f});
  const Tensor y = linear_with_bias(zeros({3, 0}), zeros({2, 0}), b);
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.to_vector() == V{1, 2, 1, 2, 1, 2});
}

TEST_CASE("linear_with_bias gives the composed x.matmul(w.t()) + b and its gradients, to the bit") {
  // 40 outputs of 33 features over (3, 29) rows: edge tiles in both directions of the GEMM's tiling.
  for (const Shape& x_shape : {Shape{3, 29, 33}, Shape{29, 33}}) {
    CAPTURE(shape_str(x_shape));
    Generator g(4);
    const Tensor x0 = randn(x_shape, false, &g), w0 = randn({40, 33}, false, &g), b0 = randn({40}, false, &g);
    const auto run = [&](bool fused) {
      const Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(),
                   b = b0.clone().requires_grad_();
      const Tensor y = fused ? linear_with_bias(x, w, b) : x.matmul(w.t()) + b;
      (y * y).sum().backward();
      return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad()};
    };
    const std::vector<Tensor> fused = run(true), composed = run(false);
    for (size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);
      CHECK(fused[i].shape() == composed[i].shape());
      CHECK(fused[i].contiguous().to_vector() == composed[i].contiguous().to_vector());
    }
  }
  CHECK_THROWS_WITH_AS(
      linear_with_bias(zeros({2, 3}), zeros({4, 3}), zeros({5})),
      "linear: input (2,3), weight (4,3) and bias (5) do not fit: expected (..., in), (out, in) and (out)",
      ShapeError);
}

TEST_CASE("matmul names both shapes when they do not fit") {
  CHECK_THROWS_WITH_AS(zeros({2, 3}).matmul(zeros({4, 5})),
                       "matmul: shapes (2,3) and (4,5) cannot be multiplied: 3 != 4", ShapeError);
  CHECK_THROWS_WITH_AS(zeros({2, 3}).matmul(zeros({4})), "matmul: shapes (2,3) and (4) cannot be multiplied: 3 != 4",
                       ShapeError);
  CHECK_THROWS_AS(zeros({2, 2, 3}).matmul(zeros({3, 3, 2})), ShapeError);  // batch 2 vs 3
  CHECK_THROWS_AS(scalar_tensor(1.0f).matmul(zeros({1})), ShapeError);
}

TEST_CASE("softmax rows sum to one and survive huge logits") {
  const Tensor x = tensor({{1, 2, 3}, {1000, 1000, 1000}});
  const Tensor y = x.softmax(-1);
  // e^0 : e^1 : e^2 normalized = 0.0900306, 0.2447285, 0.6652410
  check_close(y.select(0, 0), {0.0900306f, 0.2447285f, 0.6652410f});
  check_close(y.select(0, 1), {1.0f / 3, 1.0f / 3, 1.0f / 3});
  check_close(x.log_softmax(1).select(0, 0), {std::log(0.0900306f), std::log(0.2447285f), std::log(0.6652410f)});
  // Along dim 0 of a (2,3): each column normalized.
  check_close(tensor({{0, 0, 0}, {0, std::log(3.0f), 0}}).softmax(0), {0.5f, 0.25f, 0.5f, 0.5f, 0.75f, 0.5f});
  // A row that is all -inf has no distribution: NaN, as in PyTorch. (Masked attention avoids it by
  // masking with -1e6 instead of -inf; see nn::functional::masked_softmax.)
  CHECK(std::isnan(tensor({-INFINITY, -INFINITY}).softmax(0).to_vector()[0]));
}

TEST_CASE("indexing and joining ops pick and place the right elements") {
  const Tensor x = arange(12.0f).reshape({3, 4});
  CHECK(x.index_select(0, IndexTensor{2, 0}).to_vector() == V{8, 9, 10, 11, 0, 1, 2, 3});
  CHECK(x.index_select(1, IndexTensor{3, 3}).to_vector() == V{3, 3, 7, 7, 11, 11});
  CHECK(x.gather(1, IndexTensor({0, 3, 2, 2, 1, 0}, {3, 2})).to_vector() == V{0, 3, 6, 6, 9, 8});
  CHECK(x.gather(0, IndexTensor({2, 1, 0, 0}, {1, 4})).to_vector() == V{8, 5, 2, 3});
  CHECK_THROWS_WITH_AS(x.index_select(0, IndexTensor{3}), "index_select: index 3 is out of range for dim 0 of size 3",
                       IndexError);
  CHECK_THROWS_AS(x.gather(1, IndexTensor({-1}, {1, 1})), IndexError);

  const Tensor a = tensor({{1, 2}}), b = tensor({{3, 4}, {5, 6}});
  CHECK(cat({a, b}).to_vector() == V{1, 2, 3, 4, 5, 6});
  CHECK(cat({b, b}, 1).to_vector() == V{3, 4, 3, 4, 5, 6, 5, 6});
  CHECK(stack({tensor({1, 2}), tensor({3, 4})}, 1).to_vector() == V{1, 3, 2, 4});
  CHECK_THROWS_WITH_AS(cat({a, b}, 1), doctest::Contains("tensor 1 has shape (2,2)"), ShapeError);
  CHECK_THROWS_AS(stack({a, b}), ShapeError);

  const auto parts = split(arange(5.0f), 2);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].to_vector() == V{4});
  const auto pieces = split(arange(5.0f), std::vector<int64_t>{1, 4});
  CHECK(pieces[1].to_vector() == V{1, 2, 3, 4});
  CHECK(chunk(arange(6.0f), 4).size() == 3);  // like torch.chunk: pieces of ceil(6/4) = 2
  CHECK_THROWS_AS(split(arange(5.0f), std::vector<int64_t>{1, 2}), ShapeError);
}

TEST_CASE("common mistakes name the op and the shapes") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(x.permute({0}), "permute: got 1 dims for a tensor of shape (2,3)", ShapeError);
  CHECK_THROWS_WITH_AS(x.reshape({4, 2}), "reshape: shape (4,2) is invalid for 6 elements", ShapeError);
  CHECK_THROWS_WITH_AS(x.squeeze(0), "squeeze: dim 0 of shape (2,3) has size 2, not 1", ShapeError);
  CHECK_THROWS_WITH_AS(x.transpose(0, 2), "transpose: dim 2 is out of range for a 2-d tensor (expected -2 <= dim < 2)",
                       IndexError);
  CHECK_THROWS_WITH_AS(x.expand({4, 3}),
                       "expand: cannot expand shape (2,3) to (4,3): dim 0 has size 2, which is not 1", ShapeError);
  CHECK_THROWS_WITH_AS(ones({1}).expand({-5}), "expand: negative size -5 in (-5) (only -1, to keep a dim, is allowed)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(Tensor::empty({0, int64_t{1} << 40, int64_t{1} << 40}),
                       "a tensor of shape (0,1099511627776,1099511627776) is too large to address with 64-bit strides",
                       ShapeError);
  CHECK_THROWS_AS(x.narrow(1, 2, 2), IndexError);
  CHECK_THROWS_AS(x.select(0, 2), IndexError);
  CHECK_THROWS_AS(x.slice(0, 0, 2, 0), ValueError);
}

TEST_CASE("bmm multiplies batches of matrices and refuses what matmul would broadcast") {
  const Tensor a = arange(0, 12).reshape({2, 2, 3}), b = arange(0, 12).reshape({2, 3, 2});
  check_close(bmm(a, b), {10, 13, 28, 40, 172, 193, 244, 274});
  CHECK(bmm(a, b).to_vector() == a.matmul(b).to_vector());
  // matmul broadcasts a (3, 2) operand over the batch; bmm, like torch.bmm, does not.
  CHECK_THROWS_WITH_AS(bmm(a, arange(0, 6).reshape({3, 2})), "bmm: expected (B, n, m) and (B, m, p), got (2,2,3) and (3,2)",
                       ShapeError);
  CHECK_THROWS_AS(bmm(a, arange(0, 18).reshape({3, 3, 2})), ShapeError);
  CHECK_THROWS_AS(bmm(a, a), ShapeError);
}

TEST_CASE("repeat_interleave repeats each slice in place, as torch.repeat_interleave does") {
  const Tensor x = tensor({{1, 2}, {3, 4}, {5, 6}});
  CHECK(x.repeat_interleave(2, 0).to_vector() == V{1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6});
  CHECK(x.repeat_interleave(2, 1).shape() == Shape{3, 4});
  CHECK(x.repeat_interleave(2, -1).to_vector() == V{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6});
  CHECK(x.repeat_interleave(IndexTensor{0, 1, 2}, 0).to_vector() == V{3, 4, 5, 6, 5, 6});
  CHECK(x.repeat_interleave(0, 0).shape() == Shape{0, 2});
  // d2l's use: each example's valid length once per head.
  const Tensor lens = tensor({3, 2});
  CHECK(lens.repeat_interleave(2, 0).to_vector() == V{3, 3, 2, 2});
  CHECK_THROWS_WITH_AS(x.repeat_interleave(-1, 0), "repeat_interleave: repeats must be >= 0, got -1", ValueError);
  CHECK_THROWS_WITH_AS(x.repeat_interleave(IndexTensor{1, 2}, 0),
                       "repeat_interleave: repeats of shape (2) must be (3), one count per slice along dim 0",
                       ShapeError);
  CHECK_THROWS_AS(x.repeat_interleave(IndexTensor{1, -1, 1}, 0), ValueError);
  CHECK_THROWS_AS(x.repeat_interleave(2, 2), IndexError);
}

TEST_CASE("sort orders values along a dim, stable, NaN above every number, as torch.sort does") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = tensor({{3, 1, 2, 1}, {0, -1, 5, 4}});
  const auto [values, indices] = x.sort(1);
  CHECK(values.to_vector() == V{1, 1, 2, 3, -1, 0, 4, 5});
  CHECK(indices.values() == std::vector<int64_t>{1, 3, 2, 0, 1, 0, 3, 2});  // the tie 1, 1 keeps its order
  const auto [down, down_indices] = x.sort(1, true);
  CHECK(down.to_vector() == V{3, 2, 1, 1, 5, 4, 0, -1});
  CHECK(down_indices.values() == std::vector<int64_t>{0, 2, 1, 3, 2, 3, 0, 1});
  CHECK(x.sort(0).first.to_vector() == V{0, -1, 2, 1, 3, 1, 5, 4});
  CHECK(x.argsort(0).values() == std::vector<int64_t>{1, 1, 0, 0, 0, 0, 1, 1});
  const Tensor with_nan = tensor({2, nan, -1, nan, 0});
  CHECK(with_nan.argsort().values() == std::vector<int64_t>{2, 4, 0, 1, 3});
  CHECK(with_nan.argsort(0, true).values() == std::vector<int64_t>{1, 3, 0, 4, 2});
  // The gradient reaches each element where its value went.
  const Tensor w = tensor({3, 1, 2}, true);
  (w.sort().first * tensor({10, 20, 30})).sum().backward();
  CHECK(w.grad().to_vector() == V{30, 10, 20});
}

namespace {

// Entry i is 0.5·sin(1 + 0.37·i + 0.91·j), as tests/autograd/ops_golden.py fills input j.
Tensor filled(const Shape& shape, int j, bool requires_grad = true) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = 0.5f * std::sin(1.0f + 0.37f * i + 0.91f * j);
  return requires_grad ? t.requires_grad_() : t;
}

// Σ out[n]·cos(0.3·n), the script's loss.
Tensor golden_loss(const Tensor& out) {
  Tensor w = Tensor::empty(out.shape());
  for (int64_t n = 0; n < w.numel(); ++n) w.data()[n] = std::cos(0.3f * n);
  return (out * w).sum();
}

void check_golden(const Tensor& t, const std::vector<float>& expected) {
  const V got = t.to_vector();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(expected[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-5).scale(1.0));
  }
}

}  // namespace

TEST_CASE("bmm, repeat_interleave and sort match PyTorch, values and gradients") {
  namespace G = qkv::testing::ops_golden;
  const Tensor a = filled({2, 3, 4}, 0), b = filled({2, 4, 5}, 1);
  const Tensor c = bmm(a, b);
  golden_loss(c).backward();
  check_golden(c, G::bmm_out);
  check_golden(a.grad(), G::bmm_grad_a);
  check_golden(b.grad(), G::bmm_grad_b);

  const Tensor x = filled({3, 2, 2}, 2);
  const Tensor r = x.repeat_interleave(3, 1);
  golden_loss(r).backward();
  check_golden(r, G::repeat_out);
  check_golden(x.grad(), G::repeat_grad);

  const Tensor y = filled({3, 2, 2}, 3);
  const Tensor rt = y.repeat_interleave(IndexTensor{2, 0, 3}, 0);
  golden_loss(rt).backward();
  check_golden(rt, G::repeat_tensor_out);
  check_golden(y.grad(), G::repeat_tensor_grad);

  // The script's sort input: filled and rounded to quarters (ties), with NaN at (0, 2) and (2, 5).
  Tensor s = filled({3, 6}, 4, false);
  for (int64_t i = 0; i < s.numel(); ++i) s.data()[i] = std::nearbyint(s.data()[i] * 4.0f) / 4.0f;
  s.data()[2] = s.data()[17] = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    int64_t dim;
    bool descending;
    const std::vector<float>& values;
    const std::vector<int64_t>& indices;
    const std::vector<float>& grad;
  };
  for (const Case& k : {Case{1, false, G::sort_rows_values, G::sort_rows_indices, G::sort_rows_grad},
                        Case{0, true, G::sort_columns_descending_values, G::sort_columns_descending_indices,
                             G::sort_columns_descending_grad}}) {
    CAPTURE(k.dim);
    const Tensor z = s.detach().clone().requires_grad_();
    const auto [values, indices] = z.sort(k.dim, k.descending);
    golden_loss(where(values.ne(values), zeros({1}), values)).backward();  // NaN out of the loss, as nan_to_num
    check_golden(values, k.values);
    CHECK(indices.values() == k.indices);
    check_golden(z.grad(), k.grad);
  }
}
