// Formatting a tensor's values the way PyTorch prints them: aligned columns, 4 decimals (or "2."
// when every value is whole, or scientific notation for wide ranges), and summarized with "..."
// past 1000 elements. operator<< (tensor/tensor.h) wraps this in "tensor(..., shape=...)".
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace qkv {

std::string format_values(const Tensor& t);

}  // namespace qkv
