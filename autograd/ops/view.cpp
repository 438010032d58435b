// Views: new shapes and strides over the same storage, no data copied. Each one's backward maps
// the gradient of the view back to the shape of its input.
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "autograd/function.h"
#include "autograd/ops/adjoint.h"
#include "autograd/observer.h"
#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/elementwise.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

Tensor alias(const Tensor& x, Shape shape, Shape strides, int64_t offset) {
  return Tensor::view_of(x.storage(), std::move(shape), std::move(strides), offset);
}

// A view that keeps the elements in the same row-major order (view, reshape, squeeze, unsqueeze):
// its gradient is the output gradient reshaped back.
Tensor same_order_view(const Tensor& x, Shape shape, Shape strides) {
  const autograd::Op op("view");
  Tensor out = alias(x, std::move(shape), std::move(strides), x.offset());
  const Shape in_shape = x.shape();
  return op.record(out, {x}, {},
                          [in_shape](const Tensor& g, const BackwardContext&) -> Grads {
                            return {g.reshape(in_shape)};
                          });
}

// Strides that let a tensor with (shape, strides) be read as `target` without copying, if any:
// each group of old dims that merges or splits into new dims must be contiguous within itself.
// (The algorithm of PyTorch's computeStride.)
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  if (numel(shape) == 0 || shape.empty()) return contiguous_strides(target);
  Shape out(target.size());
  int64_t view_d = static_cast<int64_t>(target.size()) - 1;
  int64_t chunk_base_stride = strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    // Dim d ends a contiguous chunk when the next-outer dim does not continue it.
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= target[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// The gradient of a view that selects part of its input: zeros, with g written into that part.
Tensor scatter_into_zeros(const Shape& in_shape, const Tensor& g,
                          const std::function<Tensor(const Tensor&)>& select_part) {
  Tensor z = zeros(in_shape);
  select_part(z).copy_(g);
  return z;
}

}  // namespace

Tensor Tensor::view(Shape shape) const {
  shape = infer_shape(std::move(shape), numel(), "view");
  std::optional<Shape> strides = view_strides(this->shape(), this->strides(), shape);
  if (!strides)
    throw ShapeError("view: shape " + shape_str(shape) + " is not compatible with the input's " +
                     "shape " + shape_str(this->shape()) + " and strides " +
                     shape_str(this->strides()) + "; use reshape() (which copies) instead");
  return same_order_view(*this, std::move(shape), std::move(*strides));
}

Tensor Tensor::reshape(Shape shape) const {
  shape = infer_shape(std::move(shape), numel(), "reshape");
  if (std::optional<Shape> strides = view_strides(this->shape(), this->strides(), shape))
    return same_order_view(*this, std::move(shape), std::move(*strides));
  return contiguous().view(std::move(shape));
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t s = normalize_dim(start_dim, dim(), "flatten");
  const int64_t e = normalize_dim(end_dim, dim(), "flatten");
  if (s > e) throw IndexError("flatten: start_dim must not come after end_dim");
  Shape out(shape().begin(), shape().begin() + s);
  int64_t merged = 1;
  for (int64_t k = s; k <= e; ++k) merged *= shape()[k];
  out.push_back(merged);
  out.insert(out.end(), shape().begin() + e + 1, shape().end());
  return reshape(std::move(out));
}

Tensor Tensor::unsqueeze(int64_t d) const {
  const int64_t pos = normalize_dim(d, dim() + 1, "unsqueeze");
  Shape shape = this->shape(), strides = this->strides();
  const int64_t stride = pos < dim() ? strides[pos] * shape[pos] : 1;
  shape.insert(shape.begin() + pos, 1);
  strides.insert(strides.begin() + pos, stride);
  return same_order_view(*this, std::move(shape), std::move(strides));
}

Tensor Tensor::squeeze(int64_t d) const {
  const int64_t pos = normalize_dim(d, dim(), "squeeze");
  if (shape()[pos] != 1)
    throw ShapeError("squeeze: dim " + std::to_string(d) + " of shape " + shape_str(shape()) +
                     " has size " + std::to_string(shape()[pos]) + ", not 1");
  Shape shape = this->shape(), strides = this->strides();
  shape.erase(shape.begin() + pos);
  strides.erase(strides.begin() + pos);
  return same_order_view(*this, std::move(shape), std::move(strides));
}

