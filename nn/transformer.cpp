#include "nn/transformer.h"

#include "autograd/functional.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "nn/functional/banded_attention.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

// ---- TransformerEncoderBlock -------------------------------------------------------------------

TransformerEncoderBlock::TransformerEncoderBlock(const TransformerBlockOptions& o)
    : norm(o.norm) {
  const int64_t D = o.num_hiddens;
  if (!o.attention) throw ValueError("TransformerEncoderBlock: the attention factory must be set");
  const AttentionSetup setup{.num_hiddens = D,
                             .num_heads = o.num_heads,
                             .max_len = o.max_len,
                             .dropout = o.dropout,
                             .use_bias = o.use_bias,
                             .positions = o.positions,
                             .attend = o.attend,
                             .recompute_weights_above = o.recompute_weights_above,
                             .features = o.attention_features};
  attention = o.attention(setup);
  if (!attention) throw ValueError("TransformerEncoderBlock: the attention factory returned no module");
  check_supported(*attention, setup, "TransformerEncoder");
  register_module("attention", attention);
  if (norm == NormPlacement::Pre) {
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(D));
    ffn = register_module("ffn", o.ffn(D, o.ffn_num_hiddens));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(D));
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  } else {
    addnorm1 = register_module("addnorm1", std::make_shared<AddNorm>(D, o.dropout));
    ffn = register_module("ffn", o.ffn(D, o.ffn_num_hiddens));
    addnorm2 = register_module("addnorm2", std::make_shared<AddNorm>(D, o.dropout));
  }
}

Tensor TransformerEncoderBlock::forward(const Tensor& X, const IndexTensor& valid_lens, const Tensor& mask,
                                        const Tensor& bias) {
  if (norm == NormPlacement::Pre) {
    const Tensor x = norm1->forward(X);
    const Tensor Y = X + dropout->forward(attention->forward(x, x, x, valid_lens, mask, bias));
    return Y + dropout->forward(ffn->forward(norm2->forward(Y)));
  }
  const Tensor Y = addnorm1->forward(X, attention->forward(X, X, X, valid_lens, mask, bias));
  return addnorm2->forward(Y, ffn->forward(Y));
}

Tensor TransformerEncoderBlock::forward_step(const Tensor& x, Tensor& keys, Tensor& values, int64_t position) {
  if (norm == NormPlacement::Pre) {
    const Tensor Y = x + attention->forward_step(norm1->forward(x), keys, values, position);
    return Y + ffn->forward(norm2->forward(Y));
  }
  const Tensor Y = addnorm1->forward(x, attention->forward_step(x, keys, values, position));
  return addnorm2->forward(Y, ffn->forward(Y));
}

std::string TransformerEncoderBlock::extra_repr() const {
  return norm == NormPlacement::Pre ? "pre_norm" : "post_norm";
}

// ---- TransformerEncoder ------------------------------------------------------------------------

TransformerEncoder::TransformerEncoder(const TransformerEncoderOptions& o)
    : options(o) {
  // Every size but vocab_size (0: embedded input) must be given: the options' zeros are "unset", and
  // an encoder of no layers, a forgotten num_layers, would pass its input through untrained.
  if (o.vocab_size < 0 || o.num_hiddens <= 0 || o.ffn_num_hiddens <= 0 || o.num_heads <= 0 ||
      o.num_layers <= 0)
    throw ValueError(
        "TransformerEncoder: num_hiddens, ffn_num_hiddens, num_heads and num_layers must be positive and "
        "vocab_size >= 0, got num_hiddens " +
        std::to_string(o.num_hiddens) + ", ffn_num_hiddens " + std::to_string(o.ffn_num_hiddens) +
        ", num_heads " + std::to_string(o.num_heads) + ", num_layers " + std::to_string(o.num_layers) +
        " and vocab_size " + std::to_string(o.vocab_size));
  if (!o.positions || !o.ffn || !o.attention)
    throw ValueError("TransformerEncoder: the positions, ffn and attention factories must be set");
  if (o.vocab_size > 0)
    embedding = register_module("embedding", std::make_shared<Embedding>(o.vocab_size, o.num_hiddens));
  positions = register_module("positions", o.positions({o.num_hiddens, o.num_heads, o.max_len}));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  const TransformerBlockOptions block{.num_hiddens = o.num_hiddens,
                                      .ffn_num_hiddens = o.ffn_num_hiddens,
                                      .num_heads = o.num_heads,
                                      .dropout = o.dropout,
                                      .use_bias = o.use_bias,
                                      .norm = o.norm,
                                      .ffn = o.ffn,
                                      .attention = o.attention,
                                      .attention_features = o.attention_features,
                                      .max_len = o.max_len,
                                      .attend = o.attend,
                                      .positions = positions,
                                      .recompute_weights_above = o.recompute_weights_above};
  for (int64_t i = 0; i < o.num_layers; ++i)
    blocks->push_back(std::make_shared<TransformerEncoderBlock>(block));
  if (o.norm == NormPlacement::Pre)
    norm = register_module("norm", std::make_shared<LayerNorm>(o.num_hiddens));
}

