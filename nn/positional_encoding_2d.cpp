#include "nn/positional_encoding_2d.h"

#include "nn/positional_encoding.h"
#include "tensor/error.h"

namespace qkv::nn {

Tensor sinusoidal_table_2d(int64_t height, int64_t width, int64_t d) {
  if (height <= 0 || width <= 0 || d <= 0 || d % 4 != 0)
    throw ValueError(
        "sinusoidal_table_2d: got height " + std::to_string(height) + ", width " + std::to_string(width) +
        " and " + std::to_string(d) +
        " channels; need positive sizes and channels divisible by 4 (two halves of sin/cos pairs)");
  // At every [y, x]: row x of the table of columns, then row y of the table of rows.
  const Tensor px = sinusoidal_table(width, d / 2).unsqueeze(0).expand({height, width, d / 2});
  const Tensor py = sinusoidal_table(height, d / 2).unsqueeze(1).expand({height, width, d / 2});
  return cat({px, py}, -1);
}

PositionalEncoding2D::PositionalEncoding2D(int64_t d, float p, int64_t h, int64_t w)
    : num_hiddens(d), max_height(h), max_width(w) {
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  P = register_buffer("P", sinusoidal_table_2d(max_height, max_width, num_hiddens), /*persistent=*/false);
}

Tensor PositionalEncoding2D::forward(const Tensor& X) const {
  if (X.dim() != 4 || X.size(3) != num_hiddens)
    throw ShapeError("PositionalEncoding2D: input of shape " + shape_str(X.shape()) + " must be (B, H, W, " +
                     std::to_string(num_hiddens) + ")");
  if (X.size(1) > max_height || X.size(2) > max_width)
    throw ShapeError("PositionalEncoding2D: a grid of height " + std::to_string(X.size(1)) + " and width " +
                     std::to_string(X.size(2)) + " exceeds max_height " + std::to_string(max_height) +
                     " or max_width " + std::to_string(max_width));
  return dropout->forward(X + P.narrow(0, 0, X.size(1)).narrow(1, 0, X.size(2)));
}

std::string PositionalEncoding2D::extra_repr() const {
  return "num_hiddens=" + std::to_string(num_hiddens) + ", max_height=" + std::to_string(max_height) +
         ", max_width=" + std::to_string(max_width);
}

}  // namespace qkv::nn
