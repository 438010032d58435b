// The attention layers of nn/attention.h: d2l's demos, the seeds' worked examples computed exactly,
// the head layout against d2l's own, cross attention, the kept weights, dropout, permutation
// equivariance, the position-embedding hooks and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/attention.h"
#include "graph_testing.h"
#include "nn/attention_testing.h"
#include "nn/container.h"
#include "nn/position_scheme.h"
#include "nn/positional_encoding.h"
#include "nn/transformer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/reference_mode.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

// d2l's demo data (d2l 11.3.2.2): keys of ones, so every key scores the same and each query averages
// the values it may see; values arange(40) as (1, 10, 4) repeated for the 2 examples.
Tensor demo_keys() { return ones({2, 10, 2}); }
Tensor demo_values() { return arange(40.0f).reshape({1, 10, 4}).expand({2, 10, 4}); }

// d2l's torch.repeat_interleave(valid_lens, H, dim=0): each example's lengths, (B) or (B, Q), once
// per head.
IndexTensor repeat_per_head(const IndexTensor& valid_lens, int64_t H) {
  if (valid_lens.dim() == 1) return valid_lens.repeat_interleave(H);
  const int64_t B = valid_lens.size(0), Q = valid_lens.size(1);
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i) rows.push_back(valid_lens.at({b, i}));
  return IndexTensor(rows, {B * H, Q});
}

// d2l's MultiHeadAttention.forward, with its own head layout: transpose_qkv folds the heads into the
// batch, (B·H, T, d), valid_lens is repeated per head, the heads' outputs are unfolded by
// transpose_output. Returns the output and the weights (B·H, Q, K).
std::pair<Tensor, Tensor> d2l_multi_head(const nn::MultiHeadAttention& m, const Tensor& queries, const Tensor& keys,
                                         const Tensor& values, const IndexTensor& valid_lens) {
  const int64_t H = m.num_heads;
  auto transpose_qkv = [H](const Tensor& X) {
    const Tensor Y = X.reshape({X.size(0), X.size(1), H, -1}).permute({0, 2, 1, 3});
    return Y.reshape({-1, Y.size(2), Y.size(3)});
  };
  const Tensor q = transpose_qkv(m.W_q->forward(queries)), k = transpose_qkv(m.W_k->forward(keys));
  const Tensor v = transpose_qkv(m.W_v->forward(values));
  const Tensor w = d2l_masked_softmax(q.matmul(k.transpose(1, 2)) / std::sqrt(static_cast<float>(q.size(-1))),
                                      repeat_per_head(valid_lens, H));
  const Tensor out = w.matmul(v);
  const Tensor unfolded = out.reshape({-1, H, out.size(1), out.size(2)}).permute({0, 2, 1, 3});
  return {m.W_o->forward(unfolded.reshape({unfolded.size(0), unfolded.size(1), -1})), w};
}

// The seeds' "thinking machines" input: x1 = thinking, x2 = machines.
Tensor thinking_machines() { return tensor({{{1, 0, 1, 0}, {0, 2, 0, 2}}}); }

}  // namespace

TEST_CASE("DotProductAttention reproduces d2l's demo with keys of ones and values arange(40)") {
  // All keys are equal, so the weights are uniform over the valid keys (2 and 6) and the output is
  // the mean of those value rows: (v0 + v1)/2 = [2, 3, 4, 5] and (v0 + ... + v5)/6 = [10, 11, 12, 13].
  nn::DotProductAttention attention(0.5f);
  attention.eval();
  const Tensor out = attention.forward(randn({2, 1, 2}), demo_keys(), demo_values(), IndexTensor{2, 6});
  check_values(out, {2, 3, 4, 5, 10, 11, 12, 13}, 1e-6f);
  check_values(attention.attention_weights, {0.5f, 0.5f, 0, 0, 0, 0, 0, 0, 0, 0,  //
                                             1 / 6.0f, 1 / 6.0f, 1 / 6.0f, 1 / 6.0f, 1 / 6.0f, 1 / 6.0f, 0, 0, 0, 0},
               1e-6f);
}

