// Losses (nn/functional/loss.h). Golden values are worked out by hand in the comments, or come
// from `reference_cross_entropy` below: PyTorch's formula as a plain loop in double, written from
// the definition (a weighted, smoothed target distribution against log-softmax), independently of
// the fused kernel's algebra.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "nn/functional/loss.h"
#include "qkv.h"

using namespace qkv;
namespace F = qkv::nn::functional;
using F::Reduction;
using V = std::vector<float>;

namespace {

// Per-row losses of logits z (N×C, row-major) and the denominator of the mean:
//   loss_n = Σ_c w_c · q_c · (-log p_c),  q = (1-ε)·onehot(y_n) + ε/C,  p = softmax(z_n)
// with 0 for ignored rows, and Σ w[y_n] over rows not ignored.
struct Reference {
  std::vector<double> rows;
  double denominator = 0.0;
};
Reference reference_cross_entropy(const V& z, int64_t C, const std::vector<int64_t>& y, const V& w,
                                  int64_t ignore_index, double eps) {
  Reference r;
  const int64_t N = static_cast<int64_t>(y.size());
  for (int64_t n = 0; n < N; ++n) {
    if (y[n] == ignore_index) {
      r.rows.push_back(0.0);
      continue;
    }
    double sum_exp = 0.0;
    for (int64_t c = 0; c < C; ++c) sum_exp += std::exp(static_cast<double>(z[n * C + c]));
    double loss = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double q = (1.0 - eps) * (c == y[n] ? 1.0 : 0.0) + eps / static_cast<double>(C);
      const double wc = w.empty() ? 1.0 : w[c];
      loss += wc * q * -(z[n * C + c] - std::log(sum_exp));
    }
    r.rows.push_back(loss);
    r.denominator += w.empty() ? 1.0 : w[y[n]];
  }
  return r;
}

double sum(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s;
}

void check_close(const Tensor& t, const std::vector<double>& expected, double tol = 1e-5) {
  const V got = t.to_vector();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(tol));
}

}  // namespace

TEST_CASE("cross_entropy of (N C) logits matches hand-computed values") {
  // Row 0: log(e^1 + e^2 + e^3) - 3 = log(1 + e^-1 + e^-2) = 0.4076059644; row 1: uniform, log 3 = 1.0986122887.
  const Tensor logits = tensor({{1, 2, 3}, {1, 1, 1}});
  const IndexTensor y{2, 0};
  check_close(F::cross_entropy(logits, y, {.reduction = Reduction::None}), {0.4076059644, 1.0986122887});
  CHECK(F::cross_entropy(logits, y).item() == doctest::Approx((0.4076059644 + 1.0986122887) / 2).epsilon(1e-6));
  CHECK(F::cross_entropy(logits, y, {.reduction = Reduction::Sum}).item() ==
        doctest::Approx(0.4076059644 + 1.0986122887).epsilon(1e-6));
  // Label smoothing 0.1 on row 0: 0.9·0.40761 + (0.1/3)·(2.40761 + 1.40761 + 0.40761) = 0.5076059644.
  CHECK(F::cross_entropy(logits.narrow(0, 0, 1), IndexTensor{2}, {.label_smoothing = 0.1f}).item() ==
        doctest::Approx(0.5076059644).epsilon(1e-6));
}

TEST_CASE("cross_entropy weighted mean divides by the summed weights of the targets") {
  const Tensor logits = tensor({{0.5f, -1.0f, 2.0f}, {1.5f, 0.3f, -0.7f}, {0.0f, 0.2f, 0.1f}, {-2, 1, 0}});
  const IndexTensor y{2, 0, 1, -100};
  const V w = {0.2f, 3.0f, 1.5f};
  for (float eps : {0.0f, 0.3f}) {
    CAPTURE(eps);
    const Reference r = reference_cross_entropy(logits.to_vector(), 3, y.values(), w, -100, eps);
    // Σ w[y] over rows 0..2 = 1.5 + 0.2 + 3.0: the ignored row neither adds loss nor weight.
    CHECK(r.denominator == doctest::Approx(4.7));
    const F::CrossEntropyOptions none{.weight = tensor(w, {3}), .label_smoothing = eps, .reduction = Reduction::None};
    check_close(F::cross_entropy(logits, y, none), r.rows);
    const Tensor mean = F::cross_entropy(logits, y, {.weight = tensor(w, {3}), .label_smoothing = eps});
    CHECK(mean.item() == doctest::Approx(sum(r.rows) / r.denominator).epsilon(1e-6));
  }
}