Tensor Tensor::squeeze() const {
  Shape shape, strides;
  for (int64_t k = 0; k < dim(); ++k)
    if (this->shape()[k] != 1) shape.push_back(this->shape()[k]), strides.push_back(this->strides()[k]);
  return same_order_view(*this, std::move(shape), std::move(strides));
}

Tensor Tensor::permute(std::vector<int64_t> dims) const {
  const autograd::Op op("permute");
  if (static_cast<int64_t>(dims.size()) != dim())
    throw ShapeError("permute: got " + std::to_string(dims.size()) + " dims for a tensor of shape " +
                     shape_str(shape()));
  std::vector<int64_t> inverse(dims.size(), -1);
  Shape shape(dims.size()), strides(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = normalize_dim(dims[k], dim(), op.name());
    if (inverse[d] != -1) throw ShapeError("permute: dim " + std::to_string(d) + " repeated");
    inverse[d] = static_cast<int64_t>(k);
    shape[k] = this->shape()[d];
    strides[k] = this->strides()[d];
  }
  Tensor out = alias(*this, std::move(shape), std::move(strides), offset());
  return op.record(out, {*this}, {},
                          [inverse](const Tensor& g, const BackwardContext&) -> Grads {
                            return {g.permute(inverse)};
                          });
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  std::vector<int64_t> dims(static_cast<size_t>(dim()));
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[normalize_dim(dim0, dim(), "transpose")], dims[normalize_dim(dim1, dim(), "transpose")]);
  return permute(dims);
}

Tensor Tensor::t() const {
  if (dim() != 2) throw ShapeError("t: expected a 2-d tensor, got shape " + shape_str(shape()));
  return transpose(0, 1);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  const autograd::Op op("slice");
  const int64_t pos = normalize_dim(d, dim(), op.name());
  if (step <= 0) throw ValueError("slice: step must be positive, got " + std::to_string(step));
  // Python slicing: negative bounds count from the end, and bounds are clamped to [0, size].
  const int64_t n = shape()[pos];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape = this->shape(), strides = this->strides();
  shape[pos] = (end - start + step - 1) / step;
  strides[pos] *= step;
  Tensor out = alias(*this, std::move(shape), std::move(strides), offset() + start * this->strides()[pos]);
  const Shape in_shape = this->shape();
  return op.record(out, {*this}, {},
                          [in_shape, pos, start, end, step](const Tensor& g, const BackwardContext&) -> Grads {
                            return {scatter_into_zeros(in_shape, g, [&](const Tensor& z) {
                              return z.slice(pos, start, end, step);
                            })};
                          },
                          [in_shape, pos, start, end, step](const Tensor& g, const BackwardContext&) -> Grads {
                            return {unslice(g, in_shape, pos, start, end, step)};
                          });
}

