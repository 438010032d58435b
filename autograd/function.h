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
#pragma once

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
                BackwardFn backward) const;

 private:
  const char* name_;
  OpScope scope_;
};

// True when an op with these inputs would be recorded.
bool needs_graph(const std::vector<Tensor>& inputs);

}  // namespace qkv::autograd