TEST_CASE("cross_entropy ignores ignore_index targets and gives NaN when all are ignored") {
  const Tensor logits = tensor({{1, 2, 3}, {1, 1, 1}, {5, 0, 0}});
  const Tensor loss = F::cross_entropy(logits, IndexTensor{2, 7, 0}, {.ignore_index = 7});
  const Reference r = reference_cross_entropy(logits.to_vector(), 3, {2, 7, 0}, {}, 7, 0.0);
  CHECK(loss.item() == doctest::Approx(sum(r.rows) / 2).epsilon(1e-6));  // mean over the 2 kept rows
  CHECK(std::isnan(F::cross_entropy(logits, IndexTensor{-100, -100, -100}).item()));
  CHECK(F::cross_entropy(logits, IndexTensor{-100, -100, -100}, {.reduction = Reduction::Sum}).item() == 0.0f);
}

TEST_CASE("cross_entropy names the target and the class count when a target is out of range") {
  const Tensor logits = zeros({2, 5});
  CHECK_THROWS_WITH_AS(F::cross_entropy(logits, IndexTensor{1, 5}),
                       "cross_entropy: target 5 (at position 1) is out of range for 5 classes: expected 0 <= "
                       "target < 5, or ignore_index -100",
                       IndexError);
  CHECK_THROWS_AS(F::cross_entropy(logits, IndexTensor{-1, 0}), IndexError);
  CHECK_THROWS_WITH_AS(F::cross_entropy(logits, IndexTensor{1, 2, 3}),
                       "cross_entropy: target of shape (3) does not fit input of shape (2,5): expected (2), the "
                       "input's shape without its class dim",
                       ShapeError);
  CHECK_THROWS_AS(F::cross_entropy(logits, IndexTensor{0, 1}, {.weight = ones({4})}), ShapeError);
  CHECK_THROWS_AS(F::cross_entropy(logits, IndexTensor{0, 1}, {.label_smoothing = 1.5f}), ValueError);
}

TEST_CASE("cross_entropy takes classes in the last dim or in dim 1 like PyTorch") {
  Generator gen(5);
  const Tensor logits = randn({2, 3, 4}, false, &gen);  // (B, T, C)
  const IndexTensor y({0, 3, 2, 1, 1, 0}, {2, 3});
  const Tensor per_token = F::cross_entropy(logits, y, {.reduction = Reduction::None});
  CHECK(per_token.shape() == Shape{2, 3});
  const Reference r = reference_cross_entropy(logits.to_vector(), 4, y.values(), {}, -100, 0.0);
  check_close(per_token, r.rows);
  // The same scores laid out as PyTorch's (N, C, d1) = (2, 4, 3), with class_dim = 1.
  const Tensor pytorch_layout = logits.transpose(1, 2).contiguous();
  const Tensor same = F::cross_entropy(pytorch_layout, y, {.reduction = Reduction::None, .class_dim = 1});
  CHECK(same.to_vector() == per_token.to_vector());
}

