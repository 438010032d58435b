#include "nn/learned_positional_encoding.h"

#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

LearnedPositionalEncoding::LearnedPositionalEncoding(int64_t d, float p, int64_t len)
    : num_hiddens(d), max_len(len) {
  if (d <= 0 || len <= 0)
    throw ValueError("LearnedPositionalEncoding: num_hiddens and max_len must be positive, got " +
                     std::to_string(d) + " and " + std::to_string(len));
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  weight = register_parameter("weight", normal({max_len, num_hiddens}, 0.0f, 0.02f));
}

Tensor LearnedPositionalEncoding::forward(const Tensor& X, int64_t offset) const {
  if (X.dim() != 3 || X.size(2) != num_hiddens)
    throw ShapeError("LearnedPositionalEncoding: input of shape " + shape_str(X.shape()) +
                     " must be (B, T, " + std::to_string(num_hiddens) + ")");
  if (offset < 0 || X.size(1) > max_len - offset)
    throw ShapeError("LearnedPositionalEncoding: " +
                     (offset == 0 ? "sequence length " + std::to_string(X.size(1)) + " exceeds"
                                  : "positions " + std::to_string(offset) + " .. " +
                                        std::to_string(offset + X.size(1) - 1) + " exceed") +
                     " max_len " + std::to_string(max_len));
  return dropout->forward(X + weight.narrow(0, offset, X.size(1)));
}

std::string LearnedPositionalEncoding::extra_repr() const {
  return "num_hiddens=" + std::to_string(num_hiddens) + ", max_len=" + std::to_string(max_len);
}

}  // namespace qkv::nn
