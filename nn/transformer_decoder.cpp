#include "nn/transformer_decoder.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

// ---- TransformerDecoderBlock -------------------------------------------------------------------

TransformerDecoderBlock::TransformerDecoderBlock(const TransformerBlockOptions& o,
                                                 const AttentionFactory& cross_attention)
    : norm(o.norm) {
  const int64_t D = o.num_hiddens;
  if (!o.attention || !cross_attention || !o.ffn)
    throw ValueError("TransformerDecoderBlock: the attention, cross-attention and ffn factories must be set");
  if (o.attend.banded() || o.attend.allowed.defined())
    throw ValueError("TransformerDecoderBlock: the self-attention of a decoder is causal; got attend = " +
                     o.attend.describe());
  AttentionSetup setup{.num_hiddens = D,
                       .num_heads = o.num_heads,
                       .max_len = o.max_len,
                       .dropout = o.dropout,
                       .use_bias = o.use_bias,
                       .positions = o.positions,
                       .attend = AttentionRestriction::causal(),
                       .recompute_weights_above = o.recompute_weights_above,
                       .features = o.attention_features};
  const auto build = [&](const AttentionFactory& factory, const char* name) {
    std::shared_ptr<Attention> a = factory(setup);
    if (!a) throw ValueError(std::string("TransformerDecoderBlock: the ") + name + " factory returned no module");
    check_supported(*a, setup, "TransformerDecoder");
    return a;
  };
  attention1 = register_module("attention1", build(o.attention, "attention"));
  setup.positions = nullptr;
  setup.attend = AttentionRestriction::full();
  attention2 = register_module("attention2", build(cross_attention, "cross-attention"));
  if (norm == NormPlacement::Pre) {
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(D));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(D));
    ffn = register_module("ffn", o.ffn(D, o.ffn_num_hiddens));
    norm3 = register_module("norm3", std::make_shared<LayerNorm>(D));
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  } else {
    addnorm1 = register_module("addnorm1", std::make_shared<AddNorm>(D, o.dropout));
    addnorm2 = register_module("addnorm2", std::make_shared<AddNorm>(D, o.dropout));
    ffn = register_module("ffn", o.ffn(D, o.ffn_num_hiddens));
    addnorm3 = register_module("addnorm3", std::make_shared<AddNorm>(D, o.dropout));
  }
}

Tensor TransformerDecoderBlock::forward(const Tensor& X, const Tensor& memory, const IndexTensor& memory_valid_lens,
                                        const IndexTensor& valid_lens) {
  if (norm == NormPlacement::Pre) {
    const Tensor x = norm1->forward(X);
    const Tensor Y = X + dropout->forward(attention1->forward(x, x, x, valid_lens));
    const Tensor Z = Y + dropout->forward(attention2->forward(norm2->forward(Y), memory, memory, memory_valid_lens));
    return Z + dropout->forward(ffn->forward(norm3->forward(Z)));
  }
  const Tensor Y = addnorm1->forward(X, attention1->forward(X, X, X, valid_lens));
  const Tensor Z = addnorm2->forward(Y, attention2->forward(Y, memory, memory, memory_valid_lens));
  return addnorm3->forward(Z, ffn->forward(Z));
}

Tensor TransformerDecoderBlock::forward_step(const Tensor& x, Tensor& keys, Tensor& values, int64_t position,
                                             const Attention::Memory& memory, const IndexTensor& memory_valid_lens) {
  if (norm == NormPlacement::Pre) {
    const Tensor Y = x + attention1->forward_step(norm1->forward(x), keys, values, position);
    const Tensor Z = Y + attention2->forward_memory(norm2->forward(Y), memory, memory_valid_lens);
    return Z + ffn->forward(norm3->forward(Z));
  }
  const Tensor Y = addnorm1->forward(x, attention1->forward_step(x, keys, values, position));
  const Tensor Z = addnorm2->forward(Y, attention2->forward_memory(Y, memory, memory_valid_lens));
  return addnorm3->forward(Z, ffn->forward(Z));
}

std::string TransformerDecoderBlock::extra_repr() const {
  return norm == NormPlacement::Pre ? "pre_norm" : "post_norm";
}

// ---- DecoderCache ------------------------------------------------------------------------------

void DecoderCache::select_rows(const IndexTensor& rows) {
  self.select_rows(rows);
  for (Attention::Memory& m : memory) m = m.select_rows(rows);
  if (memory_valid_lens.defined()) {
    std::vector<int64_t> lens(static_cast<size_t>(rows.numel()));
    for (int64_t i = 0; i < rows.numel(); ++i) lens[i] = memory_valid_lens[rows[i]];
    memory_valid_lens = IndexTensor(std::move(lens));
  }
}

