// How an op joins the graph. An op names itself once, with an autograd::Op: it opens the op's
// OpScope (so that observers, autograd/observer.h, see it run), and after the forward, computed
// with plain kernels, records the node under the same name:
//
//   Tensor Tensor::mul(const Tensor& other) const {
//     const autograd::Op op("mul");
//     Tensor out = ...forward...;
//     return op.record(out, {*this, other}, /*save=*/{*this, other},
//         [](const Tensor& g, const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
//           const Tensor &a = ctx.saved[0], &b = ctx.saved[1];
//           return {ctx.needs[0] ? (g * b).sum_to(a.shape()) : Tensor(),
//                   ctx.needs[1] ? (g * a).sum_to(b.shape()) : Tensor()};
//         });
//   }
//
// When grad mode is off or no input requires grad, record() returns `out` untouched and the graph
// costs nothing. Backward functions run with grad mode off and may use any Tensor op. Tensors they
// need go through `save` (not lambda captures): saving detaches them (no cycles through the output's
// own node), lets a debugger report the bytes kept alive, and lets the engine detect a saved
// tensor that was modified in place before backward. Observers hear of every call, recorded or not.
//
// Twice differentiable. A backward asked to record a graph of its own (BackwardOptions::
// create_graph) runs the same function with grad mode on and the saved tensors attached to their
// graphs: mul's rule above, written with recorded ops, then records the gradient's graph by itself.
// A backward that computes on buffers (map2 with a lambda, a kernel) records nothing, so it passes
// a second rule, `graph_backward`, that writes the same gradient with differentiable ops:
//
//   return op.record(out, {x}, {x}, /*backward=*/[...](g, ctx) { return {map2(g, x, dtanh)}; },
//                    /*graph_backward=*/[](g, ctx) { return {g * (1.0f - y * y)}; });
//
// A fused op passes composed_backward(its composed reference): the reference is run again from the
// saved inputs and differentiated, so what the fast path fused the graph spells out.
//
// A buffer backward without graph_backward is refused under create_graph when the gradient g it
// receives requires grad (its result then cannot, having been computed outside the graph); at the
// start of a pass, where g is the constant seed, it cannot be told from a rule whose result is
// constant. gradgradcheck over the registry is what proves an op's rules: give every new op an entry.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "autograd/observer.h"

namespace qkv::autograd {

class Op {
 public:
  explicit Op(const char* name) : name_(name), scope_(name) {}
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  const char* name() const { return name_; }
  // `out` with a node attached when grad mode is on and some input requires grad: the node holds
  // an edge per input, the `save`d tensors and `backward`.
  Tensor record(Tensor out, const std::vector<Tensor>& inputs, const std::vector<Tensor>& save,
                BackwardFn backward, BackwardFn graph_backward = nullptr) const;

 private:
  const char* name_;
  OpScope scope_;
};

// True when an op with these inputs would be recorded.
bool needs_graph(const std::vector<Tensor>& inputs);

// The graph_backward of a fused op: `reference` computes the op's output from its inputs with
// composed ops (and may read the saved tensors for constants: a mask, a table). Input i is taken
// from the saved tensors at input_at[i] (its values, attached where the input came from), or, for
// kValueUnused, is zeros: an input the gradient does not depend on (a bias, the input of a linear
// op such as unfold). The reference is run again and differentiated with create_graph.
using ReferenceFn = std::function<Tensor(const std::vector<Tensor>& inputs, const std::vector<Tensor>& saved)>;
constexpr int kValueUnused = -1;
BackwardFn composed_backward(ReferenceFn reference, std::vector<int> input_at);

// x again, as the output of a node of its own that passes its gradient through: a place where a
// walk inside a backward (backward_until, autograd/engine.h) can stop and collect.
Tensor identity(const Tensor& x);

// The graph_backward of an op that cannot be differentiated twice: create_graph through it fails,
// saying `why`.
BackwardFn not_twice_differentiable(std::string why);

}  // namespace qkv::autograd
