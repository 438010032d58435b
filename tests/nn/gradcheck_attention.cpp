// Gradcheck entries for the attention layers and the Transformer encoder and decoder (see
// tests/gradcheck_registry.h), with respect to their inputs and parameters, and to an attention bias
// (learned, as a relative position bias is). Modules with dropout are checked in eval() or at p = 0.
#include "gradcheck_registry.h"
#include "nn/attention.h"
#include "nn/functional/attention.h"
#include "nn/transformer.h"
#include "nn/transformer_decoder.h"
#include "tensor/random.h"

using namespace qkv;
using namespace qkv::testing;
namespace F = qkv::nn::functional;

namespace {

// The FFN's relu has a kink at 0: a small step keeps every hidden unit on its side.
const GradcheckOptions kAcrossRelu{.eps = 1e-3f};

std::shared_ptr<nn::TransformerEncoder> encoder_in_eval(const nn::TransformerEncoderOptions& options) {
  auto encoder = std::make_shared<nn::TransformerEncoder>(options);
  encoder->eval();
  return encoder;
}

}  // namespace

QKV_GRADCHECK_MODULE("DotProductAttention with valid lengths",
                     {In::normal({2, 3, 4}), In::normal({2, 5, 4}), In::normal({2, 5, 3})},
                     [] { return std::make_shared<nn::DotProductAttention>(0.0f); },
                     [](nn::DotProductAttention& m, const Inputs& x) {
                       return m.forward(x[0], x[1], x[2], IndexTensor{5, 2});
                     });
QKV_GRADCHECK_MODULE("DotProductAttention over heads with a mask and a bias",
                     {In::normal({2, 2, 3, 4}), In::normal({2, 2, 4, 4}), In::normal({2, 2, 4, 3}), In::normal({1, 2, 3, 4})},
                     [] { return std::make_shared<nn::DotProductAttention>(0.0f); },
                     [](nn::DotProductAttention& m, const Inputs& x) {
                       return m.forward(x[0], x[1], x[2], IndexTensor{4, 3}, F::causal_mask(3, 4), x[3]);
                     });
QKV_GRADCHECK_MODULE("AdditiveAttention with a length per query",
                     {In::normal({2, 3, 5}), In::normal({2, 4, 3}), In::normal({2, 4, 2})},
                     [] { return std::make_shared<nn::AdditiveAttention>(3, 5, 6, 0.0f); },
                     [](nn::AdditiveAttention& m, const Inputs& x) {
                       return m.forward(x[0], x[1], x[2], IndexTensor({1, 4, 2, 3, 3, 4}, {2, 3}));
                     });
// fused_attention: lengths hiding keys, a mask hiding every key from query 1, a learned bias, and
// dropout from a generator made anew on every call (so the same mask each time).
QKV_GRADCHECK(
    "fused_attention with lengths, a fully masked row, a learned bias and dropout",
    {In::normal({2, 2, 3, 3}), In::normal({2, 2, 4, 3}), In::normal({2, 2, 4, 3}), In::normal({1, 2, 3, 4})},
    [](const Inputs& x) {
      Generator gen(3);
      const Tensor mask = tensor({{1.f, 1.f, 0.f, 1.f}, {0.f, 0.f, 0.f, 0.f}, {1.f, 0.f, 1.f, 1.f}});
      return F::fused_attention(x[0], x[1], x[2], IndexTensor{4, 2}, mask, x[3], 0.3f, &gen).output;
    });
// The same without weights: backward recomputes them (from the heads, the mask and the bias).
QKV_GRADCHECK(
    "fused_attention without weights, recomputed in backward",
    {In::normal({2, 2, 3, 3}), In::normal({2, 2, 4, 3}), In::normal({2, 2, 4, 3}), In::normal({1, 2, 3, 4})},
    [](const Inputs& x) {
      Generator gen(3);
      const Tensor mask = tensor({{1.f, 1.f, 0.f, 1.f}, {0.f, 0.f, 0.f, 0.f}, {1.f, 0.f, 1.f, 1.f}});
      return F::fused_attention(x[0], x[1], x[2], IndexTensor{4, 2}, mask, x[3], 0.3f, &gen, false).output;
    });