TEST_CASE("fused cross_entropy equals the composed log_softmax gather and masking forward and backward") {
  Generator gen(11);
  const int64_t N = 9, C = 6;
  const IndexTensor y{0, 5, -100, 2, 2, 3, -100, 1, 4};
  const Tensor w = uniform({C}, 0.5f, 2.0f, false, &gen);
  const Tensor r = randn({N}, false, &gen);  // a random incoming gradient for the unreduced loss
  for (bool weighted : {false, true})
    for (float eps : {0.0f, 0.25f})
      for (Reduction red : {Reduction::None, Reduction::Mean}) {
        CAPTURE(weighted);
        CAPTURE(eps);
        const Tensor weight = weighted ? w : Tensor();
        Tensor x1 = randn({N, C}, true, &gen);
        Tensor x2 = x1.detach().clone().requires_grad_(true);

        const Tensor fused = F::cross_entropy(x1, y, {.weight = weight, .label_smoothing = eps, .reduction = red});

        // Composed: (1-ε)·nll + (ε/C)·Σ_c w_c·(-log p_c), ignored rows masked, the same denominator.
        const Tensor logp = x2.log_softmax(-1);
        const Tensor nll = F::nll_loss(logp, y, {.weight = weight, .reduction = Reduction::None});
        const Tensor wl = weighted ? logp * weight : logp;
        const Tensor ignored = tensor({0, 0, 1, 0, 0, 0, 1, 0, 0}, Shape{N});
        const Tensor smooth = (-wl.sum({-1})).masked_fill(ignored, 0.0f);
        Tensor composed = nll * (1.0f - eps) + smooth * (eps / C);
        if (red == Reduction::Mean) {
          const float denominator = weighted ? (w.to_vector()[0] + 2 * w.to_vector()[2] + w.to_vector()[5] +
                                                w.to_vector()[3] + w.to_vector()[1] + w.to_vector()[4])
                                             : 7.0f;
          composed = composed.sum() / denominator;
        }
        REQUIRE(fused.shape() == composed.shape());
        const V a = fused.to_vector(), b = composed.to_vector();
        for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-6));

        (red == Reduction::None ? (fused * r).sum() : fused).backward();
        (red == Reduction::None ? (composed * r).sum() : composed).backward();
        const V g1 = x1.grad().to_vector(), g2 = x2.grad().to_vector();
        for (size_t i = 0; i < g1.size(); ++i) CHECK(g1[i] == doctest::Approx(g2[i]).epsilon(1e-6));
      }
}

TEST_CASE("fused cross_entropy keeps one float per row for backward instead of the log-probabilities") {
  Generator gen(2);
  const int64_t N = 256, C = 100;
  const Tensor x = randn({N, C}, true, &gen);
  const IndexTensor y = randint(0, C, {N}, &gen);
  const int64_t start = memory_stats().live_bytes;
  const Tensor fused = F::cross_entropy(x, y);
  const int64_t fused_bytes = memory_stats().live_bytes - start;
  // The log-sum-exp of each row (N floats) and scalars; nothing of size N·C.
  CHECK(fused_bytes < N * C * 4 / 10);
  const Tensor composed = F::nll_loss(x.log_softmax(-1), y);
  CHECK(memory_stats().live_bytes - start - fused_bytes >= N * C * 4);  // log_softmax saves its output
}

TEST_CASE("cross_entropy gradient is softmax minus the smoothed one-hot over N") {
  const Tensor x = tensor({{1, 2, 3}, {0.5f, -0.5f, 0}}, true);
  F::cross_entropy(x, IndexTensor{0, 2}, {.label_smoothing = 0.3f}).backward();
  // p = softmax(row); target q = 0.7·onehot + 0.1; d(mean)/dx = (p - q) / 2.
  const V xs = x.to_vector();
  const int64_t targets[2] = {0, 2};
  std::vector<double> expected;
  for (int n = 0; n < 2; ++n) {
    double s = 0.0;
    for (int c = 0; c < 3; ++c) s += std::exp(static_cast<double>(xs[n * 3 + c]));
    for (int c = 0; c < 3; ++c) {
      const double q = 0.7 * (c == targets[n]) + 0.1;
      expected.push_back((std::exp(static_cast<double>(xs[n * 3 + c])) / s - q) / 2);
    }
  }
  check_close(x.grad(), expected);
}

TEST_CASE("cross_entropy stays finite for huge logits") {
  const Tensor x = tensor({{1000, 0, -1000}, {-1000, 1000, 1000}}, true);
  const Tensor loss = F::cross_entropy(x, IndexTensor{0, 1}, {.reduction = Reduction::None});
  // Row 0: p[0] = 1 → 0; row 1: two equal maxima → log 2 (to float precision at 1000: 1e-4).
  check_close(loss, {0.0, std::log(2.0)}, 1e-4);
  loss.sum().backward();
  check_close(x.grad(), {0, 0, 0, 0, -0.5, 0.5});
}

