// functional::fused_attention, the fused multi-head attention op: against PyTorch's equations
// (fused_attention_golden.py), against the composed computation it replaces (forward, weights, every
// gradient, with dropout under a fixed seed), bitwise across thread counts, and inside
// MultiHeadAttention with its `fused` switch on and off.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "nn/attention.h"
#include "nn/attention_testing.h"
#include "nn/functional/attention.h"
#include "nn/fused_attention_golden_values.h"
#include "nn/position_scheme.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;
namespace F = qkv::nn::functional;

namespace {

// value(i, j) = 0.5·sin(1 + 0.37·i + 0.91·j) for flat index i of input j, as the golden script.
Tensor filled(const Shape& shape, int j) {
  Tensor t = zeros(shape);
  float* data = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = 0.5f * std::sin(1.0f + 0.37f * i + 0.91f * j);
  return t;
}

// (B, T, H·d) → (B, H, T, d), a view: the heads as MultiHeadAttention splits them.
Tensor heads(const Tensor& x, int64_t H) {
  return x.view({x.size(0), x.size(1), H, x.size(2) / H}).permute({0, 2, 1, 3});
}

// One attention problem: queries x (B, Q, D); keys and values the column blocks of packed (B, K, 2D).
struct Problem {
  Tensor x, packed, bias, mask;
  IndexTensor valid_lens;
  int64_t H;
};

// The output, the weights, and the gradients of x, packed and bias for the loss Σ out[n]·cos(0.3·n),
// by the fused op or by the composed one (scaled_dot_product_attention on the heads, then merged).
std::vector<Tensor> run(const Problem& p, bool fused, float dropout_p, uint64_t seed, bool need_weights = true) {
  const auto leaf = [](const Tensor& t) { return t.detach().clone().requires_grad_(); };
  const Tensor x = leaf(p.x), packed = leaf(p.packed), bias = leaf(p.bias);
  manual_seed(seed);
  const int64_t D = x.size(2);
  const Tensor q = heads(x, p.H), k = heads(packed.narrow(2, 0, D), p.H),
               v = heads(packed.narrow(2, D, D), p.H);
  F::AttentionOutput out;
  if (fused) {
    out = F::fused_attention(q, k, v, p.valid_lens, p.mask, bias, dropout_p, nullptr, need_weights);
  } else {
    out = F::scaled_dot_product_attention(q, k, v, p.valid_lens, p.mask, bias, dropout_p);
    out.output = out.output.permute({0, 2, 1, 3}).reshape({x.size(0), x.size(1), D});
  }
  const Tensor cosines = arange(static_cast<float>(out.output.numel())).mul(0.3f).cos();
  (out.output.reshape({-1}) * cosines).sum().backward();
  return {out.output, out.weights.defined() ? out.weights.detach() : out.weights, x.grad(), packed.grad(),
          bias.grad()};
}

// Cross attention B 3, H 4, Q 7, K 9, d 5: a causal mask, lengths 9, 0 (every row hidden) and 4,
// a learned per-head bias.
Problem mixed_problem() {
  Generator g(11);
  return {randn({3, 7, 20}, false, &g), randn({3, 9, 40}, false, &g), randn({1, 4, 7, 9}, false, &g),
          F::causal_mask(7, 9),         IndexTensor{9, 0, 4},         4};
}

}  // namespace

TEST_CASE("fused_attention matches PyTorch's equations on column blocks of a packed projection") {
  namespace golden = fused_attention_golden;
  const Problem p{
      filled({2, 3, 6}, 0),    filled({2, 4, 12}, 1),
      filled({1, 2, 3, 4}, 2), tensor({{1.f, 1.f, 0.f, 1.f}, {0.f, 0.f, 0.f, 0.f}, {1.f, 0.f, 1.f, 1.f}}),
      IndexTensor{4, 2},       2};
  const std::vector<Tensor> got = run(p, true, 0.0f, 0);
  check_values(got[0], golden::output, 1e-5f);
  check_values(got[1], golden::weights, 1e-5f);
  check_values(got[2], golden::grad_x, 1e-5f);
  check_values(got[3], golden::grad_packed, 1e-5f);
  check_values(got[4], golden::grad_bias, 1e-5f);
  // Query 1 may see no key: all-zero weights and a zero output in every head.
  CHECK(got[1].select(2, 1).abs().sum().item() == 0.0f);
  CHECK(got[0].select(1, 1).abs().sum().item() == 0.0f);
}