TEST_CASE("AdditiveAttention reproduces d2l's demo with queries of width 20 and keys of width 2") {
  // d2l: AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1); equal keys give
  // equal scores whatever the parameters, so the output is the same as the dot-product demo's.
  nn::AdditiveAttention attention(2, 20, 8, 0.1f);
  attention.eval();
  const Tensor out = attention.forward(randn({2, 1, 20}), demo_keys(), demo_values(), IndexTensor{2, 6});
  CHECK(out.shape() == Shape{2, 1, 4});
  check_values(out, {2, 3, 4, 5, 10, 11, 12, 13}, 1e-5f);
  CHECK(attention.attention_weights.shape() == Shape{2, 1, 10});
  std::vector<std::string> names;
  for (const auto& [n, p] : attention.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"W_k.weight", "W_q.weight", "w_v.weight"});
  CHECK(attention.w_v->weight.shape() == Shape{1, 8});
}

TEST_CASE("AdditiveAttention with keys projected once gives forward's values and gradients") {
  nn::AdditiveAttention attention(3, 2, 4, 0.0f);
  Generator g(2);
  const Tensor q = randn({2, 2, 2}, true, &g), k = randn({2, 5, 3}, true, &g), v = randn({2, 5, 4}, true, &g);
  const IndexTensor lens{5, 3};
  const Tensor out = attention.forward(q, k, v, lens);
  out.pow(2.0f).sum().backward();
  const Tensor dq = q.grad(), dk = k.grad(), dv = v.grad(), dW_k = attention.W_k->weight.grad();
  for (Tensor t : {q, k, v}) t.zero_grad();
  attention.zero_grad();
  const Tensor projected = attention.project_keys(k);
  CHECK(projected.shape() == Shape{2, 5, 4});
  const Tensor again = attention.forward_projected(q, projected, v, lens);
  again.pow(2.0f).sum().backward();
  check_close(again, out, 0.0f);  // the same ops in the same order: the same bits
  check_close(q.grad(), dq, 0.0f);
  check_close(k.grad(), dk, 0.0f);
  check_close(v.grad(), dv, 0.0f);
  check_close(attention.W_k->weight.grad(), dW_k, 0.0f);
  CHECK_THROWS_AS(attention.forward_projected(q, k, v, lens), ShapeError);  // keys not projected: width 3, not 4
}

TEST_CASE("AdditiveAttention scores are w_v of tanh of W_q q plus W_k k") {
  nn::AdditiveAttention attention(3, 2, 4, 0.0f);
  Generator g(1);
  const Tensor q = randn({1, 2, 2}, false, &g), k = randn({1, 3, 3}, false, &g), v = randn({1, 3, 5}, false, &g);
  const Tensor out = attention.forward(q, k, v, IndexTensor({3, 2}, {1, 2}));
  // Query 1 sees keys 0 and 1: score_j = w_v · tanh(W_q q1 + W_k k_j), weights = softmax(score_0, score_1).
  auto score = [&](int64_t j) {
    const Tensor f = (attention.W_q->weight.matmul(q.select(0, 0).select(0, 1)) +
                      attention.W_k->weight.matmul(k.select(0, 0).select(0, j))).tanh();
    return attention.w_v->weight.select(0, 0).matmul(f).item();
  };
  const float a = 1.0f / (1.0f + std::exp(score(1) - score(0)));
  check_values(attention.attention_weights.select(0, 0).select(0, 1), {a, 1 - a, 0}, 1e-5f);
  check_close(out.select(0, 0).select(0, 1), v.select(0, 0).select(0, 0) * a + v.select(0, 0).select(0, 1) * (1 - a), 1e-5f);
}

TEST_CASE("MultiHeadAttention gives d2l's output shape (2 4 100) with valid_lens 3 and 2") {
  // d2l 11.5.3: num_hiddens 100, 5 heads, dropout 0.5, eval; X ones (2, 4, 100), Y ones (2, 6, 100).
  nn::MultiHeadAttention attention(100, 100, 100, 100, 5, 0.5f);
  attention.eval();
  const Tensor X = ones({2, 4, 100}), Y = ones({2, 6, 100});
  CHECK(attention.forward(X, Y, Y, IndexTensor{3, 2}).shape() == Shape{2, 4, 100});
  CHECK(attention.attention_weights.shape() == Shape{2, 5, 4, 6});
  CHECK(attention.forward(X, X, X, IndexTensor{3, 2}).shape() == Shape{2, 4, 100});  // self-attention
  CHECK(attention.summary().find("MultiHeadAttention(num_hiddens=100, num_heads=5, dropout=0.5") != std::string::npos);
  std::vector<std::string> names;
  for (const auto& [n, p] : attention.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"W_q.weight", "W_k.weight", "W_v.weight", "W_o.weight"});
}

