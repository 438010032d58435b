// Indexing and joining: index_select, gather, cat, stack. Their backward sends each output
// element's gradient back to the input element it came from (adding, where an index repeats).
// repeat_interleave and sort are composed of them: index_select and gather with the indices
// they compute, so their gradients are those.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "autograd/function.h"
#include "autograd/ops/adjoint.h"
#include "autograd/observer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/elementwise.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_range(const IndexTensor& index, int64_t size, const char* op, int64_t dim) {
  const int64_t* p = index.data();
  for (int64_t i = 0, n = index.numel(); i < n; ++i)
    if (p[i] < 0 || p[i] >= size)
      throw IndexError(std::string(op) + ": index " + std::to_string(p[i]) + " is out of range for dim " +
                       std::to_string(dim) + " of size " + std::to_string(size));
}

// For each element of index (multi-index i, in row-major order), the offset of the element of a
// tensor with `strides` at i with dim d replaced by index[i]: where gather reads, scatter_add adds.
std::vector<int64_t> picked_offsets(const Shape& strides, int64_t d, const IndexTensor& index) {
  const Shape& is = index.shape();
  const int64_t count = index.numel(), dims = static_cast<int64_t>(is.size());
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rem = flat, off = 0;
    for (int64_t k = dims - 1; k >= 0; --k) {
      const int64_t i = rem % is[k];
      rem /= is[k];
      off += (k == d ? index.data()[flat] : i) * strides[k];
    }
    offsets[static_cast<size_t>(flat)] = off;
  }
  return offsets;
}

}  // namespace

Tensor Tensor::index_select(int64_t dim, const IndexTensor& index) const {
  const autograd::Op op("index_select");
  const int64_t d = normalize_dim(dim, this->dim(), op.name());
  if (index.dim() != 1)
    throw ShapeError("index_select: index must be 1-d, got shape " + shape_str(index.shape()));
  check_range(index, shape()[d], op.name(), d);
  // x is (outer, n, inner); out is (outer, m, inner) with out[o, j, :] = x[o, index[j], :]
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape()[k];
  for (int64_t k = d + 1; k < this->dim(); ++k) inner *= shape()[k];
  const int64_t n = shape()[d], m = index.numel();
  Shape out_shape = shape();
  out_shape[d] = m;
  const Tensor x = detach().contiguous();
  Tensor out = Tensor::empty(out_shape);
  const int64_t* idx = index.data();
  kernels::parallel_for(outer * m, outer * m * inner, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* src = x.data() + ((r / m) * n + idx[r % m]) * inner;
      std::copy(src, src + inner, out.data() + r * inner);
    }
  });
  return op.record(out, {*this}, {},
      [index, d, in_shape = shape()](const Tensor& g, const BackwardContext&) -> Grads {
        return {index_add(in_shape, d, index, g)};
      });
}

Tensor index_add(const Shape& shape, int64_t dim, const IndexTensor& index, const Tensor& src) {
  const autograd::Op op("index_add");
  const int64_t d = normalize_dim(dim, static_cast<int64_t>(shape.size()), op.name());
  check_range(index, shape[d], op.name(), d);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  for (int64_t k = d + 1; k < static_cast<int64_t>(shape.size()); ++k) inner *= shape[k];
  const int64_t n = shape[d], m = index.numel();
  Shape src_shape = shape;
  src_shape[d] = m;
  if (src.shape() != src_shape)
    throw ShapeError("index_add: src of shape " + shape_str(src.shape()) + " does not fit: expected " +
                     shape_str(src_shape));
  // Rows picked twice receive both gradients: a serial loop keeps the sum order fixed.
  Tensor out = zeros(shape);
  const Tensor sc = src.detach().contiguous();
  const int64_t* ix = index.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      float* dst = out.data() + (o * n + ix[j]) * inner;
      const float* from = sc.data() + (o * m + j) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] += from[i];
    }
  return op.record(out, {src}, {},
      [index, d](const Tensor& g, const BackwardContext&) -> Grads { return {g.index_select(d, index)}; });
}

Tensor Tensor::gather(int64_t dim, const IndexTensor& index) const {
  const autograd::Op op("gather");
  const int64_t d = normalize_dim(dim, this->dim(), op.name());
  if (index.dim() != this->dim())
    throw ShapeError("gather: index of shape " + shape_str(index.shape()) +
                     " must have as many dims as the input's shape " + shape_str(shape()));
  for (int64_t k = 0; k < this->dim(); ++k)
    if (k != d && index.shape()[k] > shape()[k])
      throw ShapeError("gather: index of shape " + shape_str(index.shape()) + " is larger than the input's shape " +
                       shape_str(shape()) + " at dim " + std::to_string(k));
  check_range(index, shape()[d], op.name(), d);
  const Tensor x = detach().contiguous();
  const std::vector<int64_t> src_offset = picked_offsets(x.strides(), d, index);
  Tensor out = Tensor::empty(index.shape());
  for (size_t flat = 0; flat < src_offset.size(); ++flat) out.data()[flat] = x.data()[src_offset[flat]];
  return op.record(out, {*this}, {},
      [index = index.clone(), d, in_shape = shape()](const Tensor& g, const BackwardContext&) -> Grads {
        // A copy: the caller may refill its index before backward.
        return {scatter_add(in_shape, d, index, g)};
      });
}

