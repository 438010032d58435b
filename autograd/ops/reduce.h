// The reductions that are not Tensor methods: masked_max, the op behind nn::functional::masked_max
// (nn/functional/pooling.h documents its semantics; use that).
#pragma once

#include "tensor/tensor.h"

namespace qkv {

// Max over the first valid_lens positions of each sequence: x (N, L, F), valid_lens (N) with
// values in [1, L] → (N, F). The gradient goes to the position picked, the first on ties. One
// kernel, reading no position past a sequence's length.
Tensor masked_max(const Tensor& x, const IndexTensor& valid_lens);

// masked_max's composed reference: positions past the valid length set to −∞ (where), then
// max over the positions, whose gradient goes to the first maximum as well.
Tensor masked_max_reference(const Tensor& x, const IndexTensor& valid_lens);

}  // namespace qkv
