#include "nn/transformer.h"

#include <cmath>

#include "nn/functional/attention.h"
#include "tensor/error.h"

namespace qkv::nn {

// ---- TransformerEncoderBlock -------------------------------------------------------------------

TransformerEncoderBlock::TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                                                 float p, bool use_bias, bool pre_norm_)
    : pre_norm(pre_norm_) {
  attention = register_module("attention", std::make_shared<MultiHeadAttention>(
                                                num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, p, use_bias));
  if (pre_norm) {
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(num_hiddens));
    ffn = register_module("ffn", std::make_shared<PositionWiseFFN>(num_hiddens, ffn_num_hiddens, num_hiddens));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(num_hiddens));
    dropout = register_module("dropout", std::make_shared<Dropout>(p));
  } else {
    addnorm1 = register_module("addnorm1", std::make_shared<AddNorm>(num_hiddens, p));
    ffn = register_module("ffn", std::make_shared<PositionWiseFFN>(num_hiddens, ffn_num_hiddens, num_hiddens));
    addnorm2 = register_module("addnorm2", std::make_shared<AddNorm>(num_hiddens, p));
  }
}

Tensor TransformerEncoderBlock::forward(const Tensor& X, const IndexTensor& valid_lens, const Tensor& mask,
                                        const Tensor& bias) {
  if (pre_norm) {
    const Tensor x = norm1->forward(X);
    const Tensor Y = X + dropout->forward(attention->forward(x, x, x, valid_lens, mask, bias));
    return Y + dropout->forward(ffn->forward(norm2->forward(Y)));
  }
  const Tensor Y = addnorm1->forward(X, attention->forward(X, X, X, valid_lens, mask, bias));
  return addnorm2->forward(Y, ffn->forward(Y));
}

std::string TransformerEncoderBlock::extra_repr() const { return pre_norm ? "pre_norm" : "post_norm"; }

// ---- TransformerEncoder ------------------------------------------------------------------------

TransformerEncoder::TransformerEncoder(const TransformerEncoderOptions& o) : options(o) {
  if (o.vocab_size <= 0 || o.num_hiddens <= 0 || o.ffn_num_hiddens <= 0 || o.num_heads <= 0 || o.num_layers < 0)
    throw ValueError("TransformerEncoder: vocab_size, num_hiddens, ffn_num_hiddens and num_heads must be positive and "
                     "num_layers >= 0, got " + std::to_string(o.vocab_size) + ", " + std::to_string(o.num_hiddens) +
                     ", " + std::to_string(o.ffn_num_hiddens) + ", " + std::to_string(o.num_heads) + " and " +
                     std::to_string(o.num_layers));
  if (o.window < -1)
    throw ValueError("TransformerEncoder: window must be >= 0, or -1 for none, got " + std::to_string(o.window));
  embedding = register_module("embedding", std::make_shared<Embedding>(o.vocab_size, o.num_hiddens));
  if (o.positions == PositionKind::Sinusoidal)
    pos_encoding = register_module("pos_encoding", std::make_shared<PositionalEncoding>(o.num_hiddens, o.dropout, o.max_len));
  else
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.num_layers; ++i)
    blocks->push_back(std::make_shared<TransformerEncoderBlock>(o.num_hiddens, o.ffn_num_hiddens, o.num_heads,
                                                                o.dropout, o.use_bias, o.pre_norm));
  if (o.pre_norm) norm = register_module("norm", std::make_shared<LayerNorm>(o.num_hiddens));
}

Tensor TransformerEncoder::forward(const IndexTensor& ids, const IndexTensor& valid_lens) {
  if (ids.dim() != 2)
    throw ShapeError("TransformerEncoder: ids of shape " + shape_str(ids.shape()) + " must be (B, T)");
  const int64_t T = ids.size(1);
  Tensor X = embedding->forward(ids) * std::sqrt(static_cast<float>(options.num_hiddens));
  X = pos_encoding ? pos_encoding->forward(X) : dropout->forward(X);
  const Tensor mask = options.window >= 0 ? functional::window_mask(T, T, options.window) : Tensor();
  for (size_t i = 0; i < blocks->size(); ++i)
    X = blocks->at<TransformerEncoderBlock>(i)->forward(X, valid_lens, mask);
  return norm ? norm->forward(X) : X;
}

std::vector<Tensor> TransformerEncoder::attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blocks->size(); ++i)
    weights.push_back(blocks->at<TransformerEncoderBlock>(i)->attention->attention_weights);
  return weights;
}

std::string TransformerEncoder::extra_repr() const {
  return "num_hiddens=" + std::to_string(options.num_hiddens) + ", num_heads=" + std::to_string(options.num_heads) +
         ", num_layers=" + std::to_string(options.num_layers) +
         (options.positions == PositionKind::None ? ", positions=none" : ", positions=sinusoidal") +
         (options.window >= 0 ? ", window=" + std::to_string(options.window) : std::string()) +
         (options.pre_norm ? ", pre_norm" : "");
}

}  // namespace qkv::nn
