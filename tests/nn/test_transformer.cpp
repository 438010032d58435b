// nn/transformer.h: the encoder block (post-norm and pre-norm) and d2l's TransformerEncoder, against
// values computed independently, and their properties: masking by valid lengths and window,
// positions (permutation equivariance without them), kept attention weights, names and errors.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/grad_mode.h"
#include "nn/attention_testing.h"
#include "nn/functional/attention.h"
#include "nn/transformer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/storage.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [n, t] : m.named_parameters()) out.push_back(n);
  return out;
}

// Fills every parameter j (in named_parameters() order) with sin(1 + 0.37·i + 0.91·j) at flat
// index i, as tests/nn/transformer_golden.py does.
void fill_deterministically(nn::Module& m) {
  int64_t j = 0;
  for (const auto& [name, p] : m.named_parameters()) {
    std::vector<float> v(static_cast<size_t>(p.numel()));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(std::sin(1.0 + 0.37 * static_cast<double>(i) + 0.91 * static_cast<double>(j)));
    m.load_state_dict({{name, tensor(v, p.shape())}}, /*strict=*/false);
    ++j;
  }
}

nn::TransformerEncoderOptions small_options() {
  return {.vocab_size = 10, .num_hiddens = 8, .ffn_num_hiddens = 16, .num_heads = 2, .num_layers = 2, .dropout = 0.0f};
}

}  // namespace

TEST_CASE("TransformerEncoder matches d2l's encoder computed independently in numpy") {
  // tests/nn/transformer_golden.py writes d2l 11.7's equations out in numpy (float64) for this
  // configuration and parameter fill, and prints these values; it agrees with PyTorch's modules
  // (the anchor model of /work/shared/anchors) to 5e-10.
  nn::TransformerEncoder encoder({.vocab_size = 6, .num_hiddens = 4, .ffn_num_hiddens = 8, .num_heads = 2,
                                  .num_layers = 2, .dropout = 0.1f});
  encoder.eval();
  fill_deterministically(encoder);
  const Tensor out = encoder.forward(IndexTensor({1, 5, 0, 3, 2, 4}, {2, 3}), IndexTensor{2, 3});
  CHECK(out.shape() == Shape{2, 3, 4});
  check_values(out,
               {-0.7155944f, -0.7880589f, -1.7976585f, 0.2416250f, -0.7159205f, -0.7905435f, -1.7984318f, 0.2451522f,
                -0.7157968f, -0.7903061f, -1.7976638f, 0.2451690f, -0.7116512f, -0.7839994f, -1.7699309f, 0.2477026f,
                -0.7112192f, -0.8260849f, -1.7343573f, 0.3247393f, -0.7134300f, -0.7926731f, -1.7779199f, 0.2582356f},
               1e-5f);
  const std::vector<Tensor> weights = encoder.attention_weights();
  REQUIRE(weights.size() == 2);
  check_values(weights[0].select(0, 1),
               {0.0020717f, 0.0000094f, 0.9979188f, 0.0076234f, 0.9923766f, 0.0000000f, 0.0000000f, 0.0000000f, 1.0000000f,
                0.0025108f, 0.0000120f, 0.9974772f, 0.0122898f, 0.9877102f, 0.0000000f, 0.0000000f, 0.0000000f, 1.0000000f},
               1e-5f);
  check_values(weights[1].select(0, 0),
               {0.5042829f, 0.4957171f, 0, 0.5040463f, 0.4959537f, 0, 0.5041806f, 0.4958194f, 0,  //
                0.5042087f, 0.4957913f, 0, 0.5039845f, 0.4960155f, 0, 0.5041127f, 0.4958873f, 0},
               1e-5f);
}