TEST_CASE("nll_loss picks minus the log-probability of the target with weights and ignore_index") {
  const Tensor logp = tensor({{-0.1f, -2.5f, -3.0f}, {-1.2f, -0.4f, -2.2f}, {-0.7f, -0.9f, -1.9f}});
  const IndexTensor y{0, 1, 2};
  check_close(F::nll_loss(logp, y, {.reduction = Reduction::None}), {0.1, 0.4, 1.9});
  CHECK(F::nll_loss(logp, y).item() == doctest::Approx(2.4 / 3));
  // Weights (2, 1, 0.5): (2·0.1 + 1·0.4 + 0.5·1.9) / (2 + 1 + 0.5) = 1.55 / 3.5.
  CHECK(F::nll_loss(logp, y, {.weight = tensor({2, 1, 0.5f})}).item() == doctest::Approx(1.55 / 3.5));
  // Ignoring class 1's element: (0.1 + 1.9) / 2; -inf at an ignored target does not leak NaN.
  const Tensor with_inf = logp.masked_fill(tensor({{0, 0, 0}, {0, 1, 0}, {0, 0, 0}}), -INFINITY);
  CHECK(F::nll_loss(with_inf, IndexTensor{0, -100, 2}).item() == doctest::Approx(1.0));
  CHECK_THROWS_WITH_AS(F::nll_loss(logp, IndexTensor{0, 3, 1}),
                       "nll_loss: target 3 (at position 1) is out of range for 3 classes: expected 0 <= target < 3, "
                       "or ignore_index -100",
                       IndexError);
}

TEST_CASE("cross_entropy equals nll_loss of log_softmax") {
  Generator gen(3);
  const Tensor x = randn({5, 7}, false, &gen);
  const IndexTensor y{6, 0, 3, 3, 1};
  CHECK(F::cross_entropy(x, y).item() == doctest::Approx(F::nll_loss(x.log_softmax(-1), y).item()).epsilon(1e-6));
}

TEST_CASE("mse_loss averages or sums squared differences and refuses mismatched shapes") {
  const Tensor a = tensor({{1, 2}, {3, 4}}), b = tensor({{1.5f, 2}, {1, 7}});
  // Squared differences 0.25, 0, 4, 9.
  CHECK(F::mse_loss(a, b).item() == doctest::Approx(13.25 / 4));
  CHECK(F::mse_loss(a, b, Reduction::Sum).item() == doctest::Approx(13.25));
  CHECK(F::mse_loss(a, b, Reduction::None).to_vector() == V{0.25f, 0, 4, 9});
  CHECK_THROWS_WITH_AS(F::mse_loss(a, tensor({1, 2})),
                       "mse_loss: target of shape (2) must have the input's shape (2,2)", ShapeError);
}

TEST_CASE("binary_cross_entropy_with_logits matches the textbook formula and stays finite for large logits") {
  const V xs = {-3.0f, -0.5f, 0.0f, 0.7f, 2.5f};
  const V ys = {0.0f, 1.0f, 0.3f, 1.0f, 0.0f};
  const Tensor x = tensor(xs, {5}), y = tensor(ys, {5});
  // -[y·log σ(x) + (1-y)·log(1-σ(x))], in double.
  std::vector<double> expected;
  for (int i = 0; i < 5; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(xs[i])));
    expected.push_back(-(ys[i] * std::log(s) + (1 - ys[i]) * std::log(1 - s)));
  }
  check_close(F::binary_cross_entropy_with_logits(x, y, {.reduction = Reduction::None}), expected);
  CHECK(F::binary_cross_entropy_with_logits(x, y).item() == doctest::Approx(sum(expected) / 5).epsilon(1e-6));
  // pos_weight 3 triples the positive term: -[3·y·log σ(x) + (1-y)·log(1-σ(x))].
  std::vector<double> weighted;
  for (int i = 0; i < 5; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(xs[i])));
    weighted.push_back(-(3 * ys[i] * std::log(s) + (1 - ys[i]) * std::log(1 - s)) * 0.5);
  }
  check_close(F::binary_cross_entropy_with_logits(
                  x, y, {.weight = full({5}, 0.5f), .pos_weight = tensor({3.0f}), .reduction = Reduction::None}),
              weighted);
  // e^100 overflows float; the stable form gives |x| for a confident wrong answer and 0 for a right one.
  check_close(F::binary_cross_entropy_with_logits(tensor({100, -100, 100}), tensor({0, 1, 1}),
                                                  {.reduction = Reduction::None}),
              {100, 100, 0});
}

