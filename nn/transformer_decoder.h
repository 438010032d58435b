// The Transformer decoder and the whole encoder–decoder Transformer (Vaswani et al. 2017, section
// 3.1, figure 1; d2l 11.7.3 and 11.7.5, "The Transformer Architecture").
//
// TransformerDecoderBlock: three sublayers, each wrapped as the encoder block's are.
//   post-norm (d2l, the paper):  Y = AddNorm1(X, SelfAttention(X, X, X))          masked: causal
//                                Z = AddNorm2(Y, CrossAttention(Y, M, M))         over the source
//                                out = AddNorm3(Z, FFN(Z))
//   pre-norm (PyTorch's norm_first=True):
//                                Y = X + dropout(SelfAttention(LN1(X)))
//                                Z = Y + dropout(CrossAttention(LN2(Y), M, M))
//                                out = Z + dropout(FFN(LN3(Z)))
//   X: (B, T, D) the target so far; M: (B, S, D) the encoder's output, the memory, S source steps
//   with memory_valid_lens (B) of them real → (B, T, D)
// Cross-attention is where the two sequences meet: its queries come from the target, its keys and
// values from the source, of another length; each target position weighs the source positions
// (the alignment a figure of its weights shows). The self-attention is causal: position t sees the
// target up to t only, so that teacher forcing trains every position at once on what decoding will
// give it. The cross-attention has no position scheme: the source's positions were encoded by the
// encoder, and offsets between two sequences mean nothing.
// Children, by name (d2l's): attention1 (self), attention2 (cross), ffn, and addnorm1..3 (post-norm)
// or norm1..3 and dropout (pre-norm). Both attentions and the FFN come from the same factories and
// registries as the encoder block's (nn/attention_interface.h, nn/ffn.h).
// Differences from PyTorch's nn.TransformerDecoderLayer, which this block otherwise matches with
// use_bias (nn::from_torch_state_dict renames self_attn, multihead_attn, linear1, linear2, norm1..3):
// PyTorch also drops out after the FFN's relu, and takes the causal mask as an argument.
//
// TransformerDecoder: target ids and the memory to next-token logits (d2l 11.7.5),
//   X = dropout(positions.encode_input(Embedding(ids) · √D))
//   X = block_L(... block_1(X, M))             (then a LayerNorm, with pre-norm)
//   logits = dense(X)                           (B, T, vocab_size)
// With vocab_size = 0 it takes token vectors and returns the blocks' output, (B, T, D), as PyTorch's
// nn.TransformerDecoder does; no Embedding and no dense are made.
//
// Decoding (d2l 11.7.5's state, as a cache): make_cache prepares every block's cross-attention
// memory once per source (Attention::prepare_memory: dense attention projects its keys and values
// there, once, not at every step) and an empty self-attention cache (nn/kv_cache.h); forward_step
// then runs one target token per sequence, its self-attention keys and values appended, and gives
// the same values, to the bit, as the last row of forward() over the whole prefix.
//
// Transformer: an encoder (nn/transformer.h) and a decoder of the same width, heads and norm
// placement (d2l's EncoderDecoder). Differences from PyTorch's nn.Transformer: that one always ends
// both stacks with a LayerNorm, qkv's with pre-norm only (as d2l's post-norm stacks have none), and
// holds no embeddings; with pre-norm and vocabulary sizes of 0 the two compute the same function.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/attention_interface.h"
#include "nn/transformer.h"

namespace qkv::nn {

class TransformerDecoderBlock : public Module {
 public:
  // options as the encoder block's: options.attention builds the self-attention, whose restriction
  // is causal (options.attend full or causal; another is refused); `cross_attention` builds the
  // cross-attention, with no position scheme and no restriction.
  TransformerDecoderBlock(const TransformerBlockOptions& options, const AttentionFactory& cross_attention);
  // X (B, T, D), memory (B, S, D); memory_valid_lens (B): the source steps each sequence has;
  // valid_lens (B): the target's own, hiding its padding from the self-attention too (optional:
  // a causal position never sees the padding after it).
  Tensor forward(const Tensor& X, const Tensor& memory, const IndexTensor& memory_valid_lens = IndexTensor(),
                 const IndexTensor& valid_lens = IndexTensor());
  // One decoding step: x (B, 1, D) at `position`; keys, values the block's self-attention cache
  // (MultiHeadAttention::forward_step); memory from attention2->prepare_memory → (B, 1, D).
  Tensor forward_step(const Tensor& x, Tensor& keys, Tensor& values, int64_t position, const Attention::Memory& memory,
                      const IndexTensor& memory_valid_lens);
  std::string extra_repr() const override;

