// The graph side of Tensor: requires_grad, .grad(), backward(), detach(), and the two questions
// the data side asks of the graph: may this tensor be written in place, and which op produced it.
#include "tensor/tensor.h"

#include <string>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "tensor/error.h"

namespace qkv {

bool Tensor::requires_grad() const { return checked().requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  if (!is_leaf())
    throw StateError(
        "requires_grad_: only leaves can change requires_grad; this tensor was "
        "computed by '" +
        impl_->grad_fn->op + "' (use detach() first)");
  impl_->requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn == nullptr; }

Tensor Tensor::grad() const { return Tensor(checked().grad); }

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined() && grad.shape() != shape())
    throw ShapeError("set_grad: gradient of shape " + shape_str(grad.shape()) + " for a tensor of shape " +
                     shape_str(shape()));
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

std::string Tensor::grad_fn_name() const {
  const TensorImpl& t = checked();
  return t.grad_fn ? t.grad_fn->op : "";
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  BackwardOptions options;
  options.retain_graph = retain_graph;
  autograd::backward(*this, gradient, options);
}

// With create_graph a leaf's .grad() is a graph that may lead back to the leaf itself (a reference
// cycle, as in PyTorch): zero_grad() frees it; qkv::grad, which fills no .grad(), makes none.
void Tensor::backward(const Tensor& gradient, const BackwardOptions& options) const {
  autograd::backward(*this, gradient, options);
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

// An in-place write under a recorded graph could silently corrupt it; like PyTorch, refuse it on a
// tensor that requires grad while grad mode is on.
void Tensor::check_inplace(const char* op) const {
  if (requires_grad() && is_grad_enabled())
    throw StateError(std::string(op) +
                     ": in-place write to a tensor that requires grad while "
                     "grad mode is on; wrap it in qkv::NoGradGuard (as optimizers do)");
}

}  // namespace qkv
