// Embedding lookup, like torch.nn.functional.embedding: the op behind nn::Embedding.
#pragma once

#include <optional>

#include "tensor/tensor.h"

namespace qkv {

// Rows of weight (V, D) picked by token ids of any shape: ids (...) → (..., D). An id outside
// [0, V) throws IndexError. Row padding_idx (negative counts from the end) receives no gradient.
// Backward adds each output row's gradient into the row it was read from, in the order of the ids.
Tensor embedding(const IndexTensor& ids, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

// embedding's composed reference: weight.index_select(0, ids), with the padding row read through
// a detached copy of the weight, so that no gradient reaches it.
Tensor embedding_reference(const IndexTensor& ids, const Tensor& weight,
                           std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace qkv
