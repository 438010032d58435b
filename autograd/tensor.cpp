// The graph side of Tensor: requires_grad, .grad(), backward(), detach(), in-place writes (which
// must respect the graph) and printing (which shows the node that produced a tensor).
#include <sstream>
#include <string>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "tensor/error.h"
#include "tensor/kernels/elementwise.h"
#include "tensor/print.h"
#include "tensor/tensor.h"

namespace qkv {

bool Tensor::requires_grad() const { return checked().requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  if (!is_leaf())
    throw StateError("requires_grad_: only leaves can change requires_grad; this tensor was "
                     "computed by '" + impl_->grad_fn->op + "' (use detach() first)");
  impl_->requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn == nullptr; }

Tensor Tensor::grad() const { return Tensor(checked().grad); }

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined() && grad.shape() != shape())
    throw ShapeError("set_grad: gradient of shape " + shape_str(grad.shape()) +
                     " for a tensor of shape " + shape_str(shape()));
  checked().grad = grad.shared_impl();
}

void Tensor::zero_grad(bool set_to_none) {
  TensorImpl& t = checked();
  if (set_to_none || !t.grad) {
    t.grad.reset();
  } else {
    NoGradGuard no_grad;
    Tensor(t.grad).zero_();
  }
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const { return checked().grad_fn; }

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward(*this, gradient, retain_graph);
}

Tensor Tensor::detach() const {
  const TensorImpl& t = checked();
  return view_of(t.storage, t.shape, t.strides, t.offset);
}

const std::string& Tensor::name() const { return checked().name; }

Tensor& Tensor::set_name(std::string name) {
  checked().name = std::move(name);
  return *this;
}

// ---- in-place writes -----------------------------------------------------------------------

namespace {

// An in-place write under a recorded graph could silently corrupt it; like PyTorch, refuse it on a
// tensor that requires grad while grad mode is on. Every write bumps the storage's version, so a
// node that saved this tensor notices at backward time.
void check_inplace(const Tensor& t, const char* op) {
  if (t.requires_grad() && is_grad_enabled())
    throw StateError(std::string(op) + ": in-place write to a tensor that requires grad while "
                     "grad mode is on; wrap it in qkv::NoGradGuard (as optimizers do)");
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
  check_inplace(*this, "fill_");
  Tensor scalar = Tensor::empty({});
  scalar.data()[0] = value;
  inplace_binary(*this, scalar, "fill_", [](float, float v) { return v; });
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0.0f); }

Tensor& Tensor::copy_(const Tensor& src) {
  check_inplace(*this, "copy_");
  inplace_binary(*this, unaliased(src, *this), "copy_", [](float, float b) { return b; });
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, float alpha) {
  check_inplace(*this, "add_");
  const Tensor src = unaliased(other, *this);
  if (alpha == 1.0f)
    inplace_binary(*this, src, "add_", [](float a, float b) { return a + b; });
  else
    inplace_binary(*this, src, "add_", [alpha](float a, float b) { return a + alpha * b; });
  return *this;
}

Tensor& Tensor::mul_(float s) {
  check_inplace(*this, "mul_");
  Tensor scalar = Tensor::empty({});
  scalar.data()[0] = s;
  inplace_binary(*this, scalar, "mul_", [](float a, float b) { return a * b; });
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  check_inplace(*this, "mul_");
  inplace_binary(*this, unaliased(other, *this), "mul_", [](float a, float b) { return a * b; });
  return *this;
}

// ---- printing ------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  os << "tensor(" << format_values(t) << ", shape=" << shape_str(t.shape());
  if (t.grad_fn())
    os << ", grad_fn=<" << t.grad_fn()->op << ">";
  else if (t.requires_grad())
    os << ", requires_grad=True";
  return os << ")";
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace qkv
