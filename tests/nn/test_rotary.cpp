// Rotary position embedding (RoFormer): its values, the properties that make it a relative
// encoding (norms kept, position 0 the identity, scores depending on m − n only), positions and
// offsets, the other pairing convention, and its errors.
#include <doctest/doctest.h>

#include <cmath>

#include "gradcheck_registry.h"
#include "nn/rotary.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

// ⟨a, b⟩ in double, for 1-d tensors.
double dot(const Tensor& a, const Tensor& b) {
  const std::vector<float> u = a.to_vector(), v = b.to_vector();
  double s = 0;
  for (size_t i = 0; i < u.size(); ++i) s += static_cast<double>(u[i]) * v[i];
  return s;
}

// The vector x (d) rotated for position m: x of shape (1, d), read back as (d).
Tensor at_position(const nn::RotaryEmbedding& rope, const Tensor& x, int64_t m) {
  return rope.forward(x.unsqueeze(0), IndexTensor{m}).squeeze(0);
}

}  // namespace

TEST_CASE("RotaryEmbedding turns each feature pair by the position times theta_i") {
  // RoFormer eq. 34, in double: y_2i = x_2i cos(mθ_i) − x_2i+1 sin(mθ_i), y_2i+1 = x_2i sin(mθ_i) +
  // x_2i+1 cos(mθ_i), θ_i = base^(−2i/d). The tables are float32, so agreement is to float rounding of
  // angles up to 40 rad (ulp about 4e-6).
  const int64_t d = 8, T = 6;
  for (const float base : {10000.0f, 500.0f}) {
    nn::RotaryEmbedding rope(d, 64, base);
    const Tensor x = randn({2, T, d});
    for (const int64_t offset : {0, 35}) {
      const Tensor y = rope.forward(x, offset);
      REQUIRE(y.shape() == Shape{2, T, d});
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < d / 2; ++i) {
            const double theta = std::pow(static_cast<double>(base), -2.0 * i / d),
                         angle = (offset + t) * theta;
            const double x0 = x.at({b, t, 2 * i}), x1 = x.at({b, t, 2 * i + 1});
            CHECK(y.at({b, t, 2 * i}) ==
                  doctest::Approx(x0 * std::cos(angle) - x1 * std::sin(angle)).epsilon(2e-5));
            CHECK(y.at({b, t, 2 * i + 1}) ==
                  doctest::Approx(x0 * std::sin(angle) + x1 * std::cos(angle)).epsilon(2e-5));
          }
    }
  }
}

TEST_CASE("RotaryEmbedding leaves position 0 unchanged and keeps every vector's norm") {
  nn::RotaryEmbedding rope(16, 128);
  const Tensor x = randn({2, 3, 100, 16});  // (B, H, T, d)
  const Tensor y = rope.forward(x);
  CHECK(y.narrow(2, 0, 1).to_vector() == x.narrow(2, 0, 1).to_vector());  // cos 0 = 1, sin 0 = 0: exact
  const std::vector<float> before = x.norm(2.0f, {-1}).to_vector(), after = y.norm(2.0f, {-1}).to_vector();
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == doctest::Approx(before[i]).epsilon(1e-5));
  // Positions other than 0 do move the vector.
  CHECK(y.narrow(2, 1, 1).to_vector() != x.narrow(2, 1, 1).to_vector());
}

TEST_CASE("RotaryEmbedding scores of a query at m and a key at n depend only on m minus n") {
  // ⟨R(m)q, R(n)k⟩ = ⟨q, R(n − m)k⟩: shifting both positions by s leaves the score unchanged.
  const int64_t d = 16;
  nn::RotaryEmbedding rope(d, 512);
  const Tensor q = randn({d}), k = randn({d});
  for (const int64_t m : {0, 3, 17})
    for (const int64_t n : {0, 5, 40}) {
      const double score = dot(at_position(rope, q, m), at_position(rope, k, n));
      for (const int64_t s : {1, 7, 100, 400})
        CHECK(dot(at_position(rope, q, m + s), at_position(rope, k, n + s)) ==
              doctest::Approx(score).epsilon(1e-4));
    }
  // ... and it does depend on m − n.
  CHECK(std::fabs(dot(at_position(rope, q, 0), at_position(rope, k, 1)) -
                  dot(at_position(rope, q, 0), at_position(rope, k, 2))) > 1e-3);
  // In a whole score matrix: the same q and k at every position give a Toeplitz matrix,
  // S[i][j] a function of j − i.
  const int64_t T = 12;
  const Tensor Q = rope.forward(q.expand({T, d})), K = rope.forward(k.expand({T, d}));
  const Tensor S = Q.matmul(K.t());
  for (int64_t i = 1; i < T; ++i)
    for (int64_t j = 1; j < T; ++j)
      CHECK(S.at({i, j}) == doctest::Approx(S.at({i - 1, j - 1})).epsilon(1e-4));
}

TEST_CASE("RotaryEmbedding at an offset or at given positions rotates like the longer sequence") {
  // The rows of a long sequence rotated from position 0 are what a decoding step computes for the
  // same rows alone at their offset, or at their positions: bitwise, from the same table rows.
  nn::RotaryEmbedding rope(6, 32);
  const Tensor x = randn({2, 20, 6});
  const Tensor whole = rope.forward(x);
  const Tensor tail = x.narrow(1, 12, 5);
  CHECK(rope.forward(tail, 12).to_vector() == whole.narrow(1, 12, 5).to_vector());
  CHECK(rope.forward(tail, IndexTensor{12, 13, 14, 15, 16}).to_vector() ==
        whole.narrow(1, 12, 5).to_vector());
  // Positions in any order: each row of the result is the row at its own position.
  const Tensor shuffled = rope.forward(x.index_select(1, IndexTensor{7, 2}), IndexTensor{7, 2});
  CHECK(shuffled.to_vector() == whole.index_select(1, IndexTensor{7, 2}).to_vector());
}

