// The encoder's replaceable parts — position schemes, FFNs, norm placement, windows — against
// PyTorch goldens (tests/nn/encoder_golden.py writes each combination's equations out in float64),
// and the schemes' own behaviour. Gradient checks of the parts are at the end.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "autograd/grad_mode.h"
#include "gradcheck_registry.h"
#include "nn/alibi.h"
#include "nn/attention_testing.h"
#include "nn/encoder_golden_values.h"
#include "nn/swiglu.h"
#include "nn/transformer.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

nn::TransformerEncoderOptions golden_options(const EncoderGolden& g) {
  return {.vocab_size = 7, .num_hiddens = 8, .ffn_num_hiddens = 12, .num_heads = 2, .num_layers = 2,
          .dropout = 0.0f, .max_len = 8, .positions = nn::position_scheme(g.positions),
          .attend = g.window >= 0 ? nn::AttentionRestriction::window(g.window) : nn::AttentionRestriction::full(),
          .ffn = nn::feed_forward(g.ffn), .norm = g.norm == "pre" ? nn::NormPlacement::Pre : nn::NormPlacement::Post};
}


}  // namespace

TEST_CASE("every position scheme and FFN of the encoder matches the PyTorch golden values") {
  const IndexTensor ids({1, 5, 0, 6, 2, 3, 2, 4, 4, 1}, {2, 5}), lens{5, 3};
  for (const EncoderGolden& g : kEncoderGoldens) {
    CAPTURE(g.positions);
    CAPTURE(g.ffn);
    CAPTURE(g.norm);
    CAPTURE(g.window);
    nn::TransformerEncoder encoder(golden_options(g));
    fill_parameters(encoder);
    const Tensor out = encoder.forward(ids, lens);
    const std::vector<float> got = out.to_vector();
    REQUIRE(got.size() == g.output.size());
    for (size_t n = 0; n < got.size(); ++n) CHECK(got[n] == doctest::Approx(g.output[n]).epsilon(1e-4));
    const Tensor probe = arange(static_cast<float>(out.numel())).mul(0.3f).cos().reshape(out.shape());
    (out * probe).sum().backward();
    const auto named = encoder.named_parameters();
    REQUIRE(named.size() == g.grad_checksums.size());
    for (size_t k = 0; k < named.size(); ++k) {
      CAPTURE(named[k].first);
      CHECK(named[k].first == g.grad_checksums[k].first);
      const Tensor grad = named[k].second.grad();
      const Tensor weights = arange(static_cast<float>(grad.numel())).mul(0.7f).add(0.1f).sin();
      const double checksum = (grad.reshape({-1}) * weights).sum().item();
      CHECK(checksum == doctest::Approx(g.grad_checksums[k].second).epsilon(1e-3).scale(1e-3));
    }
  }
}

TEST_CASE("ALiBi penalizes each head by its slope times the distance") {
  nn::ALiBi alibi(4);
  check_values(alibi.slopes, {0.25f, 0.0625f, 0.015625f, 0.00390625f}, 1e-7f);  // 2^(-8h/4)
  const Tensor bias = alibi.offset_bias(IndexTensor{-2, 0, 3});
  check_values(bias.select(0, 0), {-0.5f, 0.0f, -0.75f}, 1e-7f);
  CHECK(bias.shape() == Shape{4, 3});
  CHECK(alibi.state_dict().empty());  // nothing learned, nothing saved
  CHECK_THROWS_AS(nn::ALiBi(0), ValueError);
}

TEST_CASE("relative bias positions read the bucket of each offset from their table") {
  auto table = std::make_shared<nn::ClippedRelativePositionBias>(2, 1);  // buckets: -1, 0, 1 → 0, 1, 2
  nn::RelativeBiasPositions positions(table);
  {
    NoGradGuard no_grad;
    table->weight.copy_(tensor({{1, 10}, {2, 20}, {3, 30}}));
  }
  check_values(positions.offset_bias(IndexTensor{-5, 0, 1, 4}), {1, 2, 3, 3, 10, 20, 30, 30}, 0.0f);
}

TEST_CASE("each scheme acts in its one place") {
  // Every registered scheme, a user's own too (nn::register_position_scheme): each acts in at most
  // one place; the built-in ones in the place their comments give.
  const nn::PositionSizes sizes{.num_hiddens = 8, .num_heads = 2, .max_len = 16};
  const Tensor X = randn({1, 4, 8}), q = randn({1, 2, 4, 4});
  const IndexTensor offsets{-1, 0, 1};
  const std::set<std::string> input{"sinusoidal", "learned", "learned-fourier", "random-fourier"}, qk{"rotary"},
      bias{"relative", "clipped", "alibi"};
  const std::set<std::string> builtin{"none",     "sinusoidal", "learned", "rotary",         "relative",
                                      "clipped",  "alibi",      "learned-fourier", "random-fourier"};
  for (const std::string& name : builtin) CHECK(nn::position_schemes().contains(name));
  for (const std::string& name : nn::position_scheme_names()) {
    CAPTURE(name);
    const std::shared_ptr<nn::PositionScheme> scheme = nn::position_scheme(name)(sizes);
    const bool on_input = (scheme->encode_input(X) - X).abs().max().item() > 0;
    const bool on_qk = (scheme->transform_qk(q, q).first - q).abs().max().item() > 0;
    const bool as_bias = scheme->offset_bias(offsets).defined();
    CHECK(int{on_input} + int{on_qk} + int{as_bias} <= 1);
    CHECK(on_qk == scheme->transforms_qk());  // the flag self-attention reads to unpack its projections
    if (builtin.count(name) == 0) continue;
    CHECK(on_input == (input.count(name) > 0));
    CHECK(on_qk == (qk.count(name) > 0));
    CHECK(as_bias == (bias.count(name) > 0));
  }
  try {
    nn::position_scheme("fourier");
    FAIL("an unknown scheme was accepted");
  } catch (const ValueError& e) {
    const std::string message = e.what();
    CHECK(message.rfind("position_scheme: unknown scheme 'fourier'; expected one of alibi, clipped, ", 0) == 0);
    for (const std::string& name : builtin) CHECK(message.find(name) != std::string::npos);
  }
  CHECK_THROWS_AS(nn::feed_forward("tanh"), ValueError);
}

