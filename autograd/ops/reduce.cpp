// Reductions. A reduction over several dims is done one run of adjacent dims at a time with the
// (outer, n, inner) kernels of tensor/kernels/reduce.h; its backward broadcasts the gradient back.
// And masked_max (autograd/ops/reduce.h), with masked_max_reference, its composed reference.
#include "autograd/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "autograd/ops/map.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/reduce.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

// The dims to reduce, normalized, sorted and unique; all dims when `dims` is empty.
std::vector<int64_t> reduced_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(normalize_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw IndexError(std::string(op) + ": a dim appears twice in the list of dims to reduce");
  return out;
}

// The input's shape with reduced dims set to 1 (keepdim), or removed.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    if (!reduced) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// (outer, n, inner) sizes for reducing dims [first, last] of a contiguous tensor.
void split_sizes(const Shape& shape, int64_t first, int64_t last, int64_t& outer, int64_t& n,
                 int64_t& inner) {
  outer = n = inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < first ? outer : d <= last ? n : inner) *= shape[d];
}

// Σ over `dims` (sorted), keeping them as size 1.
Tensor sum_keepdim(const Tensor& x, const std::vector<int64_t>& dims) {
  Tensor cur = x.detach().contiguous();
  Shape shape = x.shape();
  // Runs of adjacent dims are one reduction each; go from the last run to the first.
  for (size_t j = dims.size(); j > 0;) {
    const int64_t last = dims[--j];
    int64_t first = last;
    while (j > 0 && dims[j - 1] == first - 1) first = dims[--j];
    int64_t outer, n, inner;
    split_sizes(shape, first, last, outer, n, inner);
    for (int64_t d = first; d <= last; ++d) shape[d] = 1;
    Tensor next = Tensor::empty(shape);
    if (n == 0)
      next.detach().zero_();
    else
      kernels::sum_dim(outer, n, inner, cur.data(), next.data());
    cur = next;
  }
  return cur;
}

}  // namespace

Tensor Tensor::sum(std::vector<int64_t> dims, bool keepdim) const {
  const autograd::Op op("sum");
  const std::vector<int64_t> rd = reduced_dims(dims, dim(), op.name());
  const Tensor reduced = sum_keepdim(*this, rd);
  const Shape out_shape = reduced_shape(shape(), rd, keepdim);
  Tensor out = Tensor::view_of(reduced.storage(), out_shape, contiguous_strides(out_shape), reduced.offset());
  const Shape in_shape = shape(), keep_shape = reduced_shape(shape(), rd, true);
  return op.record(out, {*this}, {},
      [in_shape, keep_shape](const Tensor& g, const BackwardContext&) -> Grads {
        return {g.reshape(keep_shape).expand(in_shape)};
      });
}

Tensor Tensor::mean(std::vector<int64_t> dims, bool keepdim) const {
  const std::vector<int64_t> rd = reduced_dims(dims, dim(), "mean");
  int64_t count = 1;
  for (int64_t d : rd) count *= shape()[d];
  return sum(rd, keepdim).div(static_cast<float>(count));
}

Tensor Tensor::var(std::vector<int64_t> dims, int64_t correction, bool keepdim) const {
  const std::vector<int64_t> rd = reduced_dims(dims, dim(), "var");
  int64_t count = 1;
  for (int64_t d : rd) count *= shape()[d];
  // Σ (x - mean)² / (N - correction), as torch.var; composed, so its gradient comes for free.
  const Tensor centered = *this - mean(rd, true);
  return (centered * centered).sum(rd, keepdim).div(static_cast<float>(std::max<int64_t>(count - correction, 0)));
}

