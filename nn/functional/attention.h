// The stateless parts of attention: the masked softmax, masks for its variants, scaled dot-product
// attention composed and fused, splitting and merging heads. The layers of nn/attention.h are
// built from these.
//
// Shapes (letters from docs/internals.md): B batch, H heads, Q queries, K keys (and values),
// d the width of a query/key, dv the width of a value.
//
// Three ways to hide keys from a query, which compose (a key is visible only if all allow it):
//   valid_lens  IndexTensor (B) or (B, Q): only the first valid_lens keys (d2l's key padding).
//               This is the fast path: the fused masked_softmax op reads the lengths directly.
//   mask        0/1 Tensor, nonzero where the query may attend to the key (the convention of
//               PyTorch's boolean attn_mask in scaled_dot_product_attention and of d2l's
//               sequence_mask; nn.MultiheadAttention's boolean masks use the opposite one).
//   bias        float Tensor added to the scores before the softmax: PyTorch's float attn_mask
//               (-inf hides a key), or a learned relative-position bias (T5, Shaw et al.).
// mask and bias are (Q, K) or (B, Q, K), shared by every head, or (B or 1, H or 1, Q, K) per head;
// they broadcast to the scores and must not enlarge them. (Per-head tensors must be 4-d: an
// (H, Q, K) tensor reads as (B, Q, K).)
//
// A fully masked row — a query that may see no key, from valid_lens 0, from masks that together
// hide everything, or from a -inf bias — gets all-zero weights, so its output is the zero vector.
// This follows PyTorch's scaled_dot_product_attention (since 2.5, its _safe_softmax); d2l's -1e6
// fill would spread the row uniformly over the hidden keys, and a plain softmax of -inf gives NaN.
// Rows with at least one visible key are d2l's (to float rounding), with hidden keys at exactly 0.
// A NaN or +inf score among the visible keys (a NaN weight, an overflow) makes its row's weights
// NaN, so that NaN in gives NaN out rather than a zero vector that looks like a masked row.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace qkv::nn::functional {

// d2l's masked_softmax (d2l 11.3.2.1; zh 10.3.1): softmax over the last dim of X in which the keys
// past each valid length get weight 0.
//   X: (B, Q, K) scores, or (B, H, Q, K) with the lengths shared by the H heads
//   valid_lens: (B) — one length per example — or (B, Q) — one per query; values in [0, K].
//               Undefined: a plain softmax.
//   → (same shape as X), each row summing to 1 over its visible keys (or all zero, see above)
// One fused op (qkv::masked_softmax) forward and backward. A length outside [0, K] throws
// IndexError; d2l would silently treat it as K or 0.
Tensor masked_softmax(const Tensor& X, const IndexTensor& valid_lens);

// The general form: softmax over the last dim of X + bias, keeping only the keys that are within
// valid_lens and where mask is nonzero. Any of valid_lens, mask and bias may be undefined.
Tensor masked_softmax(const Tensor& X, const IndexTensor& valid_lens, const Tensor& mask,
                      const Tensor& bias = Tensor());

// ---- masks: 0/1 tensors, 1 where a query may attend to a key ----------------------------------

// (Q, K): query i sees keys j <= i, as torch.tril(ones(Q, K)) and PyTorch's is_causal=True
// (aligned at the top left when Q != K). For a decoder's self-attention.
Tensor causal_mask(int64_t Q, int64_t K);

// (Q, K): query i sees keys j with |i - j| <= window. Truncated (local) self-attention: a
// position looks only at its neighbourhood, as in speech recognition, where a sequence is long and
// the context that matters is near (Povey et al. 2018, "A time-restricted self-attention layer for
// ASR"). window >= 0.
Tensor window_mask(int64_t Q, int64_t K, int64_t window);

// (N, N): node i sees node j when an edge joins them. Attention restricted to a graph's edges is a
// graph attention network (Veličković et al. 2018, "Graph Attention Networks", who also add
// self-loops). Edges are undirected pairs of nodes in [0, num_nodes).
Tensor adjacency_mask(int64_t num_nodes, const std::vector<std::pair<int64_t, int64_t>>& edges,
                      bool self_loops = false);

// The valid_lens masking as a mask: (B, 1, K) for lengths (B), (B, Q, K) for lengths (B, Q);
// 1 at keys k < valid_len. For composing with other masks; valid_lens itself is faster. A length
// outside [0, K] is an IndexError, as masked_softmax's.
Tensor key_padding_mask(const IndexTensor& valid_lens, int64_t K);

// Attention allowed where both masks allow it (their product, broadcast). An undefined mask allows
// everything, so mask_and(Tensor(), m) is m.
Tensor mask_and(const Tensor& a, const Tensor& b);

// ---- scaled dot-product attention --------------------------------------------------------------

struct AttentionOutput {
  Tensor output;   // (B, [H,] Q, dv)
  Tensor weights;  // (B, [H,] Q, K), before dropout; part of the graph
};