Tensor TransformerEncoder::forward(const IndexTensor& ids, const IndexTensor& valid_lens) {
  if (ids.dim() != 2)
    throw ShapeError(where() + ": ids of shape " + shape_str(ids.shape()) + " must be (B, T)");
  if (!embedding)
    throw StateError(where() + ": built with vocab_size 0, it takes embedded input, not ids");
  return forward(embedding->forward(ids) * std::sqrt(static_cast<float>(options.num_hiddens)), valid_lens);
}

Tensor TransformerEncoder::forward(const Tensor& embedded, const IndexTensor& valid_lens) {
  if (embedded.dim() != 3 || embedded.size(2) != options.num_hiddens)
    throw ShapeError(where() + ": embedded input of shape " + shape_str(embedded.shape()) +
                     " must be (B, T, " + std::to_string(options.num_hiddens) + ")");
  Tensor X = dropout->forward(positions->encode_input(embedded));
  for (size_t i = 0; i < blocks->size(); ++i) {
    const std::shared_ptr<TransformerEncoderBlock> block = blocks->at<TransformerEncoderBlock>(i);
    // The last block is not recomputed: backward needs its activations first, so keeping them
    // from forward costs no more memory at the peak than making them again would.
    if (options.recompute && i + 1 < blocks->size())
      X = checkpoint([block, valid_lens](const std::vector<Tensor>& in) { return block->forward(in[0], valid_lens); },
                     {X});
    else
      X = block->forward(X, valid_lens);
  }
  return norm ? norm->forward(X) : X;
}

KVCache TransformerEncoder::make_cache(int64_t B, int64_t capacity) const {
  if (B <= 0 || capacity <= 0 || capacity > options.max_len)
    throw ValueError(where() + ": a cache for " + std::to_string(B) + " sequences of " + std::to_string(capacity) +
                     " positions; expected at least one sequence and 1 .. max_len (" +
                     std::to_string(options.max_len) + ") positions");
  const int64_t H = options.num_heads, d = options.num_hiddens / options.num_heads;
  KVCache cache;
  for (int64_t i = 0; i < options.num_layers; ++i) {
    cache.keys.push_back(zeros({B, H, capacity, d}));
    cache.values.push_back(zeros({B, H, capacity, d}));
  }
  return cache;
}

Tensor TransformerEncoder::forward_step(const IndexTensor& ids, KVCache& cache) {
  if (ids.dim() != 2 || ids.size(1) != 1)
    throw ShapeError(where() + ": forward_step takes one id per sequence, (B, 1); got " + shape_str(ids.shape()));
  if (!embedding)
    throw StateError(where() + ": built with vocab_size 0, it takes embedded input, not ids");
  NoGradGuard no_grad;
  return forward_step(embedding->forward(ids) * std::sqrt(static_cast<float>(options.num_hiddens)), cache);
}

Tensor TransformerEncoder::forward_step(const Tensor& embedded, KVCache& cache) {
  if (!options.attend.is_causal)
    throw ValueError(where() + ": forward_step decodes a causal encoder (attend = causal); this one attends " +
                     options.attend.describe());
  if (embedded.dim() != 3 || embedded.size(1) != 1 || embedded.size(2) != options.num_hiddens)
    throw ShapeError(where() + ": forward_step takes one token vector per sequence, (B, 1, " +
                     std::to_string(options.num_hiddens) + "); got " + shape_str(embedded.shape()));
  cache.check(options.num_layers, where());
  NoGradGuard no_grad;
  Tensor X = dropout->forward(positions->encode_input_at(embedded, cache.length));
  for (size_t i = 0; i < blocks->size(); ++i)
    X = blocks->at<TransformerEncoderBlock>(i)->forward_step(X, cache.keys[i], cache.values[i], cache.length);
  ++cache.length;
  return norm ? norm->forward(X) : X;
}

std::vector<Tensor> TransformerEncoder::attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blocks->size(); ++i)
    weights.push_back(blocks->at<TransformerEncoderBlock>(i)->attention->dense_weights());
  return weights;
}

std::string TransformerEncoder::extra_repr() const {
  return "num_hiddens=" + std::to_string(options.num_hiddens) +
         ", num_heads=" + std::to_string(options.num_heads) +
         ", num_layers=" + std::to_string(options.num_layers) + ", attend=" + options.attend.describe() +
         (options.norm == NormPlacement::Pre ? ", pre_norm" : "");
}

}  // namespace qkv::nn