TEST_CASE("MultiHeadAttention with one head reproduces the seeds' thinking machines example") {
  // The seeds' W_Q, W_K, W_V (4×3, used as X·W) are Linear weights transposed; W_o is the identity,
  // since the single-head example has no output projection. Exact values as in
  // test_attention_functional.cpp (numpy, float64).
  nn::MultiHeadAttention attention(4, 4, 4, 3, 1, 0.0f);
  const Tensor WQ = tensor({{1, 0, 1}, {1, 1, 0}, {0, 1, 1}, {1, 0, 0}});
  const Tensor WK = tensor({{0, 1, 0}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1}});
  const Tensor WV = tensor({{0, 2, 0}, {1, 0, 3}, {1, 1, 0}, {0, 0, 1}});
  attention.load_state_dict({{"W_q.weight", WQ.t()}, {"W_k.weight", WK.t()}, {"W_v.weight", WV.t()}, {"W_o.weight", eye(3)}});
  const Tensor X = thinking_machines();
  const Tensor out = attention.forward(X, X, X);
  check_values(attention.attention_weights, {0.0303511f, 0.9696489f, 0.0030992f, 0.9969008f}, 1e-6f);
  check_values(out, {1.9696489f, 0.0910533f, 7.7571913f, 1.9969008f, 0.0092976f, 7.9752063f}, 1e-6f);
}

TEST_CASE("MultiHeadAttention with two heads and W_O reproduces the seeds' example exactly") {
  // The seeds' two-head example: head h has its own 4×2 W_Q^h, W_K^h, W_V^h. In d2l's layout head h
  // reads output features [2h, 2h + 2) of one 4×4 projection, so W_q = [W_Q^1 | W_Q^2] (transposed
  // as a Linear weight), and likewise for k and v; Output = Concat(head_1, head_2)·W_O.
  // Exact values (numpy, float64; Q_1 = [[1,1],[4,2]], K_1 = [[1,1],[2,4]], V_1 = [[1,3],[2,0]],
  // Q_2 = [[1,2],[2,0]], K_2 = [[1,1],[2,2]], V_2 = [[2,1],[4,8]], scores scaled by 1/√2):
  //   weights head 1 [[0.0558072, 0.9441928], [0.0008486, 0.9991514]]
  //   weights head 2 [[0.1070418, 0.8929582], [0.1955703, 0.8044297]]
  //   head_1 = [[1.9441928, 0.1674217], [1.9991514, 0.0025458]]
  //   head_2 = [[3.7859164, 7.2507074], [3.6088594, 6.6310078]]
  //   output = [[5.7301092, 7.5855507, 9.1949002, 3.9533381], [5.6080108, 6.6360994, 8.6301592, 3.6114052]]
  // The seeds' numbers differ in the second or third digit because they carry rounded weights
  // forward: 0.05/0.95 (exact 0.0558), 0.11/0.89 and 0.19/0.81 (exact 0.1956, which rounds to 0.20).
  // Their first output row does follow from their rounded heads — checked below — and their second
  // row has slips of its own (8.619 where 1.999 + 6.67 = 8.669).
  const Tensor WQ1 = tensor({{1, 0}, {1, 1}, {0, 1}, {1, 0}}), WQ2 = tensor({{0, 1}, {1, 0}, {1, 1}, {0, 0}});
  const Tensor WK1 = tensor({{0, 1}, {1, 1}, {1, 0}, {0, 1}}), WK2 = tensor({{1, 1}, {0, 1}, {0, 0}, {1, 0}});
  const Tensor WV1 = tensor({{0, 2}, {1, 0}, {1, 1}, {0, 0}}), WV2 = tensor({{1, 1}, {0, 3}, {1, 0}, {2, 1}});
  const Tensor WO = tensor({{1, 0, 1, 0}, {0, 2, 0, 1}, {1, 0, 0, 1}, {0, 1, 1, 0}});
  nn::MultiHeadAttention attention(4, 4, 4, 4, 2, 0.0f);
  attention.load_state_dict({{"W_q.weight", cat({WQ1, WQ2}, 1).t()},
                             {"W_k.weight", cat({WK1, WK2}, 1).t()},
                             {"W_v.weight", cat({WV1, WV2}, 1).t()},
                             {"W_o.weight", WO.t()}});
  const Tensor X = thinking_machines();
  const Tensor out = attention.forward(X, X, X);
  check_values(attention.attention_weights,
               {0.0558072f, 0.9441928f, 0.0008486f, 0.9991514f, 0.1070418f, 0.8929582f, 0.1955703f, 0.8044297f}, 1e-6f);
  check_values(out, {5.7301092f, 7.5855507f, 9.1949002f, 3.9533381f, 5.6080108f, 6.6360994f, 8.6301592f, 3.6114052f},
               1e-6f);
  // The seeds' first row from their rounded Concat row [1.95, 0.15, 3.78, 7.23]: [5.73, 7.53, 9.18, 3.93].
  check_values(tensor({{1.95f, 0.15f, 3.78f, 7.23f}}).matmul(WO), {5.73f, 7.53f, 9.18f, 3.93f}, 1e-6f);
}