TEST_CASE("fused_attention gives the composed attention's output, weights and gradients") {
  Problem p = mixed_problem();
  SUBCASE("lengths per sequence, a mask and a bias shared by the batch") {}
  SUBCASE("lengths per query and a bias per sequence and head") {
    Generator g(5);
    p.valid_lens = IndexTensor({9, 1, 3, 0, 5, 2, 7, 0, 9, 9, 9, 9, 9, 9, 4, 4, 4, 4, 4, 4, 4}, {3, 7});
    p.bias = randn({3, 4, 7, 9}, false, &g);
    p.mask = Tensor();
  }
  for (const float dropout_p : {0.0f, 0.3f}) {
    CAPTURE(dropout_p);
    const std::vector<Tensor> composed = run(p, false, dropout_p, 42), fused = run(p, true, dropout_p, 42);
    for (size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);
      check_close(fused[i], composed[i], 1e-5f);
    }
  }
}

TEST_CASE(
    "fused_attention draws the dropout mask the composed path draws, and advances the generator alike") {
  const Problem p = mixed_problem();
  const std::vector<Tensor> composed = run(p, false, 0.5f, 3);
  const GeneratorState after_composed = default_generator().state();
  const std::vector<Tensor> fused = run(p, true, 0.5f, 3);
  CHECK(default_generator().state().offset == after_composed.offset);
  // A different mask would move whole terms of the sums, far beyond rounding.
  check_close(fused[0], composed[0], 1e-5f);
  const std::vector<Tensor> other_seed = run(p, true, 0.5f, 4);
  CHECK((other_seed[0] - composed[0]).abs().max().item() > 1e-2f);
}

TEST_CASE("fused_attention keeps no dropout mask for backward: it draws each tile's part again") {
  Generator g(6);
  const Tensor q = randn({2, 2, 5, 4}, true, &g), k = randn({2, 2, 5, 4}, true, &g);
  const auto saved_bytes = [&](float p) {
    return F::fused_attention(q, k, k, IndexTensor(), Tensor(), Tensor(), p).output.grad_fn()->saved_bytes();
  };
  // q, k, v, the output (2·5·8 floats), each row's log-sum-exp (2·2·5) and the weights it returned
  // (2·2·5·5), whatever the dropout.
  CHECK(saved_bytes(0.0f) == 4 * (3 * 2 * 2 * 5 * 4 + 2 * 5 * 8 + 2 * 2 * 5 + 2 * 2 * 5 * 5));
  CHECK(saved_bytes(0.5f) == saved_bytes(0.0f));
}

TEST_CASE("fused_attention across many tiles gives the composed attention's output, weights and gradients") {
  // Long enough for several query and key tiles (kQueryTile = kKeyTile = 64), with lengths that
  // end inside a tile, one sequence that sees nothing, a causal mask (the tiles above the diagonal
  // skipped), a bias and dropout: the online softmax and the tiled backward agree with the whole
  // (Q, K) computation to float32 rounding.
  Generator g(17);
  Problem p{randn({3, 150, 32}, false, &g), randn({3, 200, 64}, false, &g), randn({1, 4, 150, 200}, false, &g),
            F::causal_mask(150, 200), IndexTensor{200, 0, 97}, 4};
  SUBCASE("a causal mask and lengths per sequence") {}
  SUBCASE("lengths per query, no mask") {
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t i = 0; i < 150; ++i) lens.push_back(b == 1 ? 0 : std::min<int64_t>(200, 1 + (i * 7 + b * 31) % 201));
    p.valid_lens = IndexTensor(lens, {3, 150});
    p.mask = Tensor();
  }
  for (const float dropout_p : {0.0f, 0.2f}) {
    CAPTURE(dropout_p);
    const std::vector<Tensor> composed = run(p, false, dropout_p, 42), fused = run(p, true, dropout_p, 42);
    for (size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);
      check_close(fused[i], composed[i], 2e-5f);
    }
  }
}

