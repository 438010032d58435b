// nn/kv_cache.h: decoding a causal encoder one token at a time with a key/value cache gives, at
// every step, the bits of the last row of a forward over the whole prefix — for every position
// scheme, pre-norm and post-norm, fused and composed attention, 1 and 2 threads — and refuses what
// it cannot decode.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/transformer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "thread_testing.h"

using namespace qkv;

namespace {

std::vector<float> values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<float>(c.data(), c.data() + c.numel());
}

std::shared_ptr<nn::TransformerEncoder> causal_encoder(const std::string& positions, nn::NormPlacement norm,
                                                       const std::string& ffn = "swiglu", int64_t max_len = 64) {
  manual_seed(7);
  auto encoder = std::make_shared<nn::TransformerEncoder>(nn::TransformerEncoderOptions{.vocab_size = 0, .num_hiddens = 32, .ffn_num_hiddens = 48, .num_heads = 4,
                                  .num_layers = 2, .dropout = 0.1f, .max_len = max_len,
                                  .positions = nn::position_scheme(positions),
                                  .attend = nn::AttentionRestriction::causal(), .ffn = nn::feed_forward(ffn),
                                  .norm = norm});
  encoder->eval();
  return encoder;
}

// The outputs of T steps with the cache, and the last row of forward() over each prefix, side by
// side: (steps, D) each, flattened.
struct Decoded {
  std::vector<float> cached, recomputed;
};

