// The masked softmax of attention (d2l 11.3.2.1): the op behind nn::functional::masked_softmax
// (nn/functional/attention.h documents its semantics; use that). The plain softmax and log-softmax
// are Tensor methods.
#pragma once

#include "tensor/tensor.h"

namespace qkv {

// Softmax over the last dim of the first valid_lens keys: x is (B, Q, K), or (B, H, Q, K) with the
// lengths shared by the H heads; valid_lens is (B) or (B, Q) with values in [0, K], or undefined
// for every key. -inf logits are hidden too, and a row with nothing visible is all zeros; a row
// with a visible NaN or +inf logit is NaN throughout, as the plain softmax gives it. One
// kernel forward, one backward: the lengths bound the kernel's loops, and nothing else is
// materialized.
Tensor masked_softmax(const Tensor& x, const IndexTensor& valid_lens);

// The general form, composed of the above: softmax over the last dim of x + bias, keeping only the
// keys within valid_lens and where mask is nonzero; the bias added, the hidden keys set to −∞
// (where), then masked_softmax. mask and bias broadcast to x, or are undefined.
Tensor masked_softmax(const Tensor& x, const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias);

// masked_softmax's composed reference, d2l's masked_softmax with PyTorch's rule for a row that sees
// no key: the visible keys as a 0/1 mask (k < valid length, and a logit that is not −∞), the hidden
// logits replaced by the lowest float (where), the softmax, and the weights times the mask, which
// zeroes a row with nothing visible.
Tensor masked_softmax_reference(const Tensor& x, const IndexTensor& valid_lens);

}  // namespace qkv