TEST_CASE("TransformerEncoder parameters carry d2l's names") {
  nn::TransformerEncoder encoder(small_options());
  const std::vector<std::string> n = names(encoder);
  REQUIRE(n.size() == 1 + 2 * 12);
  CHECK(n[0] == "embedding.weight");
  CHECK(std::vector<std::string>(n.begin() + 1, n.begin() + 13) ==
        std::vector<std::string>{"blocks.0.attention.W_q.weight", "blocks.0.attention.W_k.weight",
                                 "blocks.0.attention.W_v.weight", "blocks.0.attention.W_o.weight",
                                 "blocks.0.addnorm1.ln.weight", "blocks.0.addnorm1.ln.bias",
                                 "blocks.0.ffn.dense1.weight", "blocks.0.ffn.dense1.bias", "blocks.0.ffn.dense2.weight",
                                 "blocks.0.ffn.dense2.bias", "blocks.0.addnorm2.ln.weight", "blocks.0.addnorm2.ln.bias"});
  CHECK(n.back() == "blocks.1.addnorm2.ln.bias");
  // The positional table is a buffer that a program can plot, not a parameter nor checkpoint state.
  const auto* sinusoidal = dynamic_cast<const nn::SinusoidalPositions*>(encoder.positions.get());
  REQUIRE(sinusoidal);
  CHECK(sinusoidal->encoding->P.shape() == Shape{1000, 8});
  CHECK(encoder.state_dict().size() == n.size());
  nn::TransformerEncoder biased({.vocab_size = 10, .num_hiddens = 8, .ffn_num_hiddens = 16, .num_heads = 2,
                                 .num_layers = 1, .use_bias = true});
  CHECK(names(biased)[2] == "blocks.0.attention.W_q.bias");
}

TEST_CASE("TransformerEncoder keeps every block's weights masked past each valid length") {
  nn::TransformerEncoder encoder(small_options());
  const Tensor out = encoder.forward(IndexTensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 0}, {2, 5}), IndexTensor{3, 5});
  CHECK(out.shape() == Shape{2, 5, 8});
  const std::vector<Tensor> weights = encoder.attention_weights();
  REQUIRE(weights.size() == 2);
  for (const Tensor& w : weights) {
    CHECK(w.shape() == Shape{2, 2, 5, 5});
    CHECK_FALSE(w.requires_grad());
    check_close(w.sum({-1}), ones({2, 2, 5}), 1e-6f);
    check_close(w.select(0, 0).narrow(-1, 3, 2), zeros({2, 5, 2}), 0.0f);
  }
  // Padding does not leak: the outputs of the valid positions ignore the tokens past valid_len.
  const Tensor other = encoder.forward(IndexTensor({1, 2, 3, 9, 9, 6, 7, 8, 9, 0}, {2, 5}), IndexTensor{3, 5});
  check_close(other.select(0, 0).narrow(0, 0, 3), out.select(0, 0).narrow(0, 0, 3), 1e-6f);
}

TEST_CASE("TransformerEncoder recomputes attention weights above recompute_weights_above: the same bits") {
  // A training forward whose weights take more than recompute_weights_above bytes per block leaves
  // attention_weights undefined, and the graph holds no (B, H, T, T) weights: backward recomputes
  // them. Dropout on the weights and in the residuals, packed and unpacked projections (rotary
  // heads are not packed): the output and every gradient are the same either way.
  const IndexTensor ids({1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2}, {2, 6}), lens{4, 6};
  const int64_t weight_bytes = 2 * 2 * 6 * 6 * 4;  // one block's (2, 2, 6, 6) weights
  for (const char* positions : {"sinusoidal", "rotary"}) {
    CAPTURE(positions);
    const auto step = [&](int64_t recompute_above, bool kept) {
      nn::TransformerEncoderOptions o = small_options();
      o.dropout = 0.2f;
      o.positions = nn::position_scheme(positions);
      o.recompute_weights_above = recompute_above;
      manual_seed(5);
      nn::TransformerEncoder encoder(o);
      const int64_t before = memory_stats().live_bytes;
      const Tensor out = encoder.forward(ids, lens);
      const int64_t held = memory_stats().live_bytes - before;  // the graph, the output, kept weights
      for (const Tensor& w : encoder.attention_weights()) CHECK(w.defined() == kept);
      (out * out).sum().backward();
      std::vector<float> all = out.to_vector();
      for (const auto& [name, p] : encoder.named_parameters()) {
        const std::vector<float> g = p.grad().to_vector();
        all.insert(all.end(), g.begin(), g.end());
      }
      return std::pair{all, held};
    };
    const auto [kept, kept_bytes] = step(weight_bytes, true);  // not above: kept
    const auto [recomputed, recomputed_bytes] = step(weight_bytes - 1, false);
    CHECK(recomputed == kept);
    CHECK(kept_bytes - recomputed_bytes == 2 * weight_bytes);  // two blocks
    CHECK(step(0, false).first == kept);
  }
  // The default keeps weights this small, and evaluation keeps them whatever their size (to plot).
  nn::TransformerEncoder encoder(small_options());
  encoder.forward(ids, lens);
  for (const Tensor& w : encoder.attention_weights()) CHECK(w.shape() == Shape{2, 2, 6, 6});
  nn::TransformerEncoderOptions o = small_options();
  o.recompute_weights_above = 0;
  nn::TransformerEncoder recomputing(o);
  recomputing.forward(ids, lens);
  for (const Tensor& w : recomputing.attention_weights()) CHECK_FALSE(w.defined());
  recomputing.eval();
  recomputing.forward(ids, lens);
  for (const Tensor& w : recomputing.attention_weights()) CHECK(w.shape() == Shape{2, 2, 6, 6});
}

