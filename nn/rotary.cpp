#include "nn/rotary.h"

#include <sstream>

#include "autograd/ops/rotary.h"
#include "nn/positional_encoding.h"
#include "tensor/error.h"

namespace qkv::nn {

RotaryEmbedding::RotaryEmbedding(int64_t d, int64_t len, float base_)
    : head_dim(d), max_len(len), base(base_) {
  if (d <= 0 || d % 2 != 0)
    throw ValueError("RotaryEmbedding: head_dim must be even and positive (features turn in pairs), got " +
                     std::to_string(d));
  const Tensor table = sinusoidal_table(max_len, head_dim, base);  // sin(mθ_i) at 2i, cos(mθ_i) at 2i+1
  cos = register_buffer("cos", table.slice(1, 1, d, 2).contiguous(), /*persistent=*/false);
  sin = register_buffer("sin", table.slice(1, 0, d, 2).contiguous(), /*persistent=*/false);
}

Tensor RotaryEmbedding::forward(const Tensor& x, int64_t offset) const {
  if (x.dim() < 2 || x.size(-1) != head_dim)
    throw ShapeError("RotaryEmbedding: input of shape " + shape_str(x.shape()) + " must be (..., T, " +
                     std::to_string(head_dim) + ")");
  const int64_t T = x.size(-2);
  if (offset < 0)
    throw ValueError("RotaryEmbedding: offset must be non-negative, got " + std::to_string(offset));
  if (offset + T > max_len)
    throw ShapeError("RotaryEmbedding: a sequence of length " + std::to_string(T) + " at offset " +
                     std::to_string(offset) + " needs positions up to " + std::to_string(offset + T - 1) +
                     ", past max_len " + std::to_string(max_len));
  return qkv::rotary(x, cos.narrow(0, offset, T), sin.narrow(0, offset, T));
}

Tensor RotaryEmbedding::forward(const Tensor& x, const IndexTensor& positions) const {
  if (x.dim() < 2 || x.size(-1) != head_dim || positions.dim() != 1 || positions.numel() != x.size(-2))
    throw ShapeError("RotaryEmbedding: input of shape " + shape_str(x.shape()) + " and positions of shape " +
                     shape_str(positions.shape()) + " must be (..., T, " + std::to_string(head_dim) +
                     ") and (T)");
  for (int64_t t = 0; t < positions.numel(); ++t)
    if (positions[t] < 0 || positions[t] >= max_len)
      throw IndexError("RotaryEmbedding: position " + std::to_string(positions[t]) +
                       " is outside [0, max_len) with max_len " + std::to_string(max_len));
  return qkv::rotary(x, cos.index_select(0, positions), sin.index_select(0, positions));
}

Tensor RotaryEmbedding::forward_packed(const Tensor& qkv, int64_t heads) const {
  if (qkv.dim() != 3 || heads <= 0 || qkv.size(2) != 3 * heads * head_dim)
    throw ShapeError("RotaryEmbedding: a packed projection of shape " + shape_str(qkv.shape()) + " with " +
                     std::to_string(heads) + " heads must be (B, T, " + std::to_string(3 * heads * head_dim) +
                     "): Q, K and V of " + std::to_string(heads) + " heads of " + std::to_string(head_dim));
  const int64_t T = qkv.size(1);
  if (T > max_len)
    throw ShapeError("RotaryEmbedding: a sequence of length " + std::to_string(T) + " needs positions up to " +
                     std::to_string(T - 1) + ", past max_len " + std::to_string(max_len));
  return qkv::rotary_packed(qkv, heads, cos.narrow(0, 0, T), sin.narrow(0, 0, T));
}

std::string RotaryEmbedding::extra_repr() const {
  std::ostringstream s;
  // A stream prints base=10000, std::to_string 10000.000000.
  s << "head_dim=" << head_dim << ", max_len=" << max_len << ", base=" << base;
  return s.str();
}

}  // namespace qkv::nn