TEST_CASE("fused_attention gives a row the same bits whatever queries come with it") {
  // A decoder's cached step attends one query to the keys so far; the full causal forward attends
  // every query at once, each to its prefix. Row by row they are the same computation in the same
  // order (the tiles are constants), so the outputs agree to the bit, across tile boundaries.
  Generator g(23);
  const int64_t T = 140, H = 2, d = 16;
  const Tensor q = randn({1, H, T, d}, false, &g), k = randn({1, H, T, d}, false, &g),
               v = randn({1, H, T, d}, false, &g);
  const Tensor full = F::fused_attention(q, k, v, IndexTensor(), F::causal_mask(T, T), Tensor(), 0.0f).output;
  for (const int64_t i : {0, 1, 63, 64, 65, 127, 128, 139}) {
    CAPTURE(i);
    const Tensor step = F::fused_attention(q.narrow(2, i, 1), k.narrow(2, 0, i + 1), v.narrow(2, 0, i + 1),
                                           IndexTensor(), Tensor(), Tensor(), 0.0f)
                            .output;
    CHECK(step.contiguous().to_vector() == full.narrow(1, i, 1).contiguous().to_vector());
  }
}

TEST_CASE("fused_attention gives the same bits with 1 and 2 threads") {
  Generator g(8);
  const Problem p{randn({4, 24, 32}, false, &g),    randn({4, 20, 64}, false, &g),
                  randn({1, 4, 24, 20}, false, &g), F::window_mask(24, 20, 6),
                  IndexTensor{20, 7, 0, 13},        4};
  check_bitwise_identical_with_1_and_2_threads([&] {
    std::vector<float> all;
    for (const Tensor& t : run(p, true, 0.2f, 9)) {
      const std::vector<float> v = t.contiguous().to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  });
  // The packed op, whose backward writes the three gradients into one tensor.
  const Tensor packed0 = randn({4, 24, 96}, false, &g);
  check_bitwise_identical_with_1_and_2_threads([&] {
    const Tensor x = packed0.clone().requires_grad_();
    manual_seed(9);
    const Tensor out =
        F::fused_attention_packed(x, 4, IndexTensor{24, 7, 0, 13}, Tensor(), Tensor(), 0.2f).output;
    (out * out).sum().backward();
    std::vector<float> all = out.to_vector();
    const std::vector<float> grad = x.grad().to_vector();
    all.insert(all.end(), grad.begin(), grad.end());
    return all;
  });
}

TEST_CASE("fused_attention without weights makes them again in backward: the same bits, less kept") {
  // need_weights = false: no (B, H, Q, K) weights made or kept; backward makes each tile's weights
  // again from Q, K, the mask, the bias and each row's log-sum-exp, by the formula the forward wrote
  // them with. Lengths per sequence and per query (one row with nothing visible), a causal or window
  // mask, a learned bias, with and without dropout, 1 and 2 threads: output and every gradient are
  // those of the op that kept its weights, to the bit.
  Generator g(21);
  Problem p = mixed_problem();
  SUBCASE("lengths per sequence, a causal mask, a bias shared by the batch") {}
  SUBCASE("lengths per query, a window mask, a bias per sequence and head") {
    p.valid_lens = IndexTensor({9, 1, 3, 0, 5, 2, 7, 0, 9, 9, 9, 9, 9, 9, 4, 4, 4, 4, 4, 4, 4}, {3, 7});
    p.mask = F::window_mask(7, 9, 2);
    p.bias = randn({3, 4, 7, 9}, false, &g);
  }
  for (const float dropout_p : {0.0f, 0.3f}) {
    CAPTURE(dropout_p);
    const std::vector<Tensor> kept = run(p, true, dropout_p, 42), recomputed = run(p, true, dropout_p, 42, false);
    CHECK_FALSE(recomputed[1].defined());
    for (const size_t i : {0, 2, 3, 4}) {
      CAPTURE(i);
      CHECK(recomputed[i].contiguous().to_vector() == kept[i].contiguous().to_vector());
    }
  }
  // Large enough for the tiles to be shared by two threads.
  const Problem wide{randn({4, 150, 32}, false, &g),    randn({4, 130, 64}, false, &g),
                     randn({1, 4, 150, 130}, false, &g), F::window_mask(150, 130, 40),
                     IndexTensor{130, 7, 0, 100},        4};
  check_bitwise_identical_with_1_and_2_threads([&] {
    std::vector<float> all;
    for (const Tensor& t : run(wide, true, 0.2f, 9, false)) {
      if (!t.defined()) continue;
      const std::vector<float> v = t.contiguous().to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  });
  // The graph keeps the heads, the output, a log-sum-exp per row and the bias it needs to make the
  // weights again, and the (B, H, Q, K) weights only when it returned them.
  const Tensor q = randn({2, 2, 5, 4}, true, &g), k = randn({2, 2, 5, 4}, true, &g);
  const Tensor bias = randn({2, 2, 5, 5}, true, &g);
  const auto saved_bytes = [&](const Tensor& b, bool need_weights) {
    return F::fused_attention(q, k, k, IndexTensor{5, 3}, Tensor(), b, 0.5f, nullptr, need_weights)
        .output.grad_fn()
        ->saved_bytes();
  };
  const int64_t heads_out_lse = 4 * (3 * 2 * 2 * 5 * 4 + 2 * 5 * 8 + 2 * 2 * 5);
  const int64_t weights = 4 * 2 * 2 * 5 * 5;
  CHECK(saved_bytes(Tensor(), false) == heads_out_lse);
  CHECK(saved_bytes(Tensor(), true) == heads_out_lse + weights);
  CHECK(saved_bytes(bias, false) == heads_out_lse + weights);  // the bias (2, 2, 5, 5) instead
  CHECK(saved_bytes(bias, true) == heads_out_lse + 2 * weights);
}

TEST_CASE("fused_attention_packed without weights gives the same bits, written over the projection too") {
  // The packed op's backward reads each key tile's heads before it writes their gradient over the
  // projection (when nothing else keeps it), and the queries' once the last tile is done: the same
  // bits either way.
  Generator g(5);
  const Tensor x0 = randn({4, 24, 32}, false, &g), w0 = randn({32, 96}, false, &g);
  const Tensor bias0 = randn({1, 4, 24, 24}, false, &g);
  const Tensor cosines = arange(4.0f * 24 * 32).mul(0.3f).cos();
  const auto run = [&](bool need_weights, bool retain_graph) {
    const Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    const Tensor bias = bias0.clone().requires_grad_();
    manual_seed(3);
    const F::AttentionOutput out = F::fused_attention_packed(x.matmul(w), 4, IndexTensor{24, 7, 0, 13},
                                                             F::causal_mask(24, 24), bias, 0.25f, nullptr,
                                                             need_weights);
    CHECK(out.weights.defined() == need_weights);
    (out.output.reshape({-1}) * cosines).sum().backward(Tensor(), retain_graph);
    std::vector<float> all = out.output.to_vector();
    for (const Tensor& grad : {x.grad(), w.grad(), bias.grad()}) {
      const std::vector<float> v = grad.to_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  const std::vector<float> kept = run(true, false);
  CHECK(run(false, false) == kept);
  CHECK(run(false, true) == kept);
  check_bitwise_identical_with_1_and_2_threads([&] { return run(false, false); });
}

TEST_CASE("fused_attention leaves keys past every valid length out of its products") {
  // Sequence 0 sees 3 of its 6 keys, sequence 1 all 6. Keys and values past the lengths hold NaN:
  // a product over them would carry it into every output and gradient (0 · NaN is NaN).
  Generator g(3);
  Tensor q = randn({2, 2, 4, 3}, false, &g).requires_grad_();
  Tensor k = randn({2, 2, 6, 3}, false, &g), v = randn({2, 2, 6, 3}, false, &g);
  const Tensor clean_k = k.clone(), clean_v = v.clone();
  const float nan = std::nan("");
  for (Tensor* t : {&k, &v})
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 3; j < 6; ++j)
        for (int64_t c = 0; c < 3; ++c) t->data()[((0 * 2 + h) * 6 + j) * 3 + c] = nan;
  const auto run_with = [&](const Tensor& keys, const Tensor& values) {
    const Tensor kk = keys.detach().clone().requires_grad_(), vv = values.detach().clone().requires_grad_();
    q.zero_grad();
    const F::AttentionOutput out = F::fused_attention(q, kk, vv, IndexTensor{3, 6});
    (out.output * out.output).sum().backward();
    return std::vector<Tensor>{out.output, q.grad(), kk.grad(), vv.grad()};
  };
  const std::vector<Tensor> padded = run_with(k, v), clean = run_with(clean_k, clean_v);
  for (size_t i = 0; i < padded.size(); ++i) {
    CAPTURE(i);
    CHECK(padded[i].contiguous().to_vector() == clean[i].contiguous().to_vector());  // NaN equals nothing
  }
  // The hidden keys and values get a zero gradient.
  CHECK(padded[2].narrow(0, 0, 1).narrow(2, 3, 3).abs().sum().item() == 0.0f);
  CHECK(padded[3].narrow(0, 0, 1).narrow(2, 3, 3).abs().sum().item() == 0.0f);
  CHECK(padded[3].narrow(0, 0, 1).narrow(2, 0, 3).abs().sum().item() > 0.0f);
}

TEST_CASE("fused_attention_packed gives fused_attention's results on the column blocks, to the bit") {
  // Self-attention B 3, T 7, H 4, d 5 on one (B, T, 3·20) projection: lengths 7, 0 and 4, a causal
  // mask, a learned bias per head, dropout. The packed op's gradient is the three blocks' side by side.
  Generator g(12);
  const Tensor packed0 = randn({3, 7, 60}, false, &g), bias0 = randn({1, 4, 7, 7}, false, &g);
  const IndexTensor lens{7, 0, 4};
  const auto run = [&](bool packed) {
    const Tensor x = packed0.clone().requires_grad_(), bias = bias0.clone().requires_grad_();
    manual_seed(8);
    F::AttentionOutput out;
    if (packed) {
      out = F::fused_attention_packed(x, 4, lens, F::causal_mask(7, 7), bias, 0.25f);
    } else {
      const auto block = [&](int64_t i) { return heads(x.narrow(2, 20 * i, 20), 4); };
      out = F::fused_attention(block(0), block(1), block(2), lens, F::causal_mask(7, 7), bias, 0.25f);
    }
    const Tensor cosines = arange(static_cast<float>(out.output.numel())).mul(0.3f).cos();
    (out.output.reshape({-1}) * cosines).sum().backward();
    return std::vector<Tensor>{out.output, out.weights, x.grad(), bias.grad()};
  };
  const std::vector<Tensor> packed = run(true), blocks = run(false);
  for (size_t i = 0; i < packed.size(); ++i) {
    CAPTURE(i);
    CHECK(packed[i].contiguous().to_vector() == blocks[i].contiguous().to_vector());
  }
  CHECK_THROWS_WITH_AS(F::fused_attention_packed(zeros({2, 3, 10}), 4),
                       "fused_attention_packed: projection of shape (2,3,10) with 4 heads: expected (B, T, "
                       "3·H·d) for H = 4",
                       ShapeError);
}

TEST_CASE("fused_attention_packed writes the projection's gradient over the projection it alone keeps") {
  // The projection x·w is the product's output, which only the attention node saves. Unless the
  // graph is retained, backward writes dq, dk and dv over it once each head is read: the
  // gradients are the same to the bit, for any thread count, and backward takes one (B, T, 3·H·d)
  // buffer fewer.
  Generator g(5);
  const Tensor x0 = randn({4, 24, 32}, false, &g), w0 = randn({32, 96}, false, &g);
  const Tensor cosines = arange(4.0f * 24 * 32).mul(0.3f).cos();
  const auto run = [&](bool retain_graph) {
    const Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    manual_seed(3);
    const Tensor out =
        F::fused_attention_packed(x.matmul(w), 4, IndexTensor{24, 7, 0, 13}, Tensor(), Tensor(), 0.25f)
            .output;
    const Tensor loss = (out.reshape({-1}) * cosines).sum();
    const int64_t before = memory_stats().allocated_bytes;
    loss.backward(Tensor(), retain_graph);
    std::vector<float> grads = x.grad().to_vector(), dw = w.grad().to_vector();
    grads.insert(grads.end(), dw.begin(), dw.end());
    return std::pair{grads, memory_stats().allocated_bytes - before};
  };
  const auto [grads, bytes] = run(false);
  const auto [retained_grads, retained_bytes] = run(true);
  CHECK(grads == retained_grads);
  CHECK(retained_bytes - bytes == 4 * 24 * 96 * 4);
  check_bitwise_identical_with_1_and_2_threads([&] { return run(false).first; });
}

TEST_CASE("MultiHeadAttention takes the fused op by default and composed_attention in the reference mode") {
  // Self-attention forward(x, x, x) and forward(x, x', x'') with copies of x, a rotary position
  // scheme or none. By default self-attention runs the fused op on the packed projection
  // (fused_attention_packed; rotary turns its Q and K there), anything else the three projections
  // and the fused op on the heads; the reference mode, the composed reference (products,
  // masked_softmax, dropout). The values agree to float32 rounding between the modes, and to the
  // bit between self-attention and the copies.
  const auto step = [](bool same_tensor, bool rotary, bool reference) {
    const ReferenceModeGuard mode(reference);
    manual_seed(4);
    nn::MultiHeadAttention attention(8, 8, 8, 8, 2, 0.25f, /*bias=*/true);
    if (rotary) attention.positions = std::make_shared<nn::RotaryPositions>(nn::PositionSizes{8, 2, 16});
    Generator g(6);
    const Tensor x = randn({2, 5, 8}, true, &g);
    const Tensor k = same_tensor ? x : x * 1.0f, v = same_tensor ? x : x * 1.0f;
    const Tensor out = attention.forward(x, k, v, IndexTensor{5, 3});
    // out = W_o(attention output): the op under W_o says which route ran.
    const std::string& op = out.grad_fn()->inputs[0].node->op;
    const std::string fast = same_tensor ? "fused_attention_packed" : "fused_attention";
    CHECK((op == fast) == !reference);
    (out * out).sum().backward();
    std::vector<Tensor> all{out, attention.attention_weights, x.grad()};
    for (const auto& [name, p] : attention.named_parameters()) all.push_back(p.grad());
    return all;
  };
  for (const bool rotary : {false, true}) {
    CAPTURE(rotary);
    const std::vector<Tensor> self = step(true, rotary, false), copies = step(false, rotary, false),
                              plain = step(true, rotary, true);
    REQUIRE(self.size() == copies.size());
    REQUIRE(self.size() == plain.size());
    for (size_t i = 0; i < self.size(); ++i) {
      CAPTURE(i);
      check_close(copies[i], self[i], 1e-5f);
      check_close(plain[i], self[i], 1e-5f);
    }
    CHECK(self[0].contiguous().to_vector() == copies[0].contiguous().to_vector());  // the same forward
  }
}

TEST_CASE("MultiHeadAttention gives the same results fused and composed, dropout included") {
  const auto step = [](bool fused) {
    manual_seed(1);
    nn::MultiHeadAttention attention(6, 5, 4, 8, 2, 0.25f);
    attention.fused = fused;
    Generator g(2);
    const Tensor queries = randn({2, 3, 5}, true, &g), keys = randn({2, 4, 6}, true, &g);
    const Tensor values = randn({2, 4, 4}, true, &g);
    const Tensor out = attention.forward(queries, keys, values, IndexTensor{3, 4});
    (out * out).sum().backward();
    std::vector<Tensor> all{out, attention.attention_weights, queries.grad(), keys.grad(), values.grad()};
    for (const auto& [name, p] : attention.named_parameters()) all.push_back(p.grad());
    return all;
  };
  const std::vector<Tensor> composed = step(false), fused = step(true);
  REQUIRE(fused.size() == composed.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    CAPTURE(i);
    check_close(fused[i], composed[i], 1e-5f);
  }
}

TEST_CASE("fused_attention names the shapes it cannot use") {
  const Tensor q = zeros({2, 2, 3, 4}), k = zeros({2, 2, 5, 4});
  CHECK_THROWS_WITH_AS(
      F::fused_attention(q, k, zeros({2, 2, 5, 3})),
      "fused_attention: q (2,2,3,4), k (2,2,5,4) and v (2,2,5,3) do not fit: expected (B, H, Q, d), "
      "(B, H, K, d) and (B, H, K, d)",
      ShapeError);
  CHECK_THROWS_WITH_AS(F::fused_attention(zeros({2, 3, 4}), k, k),
                       "fused_attention: queries of shape (2,3,4) must be (B, H, Q, d)", ShapeError);
  CHECK_THROWS_WITH_AS(
      F::fused_attention(q, k, k, IndexTensor(), zeros({3, 3, 5})),
      "fused_attention: mask of shape (3,3,5) does not broadcast to the scores of shape (2,2,3,5): "
      "expected (Q, K), (B, Q, K) or (B, H, Q, K) with sizes equal or 1",
      ShapeError);
  CHECK_THROWS_WITH_AS(
      F::fused_attention(q, k, k, IndexTensor{6, 1}),
      "fused_attention: valid length 6 (element 0 of valid_lens) is out of range [0, 5] for X of "
      "shape (2,2,3,5)",
      IndexError);
}