  NormPlacement norm;
  std::shared_ptr<Attention> attention1, attention2;  // self, cross
  std::shared_ptr<FeedForward> ffn;
  std::shared_ptr<AddNorm> addnorm1, addnorm2, addnorm3;  // post-norm only
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;         // pre-norm only
  std::shared_ptr<Dropout> dropout;                       // pre-norm only
};

// The decoder's configuration; the five sizes have no default (vocab_size 0: token vectors in,
// states out).
struct TransformerDecoderOptions {
  int64_t vocab_size = 0, num_hiddens = 0, ffn_num_hiddens = 0, num_heads = 0, num_layers = 0;
  float dropout = 0.1f;
  bool use_bias = false;   // biases in the attention projections
  int64_t max_len = 1000;  // the longest target a position scheme covers
  PositionFactory positions = position_scheme("sinusoidal");
  FeedForwardFactory ffn = feed_forward("relu");
  AttentionFactory attention = attention_mechanism("dense");        // the masked self-attention
  AttentionFactory cross_attention = attention_mechanism("dense");  // over the encoder's output
  int64_t attention_features = 0;
  NormPlacement norm = NormPlacement::Post;
  int64_t recompute_weights_above = int64_t{8} << 20;  // as TransformerBlockOptions'
};

// What decoding carries from step to step, for B sequences (d2l 11.7.5's state).
struct DecoderCache {
  KVCache self;                           // per block: the target's keys and values so far
  std::vector<Attention::Memory> memory;  // per block: the source as its cross-attention reads it
  IndexTensor memory_valid_lens;          // (B), or undefined: every source step
  int64_t length() const { return self.length; }
  // The sequences kept, in order (a beam search keeps those it extends): row i becomes rows[i].
  void select_rows(const IndexTensor& rows);
};

class TransformerDecoder : public Module {
 public:
  explicit TransformerDecoder(const TransformerDecoderOptions& options);
  // ids (B, T) → logits (B, T, vocab_size). Teacher forcing: ids are <bos> and the target shifted right.
  Tensor forward(const IndexTensor& ids, const Tensor& memory, const IndexTensor& memory_valid_lens = IndexTensor(),
                 const IndexTensor& valid_lens = IndexTensor());
  // Token vectors (B, T, D) → the blocks' output (B, T, D): positions, dropout, blocks, final norm.
  Tensor forward(const Tensor& embedded, const Tensor& memory, const IndexTensor& memory_valid_lens = IndexTensor(),
                 const IndexTensor& valid_lens = IndexTensor());
  // In eval mode: a cache for the B sources of `memory` (B, S, D), for targets of up to
  // `capacity` <= max_len tokens.
  DecoderCache make_cache(const Tensor& memory, const IndexTensor& memory_valid_lens, int64_t capacity);
  // The next token of each sequence at position cache.length(), which advances: ids (B, 1) →
  // logits (B, 1, vocab_size), or embedded (B, 1, D) → (B, 1, D). No graph is recorded.
  Tensor forward_step(const IndexTensor& ids, DecoderCache& cache);
  Tensor forward_step(const Tensor& embedded, DecoderCache& cache);
  // Each block's weights from the last forward or step, detached: self-attention (B, H, T, T) and
  // cross-attention (B, H, T, S), per head.
  std::vector<Tensor> self_attention_weights() const;
  std::vector<Tensor> cross_attention_weights() const;
  std::string extra_repr() const override;

  TransformerDecoderOptions options;
  std::shared_ptr<Embedding> embedding;  // null when vocab_size = 0
  std::shared_ptr<PositionScheme> positions;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<ModuleList> blocks;  // TransformerDecoderBlock × num_layers
  std::shared_ptr<LayerNorm> norm;     // pre-norm only: after the last block
  std::shared_ptr<Linear> dense;       // to logits; null when vocab_size = 0

 private:
  TransformerDecoderBlock& block(size_t i) const { return *blocks->at<TransformerDecoderBlock>(i); }
};

// The encoder–decoder Transformer, d2l's EncoderDecoder with Transformer parts: parameters named
// encoder.* and decoder.*. The two options must agree on num_hiddens, num_heads and norm.
class Transformer : public Module {
 public:
  Transformer(const TransformerEncoderOptions& encoder, const TransformerDecoderOptions& decoder);
  // Teacher forcing: src (B, S) ids with src_valid_lens (B), dec_input (B, T) → logits (B, T, V_tgt).
  Tensor forward(const IndexTensor& src, const IndexTensor& src_valid_lens, const IndexTensor& dec_input);
  // The encoder's output and a decoding cache for it, in eval mode, with room for `capacity` target tokens.
  DecoderCache start_decoding(const IndexTensor& src, const IndexTensor& src_valid_lens, int64_t capacity);

  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace qkv::nn