Tensor unslice(const Tensor& src, const Shape& shape, int64_t dim, int64_t start, int64_t end, int64_t step) {
  const autograd::Op op("unslice");
  const int64_t pos = normalize_dim(dim, static_cast<int64_t>(shape.size()), op.name());
  Tensor out = zeros(shape);
  {
    const NoGradGuard no_grad;  // out is filled as a buffer; the node below is the op's record
    out.slice(pos, start, end, step).copy_(src);
  }
  return op.record(out, {src}, {},
                   [pos, start, end, step](const Tensor& g, const BackwardContext&) -> Grads {
                     return {g.slice(pos, start, end, step)};
                   });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  const int64_t pos = normalize_dim(d, dim(), "narrow");
  if (start < 0 || length < 0 || start + length > shape()[pos])
    throw IndexError("narrow: [" + std::to_string(start) + ", " + std::to_string(start + length) +
                     ") is out of range for dim " + std::to_string(d) + " of shape " +
                     shape_str(shape()));
  return slice(pos, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  const autograd::Op op("select");
  const int64_t pos = normalize_dim(d, dim(), op.name());
  const int64_t n = shape()[pos];
  if (index < -n || index >= n)
    throw IndexError("select: index " + std::to_string(index) + " is out of range for dim " +
                     std::to_string(d) + " of shape " + shape_str(shape()));
  if (index < 0) index += n;
  Shape shape = this->shape(), strides = this->strides();
  shape.erase(shape.begin() + pos);
  strides.erase(strides.begin() + pos);
  Tensor out = alias(*this, std::move(shape), std::move(strides), offset() + index * this->strides()[pos]);
  const Shape in_shape = this->shape();
  return op.record(out, {*this}, {},
                          [in_shape, pos, index](const Tensor& g, const BackwardContext&) -> Grads {
                            return {scatter_into_zeros(in_shape, g, [&](const Tensor& z) {
                              return z.select(pos, index);
                            })};
                          },
                          [in_shape, pos, index](const Tensor& g, const BackwardContext&) -> Grads {
                            return {unslice(g.unsqueeze(pos), in_shape, pos, index, index + 1, 1)};
                          });
}

Tensor Tensor::expand(Shape shape) const {
  const autograd::Op op("expand");
  if (static_cast<int64_t>(shape.size()) < dim())
    throw ShapeError("expand: cannot expand shape " + shape_str(this->shape()) + " to " +
                     shape_str(shape) + ": fewer dims");
  const size_t lead = shape.size() - this->shape().size();
  Shape strides(shape.size(), 0);
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k < lead) {
      if (shape[k] < 0)
        throw ShapeError("expand: -1 is not allowed for the new leading dims in " + shape_str(shape));
      continue;  // new leading dims repeat the whole tensor: stride 0
    }
    const int64_t have = this->shape()[k - lead];
    if (shape[k] == -1) shape[k] = have;
    if (shape[k] < 0)
      throw ShapeError("expand: negative size " + std::to_string(shape[k]) + " in " + shape_str(shape) +
                       " (only -1, to keep a dim, is allowed)");
    if (have == shape[k]) {
      strides[k] = this->strides()[k - lead];
    } else if (have != 1) {
      throw ShapeError("expand: cannot expand shape " + shape_str(this->shape()) + " to " +
                       shape_str(shape) + ": dim " + std::to_string(k) + " has size " +
                       std::to_string(have) + ", which is not 1");
    }
  }
  Tensor out = alias(*this, shape, std::move(strides), offset());
  const Shape in_shape = this->shape();
  return op.record(out, {*this}, {},
                          [in_shape](const Tensor& g, const BackwardContext&) -> Grads {
                            return {g.sum_to(in_shape)};
                          });
}

Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.shape()); }

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  const autograd::Op op("contiguous");
  Tensor out = Tensor::empty(shape());
  kernels::copy_strided(shape(), data(), strides(), out.data(), out.strides());
  return op.record(out, {*this}, {},
                          [](const Tensor& g, const BackwardContext&) -> Grads { return {g}; });
}

Tensor Tensor::clone() const {
  const autograd::Op op("clone");
  Tensor out = Tensor::empty(shape());
  kernels::copy_strided(shape(), data(), strides(), out.data(), out.strides());
  return op.record(out, {*this}, {},
                          [](const Tensor& g, const BackwardContext&) -> Grads { return {g}; });
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  const int64_t pos = normalize_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw ValueError("split: negative size " + std::to_string(s));
    total += s;
  }
  if (total != x.shape()[pos])
    throw ShapeError("split: sizes add up to " + std::to_string(total) + " but dim " +
                     std::to_string(dim) + " of shape " + shape_str(x.shape()) + " has " +
                     std::to_string(x.shape()[pos]));
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(x.narrow(pos, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  if (split_size <= 0) throw ValueError("split: split_size must be positive");
  const int64_t n = x.shape()[normalize_dim(dim, x.dim(), "split")];
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  return split(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  if (chunks <= 0) throw ValueError("chunk: chunks must be positive");
  const int64_t n = x.shape()[normalize_dim(dim, x.dim(), "chunk")];
  return split(x, std::max<int64_t>(1, (n + chunks - 1) / chunks), dim);
}

}  // namespace qkv
