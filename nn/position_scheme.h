// Where a Transformer encoder gets its sense of order: one interface for every position scheme.
//
// Self-attention alone is equivariant to permutations of its inputs (d2l §11.6.3): permute the
// tokens and the outputs are permuted the same way. A position scheme breaks that symmetry, and the
// schemes differ in WHERE they act. Each overrides the one hook that is its place, and the encoder
// calls all three hooks in every forward, never asking which scheme it holds:
//
//   encode_input(X)      absolute schemes add a vector per position to the token embeddings,
//                        X (B, T, D) → (B, T, D): sinusoidal (Vaswani et al. 2017, section 3.5;
//                        d2l §11.6.3), learned (BERT, GPT).
//   transform_qk(q, k)   schemes that rotate each head's queries and keys, (B, H, T, d), after the
//                        projections: rotary (RoPE, Su et al. 2021), so a score depends on the
//                        offset between query and key.
//   offset_bias(o)       schemes that add a bias to the scores that depends on the offset
//                        j − i between key j and query i: for offsets o (n) → (H or 1, n).
//                        Relative bias (T5's buckets, Raffel et al. 2020; Shaw et al. 2018's
//                        clipping), ALiBi (Press et al. 2022, nn/alibi.h).
// The defaults do nothing, so a scheme that is none of these (NoPositions) is the empty class.
//
// A bias of the offset alone serves both ways attention is computed: the dense (T, T) scores read
// it at o = j − i for every pair, and the banded scores of windowed attention at o = −w .. w only
// (nn/functional/banded_attention.h), with no T² table.
//
// The encoder owns one scheme, registered as its child `positions`; every block's attention uses
// the same one (as T5 shares its relative bias table across layers). A new scheme is a subclass
// with a factory: nn/alibi.h is the worked example, docs/new_layer.md walks through it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/learned_positional_encoding.h"
#include "nn/module.h"
#include "nn/positional_encoding.h"
#include "nn/registry.h"
#include "nn/relative_position.h"
#include "nn/rotary.h"
#include "tensor/index_tensor.h"

namespace qkv::nn {

class PositionScheme : public Module {
 public:
  virtual Tensor encode_input(const Tensor& X) { return X; }
  virtual std::pair<Tensor, Tensor> transform_qk(const Tensor& q, const Tensor& k) { return {q, k}; }
  // True for a scheme whose transform_qk changes the heads: self-attention then projects queries
  // and keys as tensors of their own instead of packing the three projections into one (which it
  // still checks: heads that transform_qk replaced are never passed over).
  virtual bool transforms_qk() const { return false; }
  // A scheme whose transform_qk can act on self-attention's packed (B, T, 3·H·d) projection
  // (fused_attention_packed's input: Q, K and V its column blocks) says so here, and turns that
  // projection's Q and K in transform_packed, which the layer then attends on the packed route.
  // The default cannot: such a layer projects the heads apart.
  virtual bool transforms_packed() const { return false; }
  virtual Tensor transform_packed(const Tensor& qkv, int64_t heads);
  virtual Tensor offset_bias(const IndexTensor& offsets) {
    (void)offsets;
    return Tensor();
  }
  // Decoding with a key/value cache (TransformerEncoder::forward_step, nn/kv_cache.h) meets the
  // tokens one at a time: these are encode_input and transform_qk for tokens at positions offset,
  // offset + 1, ... instead of 0, 1, ... (offset_bias needs no such twin: it is a function of
  // offsets). The defaults run the whole-sequence hook on offset rows of zeros followed by the
  // tokens and keep the tokens' rows: exact, to the bit, for a scheme that treats each position
  // alone, as every scheme here does, at the cost of work on all offset + T rows. The schemes below
  // override them to do only the tokens' rows; ALiBi (nn/alibi.h), the worked example of a new
  // scheme, relies on the defaults, which for a bias scheme cost a copy of the rows.
  virtual Tensor encode_input_at(const Tensor& X, int64_t offset);
  virtual std::pair<Tensor, Tensor> transform_qk_at(const Tensor& q, const Tensor& k, int64_t offset);
};

// What a factory knows when the encoder builds its scheme.
struct PositionSizes {
  int64_t num_hiddens = 0, num_heads = 0, max_len = 0;
};
using PositionFactory = std::function<std::shared_ptr<PositionScheme>(const PositionSizes&)>;

// No positional information: the encoder sees a bag of tokens.
class NoPositions : public PositionScheme {
 public:
  Tensor encode_input_at(const Tensor& X, int64_t) override { return X; }
  std::pair<Tensor, Tensor> transform_qk_at(const Tensor& q, const Tensor& k, int64_t) override { return {q, k}; }
};

// The fixed sin/cos table (nn/positional_encoding.h) added to the embeddings.
class SinusoidalPositions : public PositionScheme {
 public:
  explicit SinusoidalPositions(const PositionSizes& sizes);
  Tensor encode_input(const Tensor& X) override;
  Tensor encode_input_at(const Tensor& X, int64_t offset) override;
  std::pair<Tensor, Tensor> transform_qk_at(const Tensor& q, const Tensor& k, int64_t) override { return {q, k}; }

