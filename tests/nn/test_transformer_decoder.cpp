// nn/transformer_decoder.h: the decoder block sees the target up to each position and the source
// within its valid length; decoding with the cache gives the bits of the full forward's last row
// (for every position scheme, both norm placements, both modes); a beam's reordering of the cache
// is the cache of the reordered batch; and what cannot be decoded is refused by name.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/transformer_decoder.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"

using namespace qkv;

namespace {

std::vector<float> values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<float>(c.data(), c.data() + c.numel());
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = values(a), y = values(b);
  REQUIRE(x.size() == y.size());
  float m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

nn::TransformerBlockOptions block_options(nn::NormPlacement norm) {
  return {.num_hiddens = 16, .ffn_num_hiddens = 24, .num_heads = 4, .dropout = 0.0f, .norm = norm};
}

std::shared_ptr<nn::Transformer> small_transformer(const std::string& positions, nn::NormPlacement norm) {
  manual_seed(11);
  auto model = std::make_shared<nn::Transformer>(
      nn::TransformerEncoderOptions{.vocab_size = 9, .num_hiddens = 16, .ffn_num_hiddens = 24, .num_heads = 4,
                                    .num_layers = 2, .max_len = 32, .positions = nn::position_scheme(positions),
                                    .norm = norm},
      nn::TransformerDecoderOptions{.vocab_size = 7, .num_hiddens = 16, .ffn_num_hiddens = 24, .num_heads = 4,
                                    .num_layers = 2, .max_len = 32, .positions = nn::position_scheme(positions),
                                    .ffn = nn::feed_forward("gelu"), .norm = norm});
  model->eval();
  return model;
}

// Sources of lengths 5 and 3 (padded to 5), and targets of 6 tokens.
const IndexTensor kSource({1, 4, 8, 2, 3, 5, 6, 7, 0, 0}, {2, 5});
const IndexTensor kSourceLens{5, 3};
const IndexTensor kTarget({0, 3, 6, 1, 2, 5, 0, 2, 2, 4, 1, 6}, {2, 6});

// T cached steps beside the last row of forward() over each prefix, flattened.
std::pair<std::vector<float>, std::vector<float>> decode_both_ways(nn::Transformer& model, const IndexTensor& target) {
  const int64_t B = target.size(0), T = target.size(1);
  std::vector<float> cached, recomputed;
  nn::DecoderCache cache = model.start_decoding(kSource, kSourceLens, T);
  NoGradGuard no_grad;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int64_t> column, prefix;
    for (int64_t b = 0; b < B; ++b) column.push_back(target[b * T + t]);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j <= t; ++j) prefix.push_back(target[b * T + j]);
    for (float v : values(model.decoder->forward_step(IndexTensor(column, {B, 1}), cache))) cached.push_back(v);
    const Tensor full = model.forward(kSource, kSourceLens, IndexTensor(prefix, {B, t + 1}));
    for (float v : values(full.narrow(1, t, 1))) recomputed.push_back(v);
  }
  CHECK(cache.length() == T);
  return {cached, recomputed};
}

}  // namespace

TEST_CASE("a decoder block's position t does not see the target after t, nor the source past its length") {
  for (const nn::NormPlacement norm : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    CAPTURE(norm == nn::NormPlacement::Pre);
    manual_seed(3);
    nn::TransformerDecoderBlock block(block_options(norm), nn::attention_mechanism("dense"));
    const Tensor X = randn({2, 6, 16}), M = randn({2, 5, 16});
    const IndexTensor lens{5, 2};
    const Tensor Y = block.forward(X, M, lens);
    CHECK(Y.shape() == Shape{2, 6, 16});
    // Later target positions changed: positions 0 .. 2 keep their outputs exactly.
    Tensor X2 = X.clone();
    X2.narrow(1, 3, 3).copy_(randn({2, 3, 16}));
    CHECK(same_bits(values(block.forward(X2, M, lens).narrow(1, 0, 3)), values(Y.narrow(1, 0, 3))));
    CHECK(max_abs_diff(block.forward(X2, M, lens).narrow(1, 3, 3), Y.narrow(1, 3, 3)) > 1e-3f);
    // The second source's steps past its length 2 changed: its outputs stay; the first's change.
    Tensor M2 = M.clone();
    M2.narrow(1, 2, 3).copy_(randn({2, 3, 16}));
    const Tensor Y2 = block.forward(X, M2, lens);
    CHECK(same_bits(values(Y2.narrow(0, 1, 1)), values(Y.narrow(0, 1, 1))));
    CHECK(max_abs_diff(Y2.narrow(0, 0, 1), Y.narrow(0, 0, 1)) > 1e-3f);
  }
}

TEST_CASE("the cross-attention weights are (B, H, T, S), each row a distribution over the source's valid steps") {
  auto model = small_transformer("sinusoidal", nn::NormPlacement::Post);
  model->forward(kSource, kSourceLens, kTarget);
  const std::vector<Tensor> weights = model->decoder->cross_attention_weights();
  REQUIRE(weights.size() == 2);
  for (const Tensor& w : weights) {
    REQUIRE(w.shape() == Shape{2, 4, 6, 5});
    const std::vector<float> v = values(w);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t row = 0; row < 4 * 6; ++row) {
        const float* p = v.data() + (b * 24 + row) * 5;
        float sum = 0;
        for (int64_t s = 0; s < 5; ++s) sum += p[s];
        CHECK(sum == doctest::Approx(1.0f).epsilon(1e-5));
        if (b == 1) CHECK((p[3] == 0.0f && p[4] == 0.0f));  // past the length 3
      }
  }
  CHECK(model->decoder->self_attention_weights()[0].shape() == Shape{2, 4, 6, 6});
}

