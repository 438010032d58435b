// Inverted dropout (Srivastava et al. 2014), as one op: the op behind nn::functional::dropout,
// which adds the training flag (use that).
#pragma once

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace qkv {

// Each element is zeroed with probability p, drawn from `gen`, and the others scaled by 1/(1-p),
// so E[y] = x. x: any shape → same shape; p == 0 returns x. The mask is drawn in the same pass as
// it is applied and never stored: backward draws it again from the generator's state at the call
// (the generator is counter-based, tensor/random.h).
Tensor dropout(const Tensor& x, float p, Generator& gen);

// dropout's composed reference: the same multipliers (0, or 1/(1-p)), drawn from gen into a tensor
// of x's shape, and x times them: a product whose backward keeps the mask and multiplies again.
Tensor dropout_reference(const Tensor& x, float p, Generator& gen);

}  // namespace qkv
