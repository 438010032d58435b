// The Transformer encoder (Vaswani et al. 2017, section 3.1; d2l 11.7).
//
// TransformerEncoderBlock: self-attention and a position-wise FFN, each wrapped in a residual
// connection and a layer normalization.
//   post-norm (d2l, the paper):  Y = AddNorm(X, MHA(X, X, X)),       out = AddNorm(Y, FFN(Y))
//                                with AddNorm(X, Y) = LayerNorm(dropout(Y) + X)
//   pre-norm (Xiong et al. 2020; PyTorch's norm_first=True):
//                                Y = X + dropout(MHA(LN1(X))),       out = Y + dropout(FFN(LN2(Y)))
//   X: (B, T, D) → (B, T, D), D = num_hiddens; FFN: Linear(D, ffn_num_hiddens), relu, Linear(·, D).
// Post-norm keeps every block's output normalized; pre-norm keeps an identity path from input to
// output, which trains deep stacks without a learning-rate warm-up, and needs a final LayerNorm
// after the last block (TransformerEncoder adds it).
// Children, by name: attention (MultiHeadAttention, D → D with num_heads heads; bias only with
// use_bias), ffn (PositionWiseFFN, with biases), and addnorm1, addnorm2 (post-norm) or norm1, norm2,
// dropout (pre-norm). d2l's names, so the parameters read attention.W_q.weight, addnorm1.ln.weight...
// Differences from PyTorch's nn.TransformerEncoderLayer, which this block otherwise matches (relu,
// norm_first for pre-norm): PyTorch also drops out after the FFN's relu, and its attention has
// biased, packed projections (see MultiHeadAttention in nn/attention.h).
//
// TransformerEncoder: token ids to contextual vectors (d2l 11.7.4),
//   X = PositionalEncoding(Embedding(ids) · √D)    (dropout inside the positional encoding)
//   X = block_L(... block_1(X))                    (then a LayerNorm, with pre_norm)
//   ids: (B, T) in [0, vocab_size), T <= max_len; valid_lens: (B), the real length of each sequence
//   (undefined: all T) → (B, T, D)
// The embedding is scaled by √D so that it is not drowned by the positional encoding, whose values
// lie in [-1, 1] (d2l 11.7.4). The keys past each valid length are hidden from every query; the
// queries there still produce outputs, which a caller ignores (a masked loss).
// With window >= 0, a query also sees only keys within ±window of its position (truncated
// self-attention, nn/functional/attention.h's window_mask), composed with the valid lengths.
// With PositionKind::None there is no positional information at all: the encoder is then
// equivariant to permutations of the positions (an ablation; see the tests).
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
#include "nn/layer_norm.h"
#include "nn/module.h"
#include "nn/positional_encoding.h"

namespace qkv::nn {

class TransformerEncoderBlock : public Module {
 public:
  TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads, float dropout,
                          bool use_bias = false, bool pre_norm = false);
  // X (B, T, D); valid_lens, mask and bias as for MultiHeadAttention (nn/attention.h).
  Tensor forward(const Tensor& X, const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                 const Tensor& bias = Tensor());
  std::string extra_repr() const override;

  bool pre_norm;
  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<PositionWiseFFN> ffn;
  std::shared_ptr<AddNorm> addnorm1, addnorm2;  // post-norm only
  std::shared_ptr<LayerNorm> norm1, norm2;      // pre-norm only
  std::shared_ptr<Dropout> dropout;             // pre-norm only
};

// Where the encoder's positional information comes from.
enum class PositionKind {
  None,        // none: the encoder sees a bag of tokens
  Sinusoidal,  // the fixed sin/cos table added to the embeddings (nn/positional_encoding.h)
};

// The encoder's configuration; the five sizes have no default. With designated initializers:
//   nn::TransformerEncoder encoder({.vocab_size = 1000, .num_hiddens = 64, .ffn_num_hiddens = 128,
//                                   .num_heads = 4, .num_layers = 2});
struct TransformerEncoderOptions {
  int64_t vocab_size = 0, num_hiddens = 0, ffn_num_hiddens = 0, num_heads = 0, num_layers = 0;
  float dropout = 0.1f;   // after the positional encoding, on attention weights, in every residual
  bool use_bias = false;  // biases in the attention projections (d2l's use_bias)
  PositionKind positions = PositionKind::Sinusoidal;
  int64_t max_len = 1000;  // the longest sequence the positional encoding covers
  int64_t window = -1;     // attend only within ±window positions; -1: everywhere
  bool pre_norm = false;
};

class TransformerEncoder : public Module {
 public:
  explicit TransformerEncoder(const TransformerEncoderOptions& options);
  Tensor forward(const IndexTensor& ids, const IndexTensor& valid_lens = IndexTensor());
  // Each block's attention weights from the last forward, (B, H, T, T), detached.
  std::vector<Tensor> attention_weights() const;
  std::string extra_repr() const override;

  TransformerEncoderOptions options;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<PositionalEncoding> pos_encoding;  // null with PositionKind::None
  std::shared_ptr<Dropout> dropout;                  // only without pos_encoding, which holds d2l's dropout
  std::shared_ptr<ModuleList> blocks;                // TransformerEncoderBlock × num_layers
  std::shared_ptr<LayerNorm> norm;                   // pre_norm only: after the last block
};

}  // namespace qkv::nn
