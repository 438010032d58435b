// In-place writes: fill_, copy_, add_, mul_. They are not differentiable (optimizers, initialization
// and the engine use them under NoGradGuard); the graph only decides whether one is allowed.
#include <string>

#include "tensor/error.h"
#include "tensor/kernels/elementwise.h"
#include "tensor/tensor.h"

namespace qkv {

namespace {

// Every write bumps the storage's version, so a graph node that saved this tensor notices at
// backward time; a write the graph forbids (Tensor::check_inplace) is refused first.
void start_write(const Tensor& t, const char* op) {
  t.check_inplace(op);
  t.storage()->bump_version();
}

// self = f(self, other) elementwise, with other broadcast to self's shape; self may be a view.
template <class F>
void inplace_binary(Tensor& self, const Tensor& other, const char* op, F f) {
  const Shape target = broadcast_shapes(self.shape(), other.shape(), op);
  if (target != self.shape())
    throw ShapeError(std::string(op) + ": cannot broadcast shape " + shape_str(other.shape()) +
                     " into the destination's shape " + shape_str(self.shape()));
  const Shape so = broadcast_strides(other.shape(), other.strides(), target);
  const kernels::Collapsed c = kernels::collapse_dims(self.shape(), {self.strides(), so});
  float* dst = self.data();
  const float* src = other.data();
  const int64_t nd = static_cast<int64_t>(c.shape.size());
  const int64_t id = nd ? c.strides[0][nd - 1] : 0, is = nd ? c.strides[1][nd - 1] : 0;
  kernels::for_each_piece<2>(c, [&](const int64_t* off, int64_t len) {
    float* d = dst + off[0];
    const float* s = src + off[1];
    if (id == 1 && is == 1) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) d[i] = f(d[i], s[i]);
    } else {
      for (int64_t i = 0; i < len; ++i) d[i * id] = f(d[i * id], s[i * is]);
    }
  });
}

// A source that shares storage with the destination is read out completely before writing.
Tensor unaliased(const Tensor& src, const Tensor& dst) {
  if (src.storage() != dst.storage()) return src;
  Tensor copy = Tensor::empty(src.shape());
  kernels::copy_strided(src.shape(), src.data(), src.strides(), copy.data(), copy.strides());
  return copy;
}

}  // namespace

Tensor& Tensor::fill_(float value) {
  start_write(*this, "fill_");
  Tensor scalar = Tensor::empty({});
  scalar.data()[0] = value;
  inplace_binary(*this, scalar, "fill_", [](float, float v) { return v; });
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0.0f); }

Tensor& Tensor::copy_(const Tensor& src) {
  start_write(*this, "copy_");
  inplace_binary(*this, unaliased(src, *this), "copy_", [](float, float b) { return b; });
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, float alpha) {
  start_write(*this, "add_");
  const Tensor src = unaliased(other, *this);
  if (alpha == 1.0f)
    inplace_binary(*this, src, "add_", [](float a, float b) { return a + b; });
  else
    inplace_binary(*this, src, "add_", [alpha](float a, float b) { return a + alpha * b; });
  return *this;
}

Tensor& Tensor::mul_(float s) {
  start_write(*this, "mul_");
  Tensor scalar = Tensor::empty({});
  scalar.data()[0] = s;
  inplace_binary(*this, scalar, "mul_", [](float a, float b) { return a * b; });
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  start_write(*this, "mul_");
  inplace_binary(*this, unaliased(other, *this), "mul_", [](float a, float b) { return a * b; });
  return *this;
}

}  // namespace qkv
