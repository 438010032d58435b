// Gradcheck entries for the layers of nn/ (see tests/gradcheck_registry.h), with respect to their
// inputs and their parameters.
#include "gradcheck_registry.h"
#include "nn/add_norm.h"
#include "nn/char_encoder.h"
#include "nn/conv1d.h"
#include "nn/embedding.h"
#include "nn/ffn.h"
#include "nn/gru.h"
#include "nn/rms_norm.h"
#include "qkv.h"

using namespace qkv;
using namespace qkv::testing;

QKV_GRADCHECK_MODULE("Linear", {In::normal({2, 3, 4})}, [] { return std::make_shared<nn::Linear>(4, 5); },
                     [](nn::Linear& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("Linear without bias", {In::normal({3, 4})},
                     [] { return std::make_shared<nn::Linear>(4, 2, false); },
                     [](nn::Linear& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("LayerNorm", {In::normal({2, 3, 5})}, [] { return std::make_shared<nn::LayerNorm>(5); },
                     [](nn::LayerNorm& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("Dropout with a fixed mask", {In::normal({4, 5})}, [] { return std::make_shared<nn::Dropout>(0.3f); },
                     [](nn::Dropout& m, const Inputs& x) {
                       Generator g(7);  // the same mask on every call
                       return nn::functional::dropout(x[0], m.p, true, &g);
                     });
QKV_GRADCHECK_MODULE("Embedding", {}, [] { return std::make_shared<nn::Embedding>(5, 3); },
                     [](nn::Embedding& m, const Inputs&) {
                       const IndexTensor ids({1, 3, 1, 0, 4, 1}, {2, 3});  // row 1 used three times
                       return m.forward(ids);
                     });
QKV_GRADCHECK_MODULE("PositionWiseFFN", {In::normal({2, 3, 4})},
                     [] { return std::make_shared<nn::PositionWiseFFN>(4, 6, 3); },
                     [](nn::PositionWiseFFN& m, const Inputs& x) { return m.forward(x[0]); },
                     // A small step, so that no hidden pre-activation is pushed across relu's kink.
                     GradcheckOptions{.eps = 1e-3f});
QKV_GRADCHECK_MODULE("AddNorm", {In::normal({2, 3, 5}), In::normal({2, 3, 5})},
                     [] { return std::make_shared<nn::AddNorm>(5, 0.0f); },
                     [](nn::AddNorm& m, const Inputs& x) { return m.forward(x[0], x[1]); });
QKV_GRADCHECK_MODULE("GRUCell", {In::normal({2, 3}), In::normal({2, 4})},
                     [] { return std::make_shared<nn::GRUCell>(3, 4); },
                     [](nn::GRUCell& m, const Inputs& x) { return m.forward(x[0], x[1]); });
QKV_GRADCHECK_MODULE("GRU two layers with h0", {In::normal({3, 2, 3}), In::normal({2, 2, 4})},
                     [] { return std::make_shared<nn::GRU>(3, 4, nn::GRUOptions{.num_layers = 2}); },
                     [](nn::GRU& m, const Inputs& x) {
                       const nn::GRUOutput out = m.forward(x[0], x[1]);
                       return cat({out.output.flatten(), out.h_n.flatten()}, 0);  // both results take part
                     });
QKV_GRADCHECK_MODULE("GRU bidirectional batch_first",
                     {In::normal({2, 3, 3}), In::normal({4, 2, 3})},
                     [] {
                       return std::make_shared<nn::GRU>(
                           3, 3, nn::GRUOptions{.num_layers = 2, .batch_first = true, .bidirectional = true});
                     },
                     [](nn::GRU& m, const Inputs& x) {
                       const nn::GRUOutput out = m.forward(x[0], x[1]);
                       return cat({out.output.flatten(), out.h_n.flatten()}, 0);
                     });
QKV_GRADCHECK_MODULE("RMSNorm", {In::normal({2, 3, 5})}, [] { return std::make_shared<nn::RMSNorm>(5); },
                     [](nn::RMSNorm& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("Conv1d", {In::normal({2, 5, 3})}, [] { return std::make_shared<nn::Conv1d>(3, 4, 3, 1); },
                     [](nn::Conv1d& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("Conv1d dilated without bias", {In::normal({2, 6, 2})},
                     [] { return std::make_shared<nn::Conv1d>(2, 3, 2, 0, false, 2); },
                     [](nn::Conv1d& m, const Inputs& x) { return m.forward(x[0]); });

namespace {

// CharEncoder's forward with row 0 of its embedding, the padding vector, held at zero as its
// contract says (nn/char_encoder.h): the layer gives that row no gradient on purpose, so a
// finite difference through it must not count.
Tensor char_encoder_forward(nn::CharEncoder& m, const IndexTensor& chars, const IndexTensor& lengths) {
  {
    NoGradGuard no_grad;
    m.embedding->weight.select(0, 0).zero_();
  }
  return m.forward(chars, lengths);
}

}  // namespace

// Words of lengths 3, 1 and 5 padded to L = 5 with id 0, in a batch of 2 sentences of 2 tokens, the
// last an empty slot.
QKV_GRADCHECK_MODULE("CharEncoder", {}, [] { return std::make_shared<nn::CharEncoder>(6, 3, 4); },
                     [](nn::CharEncoder& m, const Inputs&) {
                       const IndexTensor chars({1, 2, 3, 0, 0, 5, 0, 0, 0, 0, 4, 4, 1, 2, 5, 0, 0, 0, 0, 0}, {2, 2, 5});
                       return char_encoder_forward(m, chars, IndexTensor({3, 1, 5, 0}, {2, 2}));
                     },
                     // A small step, so that no pre-activation is pushed across relu's kink or the max
                     // to another position.
                     GradcheckOptions{.eps = 1e-3f});
QKV_GRADCHECK_MODULE("CharEncoder tanh with kernel 5", {},
                     [] { return std::make_shared<nn::CharEncoder>(5, 2, 3, 5, nn::CharEncoder::Nonlinearity::Tanh); },
                     [](nn::CharEncoder& m, const Inputs&) {
                       return char_encoder_forward(m, IndexTensor({1, 2, 3, 4, 4, 3, 0, 0}, {2, 4}), IndexTensor{4, 2});
                     });