TEST_CASE("MultiHeadAttention splits heads exactly as d2l's transpose_qkv and transpose_output") {
  // Cross attention, Q != K and different widths for queries, keys and values.
  nn::MultiHeadAttention attention(/*key_size=*/4, /*query_size=*/6, /*value_size=*/7, /*num_hiddens=*/8,
                                   /*num_heads=*/2, 0.0f, /*bias=*/true);
  Generator g(2);
  const Tensor queries = randn({2, 3, 6}, false, &g), keys = randn({2, 5, 4}, false, &g), values = randn({2, 5, 7}, false, &g);
  for (const IndexTensor& lens : {IndexTensor{5, 2}, IndexTensor({1, 2, 3, 5, 4, 0}, {2, 3})}) {
    CAPTURE(lens);
    const Tensor out = attention.forward(queries, keys, values, lens);
    CHECK(out.shape() == Shape{2, 3, 8});
    CHECK(attention.attention_weights.shape() == Shape{2, 2, 3, 5});
    const auto [expected, weights] = d2l_multi_head(attention, queries, keys, values, lens);
    if (lens.dim() == 1) {
      check_close(out, expected, 1e-5f);
      check_close(attention.attention_weights, weights.reshape({2, 2, 3, 5}), 1e-6f);
    } else {
      // Query 2 of example 1 has length 0: d2l spreads it over the hidden keys, qkv gives it zeros.
      check_close(out.narrow(0, 0, 1), expected.narrow(0, 0, 1), 1e-5f);
      check_close(out.select(0, 1).narrow(0, 0, 2), expected.select(0, 1).narrow(0, 0, 2), 1e-5f);
      check_close(attention.attention_weights.select(0, 1).select(1, 2), zeros({2, 5}), 0.0f);
    }
  }
}

TEST_CASE("MultiHeadAttention keeps detached weights per head that sum to 1 over valid keys") {
  nn::MultiHeadAttention attention(6, 6, 6, 6, 3, 0.0f);
  const Tensor X = randn({2, 4, 6}, true);
  const Tensor out = attention.forward(X, X, X, IndexTensor{3, 1});
  const Tensor& w = attention.attention_weights;
  CHECK(w.shape() == Shape{2, 3, 4, 4});
  CHECK_FALSE(w.requires_grad());
  CHECK(w.grad_fn() == nullptr);
  CHECK(out.requires_grad());
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t q = 0; q < 4; ++q) {
        const int64_t valid = b == 0 ? 3 : 1;
        float sum = 0.0f;
        for (int64_t k = 0; k < 4; ++k) {
          if (k >= valid) CHECK(w.at({b, h, q, k}) == 0.0f);
          sum += w.at({b, h, q, k});
        }
        CHECK(sum == doctest::Approx(1.0f).epsilon(1e-6));
      }
  // Heads differ: each has its own slice of the projections.
  CHECK(std::fabs(w.at({0, 0, 0, 0}) - w.at({0, 1, 0, 0})) > 1e-6f);
}