// Queries, keys and values as column blocks of one packed (B, T, 3·D) projection, read through
// strides; lengths per query, and a bias per sequence and head.
QKV_GRADCHECK("fused_attention on column blocks of a packed projection",
              {In::normal({2, 3, 12}), In::normal({2, 2, 3, 3})}, [](const Inputs& x) {
                const auto head = [&](int64_t block) {
                  return x[0].narrow(2, 4 * block, 4).view({2, 3, 2, 2}).permute({0, 2, 1, 3});
                };
                return F::fused_attention(head(0), head(1), head(2), IndexTensor({3, 1, 0, 2, 3, 2}, {2, 3}),
                                          Tensor(), x[1])
                    .output;
              });
// The packed op: one (B, T, 3·D) projection for queries, keys and values, lengths per sequence, a
// learned bias, dropout from a generator made anew on every call.
QKV_GRADCHECK("fused_attention_packed with lengths, a learned bias and dropout",
              {In::normal({2, 3, 12}), In::normal({1, 2, 3, 3})}, [](const Inputs& x) {
                Generator gen(5);
                return F::fused_attention_packed(x[0], 2, IndexTensor{3, 2}, Tensor(), x[1], 0.3f, &gen).output;
              });
QKV_GRADCHECK("fused_attention_packed without weights, recomputed in backward",
              {In::normal({2, 3, 12}), In::normal({1, 2, 3, 3})}, [](const Inputs& x) {
                Generator gen(5);
                return F::fused_attention_packed(x[0], 2, IndexTensor{3, 2}, F::causal_mask(3, 3), x[1], 0.3f,
                                                 &gen, false)
                    .output;
              });
QKV_GRADCHECK_MODULE("MultiHeadAttention self-attention with biases", {In::normal({2, 4, 6})},
                     [] { return std::make_shared<nn::MultiHeadAttention>(6, 6, 6, 6, 2, 0.0f, true); },
                     [](nn::MultiHeadAttention& m, const Inputs& x) {
                       return m.forward(x[0], x[0], x[0], IndexTensor{4, 2});
                     });
QKV_GRADCHECK_MODULE("MultiHeadAttention cross attention with a window and a per-head bias",
                     {In::normal({2, 3, 5}), In::normal({2, 4, 6}), In::normal({2, 4, 3}), In::normal({1, 2, 3, 4})},
                     [] { return std::make_shared<nn::MultiHeadAttention>(6, 5, 3, 4, 2, 0.0f); },
                     [](nn::MultiHeadAttention& m, const Inputs& x) {
                       return m.forward(x[0], x[1], x[2], IndexTensor{4, 3}, F::window_mask(3, 4, 1), x[3]);
                     });
QKV_GRADCHECK_MODULE("TransformerEncoderBlock post-norm", {In::normal({2, 3, 4})},
                     [] {
                       return std::make_shared<nn::TransformerEncoderBlock>(nn::TransformerBlockOptions{
                           .num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2, .dropout = 0.0f});
                     },
                     [](nn::TransformerEncoderBlock& m, const Inputs& x) { return m.forward(x[0], IndexTensor{3, 2}); },
                     kAcrossRelu);
QKV_GRADCHECK_MODULE("TransformerEncoderBlock pre-norm with a window", {In::normal({2, 4, 4})},
                     [] {
                       return std::make_shared<nn::TransformerEncoderBlock>(nn::TransformerBlockOptions{
                           .num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2, .dropout = 0.0f, .use_bias = true,
                           .norm = nn::NormPlacement::Pre});
                     },
                     [](nn::TransformerEncoderBlock& m, const Inputs& x) {
                       return m.forward(x[0], IndexTensor{4, 3}, F::window_mask(4, 4, 1));
                     },
                     kAcrossRelu);