TEST_CASE("binary_cross_entropy_with_logits gradient at x = 0 is sigmoid(0) - y") {
  // Composed from relu and abs, the gradient at 0 would be -y: both kinks pick the subgradient 0.
  const Tensor x = zeros({3}, true);
  F::binary_cross_entropy_with_logits(x, tensor({0, 1, 0.25f}), {.reduction = Reduction::Sum}).backward();
  CHECK(x.grad().to_vector() == V{0.5f, -0.5f, 0.25f});
}

TEST_CASE("sequence_cross_entropy averages over real tokens and differs from d2l's MaskedSoftmaxCELoss") {
  Generator gen(8);
  const int64_t B = 2, T = 4, C = 3;
  const Tensor logits = randn({B, T, C}, true, &gen);
  // Padded steps hold junk targets (99, -5): they must not matter.
  const IndexTensor y({2, 0, 1, 1, 0, 2, 99, -5}, {B, T});
  const IndexTensor valid{4, 2};
  const Tensor loss = F::sequence_cross_entropy(logits, y, valid);

  // By hand: per-token losses of the 6 real steps, divided by 6.
  const Reference r = reference_cross_entropy(logits.to_vector(), C, {2, 0, 1, 1, 0, 2, -1, -1}, {}, -1, 0.0);
  const double ours = sum(r.rows) / 6;
  CHECK(loss.item() == doctest::Approx(ours).epsilon(1e-6));

  // d2l's MaskedSoftmaxCELoss: (loss·mask).mean(dim=1), one value per sequence, each masked sum
  // divided by T = 4, so sequence 1 (2 real steps of 4) counts at half its per-token loss.
  // (d2l's padding holds the pad token, a valid class: 0 here.)
  Tensor mask = zeros({B, T});
  for (int64_t b = 0; b < B; ++b) mask.narrow(0, b, 1).narrow(1, 0, valid[b]).fill_(1.0f);
  const IndexTensor padded_with_0({2, 0, 1, 1, 0, 2, 0, 0}, {B, T});
  const Tensor d2l = (F::cross_entropy(logits, padded_with_0, {.reduction = Reduction::None}) * mask).mean({1});
  check_close(d2l, {(r.rows[0] + r.rows[1] + r.rows[2] + r.rows[3]) / 4, (r.rows[4] + r.rows[5]) / 4});
  const V per_sequence = d2l.to_vector();
  // Averaged over the batch, d2l weighs sequences equally and ours weighs tokens equally:
  // ours = Σ_b d2l_b · T / Σ_b valid_len_b, not the mean of the d2l values.
  CHECK((per_sequence[0] + per_sequence[1]) / 2 != doctest::Approx(ours).epsilon(1e-3));
  CHECK(ours == doctest::Approx((per_sequence[0] + per_sequence[1]) * 4 / 6).epsilon(1e-6));

  loss.backward();
  // Padded steps receive no gradient.
  const V g = logits.grad().to_vector();
  for (int64_t t = 2; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) CHECK(g[(1 * T + t) * C + c] == 0.0f);
}

TEST_CASE("sequence_cross_entropy rejects bad valid lengths and targets of real steps") {
  const Tensor logits = zeros({2, 3, 4});
  const IndexTensor y({0, 1, 2, 3, 0, 1}, {2, 3});
  CHECK_THROWS_WITH_AS(F::sequence_cross_entropy(logits, y, IndexTensor{3, 4}),
                       "sequence_cross_entropy: valid_lens[1] = 4 is outside [0, 3] for sequences of 3 steps",
                       ValueError);
  CHECK_THROWS_AS(F::sequence_cross_entropy(logits, y, IndexTensor{0, 0}), ValueError);
  CHECK_THROWS_WITH_AS(F::sequence_cross_entropy(logits, IndexTensor({0, 1, 2, 3, 9, 1}, {2, 3}), IndexTensor{3, 2}),
                       "sequence_cross_entropy: target 9 at (1, 1) is out of range for 4 classes", IndexError);
  // A step past the valid length may hold anything.
  CHECK(F::sequence_cross_entropy(logits, IndexTensor({0, 1, 2, 3, 0, 9}, {2, 3}), IndexTensor{3, 2}).item() ==
        doctest::Approx(std::log(4.0)));
}