TEST_CASE("attention dropout acts on the weights in training and not in eval") {
  nn::MultiHeadAttention attention(8, 8, 8, 8, 2, 0.5f);
  const Tensor X = randn({2, 5, 8});
  attention.eval();
  const Tensor a = attention.forward(X, X, X), b = attention.forward(X, X, X);
  check_close(a, b, 0.0f);
  check_close(a, d2l_multi_head(attention, X, X, X, IndexTensor{5, 5}).first, 1e-5f);
  attention.train();
  const Tensor c = attention.forward(X, X, X), d = attention.forward(X, X, X);
  CHECK((c - d).abs().max().item() > 1e-3f);  // different weights dropped each time
  CHECK((c - a).abs().max().item() > 1e-3f);
  // The kept weights are taken before dropout: still a distribution over the keys.
  check_close(attention.attention_weights.sum({-1}), ones({2, 2, 5}), 1e-6f);
  nn::DotProductAttention dot(0.5f);
  dot.eval();
  const Tensor q = randn({1, 3, 4}), kv = randn({1, 6, 4});
  check_close(dot.forward(q, kv, kv), dot.forward(q, kv, kv), 0.0f);
}

TEST_CASE("self-attention without positions is permutation-equivariant and with them it is not") {
  // The seeds: self-attention alone has no idea of order ("天涯若比邻"); permuting its input
  // permutes its output. Adding a positional encoding before it breaks that.
  nn::MultiHeadAttention attention(8, 8, 8, 8, 2, 0.0f);
  nn::PositionalEncoding pe(8, 0.0f);
  Generator g(3);
  const Tensor X = randn({1, 5, 8}, false, &g);
  const IndexTensor perm{3, 0, 4, 1, 2};
  const Tensor Xp = X.index_select(1, perm);
  const Tensor out = attention.forward(X, X, X), out_p = attention.forward(Xp, Xp, Xp);
  check_close(out_p, out.index_select(1, perm), 1e-5f);
  const Tensor P = pe.forward(X), Pp = pe.forward(Xp);
  const Tensor with_pe = attention.forward(P, P, P), with_pe_p = attention.forward(Pp, Pp, Pp);
  CHECK((with_pe_p - with_pe.index_select(1, perm)).abs().max().item() > 1e-2f);
}

namespace {

// A position scheme of the test's own: it records what it sees and zeroes the queries.
struct ZeroQueries : nn::PositionScheme {
  std::pair<Tensor, Tensor> transform_qk(const Tensor& q, const Tensor& k) override {
    seen_q = q.shape(), seen_k = k.shape();
    return {q * 0.0f, k};  // queries of zeros score every key the same
  }
  Shape seen_q, seen_k;
};

}  // namespace

