// Multi-head scaled dot-product attention as fused ops (Vaswani et al. 2017, eq. 1 and section
// 3.2.2), forward and backward each one kernel (tensor/kernels/attention.h has the equations): the
// ops behind nn::functional::fused_attention and fused_attention_packed, which document their
// semantics (use those). Beside them, the composed attention they are held to.
#pragma once

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace qkv {

struct FusedAttention {
  Tensor output;
  Tensor weights;
};

// Scaled dot-product attention composed of primitive ops, the computation each fused form is held
// to (d2l 11.3.3):
//   S = q·kᵀ/√d + bias,   P = masked_softmax(where(mask, S, −∞), valid_lens),   O = dropout(P)·v
// q (B, [H,] Q, d), k (B, [H,] K, d), v (B, [H,] K, dv); valid_lens as masked_softmax takes them;
// mask (0/1) and bias broadcast to the scores (B, [H,] Q, K), or undefined. Dropout with
// probability dropout_p from gen. → output O (B, [H,] Q, dv) and weights P (B, [H,] Q, K), both in
// the graph.
FusedAttention composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const IndexTensor& valid_lens,
                                  const Tensor& mask, const Tensor& bias, float dropout_p, Generator& gen);

// The fused op:
//   q (B, H, Q, d), k and v (B, H, K, d), any strides: the heads of a (B, T, H·d) projection seen
//   through view and permute are read in place. valid_lens (B) or (B, Q); mask (0/1) and bias
//   broadcast to (B, H, Q, K); each may be undefined. Dropout with probability dropout_p from gen,
//   drawn as dropout() would draw it on the (B, H, Q, K) weights.
//   → output (B, Q, H·d), the heads side by side; weights (B, H, Q, K) before dropout, detached,
//     or undefined unless need_weights (then kept for backward, which reads them; without them it
//     makes them again). The op keeps its output for backward: changing it in place before
//     backward is an error.
FusedAttention fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const IndexTensor& valid_lens,
                               const Tensor& mask, const Tensor& bias, float dropout_p, Generator& gen,
                               bool need_weights = true);

// fused_attention's composed reference: composed_attention on the heads, then the heads merged,
// (B, H, Q, d) → (B, Q, H, d) → (B, Q, H·d) (d2l's transpose_output).
FusedAttention fused_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias,
                                         float dropout_p, Generator& gen, bool need_weights = true);

// The same for self-attention on one packed projection qkv (B, T, 3·H·d), the queries, keys and
// values its three column blocks (x·[W_q; W_k; W_v]ᵀ): the heads are read in place, and backward
// writes one (B, T, 3·H·d) gradient, so the projection's backward is one product, not three and
// a sum.
FusedAttention fused_attention_packed(const Tensor& qkv, int64_t heads, const IndexTensor& valid_lens,
                                      const Tensor& mask, const Tensor& bias, float dropout_p, Generator& gen,
                                      bool need_weights = true);

// fused_attention_packed's composed reference: the three column blocks cut out (narrow) and split
// into heads (reshape, permute), then fused_attention_reference.
FusedAttention fused_attention_packed_reference(const Tensor& qkv, int64_t heads, const IndexTensor& valid_lens,
                                                const Tensor& mask, const Tensor& bias, float dropout_p,
                                                Generator& gen, bool need_weights = true);

}  // namespace qkv
