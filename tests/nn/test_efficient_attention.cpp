// The attention mechanisms a block can be built with (nn/attention_interface.h) besides dense
// multi-head attention: Performer, Linformer, talking heads. Each is held to what its paper says it
// computes, in the cases where that is exact: Performer converges to softmax attention as its
// features grow, Linformer with k = n is dense attention over projected keys and values, talking
// heads with identity mixes is multi-head attention. Then the registries and the refusals, and the
// gradient checks. The PyTorch goldens are in test_efficient_attention_golden.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "gradcheck_registry.h"
#include "nn/alibi.h"
#include "nn/attention.h"
#include "nn/attention_testing.h"
#include "nn/linformer.h"
#include "nn/performer.h"
#include "nn/talking_heads.h"
#include "nn/transformer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

nn::AttentionSetup setup_of(int64_t D, int64_t H, int64_t max_len = 16, int64_t features = 0) {
  return {.num_hiddens = D, .num_heads = H, .max_len = max_len, .dropout = 0.0f, .features = features};
}

// Copies the projections of `from` into `to`: a mechanism and the dense layer it is compared with.
void copy_projections(const nn::ProjectedAttention& from, nn::MultiHeadAttention& to) {
  NoGradGuard no_grad;
  to.W_q->weight.copy_(from.W_q->weight);
  to.W_k->weight.copy_(from.W_k->weight);
  to.W_v->weight.copy_(from.W_v->weight);
  to.W_o->weight.copy_(from.W_o->weight);
}

double relative_error(const Tensor& got, const Tensor& exact) {
  return (got - exact).norm().item() / exact.norm().item();
}

}  // namespace

TEST_CASE("Performer approaches softmax attention as its random features grow") {
  // One head of width 16 on 64 tokens, identity projections, so the layer is FAVOR+ on X itself.
  // The estimate's error falls as 1/√m for many features (Choromanski et al. 2021, Lemma 2: the
  // variance of each kernel estimate is O(1/m)); averaged over 4 draws.
  const int64_t D = 16, T = 64;
  Generator data(7);
  const Tensor X = randn({2, T, D}, false, &data) * 0.5f;
  nn::MultiHeadAttention exact_layer(D, D, D, D, 1, 0.0f);
  {
    NoGradGuard no_grad;
    for (const auto& W : {exact_layer.W_q, exact_layer.W_k, exact_layer.W_v, exact_layer.W_o}) W->weight.copy_(eye(D));
  }
  exact_layer.eval();
  const Tensor exact = exact_layer.forward(X, X, X, IndexTensor{64, 40});
  std::vector<double> errors;
  for (const int64_t m : {16, 64, 256, 1024, 4096}) {
    double sum = 0;
    for (int draw = 0; draw < 4; ++draw) {
      manual_seed(100 + draw);
      nn::Performer performer(setup_of(D, 1, T, m));
      {
        NoGradGuard no_grad;
        for (const auto& W : {performer.W_q, performer.W_k, performer.W_v, performer.W_o}) W->weight.copy_(eye(D));
      }
      performer.eval();
      sum += relative_error(performer.forward(X, X, X, IndexTensor{64, 40}), exact);
    }
    errors.push_back(sum / 4);
  }
  CAPTURE(errors);
  for (size_t i = 1; i < errors.size(); ++i) CHECK(errors[i] < errors[i - 1]);
  // The output of 64 averaged zero-mean values is small, so its relative error is large at few
  // features (0.7 at m = 16); at m = 4096 it is 0.08, and there each 4× of features halves it.
  CHECK(errors.back() < 0.1);
  CHECK(errors[3] / errors[4] > 1.6);
  CHECK(errors[3] / errors[4] < 2.5);
}

TEST_CASE("Performer draws orthogonal features from its own seeded generator and redraws in training only") {
  manual_seed(3);
  nn::Performer a(setup_of(8, 2, 16, 10));
  manual_seed(3);
  nn::Performer b(setup_of(8, 2, 16, 10));
  CHECK(a.features.shape() == Shape{10, 4});  // m = 10 rows of d = 4: two blocks, the second cut
  check_close(a.features, b.features, 0.0f);  // the same seed, the same draw
  // Rows within a block are orthogonal; their lengths are those of Gaussian vectors, not 1.
  const Tensor block = a.features.narrow(0, 0, 4);
  const Tensor gram = block.matmul(block.t());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      if (i != j) CHECK(std::fabs(gram.at({i, j})) < 1e-4f * std::sqrt(gram.at({i, i}) * gram.at({j, j})));
  const Tensor X = randn({1, 5, 8});
  const Tensor before = a.features.clone();
  a.redraw_every = 2;
  a.eval();
  for (int i = 0; i < 3; ++i) a.forward(X, X, X);
  check_close(a.features, before, 0.0f);  // evaluation never redraws
  a.train();
  a.forward(X, X, X);
  check_close(a.features, before, 0.0f);
  a.forward(X, X, X);  // the second training forward draws again
  CHECK((a.features - before).abs().max().item() > 0.1);
  CHECK(a.state_dict().count("features") == 1);  // saved: a checkpoint evaluates with its features
  CHECK_THROWS_AS(nn::Performer(setup_of(8, 2, 16, -1)), ValueError);
}

