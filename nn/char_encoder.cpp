#include "nn/char_encoder.h"

#include <string>
#include <vector>

#include "autograd/ops/unfold.h"
#include "nn/functional/basic.h"
#include "nn/functional/conv.h"
#include "nn/functional/pooling.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {
namespace {

// chars (..., L) and lengths (...): the shapes agree, every length is in [0, L], and every
// position at or past a word's length holds the padding id 0.
void check_words(const IndexTensor& chars, const IndexTensor& lengths) {
  Shape lead = chars.shape();
  if (!lead.empty()) lead.pop_back();
  if (chars.dim() < 2 || lengths.shape() != lead)
    throw ShapeError("CharEncoder: chars " + shape_str(chars.shape()) + " and lengths " +
                     shape_str(lengths.shape()) + " must be (..., L) and (...), e.g. (N, L) and (N)");
  const int64_t L = chars.size(-1), M = lengths.numel();
  const int64_t *id = chars.data(), *len = lengths.data();
  for (int64_t w = 0; w < M; ++w) {
    if (len[w] < 0 || len[w] > L)
      throw ValueError("CharEncoder: word " + std::to_string(w) + " has length " + std::to_string(len[w]) +
                       ", expected a length in [0, " + std::to_string(L) + "]");
    for (int64_t l = len[w]; l < L; ++l)
      if (id[w * L + l] != 0)
        throw ValueError("CharEncoder: word " + std::to_string(w) + " has length " + std::to_string(len[w]) +
                         " but char id " + std::to_string(id[w * L + l]) + " at position " +
                         std::to_string(l) +
                         "; positions at and past a word's length must hold the padding id 0");
  }
}

}  // namespace

CharEncoder::CharEncoder(int64_t num_chars, int64_t char_dim, int64_t filters, int64_t kernel_size,
                         Nonlinearity nonlinearity)
    : num_chars(num_chars),
      char_dim(char_dim),
      filters(filters),
      kernel_size(kernel_size),
      nonlinearity(nonlinearity) {
  if (kernel_size <= 0 || kernel_size % 2 == 0)
    throw ValueError("CharEncoder: kernel_size must be odd and positive, got " + std::to_string(kernel_size));
  embedding = register_module("embedding", std::make_shared<Embedding>(num_chars, char_dim, 0));
  conv = register_module("conv", std::make_shared<Conv1d>(char_dim, filters, kernel_size, kernel_size / 2));
}

Tensor CharEncoder::encode(const IndexTensor& words, const IndexTensor& lengths) const {
  const int64_t M = words.size(0), L = words.size(1), K = kernel_size;
  // valid: the R = Σ lengths valid positions w·L + t; slot: where each position's output is in
  // [zero row; the R outputs] (padding positions read the zero row, which the max never reads).
  std::vector<int64_t> valid, slot(static_cast<size_t>(M * L), 0);
  for (int64_t w = 0; w < M; ++w)
    for (int64_t t = 0; t < lengths[w]; ++t) {
      valid.push_back(w * L + t);
      slot[w * L + t] = static_cast<int64_t>(valid.size());
    }
  // conv->forward(x) with the products at the valid positions only (nn/functional/conv.h).
  const Tensor windows = unfold1d(embedding->forward(words), K, K / 2).reshape({M * L, K * char_dim});
  const Tensor h =
      functional::linear(windows.index_select(0, IndexTensor(std::move(valid))),
                         functional::conv1d_weight_matrix(conv->weight), conv->bias);  // (R, filters)
  const Tensor all = cat({zeros({1, filters}), h}, 0).index_select(0, IndexTensor(std::move(slot)));
  const Tensor m = functional::masked_max(all.reshape({M, L, filters}), lengths);  // (M, filters)
  return nonlinearity == Nonlinearity::ReLU ? m.relu() : m.tanh();  // f(max h) = max f(h), see the header
}

Tensor CharEncoder::forward(const IndexTensor& chars, const IndexTensor& lengths) const {
  check_words(chars, lengths);
  const int64_t L = chars.size(-1), M = lengths.numel();
  Shape out_shape = lengths.shape();
  out_shape.push_back(filters);
  // The words that have characters are encoded together; an empty slot reads row 0 of
  // [zero vector; encodings], and a word its own row.
  std::vector<int64_t> kept_ids, kept_lengths, row(static_cast<size_t>(M), 0);
  for (int64_t w = 0; w < M; ++w) {
    if (lengths[w] == 0) continue;
    kept_ids.insert(kept_ids.end(), chars.data() + w * L, chars.data() + (w + 1) * L);
    kept_lengths.push_back(lengths[w]);
    row[w] = static_cast<int64_t>(kept_lengths.size());
  }
  const int64_t kept = static_cast<int64_t>(kept_lengths.size());
  if (kept == 0) return zeros(out_shape);
  if (kept == M) return encode(chars.reshape({M, L}), lengths.reshape({M})).reshape(out_shape);
  const Tensor encoded =
      encode(IndexTensor(std::move(kept_ids), {kept, L}), IndexTensor(std::move(kept_lengths)));
  return cat({zeros({1, filters}), encoded}, 0)
      .index_select(0, IndexTensor(std::move(row)))
      .reshape(out_shape);
}

std::string CharEncoder::extra_repr() const {
  return "num_chars=" + std::to_string(num_chars) + ", char_dim=" + std::to_string(char_dim) +
         ", filters=" + std::to_string(filters) + ", kernel_size=" + std::to_string(kernel_size) +
         ", nonlinearity=" + (nonlinearity == Nonlinearity::ReLU ? "relu" : "tanh");
}

}  // namespace qkv::nn
