// The backward engine: reverse-mode automatic differentiation over the recorded graph.
//
// backward(root, grad):
//   1. order the nodes reachable from root so that every node comes before the nodes of its
//      inputs (a topological sort, done with an explicit stack: deep graphs, such as a GRU unrolled
//      over many steps, must not overflow the call stack);
//   2. walk that order, giving each node the sum of the gradients its consumers sent it, and
//      calling its backward function to get its inputs' gradients;
//   3. add (+=) the gradients that reach leaves into their .grad(), and call a leaf's hooks
//      (autograd/hooks.h) once the last edge leading to it has been walked;
//   4. free each node's saved tensors and closure once it has run, unless retain_graph.
// The fast path also lets buffers that nothing else reads serve again (a leaf adopts its first
// gradient, a backward writes over the gradient it received or over what it saved); the reference
// mode turns that off (engine.cpp, "Buffer reuse").
// Observers (autograd/observer.h) hear when the walk starts, when each node's backward runs and
// what it returned; the engine knows nothing of what they do with it.
#pragma once

#include "tensor/tensor.h"

namespace qkv::autograd {

void backward(const Tensor& root, const Tensor& grad, bool retain_graph);

}  // namespace qkv::autograd