// ---- TransformerDecoder ------------------------------------------------------------------------

TransformerDecoder::TransformerDecoder(const TransformerDecoderOptions& o) : options(o) {
  if (o.vocab_size < 0 || o.num_hiddens <= 0 || o.ffn_num_hiddens <= 0 || o.num_heads <= 0 || o.num_layers <= 0)
    throw ValueError(
        "TransformerDecoder: num_hiddens, ffn_num_hiddens, num_heads and num_layers must be positive and "
        "vocab_size >= 0, got num_hiddens " +
        std::to_string(o.num_hiddens) + ", ffn_num_hiddens " + std::to_string(o.ffn_num_hiddens) + ", num_heads " +
        std::to_string(o.num_heads) + ", num_layers " + std::to_string(o.num_layers) + " and vocab_size " +
        std::to_string(o.vocab_size));
  if (!o.positions || !o.ffn || !o.attention || !o.cross_attention)
    throw ValueError("TransformerDecoder: the positions, ffn, attention and cross_attention factories must be set");
  if (o.vocab_size > 0)
    embedding = register_module("embedding", std::make_shared<Embedding>(o.vocab_size, o.num_hiddens));
  positions = register_module("positions", o.positions({o.num_hiddens, o.num_heads, o.max_len}));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  const TransformerBlockOptions block_options{.num_hiddens = o.num_hiddens,
                                              .ffn_num_hiddens = o.ffn_num_hiddens,
                                              .num_heads = o.num_heads,
                                              .dropout = o.dropout,
                                              .use_bias = o.use_bias,
                                              .norm = o.norm,
                                              .ffn = o.ffn,
                                              .attention = o.attention,
                                              .attention_features = o.attention_features,
                                              .max_len = o.max_len,
                                              .attend = AttentionRestriction::causal(),
                                              .positions = positions,
                                              .recompute_weights_above = o.recompute_weights_above};
  for (int64_t i = 0; i < o.num_layers; ++i)
    blocks->push_back(std::make_shared<TransformerDecoderBlock>(block_options, o.cross_attention));
  if (o.norm == NormPlacement::Pre) norm = register_module("norm", std::make_shared<LayerNorm>(o.num_hiddens));
  if (o.vocab_size > 0) dense = register_module("dense", std::make_shared<Linear>(o.num_hiddens, o.vocab_size));
}

Tensor TransformerDecoder::forward(const IndexTensor& ids, const Tensor& memory, const IndexTensor& memory_valid_lens,
                                   const IndexTensor& valid_lens) {
  if (ids.dim() != 2) throw ShapeError(where() + ": ids of shape " + shape_str(ids.shape()) + " must be (B, T)");
  if (!embedding) throw StateError(where() + ": built with vocab_size 0, it takes embedded input, not ids");
  const Tensor embedded = embedding->forward(ids) * std::sqrt(static_cast<float>(options.num_hiddens));
  return dense->forward(forward(embedded, memory, memory_valid_lens, valid_lens));
}

Tensor TransformerDecoder::forward(const Tensor& embedded, const Tensor& memory, const IndexTensor& memory_valid_lens,
                                   const IndexTensor& valid_lens) {
  if (embedded.dim() != 3 || embedded.size(2) != options.num_hiddens)
    throw ShapeError(where() + ": embedded input of shape " + shape_str(embedded.shape()) + " must be (B, T, " +
                     std::to_string(options.num_hiddens) + ")");
  if (memory.dim() != 3 || memory.size(0) != embedded.size(0) || memory.size(2) != options.num_hiddens)
    throw ShapeError(where() + ": the memory of shape " + shape_str(memory.shape()) + " must be (" +
                     std::to_string(embedded.size(0)) + ", S, " + std::to_string(options.num_hiddens) +
                     "), the encoder's output for the same batch");
  Tensor X = dropout->forward(positions->encode_input(embedded));
  for (size_t i = 0; i < blocks->size(); ++i) X = block(i).forward(X, memory, memory_valid_lens, valid_lens);
  return norm ? norm->forward(X) : X;
}