TEST_CASE("the window option restricts attention to plus or minus w composed with valid lengths") {
  nn::TransformerEncoderOptions o = small_options();
  o.attend = nn::AttentionRestriction::window(1);
  nn::TransformerEncoder encoder(o);
  encoder.forward(IndexTensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2}, {2, 6}), IndexTensor{4, 6});
  const Tensor keep = nn::functional::mask_and(nn::functional::window_mask(6, 6, 1),
                                               nn::functional::key_padding_mask(IndexTensor{4, 6}, 6));  // (2, 6, 6)
  for (const Tensor& w : encoder.attention_weights()) {
    const Tensor hidden = keep.eq(0.0f).unsqueeze(1).expand(w.shape());
    CHECK((w * hidden).abs().max().item() == 0.0f);
    // Query 5 of example 0 sees keys 4 and 5 by the window, both past the valid length 4.
    check_close(w.select(0, 0).select(1, 5), zeros({2, 6}), 0.0f);
    check_close(w.select(0, 1).sum({-1}), ones({2, 6}), 1e-6f);
  }
  CHECK(encoder.extra_repr().find("window=1") != std::string::npos);
}

TEST_CASE("without positional encoding the encoder is permutation-equivariant and with it it is not") {
  // The seeds: self-attention is blind to order; the positional encoding is what tells positions
  // apart. Permuting the tokens permutes the outputs exactly when there are no positions.
  const IndexTensor ids({3, 1, 4, 1, 5, 9}, {1, 6}), permuted({5, 1, 9, 3, 4, 1}, {1, 6});
  const IndexTensor perm{4, 1, 5, 0, 2, 3};  // permuted[t] = ids[perm[t]]
  for (const std::string kind : {"none", "sinusoidal"}) {
    nn::TransformerEncoderOptions o = small_options();
    o.positions = nn::position_scheme(kind);
    nn::TransformerEncoder encoder(o);
    encoder.eval();
    const Tensor out = encoder.forward(ids), out_p = encoder.forward(permuted);
    const float gap = (out_p - out.index_select(1, perm)).abs().max().item();
    if (kind == "none") {
      CHECK(gap < 1e-5f);
      CHECK(encoder.positions->named_parameters().empty());
    } else {
      CHECK(gap > 1e-2f);
    }
  }
}

TEST_CASE("the pre-norm block keeps an identity path and the post-norm block normalizes") {
  // With the attention's W_o and the FFN's second layer zeroed, both sublayers output 0: a pre-norm
  // block is then the identity, X + 0 + 0, and a post-norm block LayerNorm(LayerNorm(X)).
  Generator g(1);
  const Tensor X = randn({2, 3, 8}, false, &g) * 3.0f + 1.0f;
  for (const bool pre_norm : {true, false}) {
    CAPTURE(pre_norm);
    nn::TransformerEncoderBlock block({.num_hiddens = 8, .ffn_num_hiddens = 16, .num_heads = 2, .dropout = 0.0f,
                                       .norm = pre_norm ? nn::NormPlacement::Pre : nn::NormPlacement::Post});
    auto& ffn = dynamic_cast<nn::PositionWiseFFN&>(*block.ffn);
    {
      NoGradGuard no_grad;
      dynamic_cast<nn::MultiHeadAttention&>(*block.attention).W_o->weight.zero_();
      ffn.dense2->weight.zero_();
      ffn.dense2->bias.zero_();
    }
    const Tensor Y = block.forward(X, IndexTensor{3, 2});
    if (pre_norm) {
      check_close(Y, X, 1e-6f);
      CHECK(names(block)[4] == "norm1.weight");
    } else {
      const Tensor centered = X - X.mean({-1}, true);
      check_close(Y, centered / (centered * centered).mean({-1}, true).add(1e-5f).sqrt(), 1e-3f);
      CHECK(names(block)[4] == "addnorm1.ln.weight");
    }
  }
}

