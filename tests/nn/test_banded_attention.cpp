// Windowed attention on the band (nn/functional/banded_attention.h) against the dense computation
// with a window mask: the same weights, outputs and gradients, in O(T·w).
#include <doctest/doctest.h>

#include "gradcheck_registry.h"
#include "nn/attention.h"
#include "nn/attention_testing.h"
#include "nn/functional/attention.h"
#include "nn/functional/banded_attention.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;
namespace F = qkv::nn::functional;

namespace {

// The dense (1, H, T, T) bias that an (H, 2w+1) offset bias stands for, zero outside the band.
Tensor dense_bias(const Tensor& offset_bias, int64_t T, int64_t w) {
  return F::band_to_dense(offset_bias.unsqueeze(1).expand({offset_bias.size(0), T, 2 * w + 1}))
      .unsqueeze(0);
}

}  // namespace

TEST_CASE("banded attention equals dense attention with a window mask") {
  Generator g(3);
  for (const int64_t w : {0, 1, 2, 7}) {  // 7 covers the whole sequence
    CAPTURE(w);
    Tensor q = randn({2, 3, 6, 4}, true, &g), k = randn({2, 3, 6, 4}, true, &g),
           v = randn({2, 3, 6, 5}, true, &g);
    const Tensor bias = randn({3, 2 * w + 1}, true, &g);
    const IndexTensor lens{6, 4};
    const F::AttentionOutput band = F::banded_attention(q, k, v, w, lens, bias);
    const F::AttentionOutput dense = F::scaled_dot_product_attention(q, k, v, lens, F::window_mask(6, 6, w),
                                                                     dense_bias(bias.detach(), 6, w));
    check_close(band.output, dense.output, 1e-5f);
    check_close(F::band_to_dense(band.weights), dense.weights, 1e-6f);

    const Tensor probe = randn({2, 3, 6, 5}, false, &g);
    (band.output * probe).sum().backward();
    const std::vector<Tensor> g_band = {q.grad(), k.grad(), v.grad()};
    q.zero_grad(), k.zero_grad(), v.zero_grad();
    (dense.output * probe).sum().backward();
    check_close(g_band[0], q.grad(), 1e-4f);
    check_close(g_band[1], k.grad(), 1e-4f);
    check_close(g_band[2], v.grad(), 1e-4f);
  }
}

TEST_CASE("banded attention hides keys outside the sequence and past the valid length") {
  const Tensor q = zeros({1, 1, 4, 2}), k = zeros({1, 1, 4, 2});
  const Tensor v = tensor({1, 0, 2, 0, 3, 0, 4, 0}, {1, 1, 4, 2});
  const F::AttentionOutput out = F::banded_attention(q, k, v, 1, IndexTensor{3});
  // Equal scores: each query averages the keys it sees. Query 0 sees keys 0 and 1 (none before it);
  // query 2 sees 1 and 2 (key 3 is past the length 3); query 3 sees key 2 only.
  check_values(out.weights, {0, 0.5f, 0.5f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 0.5f, 0.5f, 0, 1, 0, 0}, 1e-6f);
  check_values(out.output.select(-1, 0), {1.5f, 2, 2.5f, 3}, 1e-6f);
}

TEST_CASE("banded attention names the shapes it cannot use") {
  const Tensor q = zeros({1, 2, 4, 3});
  CHECK_THROWS_AS(F::banded_attention(q, zeros({1, 2, 5, 3}), zeros({1, 2, 5, 3}), 1), ShapeError);
  CHECK_THROWS_AS(F::banded_attention(q, q, q, -1), ValueError);
  CHECK_THROWS_WITH_AS(
      F::banded_attention(q, q, q, 1, IndexTensor(), zeros({2, 4})),
      "banded_attention: offset_bias of shape (2,4) must be (2 or 1, 3): one value per head and offset",
      ShapeError);
  CHECK_THROWS_AS(F::banded_attention(q, q, q, 1, IndexTensor{5}), IndexError);
}

TEST_CASE("MultiHeadAttention with a window computes the band and matches the dense mask") {
  Generator g(5);
  nn::MultiHeadAttention banded(6, 6, 6, 6, 2, 0.0f), dense(6, 6, 6, 6, 2, 0.0f);
  dense.load_state_dict(banded.state_dict());
  banded.restriction = nn::AttentionRestriction::window(1);
  const Tensor X = randn({2, 5, 6}, false, &g);
  const Tensor out = banded.forward(X, X, X, IndexTensor{5, 3});
  CHECK(banded.attention_weights.shape() == Shape{2, 2, 5, 3});  // the band, not (T, T)
  check_close(out, dense.forward(X, X, X, IndexTensor{5, 3}, F::window_mask(5, 5, 1)), 1e-5f);
  CHECK_THROWS_AS(banded.forward(X, randn({2, 4, 6}, false, &g), randn({2, 4, 6}, false, &g)), ValueError);
}

QKV_GRADCHECK("banded_attention with lengths and an offset bias",
              {In::normal({2, 2, 5, 3}), In::normal({2, 2, 5, 3}), In::normal({2, 2, 5, 2}),
               In::normal({2, 5})},
              [](const Inputs& x) {
                return F::banded_attention(x[0], x[1], x[2], 2, IndexTensor{5, 3}, x[3]).output;
              });

TEST_CASE("a window wider than the sequence attends everywhere and band_to_dense takes empty bands") {
  Generator g(9);
  nn::MultiHeadAttention wide(4, 4, 4, 4, 2, 0.0f), full(4, 4, 4, 4, 2, 0.0f);
  full.load_state_dict(wide.state_dict());
  wide.restriction = nn::AttentionRestriction::window(int64_t{1} << 40);  // computed as T − 1
  const Tensor X = randn({2, 4, 4}, false, &g);
  check_close(wide.forward(X, X, X, IndexTensor{4, 2}), full.forward(X, X, X, IndexTensor{4, 2}), 1e-5f);
  CHECK(wide.attention_weights.shape() == Shape{2, 2, 4, 7});
  CHECK(F::band_to_dense(zeros({2, 0, 3})).shape() == Shape{2, 0, 0});
  CHECK_THROWS_AS(F::band_to_dense(zeros({2, 3, 4})), ShapeError);
}
