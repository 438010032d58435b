#include "nn/embedding.h"

#include "autograd/ops/embedding.h"
#include "autograd/grad_mode.h"
#include "nn/init.h"
#include "tensor/error.h"

namespace qkv::nn {

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad)
    : num_embeddings(num), embedding_dim(dim), padding_idx(pad) {
  if (num <= 0 || dim <= 0)
    throw ValueError("Embedding: num_embeddings and embedding_dim must be positive, got " + std::to_string(num) +
                     " and " + std::to_string(dim));
  if (padding_idx) {
    if (*padding_idx < -num || *padding_idx >= num)
      throw IndexError("Embedding: padding_idx " + std::to_string(*padding_idx) +
                       " is out of range for a vocabulary of " + std::to_string(num));
    if (*padding_idx < 0) *padding_idx += num;
  }
  weight = register_parameter("weight", Tensor::empty({num, dim}, "Embedding"));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}

Tensor Embedding::forward(const IndexTensor& ids) const { return qkv::embedding(ids, weight, padding_idx); }

std::string Embedding::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  return s;
}

}  // namespace qkv::nn