TEST_CASE("the pre-norm encoder ends with a LayerNorm") {
  nn::TransformerEncoderOptions o = small_options();
  o.norm = nn::NormPlacement::Pre;
  nn::TransformerEncoder encoder(o);
  REQUIRE(encoder.norm);
  CHECK(names(encoder).back() == "norm.bias");
  const Tensor out = encoder.forward(IndexTensor({1, 2, 3, 4, 5, 6}, {2, 3}), IndexTensor{2, 3});
  check_close(out.mean({-1}), zeros({2, 3}), 1e-5f);  // the final norm's weight is 1 and bias 0
  CHECK_FALSE(nn::TransformerEncoder(small_options()).norm);
}

TEST_CASE("TransformerEncoder applies dropout in training only") {
  nn::TransformerEncoderOptions o = small_options();
  o.dropout = 0.3f;
  nn::TransformerEncoder encoder(o);
  const IndexTensor ids({1, 2, 3, 4, 5, 6}, {2, 3});
  encoder.eval();
  check_close(encoder.forward(ids), encoder.forward(ids), 0.0f);
  encoder.train();
  CHECK((encoder.forward(ids) - encoder.forward(ids)).abs().max().item() > 1e-3f);
  REQUIRE(encoder.dropout);  // after the embedding and its positions, whatever the scheme
  CHECK(encoder.dropout->p == doctest::Approx(0.3f));
}

TEST_CASE("TransformerEncoder names what it cannot use") {
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder({.vocab_size = 10, .num_hiddens = 8}),
                       "TransformerEncoder: num_hiddens, ffn_num_hiddens, num_heads and num_layers must be positive and "
                       "vocab_size >= 0, got num_hiddens 8, ffn_num_hiddens 0, num_heads 0, num_layers 0 and "
                       "vocab_size 10",
                       ValueError);
  // A forgotten num_layers built an encoder of no blocks, which passed its input through untrained.
  nn::TransformerEncoderOptions no_layers = small_options();
  no_layers.num_layers = 0;
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder{no_layers}, doctest::Contains("num_layers 0"), ValueError);
  nn::TransformerEncoderOptions o = small_options();
  CHECK_THROWS_AS(nn::AttentionRestriction::window(-2), ValueError);
  o.positions = nullptr;
  CHECK_THROWS_AS(nn::TransformerEncoder{o}, ValueError);
  o = small_options();
  o.num_heads = 3;
  CHECK_THROWS_AS(nn::TransformerEncoder{o}, ValueError);  // 8 is not a multiple of 3
  o = small_options();
  o.max_len = 4;
  nn::TransformerEncoder encoder(o);
  CHECK_THROWS_WITH_AS(encoder.forward(IndexTensor{1, 2, 3}), "TransformerEncoder: ids of shape (3) must be (B, T)",
                       ShapeError);
  CHECK_THROWS_AS(encoder.forward(IndexTensor({1, 2, 3, 4, 5}, {1, 5})), ShapeError);  // T > max_len
  CHECK_THROWS_AS(encoder.forward(IndexTensor({1, 2, 10}, {1, 3})), IndexError);       // id past the vocabulary
  CHECK_THROWS_AS(encoder.forward(IndexTensor({1, 2, 3}, {1, 3}), IndexTensor{4}), IndexError);
}

TEST_CASE("TransformerEncoder with vocab_size 0 takes token vectors: the same as ids through an embedding") {
  nn::TransformerEncoder with_ids(small_options());
  nn::TransformerEncoderOptions o = small_options();
  o.vocab_size = 0;
  nn::TransformerEncoder with_vectors(o);
  CHECK(!with_vectors.embedding);
  CHECK(with_vectors.num_parameters() == with_ids.num_parameters() - 10 * 8);
  nn::StateDict state = with_ids.state_dict();
  state.erase("embedding.weight");
  with_vectors.load_state_dict(state);
  with_ids.eval(), with_vectors.eval();
  const IndexTensor ids({1, 4, 2, 9, 3, 0}, {2, 3});
  const IndexTensor lens{3, 2};
  const Tensor X = with_ids.embedding->forward(ids) * std::sqrt(8.0f);
  const Tensor expected = with_ids.forward(ids, lens);
  CHECK((with_vectors.forward(X, lens) - expected).abs().max().item() == 0.0f);
  CHECK_THROWS_AS(with_vectors.forward(ids, lens), StateError);
  CHECK_THROWS_AS(with_vectors.forward(zeros({2, 3, 4}), lens), ShapeError);
}
