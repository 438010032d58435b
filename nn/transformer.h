// The Transformer encoder (Vaswani et al. 2017, section 3.1; d2l 11.7).
//
// TransformerEncoderBlock: self-attention and a position-wise FFN, each wrapped in a residual
// connection and a layer normalization.
//   post-norm (d2l, the paper):  Y = AddNorm(X, MHA(X, X, X)),       out = AddNorm(Y, FFN(Y))
//                                with AddNorm(X, Y) = LayerNorm(dropout(Y) + X)
//   pre-norm (Xiong et al. 2020; PyTorch's norm_first=True):
//                                Y = X + dropout(MHA(LN1(X))),       out = Y + dropout(FFN(LN2(Y)))
//   X: (B, T, D) → (B, T, D), D = num_hiddens; by default FFN: Linear(D, ffn_num_hiddens), relu, Linear(·,
//   D).
// Post-norm keeps every block's output normalized; pre-norm keeps an identity path from input to
// output, which trains deep stacks without a learning-rate warm-up, and needs a final LayerNorm
// after the last block (TransformerEncoder adds it).
// Children, by name: attention (by default MultiHeadAttention, D → D with num_heads heads; bias only
// with use_bias), ffn (by default PositionWiseFFN, with biases), and addnorm1, addnorm2 (post-norm) or norm1,
// norm2, dropout (pre-norm). d2l's names, so the parameters read attention.W_q.weight, addnorm1.ln.weight...
// Differences from PyTorch's nn.TransformerEncoderLayer, which this block otherwise matches (relu,
// norm_first for pre-norm): PyTorch also drops out after the FFN's relu, and its attention has
// biased, packed projections (see MultiHeadAttention in nn/attention.h). With use_bias, a PyTorch
// layer's state_dict loads through nn::from_torch_state_dict (nn/pytorch.h), which renames its parts.
//
// TransformerEncoder: token ids to contextual vectors (d2l 11.7.4),
//   X = dropout(positions.encode_input(Embedding(ids) · √D))
//   X = block_L(... block_1(X))                    (then a LayerNorm, with pre-norm)
//   ids: (B, T) in [0, vocab_size), T <= max_len; valid_lens: (B), the real length of each sequence
//   (undefined: all T) → (B, T, D)
// A model that builds its own token vectors (from characters, say) passes vocab_size = 0 and calls
// forward(X, valid_lens) with X (B, T, D) in place of the scaled embedding: no Embedding is made.
// The embedding is scaled by √D so that it is not drowned by a positional encoding, whose values
// lie in [-1, 1] (d2l 11.7.4). The keys past each valid length are hidden from every query; the
// queries there still produce outputs, which a caller ignores (a masked loss).
//
// Composed from parts, each replaceable without editing this file:
//   positions  a PositionScheme (nn/position_scheme.h) built by a factory: none, sinusoidal,
//              learned, rotary, relative (T5 buckets, Shaw's clipping), ALiBi, or a user's own.
//              The encoder owns it (child `positions`) and every block's attention uses it; the
//              scheme itself decides where it acts (on the input, on q/k, or as a score bias).
//   attend     which keys a query may see (AttentionRestriction, nn/attention_interface.h): all,
//              a window ±w computed on the band in O(T·w), causal, or a mask.
//   ffn        a FeedForward (nn/ffn.h) built by a factory: relu, gelu, swiglu, or a user's own.
//   attention  an Attention (nn/attention_interface.h) built by a factory from the block's sizes,
//              the scheme and the restriction: dense (MultiHeadAttention), performer, linformer,
//              talking_heads, or a user's own. A mechanism that does not support the scheme or
//              the restriction asked of it is refused when the encoder is built, by name.
//   norm       post-norm or pre-norm (above).
// With no positions at all the encoder is equivariant to permutations of the positions (an
// ablation; see the tests).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/add_norm.h"
#include "nn/attention.h"
#include "nn/container.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/ffn.h"
#include "nn/kv_cache.h"
#include "nn/layer_norm.h"
#include "nn/module.h"
#include "nn/position_scheme.h"