TEST_CASE("Performer with more features than memory holds is a qkv Error naming the shape and bytes") {
  // Before, the features were drawn into a std::vector and 2^40 of them threw std::bad_alloc.
  CHECK_THROWS_WITH_AS(nn::Performer(setup_of(8, 2, 16, int64_t{1} << 40)),
                       "Performer: cannot allocate a tensor of shape (1099511627776,4): 17592186044416 bytes", Error);
  CHECK_THROWS_AS(nn::Performer(setup_of(8, 2, 16, std::numeric_limits<int64_t>::max())), ShapeError);
}

TEST_CASE("Performer gives a sequence with no valid key zero gradients and the others those it gives without it") {
  // Dense attention and Linformer give a sequence whose keys are all padding a zero output and zero
  // gradients. Performer's normalizer is 0 for it, and the division's backward must not turn that
  // into 0 / 0: a NaN there reaches W_q and W_k through the sum over the batch, in both modes.
  for (const bool plain : {false, true}) {
    CAPTURE(plain);
    const ReferenceModeGuard mode(plain);
    manual_seed(11);
    nn::AttentionSetup setup = setup_of(8, 2, 16, 12);
    setup.use_bias = true;
    nn::Performer performer(setup);
    performer.eval();
    Generator data(5);
    const Tensor X = randn({3, 6, 8}, false, &data), C = randn({3, 6, 8}, false, &data);
    // The gradients of the projections' parameters and of the input for a batch.
    const auto gradients = [&](const Tensor& x, const Tensor& c, const IndexTensor& valid_lens) {
      performer.zero_grad();
      const Tensor input = x.detach().requires_grad_();
      (performer.forward(input, input, input, valid_lens) * c).sum().backward();
      std::vector<Tensor> grads{input.grad()};
      for (const auto& W : {performer.W_q, performer.W_k, performer.W_v})
        grads.insert(grads.end(), {W->weight.grad().clone(), W->bias.grad().clone()});
      return grads;
    };
    const std::vector<Tensor> with = gradients(X, C, IndexTensor{6, 0, 4});
    const IndexTensor others{0, 2};
    const std::vector<Tensor> without =
        gradients(X.index_select(0, others), C.index_select(0, others), IndexTensor{6, 4});
    for (const Tensor& g : with)
      for (float v : g.to_vector()) REQUIRE(std::isfinite(v));
    check_close(with[0].index_select(0, others), without[0], 1e-5f);
    check_close(with[0].select(0, 1), zeros({6, 8}), 0.0f);  // the empty sequence's input
    for (size_t i = 1; i < with.size(); ++i) check_close(with[i], without[i], 1e-5f);
    // Its output is W_o applied to zeros: W_o's bias at every position.
    check_close(performer.forward(X, X, X, IndexTensor{6, 0, 4}).select(0, 1),
                performer.W_o->bias.unsqueeze(0).expand({6, 8}), 0.0f);
  }
}

TEST_CASE("Linformer with k equal to n is dense attention over the keys E·X and the values F·X") {
  const int64_t D = 8, H = 2, T = 6;
  manual_seed(11);
  nn::Linformer linformer(setup_of(D, H, T, T));
  linformer.eval();
  nn::MultiHeadAttention dense(D, D, D, D, H, 0.0f);
  copy_projections(linformer, dense);
  dense.eval();
  const Tensor X = randn({2, T, D});
  // Without biases, E·(X·W_kᵀ) = (E·X)·W_kᵀ: the projections fold into the keys and values.
  const Tensor folded = dense.forward(X, linformer.E.matmul(X), linformer.F.matmul(X));
  check_close(linformer.forward(X, X, X), folded, 1e-5f);
  // And with E = F = I it is dense attention itself.
  {
    NoGradGuard no_grad;
    linformer.E.copy_(eye(T));
    linformer.F.copy_(eye(T));
  }
  check_close(linformer.forward(X, X, X), dense.forward(X, X, X), 1e-5f);
  // Padded keys and values are zero rows before the projection: with E = I the projected rows of
  // the padding are zero keys (score 0, not hidden) and zero values.
  CHECK(linformer.attention_weights.shape() == Shape{2, H, T, T});
  CHECK_FALSE(linformer.dense_weights().defined());
}