Tensor scatter_add(const Shape& shape, int64_t dim, const IndexTensor& index, const Tensor& src) {
  const autograd::Op op("scatter_add");
  const int64_t d = normalize_dim(dim, static_cast<int64_t>(shape.size()), op.name());
  if (src.shape() != index.shape())
    throw ShapeError("scatter_add: src of shape " + shape_str(src.shape()) + " must have the index's shape " +
                     shape_str(index.shape()));
  bool fits = index.dim() == static_cast<int64_t>(shape.size());
  for (int64_t k = 0; fits && k < index.dim(); ++k) fits = k == d || index.shape()[k] <= shape[k];
  if (!fits)
    throw ShapeError("scatter_add: index of shape " + shape_str(index.shape()) + " does not fit the output's shape " +
                     shape_str(shape) + " (as many dims, none larger outside dim " + std::to_string(d) + ")");
  check_range(index, shape[d], op.name(), d);
  Tensor out = zeros(shape);
  const std::vector<int64_t> at = picked_offsets(out.strides(), d, index);
  const Tensor sc = src.detach().contiguous();
  for (size_t flat = 0; flat < at.size(); ++flat) out.data()[at[flat]] += sc.data()[flat];
  return op.record(out, {src}, {},
      [index, d](const Tensor& g, const BackwardContext&) -> Grads { return {g.gather(d, index)}; });
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  const autograd::Op op("cat");
  if (tensors.empty()) throw ValueError("cat: expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  if (first.dim() == 0) throw ShapeError("cat: zero-dimensional tensors cannot be concatenated");
  const int64_t d = normalize_dim(dim, first.dim(), op.name());
  Shape out_shape = first.shape();
  out_shape[d] = 0;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    bool fits = t.dim() == first.dim();
    for (int64_t k = 0; fits && k < t.dim(); ++k) fits = k == d || t.shape()[k] == first.shape()[k];
    if (!fits)
      throw ShapeError("cat: tensor " + std::to_string(i) + " has shape " + shape_str(t.shape()) +
                       ", which does not match tensor 0's shape " + shape_str(first.shape()) +
                       " except in dim " + std::to_string(d));
    sizes.push_back(t.shape()[d]);
    out_shape[d] += t.shape()[d];
  }
  Tensor out = Tensor::empty(out_shape);
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    // Write t into its slab of out: out's strides, offset by start along d.
    kernels::copy_strided(t.shape(), t.data(), t.strides(), out.data() + start * out.strides()[d], out.strides());
    start += t.shape()[d];
  }
  return op.record(out, tensors, {},
      [sizes, d](const Tensor& g, const BackwardContext& ctx) -> Grads {
        Grads grads;
        int64_t begin = 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
          grads.push_back(ctx.needs[i] ? g.narrow(d, begin, sizes[i]) : Tensor());
          begin += sizes[i];
        }
        return grads;
      });
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("stack: expected a non-empty list of tensors");
  const int64_t d = normalize_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != tensors[0].shape())
      throw ShapeError("stack: tensor " + std::to_string(i) + " has shape " + shape_str(tensors[i].shape()) +
                       " but tensor 0 has shape " + shape_str(tensors[0].shape()) + "; all must be equal");
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
}

Tensor Tensor::repeat_interleave(int64_t repeats, int64_t dim) const {
  const int64_t d = normalize_dim(dim, this->dim(), "repeat_interleave");
  if (repeats < 0) throw ValueError("repeat_interleave: repeats must be >= 0, got " + std::to_string(repeats));
  return index_select(d, IndexTensor::arange(shape()[d]).repeat_interleave(repeats));
}

Tensor Tensor::repeat_interleave(const IndexTensor& repeats, int64_t dim) const {
  const int64_t d = normalize_dim(dim, this->dim(), "repeat_interleave");
  if (repeats.dim() != 1 || repeats.numel() != shape()[d])
    throw ShapeError("repeat_interleave: repeats of shape " + shape_str(repeats.shape()) + " must be (" +
                     std::to_string(shape()[d]) + "), one count per slice along dim " + std::to_string(d));
  return index_select(d, IndexTensor::arange(shape()[d]).repeat_interleave(repeats));
}

IndexTensor Tensor::argsort(int64_t dim, bool descending) const {
  const int64_t d = normalize_dim(dim, this->dim(), "argsort");
  const Tensor x = detach().contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape()[k];
  for (int64_t k = d + 1; k < this->dim(); ++k) inner *= shape()[k];
  const int64_t n = shape()[d];
  std::vector<int64_t> out(static_cast<size_t>(x.numel()));
  const float* v = x.data();
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* line = v + o * n * inner + i;
      // NaN sorts above every number, as in torch.sort: last ascending, first descending. A stable
      // sort keeps equal values in their order.
      auto less = [&](int64_t a, int64_t b) {
        const float x1 = line[a * inner], x2 = line[b * inner];
        if (descending) return std::isnan(x1) ? !std::isnan(x2) : x1 > x2;
        return std::isnan(x2) ? !std::isnan(x1) : x1 < x2;
      };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), less);
      for (int64_t k = 0; k < n; ++k) out[static_cast<size_t>((o * n + k) * inner + i)] = order[k];
    }
  return IndexTensor(std::move(out), shape());
}

std::pair<Tensor, IndexTensor> Tensor::sort(int64_t dim, bool descending) const {
  IndexTensor indices = argsort(dim, descending);
  return {gather(dim, indices), std::move(indices)};
}

}  // namespace qkv
