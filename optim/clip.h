// Gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_. Call between
// backward() and optimizer.step(); parameters without a gradient are skipped.
#pragma once

#include <cmath>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::optim {

// Rescales all gradients together so that their joint norm is at most max_norm. The joint norm is
// the norm of all gradients concatenated (norm_type p ≥ 1, or INFINITY for the largest |g|),
// computed in double; every gradient is multiplied by max_norm / (norm + 1e-6) when that factor is
// below 1, exactly PyTorch's rule (so a norm equal to max_norm is scaled by a hair). Returns the
// norm before clipping, for logging. As in PyTorch, a NaN norm makes every gradient NaN and an
// infinite one zeroes the finite gradients: check the returned norm to skip such a step.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace qkv::optim
