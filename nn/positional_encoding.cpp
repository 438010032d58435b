#include "nn/positional_encoding.h"

#include <cmath>

#include "tensor/error.h"

namespace qkv::nn {

Tensor sinusoidal_table(int64_t max_len, int64_t d, float base) {
  if (max_len <= 0 || d <= 0 || d % 2 != 0)
    throw ValueError("sinusoidal_table: need max_len > 0 and an even, positive width; got max_len " +
                     std::to_string(max_len) + " and width " + std::to_string(d));
  if (!(base > 1.0f)) throw ValueError("sinusoidal_table: base must be greater than 1, got " + std::to_string(base));
  Tensor P = Tensor::empty({max_len, d}, "sinusoidal_table");
  float* p = P.data();
  for (int64_t j = 0; j < d / 2; ++j) {
    // The same float32 steps as d2l: the exponent 2j/d, the power, then position / power.
    const float freq_div = std::pow(base, static_cast<float>(2 * j) / static_cast<float>(d));
    for (int64_t i = 0; i < max_len; ++i) {
      const float x = static_cast<float>(i) / freq_div;
      p[i * d + 2 * j] = std::sin(x);
      p[i * d + 2 * j + 1] = std::cos(x);
    }
  }
  return P;
}

PositionalEncoding::PositionalEncoding(int64_t d, float p, int64_t len)
    : num_hiddens(d), max_len(len) {
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  P = register_buffer("P", sinusoidal_table(max_len, num_hiddens), /*persistent=*/false);
}

Tensor PositionalEncoding::forward(const Tensor& X, int64_t offset) const {
  if (X.dim() != 3 || X.size(2) != num_hiddens)
    throw ShapeError("PositionalEncoding: input of shape " + shape_str(X.shape()) + " must be (B, T, " +
                     std::to_string(num_hiddens) + ")");
  if (offset < 0 || X.size(1) > max_len - offset)
    throw ShapeError("PositionalEncoding: " +
                     (offset == 0 ? "sequence length " + std::to_string(X.size(1)) + " exceeds"
                                  : "positions " + std::to_string(offset) + " .. " +
                                        std::to_string(offset + X.size(1) - 1) + " exceed") +
                     " max_len " + std::to_string(max_len));
  return dropout->forward(X + P.narrow(0, offset, X.size(1)));
}

std::string PositionalEncoding::extra_repr() const {
  return "num_hiddens=" + std::to_string(num_hiddens) + ", max_len=" + std::to_string(max_len);
}

}  // namespace qkv::nn
