// What a differentiable backward (BackwardOptions::create_graph, autograd/engine.h) builds: a
// Hessian-vector product, forward mode, and recomputation.
//
//   hvp(f, x, v)    H·v for a scalar f, H = ∂²f/∂x²: the gradient ∇f recorded as a graph, then
//                   the gradient of ∇f·v (Pearlmutter 1994). No Hessian is formed.
//   jvp(f, x, v)    J·v, the directional derivative of f along v: forward mode, computed as the
//                   reverse of a reverse. The gradient of f with respect to x for an output
//                   gradient u, g(u) = Jᵀu, is linear in u, so its own gradient with respect to u,
//                   for the output gradient v, is (Jᵀ)ᵀv = Jv; u's value does not matter (zeros).
//   checkpoint(fn, x)   fn(x) with none of fn's intermediate tensors kept for backward; backward
//                   runs fn again, with the same random draws, and differentiates that.
//
// hvp and jvp take f as a function of copies of x (leaves of their own); like PyTorch's
// torch.autograd.functional, they return f's value beside the product.
#pragma once

#include <functional>
#include <vector>

#include "tensor/tensor.h"

namespace qkv {

using TensorsFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

struct FunctionalResult {
  Tensor output;                // f(inputs), detached
  std::vector<Tensor> product;  // one per input (hvp), or one of the output's shape (jvp)
};

// H·v: `f` returns a scalar; v has one tensor per input, of its shape.
FunctionalResult hvp(const TensorsFn& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v);
// The same for a function that reads its tensors directly, as a loss reads a model's parameters:
// `tensors` are leaves that require grad. Nothing is added into their .grad().
FunctionalResult hvp_tensors(const std::function<Tensor()>& f, const std::vector<Tensor>& tensors,
                             const std::vector<Tensor>& v);

// J·v: v has one tensor per input, of its shape; product[0] has f's output shape.
FunctionalResult jvp(const TensorsFn& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& v);

// fn(inputs), recorded as one node that keeps only `inputs`: backward runs fn again from them
// (with grad mode on, and the default generator where it stood, so dropout draws the same mask)
// and sends the gradients on, to the inputs and to whatever fn reads (a module's parameters).
// The gradients are those of fn itself, to the bit. Under create_graph the recomputed graph is
// differentiated with create_graph too; under qkv::grad, what fn reads besides its inputs gets its
// gradient there if it was asked for, and nowhere else. fn must compute the same thing twice: state
// other than the default generator (a module's own generator, a counter of forwards such as
// Performer's redraws) and parameters changed in place between forward and backward are not
// restored or detected.
Tensor checkpoint(const TensorsFn& fn, const std::vector<Tensor>& inputs);

}  // namespace qkv
