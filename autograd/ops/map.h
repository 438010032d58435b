// Forward helpers shared by the elementwise ops: a new tensor from a function applied to each
// element of one, two or three broadcast operands. They compute values only; the op that calls
// them records the graph.
#pragma once

#include <string>

#include "tensor/error.h"
#include "tensor/kernels/elementwise.h"
#include "tensor/tensor.h"

namespace qkv::ops {

// out[i] = f(x[i]), same shape as x.
template <class F>
Tensor map1(const Tensor& x, F f) {
  const Tensor in = x.is_contiguous() ? x : x.detach().contiguous();
  Tensor out = Tensor::empty(x.shape());
  kernels::unary_map(out.numel(), in.data(), out.data(), f);
  return out;
}

// out = f(a, b) with a and b broadcast to out's shape, which is contiguous. out may be a itself
// (then every element is read before it is written, in the same iteration).
template <class F>
void map2_into(Tensor& out, const Tensor& a, const Tensor& b, F f) {
  const Shape& shape = out.shape();
  kernels::binary_map(shape, a.data(), broadcast_strides(a.shape(), a.strides(), shape), b.data(),
                      broadcast_strides(b.shape(), b.strides(), shape), out.data(), f);
}

// out = f(a, b) with a and b broadcast together; `op` names the op in shape errors.
template <class F>
Tensor map2(const Tensor& a, const Tensor& b, const char* op, F f) {
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), op));
  map2_into(out, a, b, f);
  return out;
}

// out = f(a, b, c), all three broadcast together.
template <class F>
Tensor map3(const Tensor& a, const Tensor& b, const Tensor& c, const char* op, F f) {
  const Shape shape = broadcast_shapes(broadcast_shapes(a.shape(), b.shape(), op), c.shape(), op);
  Tensor out = Tensor::empty(shape);
  kernels::ternary_map(shape, a.data(), broadcast_strides(a.shape(), a.strides(), shape), b.data(),
                       broadcast_strides(b.shape(), b.strides(), shape), c.data(),
                       broadcast_strides(c.shape(), c.strides(), shape), out.data(), f);
  return out;
}

}  // namespace qkv::ops