TEST_CASE("Linformer refuses a sequence longer than the length its projections were built for") {
  manual_seed(1);
  nn::Linformer linformer(setup_of(8, 2, 6, 3));
  CHECK(linformer.E.shape() == Shape{3, 6});
  const Tensor X = randn({1, 4, 8});
  CHECK(linformer.forward(X, X, X).shape() == Shape{1, 4, 8});  // shorter: the first 4 columns
  const Tensor long_input = randn({1, 7, 8});
  CHECK_THROWS_WITH_AS(linformer.forward(long_input, long_input, long_input),
                       doctest::Contains("a sequence of 7 keys is longer than max_len 6"), ValueError);
  CHECK_THROWS_WITH_AS(nn::Linformer(setup_of(8, 2, 6, 7)), doctest::Contains("expected 1 .. max_len (6)"),
                       ValueError);
}

TEST_CASE("talking heads with identity mixes is multi-head attention and mixing changes it") {
  const int64_t D = 8, H = 2, T = 5;
  manual_seed(5);
  nn::AttentionSetup s = setup_of(D, H);
  s.positions = std::make_shared<nn::ALiBi>(H);
  s.attend = nn::AttentionRestriction::causal();
  nn::TalkingHeadsAttention talking(s);
  nn::MultiHeadAttention dense(D, D, D, D, H, 0.0f);
  copy_projections(talking, dense);
  dense.positions = s.positions;
  dense.restriction = s.attend;
  const Tensor X = randn({2, T, D});
  const IndexTensor lens{5, 3};
  check_close(talking.forward(X, X, X, lens), dense.forward(X, X, X, lens), 1e-5f);
  check_close(talking.dense_weights(), dense.dense_weights(), 1e-6f);
  {
    NoGradGuard no_grad;
    talking.P_l.copy_(tensor({{0.5f, 0.5f}, {0.5f, -0.5f}}));
    talking.P_w.copy_(tensor({{0.0f, 1.0f}, {1.0f, 0.0f}}));  // the heads swap their weights
  }
  const Tensor mixed = talking.forward(X, X, X, lens);
  CHECK((mixed - dense.forward(X, X, X, lens)).abs().max().item() > 1e-3);
  // Every head's weights are still 0 on the keys the mask hides: after the causal key and past a length.
  const Tensor w = talking.dense_weights();
  CHECK(w.at({0, 0, 1, 2}) == 0.0f);
  CHECK(w.at({1, 1, 4, 3}) == 0.0f);
  check_close(w.sum({-1}), ones({2, H, T}), 1e-5f);  // P_w's rows sum to 1: so do the weights'
}

TEST_CASE("the encoder refuses an attention mechanism with a part it does not support and names both") {
  nn::TransformerEncoderOptions o{.vocab_size = 5, .num_hiddens = 8, .ffn_num_hiddens = 8, .num_heads = 2,
                                  .num_layers = 1, .max_len = 16, .positions = nn::position_scheme("alibi"),
                                  .attention = nn::attention_mechanism("performer")};
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder{o},
                       doctest::Contains("attention Performer does not support position scheme ALiBi (a score bias "
                                         "by offset)"),
                       ValueError);
  o.positions = nn::position_scheme("sinusoidal");
  o.attend = nn::AttentionRestriction::window(2);
  o.attention = nn::attention_mechanism("linformer");
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder{o}, doctest::Contains("attention Linformer does not support attend=window=2"),
                       ValueError);
  o.attention = nn::attention_mechanism("talking_heads");
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder{o},
                       doctest::Contains("attention TalkingHeadsAttention does not support attend=window=2"), ValueError);
  o.attend = nn::AttentionRestriction::causal();
  o.attention = nn::attention_mechanism("performer");
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder{o}, doctest::Contains("does not support attend=causal"), ValueError);
  o.attend = nn::AttentionRestriction::full();
  o.attention = nn::attention_mechanism("dense");
  o.attention_features = 8;  // an exact mechanism has no approximation size: not silently ignored
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder{o},
                       doctest::Contains("attention MultiHeadAttention does not support features 8 (it is exact"),
                       ValueError);
  o.attention_features = 0;
  o.positions = nn::position_scheme("rotary");  // on q and k: every mechanism here takes it
  for (const std::string name : {"dense", "performer", "linformer", "talking_heads"}) {
    CAPTURE(name);
    o.attention = nn::attention_mechanism(name);
    o.attend = name == "talking_heads" || name == "dense" ? nn::AttentionRestriction::causal()
                                                           : nn::AttentionRestriction::full();
    nn::TransformerEncoder encoder(o);
    encoder.eval();
    const Tensor Y = encoder.forward(IndexTensor({1, 2, 3, 4, 0, 1}, {2, 3}), IndexTensor{3, 2});
    CHECK(Y.shape() == Shape{2, 3, 8});
    CHECK(std::isfinite(Y.sum().item()));
    CHECK(encoder.attention_weights()[0].defined() == (name == "dense" || name == "talking_heads"));
  }
  // Decoding with a key/value cache is the dense layer's: another mechanism says it does not decode.
  o.attention = nn::attention_mechanism("talking_heads");
  o.attend = nn::AttentionRestriction::causal();
  nn::TransformerEncoder talking(o);
  talking.eval();
  nn::KVCache cache = talking.make_cache(1, 4);
  CHECK_THROWS_WITH_AS(talking.forward_step(IndexTensor({1}, {1, 1}), cache),
                       doctest::Contains("does not decode with a key/value cache"), ValueError);
}

