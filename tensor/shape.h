// Shapes and strides: the arithmetic behind views and broadcasting.
//
// A tensor of shape (d0, d1, ..., dn-1) stores element (i0, ..., in-1) at
//   offset + i0·stride0 + ... + in-1·stride(n-1)
// Row-major ("contiguous") strides are stride(n-1) = 1, stride(k) = stride(k+1)·d(k+1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qkv {

using Shape = std::vector<int64_t>;

// Number of elements: the product of the dims (1 for a 0-d scalar).
int64_t numel(const Shape& shape);

// Row-major strides for `shape`.
Shape contiguous_strides(const Shape& shape);

// "(2,3)" — the form used in every error message.
std::string shape_str(const Shape& shape);

// Resolves a requested shape for `n` elements: at most one dim may be -1 (inferred); throws
// ShapeError naming `op` when the sizes do not fit.
Shape infer_shape(Shape shape, int64_t n, const char* op);

// Turns a possibly negative dim into 0..ndim-1, or throws IndexError naming `op`.
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);

// NumPy/PyTorch broadcasting: align shapes at the right; each pair of dims must be equal or one of
// them 1. Throws ShapeError naming `op` and both shapes otherwise.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides that read a tensor of shape `shape` with `strides` as if it had the broadcast shape
// `target`: missing leading dims and dims of size 1 that are stretched get stride 0.
Shape broadcast_strides(const Shape& shape, const Shape& strides, const Shape& target);

}  // namespace qkv
