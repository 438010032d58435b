// The valid length of every row of attention scores, shared by the ops that take valid_lens
// (masked_softmax, fused_attention).
#pragma once

#include "tensor/tensor.h"

namespace qkv {

// scores (B, Q, K) or (B, H, Q, K), read as rows of K; valid_lens (B) or (B, Q) with values in
// [0, K] → one length per row, (rows). Throws ShapeError or IndexError naming `op` otherwise.
IndexTensor score_row_lengths(const char* op, const Shape& scores, const IndexTensor& valid_lens);

}  // namespace qkv
