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
// With create_graph (BackwardOptions) the walk is the same, but grad mode stays on and each node
// runs a rule written with recorded ops (Node::graph_backward, or backward itself), reading its
// saved tensors attached to their graphs: the gradients come out as tensors of a new graph, which
// the next backward differentiates. grad() walks only what leads to the tensors it is asked about,
// and hands their gradients back instead of adding them into .grad().
// The fast path also lets buffers that nothing else reads serve again (a leaf adopts its first
// gradient, a backward writes over the gradient it received or over what it saved); the reference
// mode turns that off (engine.cpp, "Buffer reuse").
// Observers (autograd/observer.h) hear when the walk starts, when each node's backward runs and
// what it returned; the engine knows nothing of what they do with it.
#pragma once

#include "tensor/tensor.h"

namespace qkv::autograd {

void backward(const Tensor& root, const Tensor& grad, const BackwardOptions& options);

// For an op that runs a graph of its own inside its backward (checkpoint's recomputation, a fused
// op's composed reference): backward from `root` with `grad`, adding into the leaves it reaches as
// backward() does, but going no further than `stops` (computed tensors, each the output of a node
// of its own): the gradient that arrives at each is returned (undefined if none). The graph below
// the stops is another walk's, and is left alone.
std::vector<Tensor> backward_until(const Tensor& root, const Tensor& grad, const std::vector<Tensor>& stops,
                                   const BackwardOptions& options);

}  // namespace qkv::autograd

namespace qkv {

// The gradients of `outputs` with respect to `inputs`, as PyTorch's torch.autograd.grad: Σ_k
// grad_outputs[k]·∂outputs[k]/∂inputs[i] for each input i (a scalar output may omit its
// grad_output: 1). Nothing is added into any .grad(). With create_graph the results are themselves
// differentiable. An input that requires no grad, or that the outputs do not depend on (unless
// allow_unused), is an error.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const BackwardOptions& options = {});

}  // namespace qkv