DecoderCache TransformerDecoder::make_cache(const Tensor& memory, const IndexTensor& memory_valid_lens,
                                            int64_t capacity) {
  if (is_training()) throw StateError(where() + ": make_cache is for decoding, in eval mode; call eval() first");
  if (memory.dim() != 3 || memory.size(0) <= 0 || memory.size(2) != options.num_hiddens)
    throw ShapeError(where() + ": the memory of shape " + shape_str(memory.shape()) + " must be (B, S, " +
                     std::to_string(options.num_hiddens) + "), the encoder's output, B >= 1");
  if (capacity <= 0 || capacity > options.max_len)
    throw ValueError(where() + ": a cache of " + std::to_string(capacity) + " positions; expected 1 .. max_len (" +
                     std::to_string(options.max_len) + ")");
  NoGradGuard no_grad;
  const int64_t B = memory.size(0), H = options.num_heads, d = options.num_hiddens / options.num_heads;
  DecoderCache cache;
  cache.memory_valid_lens = memory_valid_lens;
  for (size_t i = 0; i < blocks->size(); ++i) {
    cache.self.keys.push_back(zeros({B, H, capacity, d}));
    cache.self.values.push_back(zeros({B, H, capacity, d}));
    cache.memory.push_back(block(i).attention2->prepare_memory(memory));
  }
  return cache;
}

Tensor TransformerDecoder::forward_step(const IndexTensor& ids, DecoderCache& cache) {
  if (ids.dim() != 2 || ids.size(1) != 1)
    throw ShapeError(where() + ": forward_step takes one id per sequence, (B, 1); got " + shape_str(ids.shape()));
  if (!embedding) throw StateError(where() + ": built with vocab_size 0, it takes embedded input, not ids");
  NoGradGuard no_grad;
  const Tensor embedded = embedding->forward(ids) * std::sqrt(static_cast<float>(options.num_hiddens));
  return dense->forward(forward_step(embedded, cache));
}

Tensor TransformerDecoder::forward_step(const Tensor& embedded, DecoderCache& cache) {
  if (embedded.dim() != 3 || embedded.size(1) != 1 || embedded.size(2) != options.num_hiddens)
    throw ShapeError(where() + ": forward_step takes one token vector per sequence, (B, 1, " +
                     std::to_string(options.num_hiddens) + "); got " + shape_str(embedded.shape()));
  cache.self.check(options.num_layers, where());
  if (cache.memory.size() != blocks->size())
    throw ValueError(where() + ": the cache holds the memory of " + std::to_string(cache.memory.size()) +
                     " layers; expected " + std::to_string(blocks->size()) + " (make it with make_cache)");
  NoGradGuard no_grad;
  const int64_t position = cache.length();
  Tensor X = dropout->forward(positions->encode_input_at(embedded, position));
  for (size_t i = 0; i < blocks->size(); ++i)
    X = block(i).forward_step(X, cache.self.keys[i], cache.self.values[i], position, cache.memory[i],
                              cache.memory_valid_lens);
  ++cache.self.length;
  return norm ? norm->forward(X) : X;
}

std::vector<Tensor> TransformerDecoder::self_attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blocks->size(); ++i) weights.push_back(block(i).attention1->dense_weights());
  return weights;
}

std::vector<Tensor> TransformerDecoder::cross_attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blocks->size(); ++i) weights.push_back(block(i).attention2->dense_weights());
  return weights;
}

std::string TransformerDecoder::extra_repr() const {
  return "num_hiddens=" + std::to_string(options.num_hiddens) + ", num_heads=" + std::to_string(options.num_heads) +
         ", num_layers=" + std::to_string(options.num_layers) +
         (options.norm == NormPlacement::Pre ? ", pre_norm" : "");
}

// ---- Transformer -------------------------------------------------------------------------------

Transformer::Transformer(const TransformerEncoderOptions& e, const TransformerDecoderOptions& d) {
  if (e.num_hiddens != d.num_hiddens || e.num_heads != d.num_heads || e.norm != d.norm)
    throw ValueError("Transformer: the encoder and decoder must agree on num_hiddens, num_heads and norm; got " +
                     std::to_string(e.num_hiddens) + " and " + std::to_string(d.num_hiddens) + " hiddens, " +
                     std::to_string(e.num_heads) + " and " + std::to_string(d.num_heads) + " heads" +
                     (e.norm != d.norm ? ", and different norm placements" : ""));
  if (e.attend.is_causal)
    throw ValueError("Transformer: the encoder reads the whole source; got attend = causal");
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(e));
  decoder = register_module("decoder", std::make_shared<TransformerDecoder>(d));
}

Tensor Transformer::forward(const IndexTensor& src, const IndexTensor& src_valid_lens, const IndexTensor& dec_input) {
  return decoder->forward(dec_input, encoder->forward(src, src_valid_lens), src_valid_lens);
}

DecoderCache Transformer::start_decoding(const IndexTensor& src, const IndexTensor& src_valid_lens, int64_t capacity) {
  NoGradGuard no_grad;
  return decoder->make_cache(encoder->forward(src, src_valid_lens), src_valid_lens, capacity);
}

}  // namespace qkv::nn