namespace {

// A scheme whose bias has the wrong width, as a user's first try might.
struct WrongWidth : nn::PositionScheme {
  Tensor offset_bias(const IndexTensor& offsets) override { return zeros({2, offsets.numel() + 1}); }
};

}  // namespace

TEST_CASE("MultiHeadAttention adds a scheme's bias to a caller's bias shared by the heads") {
  Generator g(4);
  nn::MultiHeadAttention with(4, 4, 4, 4, 2, 0.0f), without(4, 4, 4, 4, 2, 0.0f);
  without.load_state_dict(with.state_dict());
  with.positions = std::make_shared<nn::ALiBi>(2);
  const Tensor X = randn({2, 3, 4}, false, &g), user = randn({2, 3, 3}, false, &g);  // (B, Q, K), B == H
  // ALiBi's (1, H, Q, K) bias written out, plus the caller's bias on every head of its own example.
  const Tensor alibi = with.positions->offset_bias(IndexTensor{-2, -1, 0, 1, 2});  // offsets −2 .. 2
  std::vector<float> dense;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) dense.push_back(alibi.at({h, j - i + 2}));
  const Tensor expected = without.forward(X, X, X, IndexTensor(), Tensor(),
                                          user.unsqueeze(1) + tensor(dense, {1, 2, 3, 3}));
  check_close(with.forward(X, X, X, IndexTensor(), Tensor(), user), expected, 1e-5f);
  with.positions = std::make_shared<WrongWidth>();
  CHECK_THROWS_WITH_AS(with.forward(X, X, X), doctest::Contains("position scheme WrongWidth gave a bias of shape (2,6)"),
                       ShapeError);
}

TEST_CASE("SwiGLU gates one projection by the SiLU of the other") {
  nn::SwiGLU ffn(2, 3);
  {
    NoGradGuard no_grad;
    ffn.gate->weight.copy_(tensor({{1, 0}, {0, 1}, {1, 1}}));
    ffn.up->weight.copy_(tensor({{2, 0}, {0, 2}, {1, -1}}));
    ffn.down->weight.copy_(tensor({{1, 1, 1}, {0, 0, 1}}));
  }
  const float x0 = 1.0f, x1 = -2.0f;
  auto silu = [](float a) { return a / (1.0f + std::exp(-a)); };
  const float h0 = silu(x0) * 2 * x0, h1 = silu(x1) * 2 * x1, h2 = silu(x0 + x1) * (x0 - x1);
  check_values(ffn.forward(tensor({{x0, x1}})), {h0 + h1 + h2, h2}, 1e-6f);
  CHECK(ffn.named_parameters().size() == 3);  // no biases
}

QKV_GRADCHECK_MODULE("SwiGLU", {In::normal({2, 3, 4})}, [] { return std::make_shared<nn::SwiGLU>(4, 6); },
                     [](nn::SwiGLU& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("PositionWiseFFN with GELU", {In::normal({2, 3, 4})},
                     [] { return std::make_shared<nn::PositionWiseFFN>(4, 6, 4, nn::Activation::GELU); },
                     [](nn::PositionWiseFFN& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("MultiHeadAttention with ALiBi in a window", {In::normal({2, 5, 4})},
                     [] {
                       auto m = std::make_shared<nn::MultiHeadAttention>(4, 4, 4, 4, 2, 0.0f);
                       m->positions = std::make_shared<nn::ALiBi>(2);
                       m->restriction = nn::AttentionRestriction::window(1);
                       return m;
                     },
                     [](nn::MultiHeadAttention& m, const Inputs& x) { return m.forward(x[0], x[0], x[0], IndexTensor{5, 4}); });
// Each scheme inside the encoder, which owns it: its parameters (a learned table, a relative
// bias table) are checked with the others.
#define QKV_ENCODER_GRADCHECK(SCHEME, ATTEND)                                                                     \
  QKV_GRADCHECK_MODULE(                                                                                          \
      "TransformerEncoder with " SCHEME " positions and " #ATTEND " attention", {},                              \
      [] {                                                                                                       \
        auto m = std::make_shared<nn::TransformerEncoder>(nn::TransformerEncoderOptions{                         \
            .vocab_size = 5, .num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2, .num_layers = 1,            \
            .max_len = 8, .positions = nn::position_scheme(SCHEME), .attend = nn::AttentionRestriction::ATTEND, \
            .ffn = nn::feed_forward("gelu")});                                                                   \
        m->eval();                                                                                               \
        return m;                                                                                                \
      },                                                                                                         \
      [](nn::TransformerEncoder& m, const Inputs&) {                                                             \
        return m.forward(IndexTensor({1, 4, 0, 3, 2, 2, 3, 1}, {2, 4}), IndexTensor{4, 3});                      \
      })
QKV_ENCODER_GRADCHECK("learned", full());
QKV_ENCODER_GRADCHECK("rotary", window(1));
QKV_ENCODER_GRADCHECK("relative", causal());
QKV_ENCODER_GRADCHECK("clipped", window(2));
QKV_ENCODER_GRADCHECK("alibi", full());
QKV_ENCODER_GRADCHECK("learned-fourier", causal());
