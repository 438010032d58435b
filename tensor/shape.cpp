#include "tensor/shape.h"

#include "tensor/error.h"

namespace qkv {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw ShapeError("shape " + shape_str(shape) + " has more elements than a 64-bit integer counts");
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = s;
    s *= shape[k] > 0 ? shape[k] : 1;
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k) s += ",";
    s += std::to_string(shape[k]);
  }
  return s + ")";
}

Shape infer_shape(Shape shape, int64_t n, const char* op) {
  int64_t known = 1, infer_at = -1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == -1) {
      if (infer_at >= 0)
        throw ShapeError(std::string(op) + ": only one dim can be -1 in " + shape_str(shape));
      infer_at = static_cast<int64_t>(k);
    } else if (shape[k] < 0) {
      throw ShapeError(std::string(op) + ": negative size in shape " + shape_str(shape));
    } else {
      known *= shape[k];
    }
  }
  if (infer_at >= 0 && known != 0 && n % known == 0) shape[infer_at] = n / known;
  if (numel(shape) != n || (infer_at >= 0 && known == 0))
    throw ShapeError(std::string(op) + ": shape " + shape_str(shape) + " is invalid for " +
                     std::to_string(n) + " elements");
  return shape;
}

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t d = dim < 0 ? dim + ndim : dim;
  if (d < 0 || d >= ndim)
    throw IndexError(std::string(op) + ": dim " + std::to_string(dim) + " is out of range for a " +
                     std::to_string(ndim) + "-d tensor (expected " + std::to_string(-ndim) + " <= dim < " +
                     std::to_string(ndim) + ")");
  return d;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t k = 0; k < n; ++k) {
    // Align at the right: dim k of the result reads dim k - (n - size) of each input.
    const int64_t da = k + a.size() >= n ? a[k + a.size() - n] : 1;
    const int64_t db = k + b.size() >= n ? b[k + b.size() - n] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast: dim " + std::to_string(k) + " has sizes " + std::to_string(da) +
                       " and " + std::to_string(db));
    out[k] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  Shape out(target.size(), 0);
  const size_t lead = target.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) out[lead + k] = shape[k] == target[lead + k] ? strides[k] : 0;
  return out;
}

}  // namespace qkv
