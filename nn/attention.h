// Attention layers (d2l 11.3 and 11.5; zh 10.3 and 10.5): a query scores every key, the scores
// become weights by a masked softmax, and the output is the weighted sum of the values.
//
// Every layer's forward takes
//   queries (B, Q, ·), keys (B, K, ·), values (B, K, ·)   Q and K may differ (cross attention)
//   valid_lens, mask, bias: which keys each query may see, and what is added to its scores — all
//   optional and composable; nn/functional/attention.h defines them, their shapes and the
//   fully-masked-row rule (all-zero weights).
// and keeps the weights of its last forward in `attention_weights`, detached from the graph (for
// plotting; keeping them does not keep the graph alive); MultiHeadAttention keeps none of a
// training forward whose weights are above its recompute_weights_above bytes. They are taken
// before dropout, as in d2l: each row sums to 1 over its visible keys and is 0 at the others.
//
// Dropout acts on the attention weights, as in d2l: a query randomly ignores some keys in
// training; in eval() it is the identity.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "nn/attention_interface.h"
#include "nn/functional/attention.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/position_scheme.h"

namespace qkv::nn {

// Scaled dot-product attention (Vaswani et al. 2017, eq. 1; d2l 11.3.3):
//   weights = masked_softmax(Q·Kᵀ/√d + bias),   output = dropout(weights)·V
//   queries (B, Q, d), keys (B, K, d), values (B, K, dv)  →  output (B, Q, dv)
//   attention_weights: (B, Q, K)
// It has no parameters. Inputs may also carry a heads dim after B, (B, H, ·, ·), as
// MultiHeadAttention passes them; d2l's version takes the heads folded into the batch, (B·H, ·, ·).
class DotProductAttention : public Module {
 public:
  explicit DotProductAttention(float dropout);
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                 const Tensor& bias = Tensor());
  std::string extra_repr() const override;

  float dropout;
  Tensor attention_weights;
};

// Additive attention (Bahdanau et al. 2015; d2l 11.3.2), for queries and keys of different widths:
//   score(q, k) = w_vᵀ · tanh(W_q q + W_k k)
//   queries (B, Q, query_size), keys (B, K, key_size), values (B, K, dv)  →  output (B, Q, dv)
//   attention_weights: (B, Q, K)
// Parameters, as d2l's (no biases): W_k: Linear(key_size, num_hiddens), W_q: Linear(query_size,
// num_hiddens), w_v: Linear(num_hiddens, 1). The tanh features take B·Q·K·num_hiddens floats.
//
// A decoder that attends over the same keys at every step (d2l's Seq2SeqAttentionDecoder) can
// project them once: forward(q, k, v, ...) is forward_projected(q, project_keys(k), v, ...), the
// same values and the same gradients, without a W_k product per step.
class AdditiveAttention : public Module {
 public:
  AdditiveAttention(int64_t key_size, int64_t query_size, int64_t num_hiddens, float dropout);
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                 const Tensor& bias = Tensor());
  // W_k·keys: (B, K, key_size) → (B, K, num_hiddens).
  Tensor project_keys(const Tensor& keys) const;
  // forward with keys already projected by project_keys.
  Tensor forward_projected(const Tensor& queries, const Tensor& projected_keys, const Tensor& values,
                           const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                           const Tensor& bias = Tensor());
  std::string extra_repr() const override;

  float dropout;
  std::shared_ptr<Linear> W_k, W_q, w_v;
  Tensor attention_weights;
};

// Multi-head attention (Vaswani et al. 2017, section 3.2.2; d2l 11.5), with d2l's head layout.
// It is the Transformer block's default attention mechanism ("dense", nn/attention_interface.h):
//   q = W_q(queries), k = W_k(keys), v = W_v(values)      (B, ·, D), D = num_hiddens
//   head h reads features [h·d, (h+1)·d) of each,          d = D / num_heads
//   output = W_o(concat over heads of scaled dot-product attention(q_h, k_h, v_h))
//   queries (B, Q, query_size), keys (B, K, key_size), values (B, K, value_size) → output (B, Q, D)
//   attention_weights: (B, H, Q, K), per head
// The heads are views of the projections, (B, H, ·, d) through a permute, not copies; d2l folds
// them into the batch, (B·H, ·, d), and repeats valid_lens per head, which is the same computation.
// valid_lens and 3-d masks apply to every head; 4-d masks and biases may differ per head.
// Parameters, as d2l's: W_q: Linear(query_size, D), W_k: Linear(key_size, D), W_v: Linear(value_size,
// D), W_o: Linear(D, D), all with a bias only if `bias`.
//
// Differences from PyTorch's nn.MultiheadAttention: that one packs W_q, W_k, W_v into one
// in_proj_weight (3D, D), initializes it xavier-uniform, has biases by default, and returns weights
// averaged over the heads; qkv follows d2l (separate Linears, PyTorch's Linear initialization).
// So its state_dict differs from PyTorch's: nn::from_torch_state_dict and to_torch_state_dict
// (nn/pytorch.h) split and pack in_proj_weight and rename out_proj to W_o.
//
// Two parts make it open to the variants of the attention chapters, without a subclass:
//  - positions (nn/position_scheme.h), if set, acts inside attention: its transform_qk on the
//    per-head queries and keys, (B, H, Q, d) and (B, H, K, d), after the projections (rotary
//    embeddings), and its offset_bias added to every head's scores (relative biases, ALiBi). The
//    Transformer encoder sets it to the scheme it owns; it is not a child of this module.
//  - restriction says which keys a query may see besides the padding: all, a window ±w, the keys
//    up to itself (causal), or an arbitrary mask (AttentionRestriction, nn/attention_interface.h).
// forward's own mask and bias compose with these in dense attention (a window takes neither).
//
// The projections, their checks and the split into heads are ProjectedAttention's, the base of the
// other mechanisms too. Dense attention then runs the fused attention op on the heads
// (functional::fused_attention: one kernel forward and one backward, reading the heads in place;
// for self-attention whose q and k no scheme rotates, functional::fused_attention_packed on the one
// (B, T, 3D) product of the three projections, which gets one gradient instead of three summed),
// one route per mode, as nanoGPT's attention has its `flash` switch: in the reference mode
// (tensor/reference_mode.h) the op runs its composed reference instead, composed_attention, the
// computation above op by op, d2l's code in C++, which gives the same values to float32 rounding
// and draws the same dropout mask. `fused` false composes in either mode.
// A window is the restriction's own case: self-attention computed on the band only, in O(T·w)
// (nn/functional/banded_attention.h); then attention_weights holds the band, (B, H, T, 2w'+1)
// with w' = min(w, T − 1), which functional::band_to_dense spreads out.