TEST_CASE("a registry takes a user's part once under a well-formed name and lists it") {
  auto& registry = nn::attentions();
  const nn::AttentionFactory mine = [](const nn::AttentionSetup& s) { return std::make_shared<nn::Linformer>(s); };
  CHECK(nn::register_attention("test_projected", mine));
  struct Undo {
    ~Undo() { nn::attentions().remove("test_projected"); }
  } undo;
  CHECK(registry.contains("test_projected"));
  const std::vector<std::string> names = nn::attention_mechanism_names();
  CHECK(std::find(names.begin(), names.end(), "test_projected") != names.end());
  CHECK_THROWS_WITH_AS(nn::register_attention("test_projected", mine),
                       "attention: mechanism 'test_projected' is already registered; choose another name", ValueError);
  CHECK_THROWS_WITH_AS(nn::register_attention("dense", mine), doctest::Contains("'dense' is already registered"),
                       ValueError);
  CHECK_THROWS_WITH_AS(nn::register_attention("two words", mine), doctest::Contains("a name is letters, digits"),
                       ValueError);
  CHECK_THROWS_WITH_AS(nn::register_attention("empty", nn::AttentionFactory()), doctest::Contains("an empty factory"),
                       ValueError);
  CHECK_THROWS_WITH_AS(nn::register_feed_forward("relu", nn::feed_forward("gelu")),
                       "feed_forward: FFN 'relu' is already registered; choose another name", ValueError);
  CHECK_THROWS_WITH_AS(nn::position_schemes().remove("nope"),
                       "position_scheme: cannot remove scheme 'nope'; it is not registered", ValueError);
  CHECK_THROWS_WITH_AS(nn::attention_mechanism("flash"),
                       doctest::Contains("attention: unknown mechanism 'flash'; expected one of dense, linformer, "
                                         "performer, talking_heads"),
                       ValueError);
}

// ---- gradient checks: every parameter and the input, with valid lengths -------------------------

QKV_GRADCHECK_MODULE("Performer", {In::normal({2, 4, 4})},
                     [] {
                       auto m = std::make_shared<nn::Performer>(setup_of(4, 2, 8, 6));
                       m->eval();
                       return m;
                     },
                     [](nn::Performer& m, const Inputs& x) { return m.forward(x[0], x[0], x[0], IndexTensor{4, 3}); });
QKV_GRADCHECK_MODULE("Linformer", {In::normal({2, 4, 4})},
                     [] { return std::make_shared<nn::Linformer>(setup_of(4, 2, 5, 3)); },
                     [](nn::Linformer& m, const Inputs& x) { return m.forward(x[0], x[0], x[0], IndexTensor{4, 3}); });
QKV_GRADCHECK_MODULE("TalkingHeadsAttention with ALiBi", {In::normal({2, 4, 4})},
                     [] {
                       nn::AttentionSetup s = setup_of(4, 2);
                       s.positions = std::make_shared<nn::ALiBi>(2);
                       auto m = std::make_shared<nn::TalkingHeadsAttention>(s);
                       NoGradGuard no_grad;
                       m->P_l.add_(tensor({{0.1f, -0.3f}, {0.2f, 0.05f}}));  // away from the identity
                       m->P_w.add_(tensor({{-0.2f, 0.1f}, {0.3f, 0.1f}}));
                       return m;
                     },
                     [](nn::TalkingHeadsAttention& m, const Inputs& x) {
                       return m.forward(x[0], x[0], x[0], IndexTensor{4, 3});
                     });
QKV_GRADCHECK_MODULE("TransformerEncoder with Performer attention and rotary positions", {},
                     [] {
                       auto m = std::make_shared<nn::TransformerEncoder>(nn::TransformerEncoderOptions{
                           .vocab_size = 5, .num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2, .num_layers = 1,
                           .max_len = 8, .positions = nn::position_scheme("rotary"),
                           .ffn = nn::feed_forward("gelu"), .attention = nn::attention_mechanism("performer"),
                           .attention_features = 6});
                       m->eval();
                       return m;
                     },
                     [](nn::TransformerEncoder& m, const Inputs&) {
                       return m.forward(IndexTensor({1, 4, 0, 3, 2, 2, 3, 1}, {2, 4}), IndexTensor{4, 3});
                     });