TEST_CASE("MultiHeadAttention applies its position scheme to the per-head queries and keys") {
  nn::MultiHeadAttention attention(4, 6, 4, 6, 3, 0.0f);
  const auto scheme = std::make_shared<ZeroQueries>();
  attention.positions = scheme;
  const Tensor out = attention.forward(randn({2, 3, 6}), randn({2, 5, 4}), randn({2, 5, 4}), IndexTensor{4, 5});
  CHECK(scheme->seen_q == Shape{2, 3, 3, 2});  // (B, H, Q, d)
  CHECK(scheme->seen_k == Shape{2, 3, 5, 2});  // (B, H, K, d)
  CHECK(out.shape() == Shape{2, 3, 6});
  check_values(attention.attention_weights.select(0, 0).select(0, 1).select(0, 2), {0.25f, 0.25f, 0.25f, 0.25f, 0}, 1e-6f);
  check_values(attention.attention_weights.select(0, 1).select(0, 2).select(0, 0), {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 1e-6f);
  // Self-attention, whose projections are packed into one product, asks the scheme too (it does
  // not say it transforms the heads, PositionScheme::transforms_qk, but it does).
  nn::MultiHeadAttention self(6, 6, 6, 6, 3, 0.0f);
  self.positions = scheme;
  const Tensor x = randn({2, 4, 6});
  self.forward(x, x, x, IndexTensor{4, 2});
  CHECK(scheme->seen_q == Shape{2, 3, 4, 2});
  check_values(self.attention_weights.select(0, 0).select(0, 1).select(0, 3), {0.25f, 0.25f, 0.25f, 0.25f}, 1e-6f);
  check_values(self.attention_weights.select(0, 1).select(0, 2).select(0, 0), {0.5f, 0.5f, 0, 0}, 1e-6f);
}

namespace {

// Rotary positions that do not offer to turn a packed projection: the layer projects the heads apart.
struct RotaryOnHeads : nn::RotaryPositions {
  using nn::RotaryPositions::RotaryPositions;
  bool transforms_packed() const override { return false; }
};

// Self-attention with dropout, causal lengths and rotary positions (packed or on heads): the output,
// the gradients of the input and of W_q and W_v, and whether the graph holds the packed op.
std::vector<Tensor> rotary_self_attention(bool packed, bool& packed_op) {
  manual_seed(5);  // the same weights and dropout masks both ways
  nn::MultiHeadAttention attention(8, 8, 8, 8, 2, 0.25f);
  nn::PositionSizes sizes{.num_hiddens = 8, .num_heads = 2, .max_len = 16};
  attention.positions = packed ? std::make_shared<nn::RotaryPositions>(sizes) : std::make_shared<RotaryOnHeads>(sizes);
  Generator g(3);
  const Tensor x = randn({2, 6, 8}, true, &g);
  const Tensor out = attention.forward(x, x, x, IndexTensor({1, 2, 3, 4, 5, 6, 1, 2, 2, 3, 3, 5}, {2, 6}));
  packed_op = graph_has(out, "fused_attention_packed");
  (out * out.detach().cos()).sum().backward();
  return {out.detach(), x.grad(), attention.W_q->weight.grad(), attention.W_v->weight.grad()};
}

}  // namespace

TEST_CASE("rotary positions keep self-attention on its packed projection, to the bit of the heads route") {
  bool on_packed = false, on_heads = true;
  const std::vector<Tensor> packed = rotary_self_attention(true, on_packed);
  const std::vector<Tensor> heads = rotary_self_attention(false, on_heads);
  CHECK(on_packed);
  CHECK_FALSE(on_heads);
  for (size_t i = 0; i < packed.size(); ++i) CHECK_MESSAGE(packed[i].to_vector() == heads[i].to_vector(), i);
}

TEST_CASE("MultiHeadAttention adds a per-head bias to each head's scores") {
  // A relative position bias (T5) is (1, H, Q, K): head 0 gets -inf on key 0, head 1 nothing.
  nn::MultiHeadAttention attention(4, 4, 4, 4, 2, 0.0f);
  const Tensor X = randn({2, 3, 4});
  attention.forward(X, X, X);
  const Tensor plain = attention.attention_weights;
  Tensor bias = zeros({1, 2, 3, 3});
  bias.data()[0] = bias.data()[3] = bias.data()[6] = -std::numeric_limits<float>::infinity();  // head 0, key 0
  attention.forward(X, X, X, IndexTensor(), Tensor(), bias);
  const Tensor biased = attention.attention_weights;
  check_close(biased.select(1, 1), plain.select(1, 1), 1e-6f);
  check_close(biased.select(1, 0).select(-1, 0), zeros({2, 3}), 0.0f);
  check_close(biased.select(1, 0).sum({-1}), ones({2, 3}), 1e-6f);
  // A bias that is the same for every key of a row changes nothing (softmax ignores shifts).
  attention.forward(X, X, X, IndexTensor(), Tensor(), full({2, 1, 3, 1}, 5.0f));
  check_close(attention.attention_weights, plain, 1e-6f);
}

TEST_CASE("attention layers name the shapes they cannot use") {
  CHECK_THROWS_WITH_AS(nn::MultiHeadAttention(10, 10, 10, 10, 3, 0.1f),
                       "MultiHeadAttention: num_hiddens 10 must be a positive multiple of num_heads 3 (each head takes "
                       "num_hiddens / num_heads features)",
                       ValueError);
  CHECK_THROWS_AS(nn::MultiHeadAttention(10, 10, 10, 10, 0, 0.1f), ValueError);
  CHECK_THROWS_AS(nn::DotProductAttention(1.0f), ValueError);
  nn::MultiHeadAttention attention(4, 6, 5, 8, 2, 0.0f);
  const Tensor q = zeros({2, 3, 6}), k = zeros({2, 7, 4}), v = zeros({2, 7, 5});
  CHECK_THROWS_WITH_AS(attention.forward(zeros({2, 3, 4}), k, v),
                       "MultiHeadAttention: queries of shape (2,3,4) must be (B, T, 6)", ShapeError);
  CHECK_THROWS_WITH_AS(attention.forward(q, zeros({1, 7, 4}), v),
                       "MultiHeadAttention: keys of shape (1,7,4) must be (2, T, 4)", ShapeError);
  CHECK_THROWS_WITH_AS(attention.forward(q, k, zeros({2, 6, 5})),
                       "MultiHeadAttention: values of shape (2,6,5) must pair with keys of shape (2,7,4): expected (2, 7, dv)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(attention.forward(q, k, v, IndexTensor{8, 1}),
                       "MultiHeadAttention: valid length 8 (element 0 of valid_lens) is out of range [0, 7], the number of keys",
                       IndexError);
  CHECK_THROWS_AS(attention.forward(q, k, v, IndexTensor{1, 2, 3}), ShapeError);
  CHECK_THROWS_AS(attention.forward(q, k, v, IndexTensor(), ones({3, 6})), ShapeError);  // mask (Q, K) wrong
  nn::AdditiveAttention additive(4, 6, 8, 0.0f);
  CHECK_THROWS_WITH_AS(additive.forward(q, zeros({2, 7, 3}), v),
                       "AdditiveAttention: keys of shape (2,7,3) must be (2, T, 4)", ShapeError);
}

TEST_CASE("an attention layer in a model names itself by its path whichever path computes it") {
  // Before, a wrong valid_lens was reported by the op the configuration ran (fused_attention,
  // fused_attention_packed, masked_softmax, banded_attention): names the user never wrote.
  nn::TransformerEncoder encoder({.vocab_size = 10, .num_hiddens = 8, .ffn_num_hiddens = 16, .num_heads = 2,
                                  .num_layers = 2, .dropout = 0.0f});
  const IndexTensor ids({1, 2, 3, 4, 5, 6}, {2, 3});
  const std::string expected =
      "blocks.0.attention (MultiHeadAttention): valid length 9 (element 1 of valid_lens) is out of range [0, 3], "
      "the number of keys";
  for (const bool fused : {true, false}) {
    for (const bool reference : {false, true}) {
      CAPTURE(fused);
      CAPTURE(reference);
      for (size_t i = 0; i < encoder.blocks->size(); ++i)
        std::dynamic_pointer_cast<nn::MultiHeadAttention>(encoder.blocks->at<nn::TransformerEncoderBlock>(i)->attention)->fused = fused;
      const ReferenceModeGuard mode(reference);
      CHECK_THROWS_WITH_AS(encoder.forward(ids, IndexTensor{2, 9}), expected.c_str(), IndexError);
    }
  }
  CHECK_THROWS_WITH_AS(encoder.forward(ids, IndexTensor{1, 2, 3}),
                       "blocks.0.attention (MultiHeadAttention): valid_lens of shape (3) does not fit 2 sequences of 3 "
                       "queries: expected (2) or (2,3)",
                       ShapeError);
  // Inside a larger model, the path grows with it.
  nn::ModuleList model;
  const auto inner = std::make_shared<nn::MultiHeadAttention>(4, 4, 4, 4, 2, 0.0f);
  model.push_back(inner);
  const Tensor x = zeros({1, 2, 4});
  CHECK_THROWS_WITH_AS(inner->forward(x, x, x, IndexTensor{3}),
                       "0 (MultiHeadAttention): valid length 3 (element 0 of valid_lens) is out of range [0, 2], the "
                       "number of keys",
                       IndexError);
}