TEST_CASE("a cached decoder step gives the bits of the full forward's last row, for every position scheme") {
  for (const std::string& positions : nn::position_scheme_names()) {
    for (const nn::NormPlacement norm : {nn::NormPlacement::Pre, nn::NormPlacement::Post}) {
      CAPTURE(positions);
      CAPTURE(norm == nn::NormPlacement::Pre);
      auto model = small_transformer(positions, norm);
      const auto [cached, recomputed] = decode_both_ways(*model, kTarget);
      REQUIRE(cached.size() == size_t{2 * 6 * 7});
      CHECK(same_bits(cached, recomputed));
    }
  }
}

TEST_CASE("a cached decoder step agrees to the bit in the reference mode, and the two modes agree") {
  auto model = small_transformer("rotary", nn::NormPlacement::Pre);
  const Tensor fast = model->forward(kSource, kSourceLens, kTarget);
  ReferenceModeGuard reference;
  const auto [cached, recomputed] = decode_both_ways(*model, kTarget);
  CHECK(same_bits(cached, recomputed));
  CHECK(max_abs_diff(model->forward(kSource, kSourceLens, kTarget), fast) < 1e-5f);
}

TEST_CASE("select_rows makes the cache of the reordered batch: the steps after it are that batch's") {
  auto model = small_transformer("sinusoidal", nn::NormPlacement::Post);
  NoGradGuard no_grad;
  nn::DecoderCache cache = model->start_decoding(kSource, kSourceLens, 4);
  model->decoder->forward_step(IndexTensor({0, 0}, {2, 1}), cache);
  model->decoder->forward_step(IndexTensor({3, 5}, {2, 1}), cache);
  // Keep source 1 twice, then source 0: three rows.
  cache.select_rows(IndexTensor{1, 1, 0});
  CHECK(cache.memory_valid_lens.numel() == 3);
  CHECK(cache.memory_valid_lens[0] == 3);
  const Tensor step = model->decoder->forward_step(IndexTensor({2, 4, 6}, {3, 1}), cache);
  const IndexTensor source({5, 6, 7, 0, 0, 5, 6, 7, 0, 0, 1, 4, 8, 2, 3}, {3, 5});
  const Tensor full = model->forward(source, IndexTensor{3, 3, 5}, IndexTensor({0, 5, 2, 0, 5, 4, 0, 3, 6}, {3, 3}));
  CHECK(same_bits(values(step), values(full.narrow(1, 2, 1))));
}

TEST_CASE("the decoder refuses what it cannot compute, naming it") {
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderBlock(nn::TransformerBlockOptions{.num_hiddens = 16, .ffn_num_hiddens = 8,
                                                                               .num_heads = 4,
                                                                               .attend = nn::AttentionRestriction::window(2)},
                                                   nn::attention_mechanism("dense")),
                       doctest::Contains("the self-attention of a decoder is causal; got attend = window=2"), ValueError);
  CHECK_THROWS_WITH_AS(
      nn::Transformer({.vocab_size = 5, .num_hiddens = 16, .ffn_num_hiddens = 8, .num_heads = 4, .num_layers = 1},
                      {.vocab_size = 5, .num_hiddens = 8, .ffn_num_hiddens = 8, .num_heads = 4, .num_layers = 1}),
      doctest::Contains("must agree on num_hiddens, num_heads and norm; got 16 and 8 hiddens"), ValueError);
  auto model = small_transformer("sinusoidal", nn::NormPlacement::Post);
  CHECK_THROWS_WITH_AS(model->decoder->forward(kTarget, randn({2, 5, 8})),
                       doctest::Contains("the memory of shape (2,5,8) must be (2, S, 16)"), ShapeError);
  CHECK_THROWS_WITH_AS(model->start_decoding(kSource, kSourceLens, 33),
                       doctest::Contains("a cache of 33 positions; expected 1 .. max_len (32)"), ValueError);
  nn::DecoderCache cache = model->start_decoding(kSource, kSourceLens, 2);
  cache.memory.pop_back();
  CHECK_THROWS_WITH_AS(model->decoder->forward_step(IndexTensor({0, 0}, {2, 1}), cache),
                       doctest::Contains("the cache holds the memory of 1 layers; expected 2"), ValueError);
  cache = model->start_decoding(kSource, kSourceLens, 1);
  model->decoder->forward_step(IndexTensor({0, 0}, {2, 1}), cache);
  CHECK_THROWS_WITH_AS(model->decoder->forward_step(IndexTensor({0, 0}, {2, 1}), cache),
                       doctest::Contains("the cache is full (1 positions)"), ValueError);
  model->train();
  CHECK_THROWS_WITH_AS(model->start_decoding(kSource, kSourceLens, 4), doctest::Contains("call eval() first"),
                       StateError);
}