// Vaswani et al. 2017, eq. 1; d2l 11.3.3:
//   weights = masked_softmax(Q·Kᵀ/√d + bias, valid_lens, mask),   output = dropout(weights)·V
//   queries (B, Q, d), keys (B, K, d), values (B, K, dv); or all with a heads dim after B,
//   (B, H, ·, ·), where valid_lens and 3-d masks are shared by the heads.
// Dropout drops attention weights with probability dropout_p (d2l's placement); pass 0 in
// evaluation, as for torch.nn.functional.scaled_dot_product_attention. Composed of primitive ops
// (qkv::composed_attention, autograd/ops/attention.h): the plain computation, and the reference
// every fused form below is held to.
AttentionOutput scaled_dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                             const IndexTensor& valid_lens = IndexTensor(),
                                             const Tensor& mask = Tensor(), const Tensor& bias = Tensor(),
                                             float dropout_p = 0.0f);

// Multi-head scaled dot-product attention as one fused op, forward and backward: the computation
// of scaled_dot_product_attention on 4-d heads, followed by merging the heads, in tiles with an
// online softmax, without the per-head copies, the (B, H, Q, K) scores or the separate softmax and
// dropout passes (tensor/kernels/attention.h derives it; Dao et al. 2022, "FlashAttention"). It
// gives the same values and gradients to float32 rounding, and draws the same dropout mask from
// the same generator.
//   queries (B, H, Q, d), keys (B, H, K, d), values (B, H, K, d): any strides, so the heads of a
//   (B, T, H·d) projection, x.view({B, T, H, d}).permute({0, 2, 1, 3}), are read in place
//   valid_lens, mask, bias: as for scaled_dot_product_attention (3-d masks and biases are shared by
//   the heads); the bias may require grad. Lengths per query ((B, Q)) bound the work: a tile of
//   queries stops at the last key any of them sees, so a causal restriction told as lengths
//   (i + 1 for query i) skips every tile above the diagonal, where a causal mask is read whole.
//   → output (B, Q, H·d), the heads side by side (d2l's transpose_output done); weights
//     (B, H, Q, K) before dropout, detached: the op's backward does not go through them
// gen: the generator of the dropout mask, default_generator() when null.
// In the reference mode (tensor/reference_mode.h) it runs its composed reference instead:
// composed_attention on the heads, then the heads merged (qkv::fused_attention_reference).
// need_weights: false returns no weights (as PyTorch's multi_head_attention_forward with
// need_weights=False), and the (B, H, Q, K) tensor is never made. Backward keeps the output and a
// log-sum-exp per query and makes each tile's weights again from the queries and keys, as
// FlashAttention does; with need_weights it keeps the weights returned and reads them instead (a
// product per tile less, a (B, H, Q, K) tensor more). The output and gradients are the same to the
// bit either way. The op keeps its output for backward: changing it in place before backward is an
// error. The graph keeps the mask and bias too (views of the caller's, so
// nothing new unless a bias was made for this call), and changing them in place before backward is
// an error, as for any tensor a backward reads.
AttentionOutput fused_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                                const Tensor& bias = Tensor(), float dropout_p = 0.0f,
                                Generator* gen = nullptr, bool need_weights = true);

// fused_attention for self-attention whose queries, keys and values are the three column blocks of
// one projection qkv (B, T, 3·H·d), as x·[W_q; W_k; W_v]ᵀ gives them: the same values, weights and
// dropout mask as fused_attention on those blocks split into `heads` heads, and one (B, T, 3·H·d)
// gradient for qkv, so that the projection runs as one product forward and backward.
AttentionOutput fused_attention_packed(const Tensor& qkv, int64_t heads,
                                       const IndexTensor& valid_lens = IndexTensor(),
                                       const Tensor& mask = Tensor(), const Tensor& bias = Tensor(),
                                       float dropout_p = 0.0f, Generator* gen = nullptr,
                                       bool need_weights = true);

// ---- heads --------------------------------------------------------------------------------------

// The input projections of attention, (B, ·, in) → (B, ·, D) each: queries·W_qᵀ + b_q,
// keys·W_kᵀ + b_k, values·W_vᵀ + b_v. For self-attention (the three inputs one tensor, the biases
// all there or all absent) the fast path runs them as one product with the weights stacked,
// x·[W_q; W_k; W_v]ᵀ, whose column blocks are the three: one pass over x, and x's gradient from one
// product instead of a sum of three. Its composed reference, three linear calls, runs in the
// reference mode (tensor/reference_mode.h) and whenever the inputs differ.
struct Projections {
  Tensor q, k, v;
};
Projections in_projections(const Tensor& queries, const Tensor& keys, const Tensor& values, const Tensor& weight_q,
                           const Tensor& bias_q, const Tensor& weight_k, const Tensor& bias_k, const Tensor& weight_v,
                           const Tensor& bias_v);
// The fast path's one product, x·[W_q; W_k; W_v]ᵀ (+ the stacked biases), (B, T, 3D) with q, k
// and v its column blocks; undefined where in_projections takes three (the reference mode, inputs
// that differ, biases on some projections only).
Tensor packed_in_projection(const Tensor& queries, const Tensor& keys, const Tensor& values, const Tensor& weight_q,
                            const Tensor& bias_q, const Tensor& weight_k, const Tensor& bias_k, const Tensor& weight_v,
                            const Tensor& bias_v);

// The heads of a projection, (B, T, D) → (B, H, T, D/H): a view (d2l's transpose_qkv without its
// final reshape, which would fold the heads into the batch).
Tensor split_heads(const Tensor& x, int64_t heads);
// Back: (B, H, T, d) → (B, T, H, d) → (B, T, H·d), the heads side by side (d2l's transpose_output).
Tensor merge_heads(const Tensor& heads);

}  // namespace qkv::nn::functional