Decoded decode_both_ways(nn::TransformerEncoder& encoder, const Tensor& X) {
  const int64_t B = X.size(0), T = X.size(1);
  Decoded out;
  nn::KVCache cache = encoder.make_cache(B, T);
  NoGradGuard no_grad;
  for (int64_t t = 0; t < T; ++t) {
    for (float v : values(encoder.forward_step(X.narrow(1, t, 1), cache))) out.cached.push_back(v);
    for (float v : values(encoder.forward(X.narrow(1, 0, t + 1)).narrow(1, t, 1))) out.recomputed.push_back(v);
  }
  CHECK(cache.length == T);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("a cached step gives the bits of the whole prefix's last row, for every position scheme") {
  for (const std::string& positions : nn::position_scheme_names()) {
    for (const nn::NormPlacement norm : {nn::NormPlacement::Pre, nn::NormPlacement::Post}) {
      CAPTURE(positions);
      CAPTURE(norm == nn::NormPlacement::Pre);
      const auto owner = causal_encoder(positions, norm);
      nn::TransformerEncoder& encoder = *owner;
      const Tensor X = randn({2, 21, 32});
      const Decoded d = decode_both_ways(encoder, X);
      REQUIRE(d.cached.size() == size_t{2 * 21 * 32});
      CHECK(same_bits(d.cached, d.recomputed));
    }
  }
}

TEST_CASE("a cached step gives the whole prefix's bits past the attention kernel's first tiles") {
  // 150 steps: the full forward's rows walk three key tiles of 64, and its query tiles hold 64
  // rows where the cached step holds one (tensor/kernels/attention.h, Determinism).
  for (const std::string positions : {"sinusoidal", "alibi"}) {
    CAPTURE(positions);
    const auto owner = causal_encoder(positions, nn::NormPlacement::Pre, "gelu", 160);
    const Tensor X = randn({1, 150, 32});
    const Decoded d = decode_both_ways(*owner, X);
    CHECK(same_bits(d.cached, d.recomputed));
  }
}

TEST_CASE("a cached step agrees to the bit in the reference mode, with the composed attention") {
  for (const std::string positions : {"learned", "rotary", "alibi"}) {
    CAPTURE(positions);
    const auto owner = causal_encoder(positions, nn::NormPlacement::Pre, "gelu");
    nn::TransformerEncoder& encoder = *owner;
    const Tensor X = randn({1, 17, 32});
    ReferenceModeGuard plain;
    const Decoded d = decode_both_ways(encoder, X);
    CHECK(same_bits(d.cached, d.recomputed));
  }
}

TEST_CASE("cached decoding is bitwise the same with 1 and 2 threads") {
  const auto owner = causal_encoder("rotary", nn::NormPlacement::Pre);
  nn::TransformerEncoder& encoder = *owner;
  const Tensor X = randn({2, 40, 32});
  testing::check_bitwise_identical_with_1_and_2_threads([&] { return decode_both_ways(encoder, X).cached; });
}

TEST_CASE("a step keeps the new query's attention weights over the cache") {
  const auto owner = causal_encoder("learned", nn::NormPlacement::Pre);
  nn::TransformerEncoder& encoder = *owner;
  nn::KVCache cache = encoder.make_cache(1, 8);
  for (int64_t t = 0; t < 5; ++t) encoder.forward_step(randn({1, 1, 32}), cache);
  const Tensor w = encoder.blocks->at<nn::TransformerEncoderBlock>(1)->attention->attention_weights;
  REQUIRE(w.shape() == Shape{1, 4, 1, 5});
  const std::vector<float> v = values(w);
  for (int64_t h = 0; h < 4; ++h) {
    float sum = 0;
    for (int64_t j = 0; j < 5; ++j) sum += v[h * 5 + j];
    CHECK(sum == doctest::Approx(1.0f).epsilon(1e-6));
  }
  // clear() starts over: the next step is position 0 again, the first row of a fresh forward.
  cache.clear();
  const Tensor x = randn({1, 1, 32});
  NoGradGuard no_grad;
  CHECK(same_bits(values(encoder.forward_step(x, cache)), values(encoder.forward(x))));
}

TEST_CASE("cached decoding refuses an encoder that is not causal, training mode, and a full cache") {
  nn::TransformerEncoder full(nn::TransformerEncoderOptions{.num_hiddens = 8, .ffn_num_hiddens = 8, .num_heads = 2, .num_layers = 1});
  full.eval();
  nn::KVCache c = full.make_cache(1, 4);
  CHECK_THROWS_WITH_AS(full.forward_step(randn({1, 1, 8}), c),
                       "TransformerEncoder: forward_step decodes a causal encoder (attend = causal); this one "
                       "attends full",
                       ValueError);
  const auto owner = causal_encoder("learned", nn::NormPlacement::Pre);
  nn::TransformerEncoder& encoder = *owner;
  nn::KVCache cache = encoder.make_cache(1, 2);
  encoder.train();
  CHECK_THROWS_WITH_AS(encoder.forward_step(randn({1, 1, 32}), cache),
                       "blocks.0.attention (MultiHeadAttention): forward_step decodes in eval mode; call eval() first",
                       StateError);
  encoder.eval();
  cache = encoder.make_cache(1, 2);
  encoder.forward_step(randn({1, 1, 32}), cache);
  encoder.forward_step(randn({1, 1, 32}), cache);
  CHECK_THROWS_WITH_AS(encoder.forward_step(randn({1, 1, 32}), cache),
                       "TransformerEncoder: the cache is full (2 positions); clear() it, or make a larger one",
                       ValueError);
  CHECK_THROWS_WITH_AS(encoder.forward_step(randn({1, 2, 32}), cache),
                       "TransformerEncoder: forward_step takes one token vector per sequence, (B, 1, 32); got "
                       "(1,2,32)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(encoder.make_cache(1, 65),
                       "TransformerEncoder: a cache for 1 sequences of 65 positions; expected at least one "
                       "sequence and 1 .. max_len (64) positions",
                       ValueError);
}

TEST_CASE("cached decoding names a cache whose keys and values differ in capacity or whose length is invalid") {
  // Before, the first read "position 0 is outside the cache's capacity 4" and a negative length
  // "the cache is full": neither says what is wrong with the cache.
  const auto owner = causal_encoder("learned", nn::NormPlacement::Pre);
  nn::TransformerEncoder& encoder = *owner;
  const Tensor x = randn({1, 1, 32});
  nn::KVCache cache = encoder.make_cache(1, 4);
  cache.values[1] = zeros({1, 4, 6, 8});
  CHECK_THROWS_WITH_AS(encoder.forward_step(x, cache),
                       "TransformerEncoder: the cache's keys and values of layer 1 differ in capacity: 4 and 6 "
                       "positions (make the cache with make_cache)",
                       ValueError);
  cache = encoder.make_cache(1, 4);
  cache.keys[1] = zeros({1, 4, 5, 8});
  cache.values[1] = zeros({1, 4, 5, 8});
  CHECK_THROWS_WITH_AS(encoder.forward_step(x, cache),
                       "TransformerEncoder: the cache's layers differ in capacity: layer 0 holds 4 positions and "
                       "layer 1 holds 5 (make the cache with make_cache)",
                       ValueError);
  cache = encoder.make_cache(1, 4);
  cache.length = -5;
  CHECK_THROWS_WITH_AS(encoder.forward_step(x, cache),
                       "TransformerEncoder: the cache's length -5 is invalid: it counts the positions filled, 0 .. "
                       "4 (the capacity); clear() resets it",
                       ValueError);
  cache.length = 9;
  CHECK_THROWS_WITH_AS(encoder.forward_step(x, cache),
                       "TransformerEncoder: the cache's length 9 is invalid: it counts the positions filled, 0 .. "
                       "4 (the capacity); clear() resets it",
                       ValueError);
  // A layer decoding on its own names its two caches' capacities too.
  nn::MultiHeadAttention& attention =
      dynamic_cast<nn::MultiHeadAttention&>(*encoder.blocks->at<nn::TransformerEncoderBlock>(0)->attention);
  Tensor keys = zeros({1, 4, 4, 8}), values = zeros({1, 4, 6, 8});
  CHECK_THROWS_WITH_AS(attention.forward_step(x, keys, values, 0),
                       "blocks.0.attention (MultiHeadAttention): the key cache holds 4 positions and the value "
                       "cache 6; they must hold the same number",
                       ShapeError);
  values = zeros({1, 4, 4, 8});
  CHECK_THROWS_WITH_AS(attention.forward_step(x, keys, values, -5),
                       "blocks.0.attention (MultiHeadAttention): position -5 is outside the cache's capacity 4 "
                       "(positions 0 .. 3)",
                       IndexError);
  cache = encoder.make_cache(1, 4);  // and a valid cache still decodes
  CHECK(encoder.forward_step(x, cache).shape() == Shape{1, 1, 32});
  CHECK(cache.length == 1);
}

TEST_CASE("a position scheme's hooks at an offset are the whole-sequence hooks' rows from it") {
  // The default encode_input_at and transform_qk_at (a user's scheme that does not override them)
  // against the built-in overrides, which do only the token's rows.
  nn::PositionSizes sizes{.num_hiddens = 8, .num_heads = 2, .max_len = 16};
  for (const std::string name : {"learned", "sinusoidal", "rotary"}) {
    CAPTURE(name);
    manual_seed(3);
    const std::shared_ptr<nn::PositionScheme> scheme = nn::position_scheme(name)(sizes);
    const Tensor X = randn({2, 3, 8}), q = randn({2, 2, 3, 4}), k = randn({2, 2, 3, 4});
    const Tensor whole = scheme->encode_input(cat({zeros({2, 5, 8}), X}, 1)).narrow(1, 5, 3);
    CHECK(same_bits(values(scheme->encode_input_at(X, 5)), values(whole)));
    CHECK(same_bits(values(scheme->nn::PositionScheme::encode_input_at(X, 5)), values(whole)));
    const auto [tq, tk] = scheme->transform_qk(cat({zeros({2, 2, 5, 4}), q}, 2), cat({zeros({2, 2, 5, 4}), k}, 2));
    const auto [aq, ak] = scheme->transform_qk_at(q, k, 5);
    CHECK(same_bits(values(aq), values(tq.narrow(2, 5, 3))));
    CHECK(same_bits(values(ak), values(tk.narrow(2, 5, 3))));
  }
  const std::shared_ptr<nn::PositionScheme> learned = nn::position_scheme("learned")(sizes);
  CHECK_THROWS_WITH_AS(learned->encode_input_at(randn({1, 2, 8}), 15),
                       "LearnedPositionalEncoding: positions 15 .. 16 exceed max_len 16", ShapeError);
}
