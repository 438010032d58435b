// How an op joins the graph. An op opens an OpScope (so that observers, autograd/observer.h, see
// it run), computes its output with plain kernels, then calls record():
//
//   Tensor Tensor::mul(const Tensor& other) const {
//     const autograd::OpScope scope("mul");
//     Tensor out = ...forward...;
//     return autograd::record("mul", out, {*this, other}, /*save=*/{*this, other},
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

#include <string>
#include <vector>

#include "autograd/node.h"

namespace qkv::autograd {

Tensor record(const char* op, Tensor out, const std::vector<Tensor>& inputs, const std::vector<Tensor>& save,
              BackwardFn backward);

// True when an op with these inputs would be recorded.
bool needs_graph(const std::vector<Tensor>& inputs);

}  // namespace qkv::autograd
