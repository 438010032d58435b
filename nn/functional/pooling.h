// Pooling over the positions of variable-length sequences.
#pragma once

#include "tensor/tensor.h"

namespace qkv::nn::functional {

// Max-over-time pooling (Collobert et al. 2011; Kim et al. 2016, "Character-Aware Neural Language
// Models") of sequences of different lengths, padded to a common L:
//   x: (N, L, F), valid_lens: (N) with values in [1, L]  →  (N, F)
//   out[n, f] = max_{l < valid_lens[n]} x[n, l, f]
// Positions at and past valid_lens[n] are never read, so the result does not depend on what the
// padding holds or on L. The gradient goes to the position whose value was taken; where several
// tie, to the first, as x.max(dim) does and as PyTorch's x.masked_fill(pad, -inf).max(dim=1) does.
// A length outside [1, L] throws ValueError: the max over no position is undefined.
// One fused op (qkv::masked_max) forward and backward.
Tensor masked_max(const Tensor& x, const IndexTensor& valid_lens);

}  // namespace qkv::nn::functional