class MultiHeadAttention : public ProjectedAttention {
 public:
  MultiHeadAttention(int64_t key_size, int64_t query_size, int64_t value_size, int64_t num_hiddens,
                     int64_t num_heads, float dropout, bool bias = false);
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                 const Tensor& bias = Tensor()) override;
  // One step of decoding with a key/value cache (nn/kv_cache.h), for a causal layer in eval mode:
  //   x (B, 1, query_size): the token at `position`, attending to itself and the positions before it
  //   keys, values (B, H, capacity, d): rows [0, position) hold the earlier tokens' keys and values
  //   (the keys transformed by the position scheme, at the position each token had); this step
  //   writes row `position` and attends over rows [0, position]  →  (B, 1, D)
  // The same computation as row `position` of forward() on the whole prefix, to the bit: the same
  // projections, the same kernels (the causal mask there hides exactly the keys the cache does not
  // hold yet). No graph is recorded. attention_weights holds this step's (B, H, 1, position + 1).
  Tensor forward_step(const Tensor& x, Tensor& keys, Tensor& values, int64_t position) override;
  // Cross-attention with the memory's keys and values projected once, into heads (B, H, S, d): a
  // decoder's step then projects its queries only. No position scheme acts on them (prepare_memory
  // refuses a layer that has one: its positions are the queries' sequence's, not the memory's).
  Memory prepare_memory(const Tensor& memory) const override;
  Tensor forward_memory(const Tensor& queries, const Memory& memory, const IndexTensor& valid_lens) override;
  AttentionSupport supports() const override { return AttentionSupport::all(); }
  // attention_weights, with a window's band spread out to (B, H, T, T).
  Tensor dense_weights() const override;
  std::string extra_repr() const override;

  // num_heads, dropout (on the attention weights, in training), W_q, W_k, W_v, W_o and positions
  // (not a child: owned by whoever shares it) are ProjectedAttention's.
  AttentionRestriction restriction;
  bool fused = true;  // dense attention on the fused op (the default) or composed (see above)
  // attention_weights (Attention's): (B, H, Q, K), or the band (B, H, T, 2w+1) with a window.
  // A forward in training mode whose (B, H, Q, K) weights take more than this many bytes keeps
  // no attention_weights (undefined after it), and the fused op does not write them out
  // (functional::fused_attention's need_weights): its backward then makes each tile's weights again
  // (tensor/kernels/attention.h), where with them it reads them, keeping a (B, H, Q, K) tensor from
  // forward to backward for a product per tile less. Evaluation always keeps them.
  // 0 (or less) keeps none in training, as PyTorch's TransformerEncoderLayer, which asks its
  // attention for no weights; the default keeps them always. The Transformer encoder sets it from
  // its recompute_weights_above option.
  int64_t recompute_weights_above = std::numeric_limits<int64_t>::max();

 private:
  // Whether this forward keeps its (B, H, Q, K) weights (recompute_weights_above).
  bool keeps_weights(int64_t B, int64_t Q, int64_t K) const;
  // Dense attention over the heads → the merged heads (B, Q, D) and the weights (B, H, Q, K),
  // undefined unless need_weights (on the fused op).
  functional::AttentionOutput attend(const Heads& heads, const IndexTensor& valid_lens, const Tensor& mask,
                                     const Tensor& bias, bool need_weights);
  // Dense attention on the inputs: their projections, then attend (or, for self-attention, the
  // fused op on the packed projection; see attention.cpp).
  functional::AttentionOutput attend_inputs(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                            const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias,
                                            bool need_weights);
  // A window's own path: self-attention on the band.
  functional::AttentionOutput attend_window(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                            const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias);
  // The position scheme's bias of Q queries at positions first_query .. first_query + Q − 1 against
  // K keys at 0 .. K − 1, (1, H or 1, Q, K); undefined without one.
  Tensor position_bias(int64_t Q, int64_t K, int64_t first_query = 0) const;
  // The mask and bias of Q queries against K keys: the caller's, and this layer's restriction and
  // position bias.
  // The mask (the caller's and the restriction's; a causal one left out unless causal_mask) and the
  // bias (the caller's and the position scheme's) of Q queries against K keys.
  std::pair<Tensor, Tensor> mask_and_bias(int64_t Q, int64_t K, const Tensor& mask, const Tensor& bias,
                                          bool causal_mask = true) const;
};

}  // namespace qkv::nn
