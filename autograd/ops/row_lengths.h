// Valid lengths: their range check, shared by every op and layer that takes valid_lens, and the
// length of every row of attention scores (masked_softmax, fused_attention).
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace qkv {

// Throws IndexError for a length of valid_lens outside [0, K], the one wording of every op and
// layer that takes lengths:
//   "<who>: valid length 9 (element 1 of valid_lens) is out of range [0, 7]<context>"
void check_valid_lengths(const std::string& who, const IndexTensor& valid_lens, int64_t K,
                         const std::string& context = "");

// scores (B, Q, K) or (B, H, Q, K), read as rows of K; valid_lens (B) or (B, Q) with values in
// [0, K] → one length per row, (rows). Throws ShapeError or IndexError naming `op` otherwise.
IndexTensor score_row_lengths(const char* op, const Shape& scores, const IndexTensor& valid_lens);

}  // namespace qkv