TEST_CASE("RotaryEmbedding matches the rotate_half convention on permuted features") {
  // GPT-NeoX / Hugging Face LLaMA pair feature i with i + d/2: y = x·[cos, cos] + rotate_half(x)·[sin, sin],
  // rotate_half(x) = [−x_{d/2:}, x_{:d/2}]. Moving feature 2i to i and 2i+1 to i + d/2 before and
  // after turns one convention into the other.
  const int64_t d = 8, T = 5;
  nn::RotaryEmbedding rope(d, 16);
  const Tensor x = randn({T, d});
  std::vector<int64_t> to_halves;
  for (int64_t i = 0; i < d / 2; ++i) to_halves.push_back(2 * i);
  for (int64_t i = 0; i < d / 2; ++i) to_halves.push_back(2 * i + 1);
  const IndexTensor perm(to_halves);
  const Tensor xh = x.index_select(1, perm);  // (T, d) in halves layout
  const Tensor c = cat({rope.cos.narrow(0, 0, T), rope.cos.narrow(0, 0, T)}, 1);
  const Tensor s = cat({rope.sin.narrow(0, 0, T), rope.sin.narrow(0, 0, T)}, 1);
  const Tensor rotate_half = cat({-xh.narrow(1, d / 2, d / 2), xh.narrow(1, 0, d / 2)}, 1);
  const std::vector<float> neox = (xh * c + rotate_half * s).to_vector();
  const std::vector<float> ours = rope.forward(x).index_select(1, perm).to_vector();
  for (size_t i = 0; i < neox.size(); ++i) CHECK(ours[i] == doctest::Approx(neox[i]).epsilon(1e-6));
}

TEST_CASE("RotaryEmbedding keeps its cos and sin tables out of state_dict") {
  nn::RotaryEmbedding rope(8, 100);
  CHECK(rope.state_dict().empty());
  CHECK(rope.parameters().empty());
  CHECK(rope.cos.shape() == Shape{100, 4});
  CHECK(rope.sin.shape() == Shape{100, 4});
  CHECK(rope.cos.at({3, 0}) == doctest::Approx(std::cos(3.0)));          // θ_0 = 1
  CHECK(rope.sin.at({3, 2}) == doctest::Approx(std::sin(3.0 / 100.0)));  // θ_2 = 10000^(−4/8)
  CHECK(rope.summary() == "RotaryEmbedding(head_dim=8, max_len=100, base=10000)\n");
}

TEST_CASE("RotaryEmbedding rejects an odd head_dim a wrong width and positions past max_len") {
  CHECK_THROWS_WITH_AS(nn::RotaryEmbedding(5),
                       "RotaryEmbedding: head_dim must be even and positive (features turn in pairs), got 5",
                       ValueError);
  nn::RotaryEmbedding rope(4, 10);
  CHECK_THROWS_WITH_AS(rope.forward(zeros({2, 3, 6})),
                       "RotaryEmbedding: input of shape (2,3,6) must be (..., T, 4)", ShapeError);
  CHECK_THROWS_WITH_AS(rope.forward(zeros({4})), "RotaryEmbedding: input of shape (4) must be (..., T, 4)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      rope.forward(zeros({1, 11, 4})),
      "RotaryEmbedding: a sequence of length 11 at offset 0 needs positions up to 10, past max_len 10",
      ShapeError);
  CHECK_THROWS_WITH_AS(
      rope.forward(zeros({1, 3, 4}), 8),
      "RotaryEmbedding: a sequence of length 3 at offset 8 needs positions up to 10, past max_len 10",
      ShapeError);
  CHECK_THROWS_WITH_AS(rope.forward(zeros({1, 3, 4}), -1),
                       "RotaryEmbedding: offset must be non-negative, got -1", ValueError);
  CHECK_THROWS_WITH_AS(rope.forward(zeros({3, 4}), IndexTensor{0, 10, 2}),
                       "RotaryEmbedding: position 10 is outside [0, max_len) with max_len 10", IndexError);
  CHECK_THROWS_WITH_AS(
      rope.forward(zeros({3, 4}), IndexTensor{0, 1}),
      "RotaryEmbedding: input of shape (3,4) and positions of shape (2) must be (..., T, 4) and (T)",
      ShapeError);
}

QKV_GRADCHECK_MODULE(
    "RotaryEmbedding", {In::normal({2, 2, 3, 6})}, [] { return std::make_shared<nn::RotaryEmbedding>(6, 8); },
    [](nn::RotaryEmbedding& m, const Inputs& x) { return m.forward(x[0], 4); });
QKV_GRADCHECK_MODULE(
    "RotaryEmbedding at positions", {In::normal({3, 4})},
    [] { return std::make_shared<nn::RotaryEmbedding>(4, 8); },
    [](nn::RotaryEmbedding& m, const Inputs& x) {
      return m.forward(x[0], IndexTensor{5, 0, 7});
    });
