// The adjoints of the indexing ops: the linear maps their backward applies, as ops of their own.
// A backward that records a graph (create_graph) goes through them, and since each one's backward
// is the indexing op again, gradients of any order go back and forth between the two.
//
//   x.slice(dim, start, end, step)   ↔  unslice(g, x.shape(), dim, start, end, step)
//   x.index_select(dim, index)       ↔  index_add(x.shape(), dim, index, g)
//   x.gather(dim, index)             ↔  scatter_add(x.shape(), dim, index, g)
#pragma once

#include "tensor/tensor.h"

namespace qkv {

// Zeros of `shape` with `src` at their slice (dim, start, end, step): torch.slice_scatter into zeros.
Tensor unslice(const Tensor& src, const Shape& shape, int64_t dim, int64_t start, int64_t end, int64_t step);

// Zeros of `shape` with slice j of `src` along dim added at index[j]: torch.index_add into zeros.
Tensor index_add(const Shape& shape, int64_t dim, const IndexTensor& index, const Tensor& src);

// Zeros of `shape` with each src[i] added at i with dim `dim` replaced by index[i]: torch's
// scatter_add into zeros. index has src's shape.
Tensor scatter_add(const Shape& shape, int64_t dim, const IndexTensor& index, const Tensor& src);

}  // namespace qkv
