// Embedding: a table of learned vectors, one row per token id (torch.nn.Embedding; d2l uses it for
// the token inputs of its seq2seq and Transformer models).
//
//   ids: IndexTensor of any shape, values in [0, num_embeddings)  →  (ids.shape..., embedding_dim)
//   weight: (num_embeddings, embedding_dim), initialized N(0, 1) as in PyTorch.
//
// With padding_idx, that row is initialized to zeros and never receives a gradient, so the vector
// of the padding token stays what it is while the rest trains. As in PyTorch, a negative
// padding_idx counts from the end. An id outside the vocabulary (or negative) throws IndexError
// naming the id and the vocabulary size. PyTorch's max_norm, scale_grad_by_freq and sparse
// options are not supported.
#pragma once

#include <optional>

#include "nn/module.h"

namespace qkv::nn {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const IndexTensor& ids) const;
  std::string extra_repr() const override;

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  // in [0, num_embeddings) once constructed
  Tensor weight;
};

}  // namespace qkv::nn
