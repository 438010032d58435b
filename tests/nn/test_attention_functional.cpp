// nn/functional/attention.h: d2l's masked_softmax demo, the masks of the seeds' attention variants
// (causal, truncated/windowed, graph, key padding) alone and composed, the fully-masked-row rule,
// additive biases, and scaled dot-product attention on the seeds' "thinking machines" example.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/attention_testing.h"
#include "nn/functional/attention.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;
namespace F = qkv::nn::functional;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

// d2l's demo input, masked_softmax(torch.rand(2, 2, 4), ...), with fixed values instead of rand.
Tensor demo_scores() { return tensor({{{0.1f, 0.5f, 0.9f, 0.3f}, {0.7f, 0.2f, 0.4f, 0.6f}}, {{0.8f, 0.1f, 0.5f, 0.2f}, {0.3f, 0.9f, 0.6f, 0.4f}}}); }

// Every row of weights w (..., Q, K) sums to 1 where keep (broadcast to w) has a visible key, and w
// is exactly 0 wherever keep is 0; rows with nothing visible are all 0.
void check_rows_follow_mask(const Tensor& w, const Tensor& keep) {
  const Tensor k = keep.expand(w.shape()).contiguous();
  const std::vector<float> wv = w.contiguous().to_vector(), kv = k.to_vector();
  const size_t K = static_cast<size_t>(w.size(-1));
  for (size_t row = 0; row < wv.size() / K; ++row) {
    float sum = 0.0f, visible = 0.0f;
    for (size_t j = row * K; j < (row + 1) * K; ++j) {
      if (kv[j] == 0.0f) CHECK(wv[j] == 0.0f);
      sum += wv[j];
      visible += kv[j];
    }
    CHECK(sum == doctest::Approx(visible > 0.0f ? 1.0f : 0.0f).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("masked_softmax reproduces d2l's demo with valid_lens 2 and 3") {
  // Expected values from numpy in float64, d2l's code transcribed:
  //   L = np.repeat([2, 3], 2); m = np.arange(4)[None, :] < L[:, None]; Xr[~m] = -1e6;
  //   e = np.exp(Xr - Xr.max(-1, keepdims=True)); e / e.sum(-1, keepdims=True)
  // e.g. row (0, 0): softmax(0.1, 0.5) = 1/(1 + e^0.4), e^0.4/(1 + e^0.4) = 0.4013123, 0.5986877.
  check_values(F::masked_softmax(demo_scores(), IndexTensor{2, 3}),
               {0.4013123f, 0.5986877f, 0, 0, 0.6224593f, 0.3775407f, 0, 0,  //
                0.4469466f, 0.2219471f, 0.3311062f, 0, 0.2396945f, 0.4367518f, 0.3235537f, 0},
               1e-6f);
  // d2l's second demo: one length per query, valid_lens [[1, 3], [2, 4]].
  check_values(F::masked_softmax(demo_scores(), IndexTensor({1, 3, 2, 4}, {2, 2})),
               {1, 0, 0, 0, 0.4260125f, 0.2583897f, 0.3155978f, 0,  //
                0.6681878f, 0.3318122f, 0, 0, 0.1894963f, 0.3452847f, 0.2557932f, 0.2094258f},
               1e-6f);
  // And without lengths, the plain softmax.
  check_close(F::masked_softmax(demo_scores(), IndexTensor()), demo_scores().softmax(-1), 1e-6f);
}

TEST_CASE("causal_mask lets query i see keys up to i aligned at the top left") {
  check_values(F::causal_mask(3, 3), {1, 0, 0, 1, 1, 0, 1, 1, 1}, 0.0f);
  // Q != K: torch.tril(torch.ones(2, 4)), PyTorch's is_causal convention.
  check_values(F::causal_mask(2, 4), {1, 0, 0, 0, 1, 1, 0, 0}, 0.0f);
  const Tensor w = F::masked_softmax(randn({2, 4, 4}), IndexTensor(), F::causal_mask(4, 4));
  check_rows_follow_mask(w, F::causal_mask(4, 4));
  CHECK(w.at({1, 0, 0}) == 1.0f);  // the first query sees only itself
}

TEST_CASE("window_mask lets a position see only positions within plus or minus w") {
  check_values(F::window_mask(4, 4, 1), {1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1}, 0.0f);
  check_values(F::window_mask(2, 3, 0), {1, 0, 0, 0, 1, 0}, 0.0f);
  const Tensor w = F::masked_softmax(randn({3, 6, 6}), IndexTensor(), F::window_mask(6, 6, 2));
  check_rows_follow_mask(w, F::window_mask(6, 6, 2));
  CHECK(w.at({0, 5, 2}) == 0.0f);  // 3 positions away
  CHECK(w.at({0, 5, 3}) > 0.0f);   // 2 positions away
}

TEST_CASE("adjacency_mask attends only along the edges of the seeds' graph") {
  // The seeds' example (self-attention on graphs): node 1 is joined to nodes 5, 6 and 8 only, and
  // node 2 to node 3 — numbered from 0 here.
  const Tensor adj = F::adjacency_mask(8, {{0, 4}, {0, 5}, {0, 7}, {1, 2}});
  CHECK(adj.shape() == Shape{8, 8});
  check_close(adj, adj.t(), 0.0f);  // undirected
  const Tensor w = F::masked_softmax(randn({1, 8, 8}), IndexTensor(), adj);
  check_rows_follow_mask(w, adj);
  for (int64_t j = 0; j < 8; ++j) CHECK((w.at({0, 0, j}) > 0.0f) == (j == 4 || j == 5 || j == 7));
  CHECK(w.at({0, 1, 2}) == 1.0f);
  // Node 3 (index 3) has no edge: its row is all zero. With self-loops it attends to itself.
  check_close(w.select(0, 0).select(0, 3), zeros({8}), 0.0f);
  const Tensor with_loops = F::masked_softmax(randn({1, 8, 8}), IndexTensor(), F::adjacency_mask(8, {{1, 2}}, true));
  CHECK(with_loops.at({0, 3, 3}) == 1.0f);
  CHECK_THROWS_WITH_AS(F::adjacency_mask(3, {{0, 3}}), "adjacency_mask: edge (0, 3) has a node outside [0, 3)",
                       IndexError);
}

TEST_CASE("key_padding_mask hides the same keys as valid_lens") {
  Generator g(1);
  const Tensor x = randn({2, 3, 5}, false, &g);
  const IndexTensor per_example{2, 5}, per_query({1, 2, 3, 5, 4, 0}, {2, 3});
  CHECK(F::key_padding_mask(per_example, 5).shape() == Shape{2, 1, 5});
  CHECK(F::key_padding_mask(per_query, 5).shape() == Shape{2, 3, 5});
  for (const IndexTensor& lens : {per_example, per_query}) {
    CAPTURE(lens);
    const Tensor by_lengths = F::masked_softmax(x, lens);
    check_close(F::masked_softmax(x, IndexTensor(), F::key_padding_mask(lens, 5)), by_lengths, 1e-6f);
    check_rows_follow_mask(by_lengths, F::key_padding_mask(lens, 5));
  }
  // A length above K masked nothing before, where masked_softmax refuses it.
  CHECK_THROWS_WITH_AS(F::key_padding_mask(IndexTensor{2, 6}, 5),
                       "key_padding_mask: valid length 6 (element 1 of valid_lens) is out of range [0, 5]", IndexError);
  CHECK_THROWS_AS(F::key_padding_mask(IndexTensor{-1}, 5), IndexError);
}

TEST_CASE("masks compose: a key is visible only where every mask allows it") {
  Generator g(2);
  const Tensor x = randn({2, 2, 6, 6}, false, &g);  // (B, H, Q, K)
  const IndexTensor lens{4, 6};
  const Tensor window = F::window_mask(6, 6, 1), causal = F::causal_mask(6, 6);
  const Tensor all = F::mask_and(F::mask_and(window, causal), F::key_padding_mask(lens, 6));  // (B, 1 → Q, K)
  CHECK(all.shape() == Shape{2, 6, 6});
  // valid_lens and mask arguments together, or everything folded into one mask: the same weights.
  const Tensor w = F::masked_softmax(x, lens, F::mask_and(window, causal));
  check_close(w, F::masked_softmax(x, IndexTensor(), all), 1e-6f);
  check_rows_follow_mask(w, all.unsqueeze(1));
  // Query 5 of the first example sees keys 4 and 5 by the window and causality, but the valid
  // length 4 hides both: a fully masked row.
  check_close(w.select(0, 0).select(0, 1).select(0, 5), zeros({6}), 0.0f);
  CHECK(w.at({1, 1, 5, 4}) > 0.0f);
  CHECK(F::mask_and(Tensor(), causal).is_same(causal));
}

TEST_CASE("a fully masked row gets zero weights and a zero gradient without NaN") {
  // A query that may see nothing (here by a mask) attends to nothing: weights 0, output 0, as
  // PyTorch's scaled_dot_product_attention does since 2.5. d2l's -1e6 fill would spread it evenly.
  Tensor q = randn({1, 2, 3}, true), k = randn({1, 4, 3}, true), v = randn({1, 4, 2}, true);
  const Tensor mask = tensor({{1, 1, 0, 0}, {0, 0, 0, 0}});
  const F::AttentionOutput out = F::scaled_dot_product_attention(q, k, v, IndexTensor(), mask);
  check_close(out.weights.select(0, 0).select(0, 1), zeros({4}), 0.0f);
  check_close(out.output.select(0, 0).select(0, 1), zeros({2}), 0.0f);
  out.output.sum().backward();
  for (const Tensor& t : {q.grad(), k.grad(), v.grad()})
    for (float gv : t.to_vector()) CHECK(std::isfinite(gv));
  check_close(q.grad().select(0, 0).select(0, 1), zeros({3}), 0.0f);  // the masked query learns nothing
}

TEST_CASE("an additive bias shifts the scores and -inf in it hides a key") {
  Generator g(3);
  const Tensor x = randn({2, 3, 4}, false, &g), bias = randn({3, 4}, false, &g);
  check_close(F::masked_softmax(x, IndexTensor(), Tensor(), bias), (x + bias).softmax(-1), 1e-6f);
  // PyTorch's float attn_mask: 0 where allowed, -inf where not — the same as the 0/1 mask.
  const Tensor keep = tensor({{1, 0, 1, 1}, {0, 0, 0, 0}, {1, 1, 1, 0}});
  const Tensor additive = where(keep, zeros({3, 4}), full({3, 4}, -kInf));
  check_close(F::masked_softmax(x, IndexTensor(), Tensor(), additive), F::masked_softmax(x, IndexTensor(), keep), 1e-6f);
}

TEST_CASE("masks and biases of the wrong shape are refused with both shapes named") {
  const Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(F::masked_softmax(x, IndexTensor(), ones({3, 5})),
                       "masked_softmax: mask of shape (3,5) does not broadcast to the scores of shape (2,3,4): expected "
                       "(Q, K), (B, Q, K) or (B, H, Q, K) with sizes equal or 1",
                       ShapeError);
  CHECK_THROWS_AS(F::masked_softmax(x, IndexTensor(), Tensor(), ones({5, 2, 3, 4})), ShapeError);  // enlarges
  CHECK_THROWS_AS(F::window_mask(3, 3, -1), ValueError);
  CHECK_THROWS_AS(F::key_padding_mask(IndexTensor(), 3), ShapeError);
}

TEST_CASE("scaled_dot_product_attention reproduces the seeds' thinking machines example exactly") {
  // The seeds' single-head example: X = [[1,0,1,0],[0,2,0,2]], Q = X·W_Q, K = X·W_K, V = X·W_V with
  // their 4×3 matrices give Q = [[1,1,2],[4,2,0]], K = [[1,1,1],[2,4,2]], V = [[1,3,0],[2,0,8]] and
  // scores Q·Kᵀ = [[4,10],[6,16]], scaled by 1/√3. Exact values (numpy, float64):
  //   A = softmax(Q Kᵀ/√3) = [[0.0303511, 0.9696489], [0.0030992, 0.9969008]]
  //   A·V = [[1.9696489, 0.0910533, 7.7571913], [1.9969008, 0.0092976, 7.9752063]]
  // i.e. row 0: a = 1/(1 + e^{6/√3}) = 0.0303511, output (a + 2(1-a), 3a, 8(1-a)).
  // The seeds round the weights to [[0.03, 0.97], [0.003, 0.997]] and the output to
  // [[1.970, 0.091, 7.757], [1.997, 0.009, 7.975]]; the exact values round to those.
  const Tensor Q = tensor({{{1, 1, 2}, {4, 2, 0}}}), K = tensor({{{1, 1, 1}, {2, 4, 2}}});
  const Tensor V = tensor({{{1, 3, 0}, {2, 0, 8}}});
  const F::AttentionOutput out = F::scaled_dot_product_attention(Q, K, V);
  check_values(out.weights, {0.0303511f, 0.9696489f, 0.0030992f, 0.9969008f}, 1e-6f);
  check_values(out.output, {1.9696489f, 0.0910533f, 7.7571913f, 1.9969008f, 0.0092976f, 7.9752063f}, 1e-6f);
  auto round3 = [](float v) { return std::round(v * 1000.0f) / 1000.0f; };
  const std::vector<float> seed_output = {1.970f, 0.091f, 7.757f, 1.997f, 0.009f, 7.975f};
  const std::vector<float> got = out.output.to_vector();
  for (size_t i = 0; i < got.size(); ++i) CHECK(round3(got[i]) == doctest::Approx(seed_output[i]).epsilon(1e-6));
  CHECK(round3(out.weights.at({0, 0, 0})) == doctest::Approx(0.030f));
  CHECK(round3(out.weights.at({0, 1, 1})) == doctest::Approx(0.997f));
}

TEST_CASE("scaled_dot_product_attention handles cross attention and refuses shapes that do not pair") {
  Generator g(4);
  // 2 queries over 5 keys, heads dim included: (B, H, Q, d), (B, H, K, d), (B, H, K, dv).
  const Tensor q = randn({2, 3, 2, 4}, false, &g), k = randn({2, 3, 5, 4}, false, &g), v = randn({2, 3, 5, 6}, false, &g);
  const F::AttentionOutput out = F::scaled_dot_product_attention(q, k, v, IndexTensor{5, 3});
  CHECK(out.output.shape() == Shape{2, 3, 2, 6});
  CHECK(out.weights.shape() == Shape{2, 3, 2, 5});
  check_close(out.output, out.weights.matmul(v), 1e-6f);
  check_rows_follow_mask(out.weights, F::key_padding_mask(IndexTensor{5, 3}, 5).unsqueeze(1));
  CHECK_THROWS_WITH_AS(F::scaled_dot_product_attention(randn({2, 3, 4}), randn({2, 5, 3}), randn({2, 5, 6})),
                       "scaled_dot_product_attention: queries (2,3,4), keys (2,5,3) and values (2,5,6) do not fit: "
                       "expected (B, Q, d), (B, K, d) and (B, K, dv), or the same with a heads dim after B",
                       ShapeError);
  CHECK_THROWS_AS(F::scaled_dot_product_attention(randn({2, 3, 4}), randn({2, 5, 4}), randn({2, 4, 6})), ShapeError);
  CHECK_THROWS_AS(F::scaled_dot_product_attention(q, k, v, IndexTensor{6, 1}), IndexError);
}