QKV_GRADCHECK_MODULE("TransformerEncoder in eval", {},
                     [] {
                       return encoder_in_eval(
                           {.vocab_size = 5, .num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2, .num_layers = 2});
                     },
                     [](nn::TransformerEncoder& m, const Inputs&) {
                       return m.forward(IndexTensor({1, 4, 0, 2, 2, 3}, {2, 3}), IndexTensor{2, 3});
                     },
                     kAcrossRelu);
QKV_GRADCHECK_MODULE("TransformerEncoder pre-norm windowed without positions", {},
                     [] {
                       return encoder_in_eval({.vocab_size = 5, .num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2,
                                               .num_layers = 1, .positions = nn::position_scheme("none"),
                                               .attend = nn::AttentionRestriction::window(1),
                                               .norm = nn::NormPlacement::Pre});
                     },
                     [](nn::TransformerEncoder& m, const Inputs&) {
                       return m.forward(IndexTensor({1, 4, 0, 3, 2, 2, 3, 1}, {2, 4}), IndexTensor{4, 3});
                     },
                     kAcrossRelu);
QKV_GRADCHECK_MODULE("TransformerDecoderBlock post-norm over a memory with valid lengths",
                     {In::normal({2, 3, 4}), In::normal({2, 5, 4})},
                     [] {
                       return std::make_shared<nn::TransformerDecoderBlock>(
                           nn::TransformerBlockOptions{.num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2,
                                                       .dropout = 0.0f},
                           nn::attention_mechanism("dense"));
                     },
                     [](nn::TransformerDecoderBlock& m, const Inputs& x) {
                       return m.forward(x[0], x[1], IndexTensor{5, 2});
                     },
                     kAcrossRelu);
QKV_GRADCHECK_MODULE("TransformerDecoderBlock pre-norm with rotary self-attention and biases",
                     {In::normal({2, 4, 4}), In::normal({2, 3, 4})},
                     [] {
                       return std::make_shared<nn::TransformerDecoderBlock>(
                           nn::TransformerBlockOptions{.num_hiddens = 4, .ffn_num_hiddens = 6, .num_heads = 2,
                                                       .dropout = 0.0f, .use_bias = true,
                                                       .norm = nn::NormPlacement::Pre,
                                                       .positions = nn::position_scheme("rotary")({4, 2, 16})},
                           nn::attention_mechanism("dense"));
                     },
                     [](nn::TransformerDecoderBlock& m, const Inputs& x) {
                       return m.forward(x[0], x[1], IndexTensor{3, 1}, IndexTensor{4, 2});
                     },
                     kAcrossRelu);
// With gelu FFNs: through two stacks a relu's kink is too near some hidden unit for any step.
QKV_GRADCHECK_MODULE("Transformer encoder-decoder in eval", {},
                     [] {
                       auto model = std::make_shared<nn::Transformer>(
                           nn::TransformerEncoderOptions{.vocab_size = 5, .num_hiddens = 4, .ffn_num_hiddens = 6,
                                                         .num_heads = 2, .num_layers = 1,
                                                         .ffn = nn::feed_forward("gelu")},
                           nn::TransformerDecoderOptions{.vocab_size = 6, .num_hiddens = 4, .ffn_num_hiddens = 6,
                                                         .num_heads = 2, .num_layers = 2,
                                                         .ffn = nn::feed_forward("gelu")});
                       model->eval();
                       return model;
                     },
                     [](nn::Transformer& m, const Inputs&) {
                       return m.forward(IndexTensor({1, 4, 0, 2, 2, 3}, {2, 3}), IndexTensor{2, 3},
                                        IndexTensor({0, 5, 1, 3, 0, 2, 2, 4}, {2, 4}));
                     },
                     kAcrossRelu);