  std::shared_ptr<PositionalEncoding> encoding;  // its table P (max_len, D) is a non-persistent buffer
};

// A trained vector per position (nn/learned_positional_encoding.h): encoding.weight (max_len, D).
class LearnedPositions : public PositionScheme {
 public:
  explicit LearnedPositions(const PositionSizes& sizes);
  Tensor encode_input(const Tensor& X) override;
  Tensor encode_input_at(const Tensor& X, int64_t offset) override;
  std::pair<Tensor, Tensor> transform_qk_at(const Tensor& q, const Tensor& k, int64_t) override { return {q, k}; }

  std::shared_ptr<LearnedPositionalEncoding> encoding;
};

// Rotary embedding of each head's queries and keys (nn/rotary.h), head_dim = num_hiddens / num_heads.
class RotaryPositions : public PositionScheme {
 public:
  explicit RotaryPositions(const PositionSizes& sizes);
  std::pair<Tensor, Tensor> transform_qk(const Tensor& q, const Tensor& k) override;
  std::pair<Tensor, Tensor> transform_qk_at(const Tensor& q, const Tensor& k, int64_t offset) override;
  Tensor encode_input_at(const Tensor& X, int64_t) override { return X; }
  bool transforms_qk() const override { return true; }
  bool transforms_packed() const override { return true; }
  Tensor transform_packed(const Tensor& qkv, int64_t heads) override;

  std::shared_ptr<RotaryEmbedding> rotary;
};

// A learned bias per head and bucket of j − i (nn/relative_position.h): T5's log buckets or Shaw
// et al.'s clipping, as the given table `bias` buckets them.
class RelativeBiasPositions : public PositionScheme {
 public:
  explicit RelativeBiasPositions(std::shared_ptr<RelativePositionBias> bias);
  Tensor offset_bias(const IndexTensor& offsets) override;
  Tensor encode_input_at(const Tensor& X, int64_t) override { return X; }
  std::pair<Tensor, Tensor> transform_qk_at(const Tensor& q, const Tensor& k, int64_t) override { return {q, k}; }

  std::shared_ptr<RelativePositionBias> bias;
};

// The factories of the built-in schemes, by the names command lines and checkpoints use:
//   none, sinusoidal, learned, rotary,
//   relative   T5 buckets, bidirectional, 32 buckets up to distance 128 (T5's defaults)
//   clipped    Shaw et al.'s clipping at distance 16 (33 buckets)
//   alibi      ALiBi's fixed linear penalties (nn/alibi.h)
//   learned-fourier, random-fourier
//              Fourier features of the position with learned (Li et al. 2021) or random (Tancik
//              et al. 2020) frequencies, through an MLP (nn/fourier_features.h)
// position_scheme(name) throws ValueError naming the known ones for any other name. A scheme of a
// user's own registers from the user's file (nn/registry.h):
//   static const bool registered = nn::register_position_scheme("mine", factory);
Registry<PositionFactory>& position_schemes();
bool register_position_scheme(const std::string& name, PositionFactory factory);
PositionFactory position_scheme(const std::string& name);
std::vector<std::string> position_scheme_names();

}  // namespace qkv::nn