namespace qkv::nn {

enum class NormPlacement { Post, Pre };

// One block's sizes and parts.
struct TransformerBlockOptions {
  int64_t num_hiddens = 0, ffn_num_hiddens = 0, num_heads = 0;
  float dropout = 0.1f;
  bool use_bias = false;  // biases in the attention projections (d2l's use_bias)
  NormPlacement norm = NormPlacement::Post;
  FeedForwardFactory ffn = feed_forward("relu");
  AttentionFactory attention = attention_mechanism("dense");
  int64_t attention_features = 0;  // AttentionSetup::features: Performer's m, Linformer's k (0: default)
  int64_t max_len = 1000;          // the longest sequence (Linformer's projections cover it)
  AttentionRestriction attend = AttentionRestriction::full();
  std::shared_ptr<PositionScheme> positions = nullptr;  // acts inside attention; shared, not a child
  // Above this many bytes of (B, H, T, T) weights per block, a training forward keeps none
  // (MultiHeadAttention::recompute_weights_above) and backward makes them again tile by tile;
  // below it, backward reads them. 0: never keep them, as PyTorch's encoder layer.
  int64_t recompute_weights_above = int64_t{8} << 20;
};

class TransformerEncoderBlock : public Module {
 public:
  explicit TransformerEncoderBlock(const TransformerBlockOptions& options);
  // X (B, T, D); valid_lens, mask and bias as for MultiHeadAttention (nn/attention.h).
  Tensor forward(const Tensor& X, const IndexTensor& valid_lens = IndexTensor(),
                 const Tensor& mask = Tensor(), const Tensor& bias = Tensor());
  // One decoding step: x (B, 1, D) at `position`, the block's cached keys and values as
  // MultiHeadAttention::forward_step takes them → (B, 1, D).
  Tensor forward_step(const Tensor& x, Tensor& keys, Tensor& values, int64_t position);
  std::string extra_repr() const override;

  NormPlacement norm;
  std::shared_ptr<Attention> attention;  // built by options.attention; checked by check_supported
  std::shared_ptr<FeedForward> ffn;
  std::shared_ptr<AddNorm> addnorm1, addnorm2;  // post-norm only
  std::shared_ptr<LayerNorm> norm1, norm2;      // pre-norm only
  std::shared_ptr<Dropout> dropout;             // pre-norm only
};

// The encoder's configuration; the five sizes have no default. With designated initializers:
//   nn::TransformerEncoder encoder({.vocab_size = 1000, .num_hiddens = 64, .ffn_num_hiddens = 128,
//                                   .num_heads = 4, .num_layers = 2,
//                                   .positions = nn::position_scheme("rotary"),
//                                   .attend = nn::AttentionRestriction::window(3)});
// Each block's attention by a registry name: .attention = nn::attention_mechanism("performer").
struct TransformerEncoderOptions {
  int64_t vocab_size = 0, num_hiddens = 0, ffn_num_hiddens = 0, num_heads = 0, num_layers = 0;
  float dropout = 0.1f;    // after the embedding, on attention weights, in every residual
  bool use_bias = false;   // biases in the attention projections (d2l's use_bias)
  int64_t max_len = 1000;  // the longest sequence a position scheme covers
  PositionFactory positions = position_scheme("sinusoidal");
  AttentionRestriction attend = AttentionRestriction::full();
  FeedForwardFactory ffn = feed_forward("relu");
  AttentionFactory attention = attention_mechanism("dense");  // nn/attention_interface.h
  int64_t attention_features = 0;  // the size of an approximate attention's (AttentionSetup::features)
  NormPlacement norm = NormPlacement::Post;
  int64_t recompute_weights_above = int64_t{8} << 20;  // as TransformerBlockOptions'
  // Keep no block's activations between forward and backward: each block but the last keeps only
  // its input, and backward runs it again (qkv::checkpoint, autograd/functional.h). Less memory for
  // more time; the gradients are the same to the bit.
  bool recompute = false;
};

class TransformerEncoder : public Module {
 public:
  explicit TransformerEncoder(const TransformerEncoderOptions& options);
  Tensor forward(const IndexTensor& ids, const IndexTensor& valid_lens = IndexTensor());
  // From token vectors (B, T, D) instead of ids: positions, dropout, the blocks.
  Tensor forward(const Tensor& embedded, const IndexTensor& valid_lens = IndexTensor());
  // Decoding with a key/value cache (nn/kv_cache.h), for a causal encoder (attend = causal, a
  // decoder-only model such as GPT) in eval mode. make_cache gives an empty cache for B sequences of
  // up to `capacity` <= max_len tokens; forward_step runs the next token of each sequence, ids (B, 1)
  // or embedded (B, 1, D), at position cache.length, and advances it → (B, 1, D): the same values,
  // to the bit, as the last row of forward() over every token so far. No graph is recorded.
  KVCache make_cache(int64_t B, int64_t capacity) const;
  Tensor forward_step(const IndexTensor& ids, KVCache& cache);
  Tensor forward_step(const Tensor& embedded, KVCache& cache);
  // Each block's attention weights from the last forward, (B, H, T, T), detached; zero outside a
  // window. Undefined after a forward in training mode whose weights are above
  // options.recompute_weights_above bytes per block.
  std::vector<Tensor> attention_weights() const;
  std::string extra_repr() const override;

  TransformerEncoderOptions options;
  std::shared_ptr<Embedding> embedding;  // null when vocab_size = 0
  std::shared_ptr<PositionScheme> positions;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<ModuleList> blocks;  // TransformerEncoderBlock × num_layers
  std::shared_ptr<LayerNorm> norm;     // pre-norm only: after the last block
};

}  // namespace qkv::nn