Tensor Tensor::norm(float p, std::vector<int64_t> dims, bool keepdim) const {
  const autograd::Op op("norm");
  const std::vector<int64_t> rd = reduced_dims(dims, dim(), op.name());
  if (std::isinf(p) && p > 0) {
    // max |x|. Where several elements tie for the maximum, PyTorch splits the gradient evenly
    // among them; so the result is composed as the mean of |x| over the tied elements (a 0/1
    // mask, constant), whose gradient is sign(x)/count on each tie and 0 elsewhere.
    Tensor top;
    {
      NoGradGuard no_grad;
      top = abs();
      for (size_t j = rd.size(); j-- > 0;) top = top.max(rd[j], true).first;
    }
    const Tensor ties = abs().eq(top);
    const Tensor out = (abs() * ties).sum(rd, true) / ties.sum(rd, true);
    return keepdim ? out : out.reshape(reduced_shape(shape(), rd, false));
  }
  if (!(p > 0)) throw ValueError("norm: p must be positive (or INFINITY), got " + std::to_string(p));
  // ‖x‖_p = (Σ|x|^p)^(1/p);  d‖x‖/dx = sign(x)·|x|^(p-1) / ‖x‖^(p-1), taken as 0 where ‖x‖ = 0.
  Tensor y;
  {
    NoGradGuard no_grad;
    y = (p == 2.0f ? (*this * *this) : abs().pow(p)).sum(rd, true).pow(1.0f / p);
  }
  const Shape out_shape = reduced_shape(shape(), rd, keepdim);
  Tensor out = Tensor::view_of(y.storage(), out_shape, contiguous_strides(out_shape), y.offset());
  return op.record(out, {*this}, {*this, y},
      [p, keep_shape = y.shape(), name = op.name()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        return {ops::map3(g.reshape(keep_shape), ctx.saved[0], ctx.saved[1], name,
                          [p](float gv, float x, float n) {
                            if (n == 0.0f || x == 0.0f) return 0.0f;
                            const float sign = x > 0 ? 1.0f : -1.0f;
                            return p == 2.0f ? gv * x / n
                                             : gv * sign * std::pow(std::fabs(x) / n, p - 1.0f);
                          })};
      },
      [p, rd, keep_shape = y.shape()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        // The same, with the norm computed again from the attached x, so that it is differentiated
        // too; 1 stands in for a zero norm, whose gradient is taken as 0, and for p < 2 for x = 0,
        // where |x|^(p-1) has no derivative (for p >= 2 it is smooth there, and x = 0 stays in).
        const Tensor& x = ctx.saved[0];
        const Tensor n = x.norm(p, rd, true);
        const Tensor zero = p < 2.0f ? n.eq(0.0f) + x.eq(0.0f) : n.eq(0.0f) + zeros_like(x);
        const Tensor ratio = x.masked_fill(zero, 1.0f) / n.masked_fill(n.eq(0.0f), 1.0f);
        const Tensor d = p == 2.0f ? ratio : (x.gt(0.0f) - x.lt(0.0f)) * ratio.abs().pow(p - 1.0f);
        return {(g.reshape(keep_shape) * d).masked_fill(zero, 0.0f)};
      });
}

namespace {

// The gradient of picking one element along a dim: x seen as (outer, n, inner) gave
// out[o, i] = x[o, index[o, i], i], so dx is g scattered into zeros at `index`; the rest gets none.
Tensor gradient_of_picked(const Tensor& g, const IndexTensor& index, int64_t outer, int64_t n, int64_t inner,
                          const Shape& in_shape) {
  Tensor dx = zeros(in_shape);
  const Tensor gc = g.contiguous();
  const int64_t* idx = index.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      dx.data()[(o * n + idx[o * inner + i]) * inner + i] = gc.data()[o * inner + i];
  return dx;
}

// The same as a 0/1 mask of the input's shape, 1 at the picked elements: the gradient is then g
// broadcast along the dim times the mask, which a backward recording a graph can differentiate.
Tensor picked_mask(const IndexTensor& index, int64_t outer, int64_t n, int64_t inner, const Shape& in_shape) {
  return gradient_of_picked(ones(index.shape()), index, outer, n, inner, in_shape);
}

std::pair<Tensor, IndexTensor> extremum_dim(const char* name, const Tensor& x, int64_t dim, bool keepdim,
                                            bool is_max) {
  const autograd::Op op(name);
  const int64_t d = normalize_dim(dim, x.dim(), name);
  if (x.shape()[d] == 0)
    throw ShapeError(std::string(name) + ": cannot reduce over dim " + std::to_string(dim) +
                     " of size 0 in shape " + shape_str(x.shape()));
  const Tensor in = x.detach().contiguous();
  int64_t outer, n, inner;
  split_sizes(x.shape(), d, d, outer, n, inner);
  const Shape out_shape = reduced_shape(x.shape(), {d}, keepdim);
  Tensor values = Tensor::empty(out_shape);
  IndexTensor index = IndexTensor::full(out_shape, 0);
  kernels::max_dim(outer, n, inner, in.data(), values.data(), index.data(), is_max);
  values = op.record(values, {x}, {},
      [index, outer, n, inner, in_shape = x.shape()](const Tensor& g, const BackwardContext&) -> Grads {
        return {gradient_of_picked(g, index, outer, n, inner, in_shape)};
      },
      [index, outer, n, inner, in_shape = x.shape(), d](const Tensor& g, const BackwardContext&) -> Grads {
        Shape keep = in_shape;
        keep[d] = 1;
        return {g.reshape(keep).expand(in_shape) * picked_mask(index, outer, n, inner, in_shape)};
      });
  return {values, index};
}

// The largest (smallest) element. Where several tie, the gradient is split evenly among them, as
// PyTorch's full reductions torch.max() and torch.amax() do: dx = g·[x == m] / #{x == m}.
Tensor extremum_all(const char* name, const Tensor& x, bool is_max) {
  const autograd::Op op(name);
  if (x.numel() == 0) throw ShapeError(std::string(name) + ": the tensor is empty");
  Tensor m;
  {
    NoGradGuard no_grad;
    const Tensor flat = x.reshape({-1});
    m = is_max ? flat.max(0).first : flat.min(0).first;
  }
  return op.record(m, {x}, {x, m},
      [](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor ties = ctx.saved[0].eq(ctx.saved[1]);
        return {ties * (g / ties.sum())};
      });
}

}  // namespace

std::pair<Tensor, IndexTensor> Tensor::max(int64_t dim, bool keepdim) const {
  return extremum_dim("max", *this, dim, keepdim, true);
}
std::pair<Tensor, IndexTensor> Tensor::min(int64_t dim, bool keepdim) const {
  return extremum_dim("min", *this, dim, keepdim, false);
}
Tensor Tensor::max() const { return extremum_all("max", *this, true); }
Tensor Tensor::min() const { return extremum_all("min", *this, false); }
IndexTensor Tensor::argmax(int64_t dim, bool keepdim) const {
  NoGradGuard no_grad;
  return max(dim, keepdim).second;
}
IndexTensor Tensor::argmin(int64_t dim, bool keepdim) const {
  NoGradGuard no_grad;
  return min(dim, keepdim).second;
}

Tensor masked_max_reference(const Tensor& x, const IndexTensor& valid_lens) {
  const Tensor valid = sequence_mask(valid_lens, x.size(1)).unsqueeze(-1);  // (N, L, 1)
  return where(valid, x, scalar_tensor(-std::numeric_limits<float>::infinity())).max(1).first;
}

// x (N, L, F), valid_lens (N) in [1, L] → (N, F): the max over each sequence's first valid_lens
// positions. As with max(dim), the gradient goes to the position that was picked (the first, on ties).
Tensor masked_max(const Tensor& x, const IndexTensor& valid_lens) {
  if (x.dim() != 3)
    throw ShapeError("masked_max: input must be 3-d (N, L, F), got shape " + shape_str(x.shape()));
  const int64_t N = x.size(0), L = x.size(1), F = x.size(2);
  if (valid_lens.shape() != Shape{N})
    throw ShapeError("masked_max: valid_lens must be (N) = " + shape_str({N}) + " for input " +
                     shape_str(x.shape()) + ", got " + shape_str(valid_lens.shape()));
  for (int64_t n = 0; n < N; ++n)
    if (valid_lens[n] < 1 || valid_lens[n] > L)
      throw ValueError("masked_max: valid_lens[" + std::to_string(n) + "] is " +
                       std::to_string(valid_lens[n]) + ", expected a length in [1, " + std::to_string(L) +
                       "] (the max over no position is undefined)");
  if (reference_mode()) return masked_max_reference(x, valid_lens);
  const autograd::Op op("masked_max");
  const Tensor in = x.detach().contiguous();
  Tensor out = Tensor::empty({N, F});
  IndexTensor index = IndexTensor::full({N, F}, 0);
  kernels::masked_max(N, L, F, valid_lens.data(), in.data(), out.data(), index.data());
  // As in max(dim): out[n, f] = x[n, index[n, f], f], so the gradient goes to the picked position.
  return op.record(out, {x}, {},
      [index, N, L, F](const Tensor& g, const BackwardContext&) -> Grads {
        return {gradient_of_picked(g, index, N, L, F, {N, L, F})};
      },
      [index, N, L, F](const Tensor& g, const BackwardContext&) -> Grads {
        return {g.unsqueeze(1).expand({N, L, F}) * picked_mask(index, N, L, F, {N, L, F})};
      });
}

Tensor Tensor::sum_to(const Shape& target) const {
  if (shape() == target) return *this;
  if (broadcast_shapes(target, shape(), "sum_to") != shape())
    throw ShapeError("sum_to: shape " + shape_str(shape()) + " is not a broadcast of " + shape_str(target));
  // Sum the leading dims the target lacks, and the dims where the target has size 1.
  const int64_t lead = dim() - static_cast<int64_t>(target.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < dim(); ++d)
    if (d < lead || (target[d - lead] == 1 && shape()[d] != 1)) dims.push_back(d);
  return dims.empty() ? reshape(target) : sum(dims, true).reshape(target);
}

}  // namespace qkv
