#include "autograd/function.h"

#include "autograd/engine.h"
#include "tensor/error.h"
#include "tensor/factories.h"

#include "autograd/grad_mode.h"
#include "autograd/observer.h"

namespace qkv::autograd {
namespace {

// Gives `out` a node that remembers where each input's gradient goes and what backward needs.
Node* attach_node(const char* op, Tensor& out, const std::vector<Tensor>& inputs,
                  const std::vector<Tensor>& save, BackwardFn backward, BackwardFn graph_backward) {
  auto node = std::make_shared<Node>();
  node->op = op;
  node->inputs.reserve(inputs.size());
  for (const Tensor& in : inputs) {
    Edge e;
    if (in.defined()) {
      e.shape = in.shape();
      if (in.requires_grad()) {
        if (in.grad_fn())
          e.node = in.grad_fn();
        else
          e.leaf = in.shared_impl();
      }
    }
    node->inputs.push_back(std::move(e));
  }
  node->saved.reserve(save.size());
  node->saved_versions.reserve(save.size());
  for (const Tensor& s : save) {
    node->saved.push_back(s.defined() ? s.detach() : Tensor());
    node->saved_versions.push_back(s.defined() ? s.storage()->version() : 0);
  }
  // Where each saved tensor sits in the graph, for a backward that records a graph (create_graph):
  // an input (by identity), the output (not attached yet: re-attached to this node later), or a
  // tensor recorded before the op ran.
  for (size_t i = 0; i < save.size(); ++i) {
    const Tensor& s = save[i];
    if (!s.defined()) continue;
    int from = Node::kSavedConstant;
    for (size_t k = 0; k < inputs.size() && from == Node::kSavedConstant; ++k)
      if (inputs[k].defined() && s.impl() == inputs[k].impl() && node->inputs[k].needed()) from = static_cast<int>(k);
    if (from == Node::kSavedConstant && s.impl() == out.impl()) from = Node::kSavedOutput;
    if (from == Node::kSavedConstant && s.requires_grad()) {
      from = Node::kSavedRecorded;
      node->saved_graph.resize(save.size());
      node->saved_graph[i] = s.shared_impl();
    }
    if (from == Node::kSavedConstant) continue;
    node->saved_from.resize(save.size(), Node::kSavedConstant);
    node->saved_from[i] = from;
  }
  node->backward = std::move(backward);
  node->graph_backward = std::move(graph_backward);
  node->out_shape = out.shape();
  out.impl()->grad_fn = node;
  out.impl()->requires_grad = true;
  return node.get();
}

}  // namespace

bool needs_graph(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor Op::record(Tensor out, const std::vector<Tensor>& inputs, const std::vector<Tensor>& save,
                  BackwardFn backward, BackwardFn graph_backward) const {
  Node* node = needs_graph(inputs)
                   ? attach_node(name_, out, inputs, save, std::move(backward), std::move(graph_backward))
                   : nullptr;
  if (observed()) detail::notify_op_recorded(name_, out, inputs, node);
  return out;
}

Tensor identity(const Tensor& x) {
  const Op op("identity");
  return op.record(x.detach(), {x}, {},
                   [](const Tensor& g, const BackwardContext&) -> std::vector<Tensor> { return {g}; });
}

BackwardFn composed_backward(ReferenceFn reference, std::vector<int> input_at) {
  return [reference = std::move(reference), input_at = std::move(input_at)](
             const Tensor& g, const BackwardContext& ctx) -> std::vector<Tensor> {
    // Input i is its saved values attached where the input came from (Node::attach_input), and
    // passed through an identity of its own, so that an input given twice (x op x) receives its
    // two gradients apart.
    std::vector<Tensor> inputs(input_at.size()), wanted;
    std::vector<size_t> wanted_at;
    for (size_t i = 0; i < input_at.size(); ++i) {
      const bool unused = input_at[i] == kValueUnused;
      if (unused && !ctx.needs[i]) continue;
      const Tensor value = unused ? zeros(ctx.node->inputs[i].shape) : ctx.saved[static_cast<size_t>(input_at[i])];
      if (!value.defined()) continue;  // an input the op was given undefined (no bias)
      inputs[i] = ctx.node->attach_input(i, value.detach());
      // Every attached input, wanted or not, is a stop: the walk below never leaves the
      // reference's graph (a parameter that needs no gradient here must not receive one).
      if (inputs[i].requires_grad()) {
        inputs[i] = identity(inputs[i]);
        wanted.push_back(inputs[i]);
        wanted_at.push_back(i);
      }
    }
    std::vector<Tensor> grads(input_at.size());
    if (wanted.empty()) return grads;
    const Tensor out = reference(inputs, ctx.saved);
    if (!out.requires_grad()) return grads;
    BackwardOptions options;
    options.create_graph = true;
    const std::vector<Tensor> got = backward_until(out, g, wanted, options);
    for (size_t k = 0; k < wanted.size(); ++k)
      if (ctx.needs[wanted_at[k]]) grads[wanted_at[k]] = got[k];
    return grads;
  };
}

BackwardFn not_twice_differentiable(std::string why) {
  return [why = std::move(why)](const Tensor&, const BackwardContext&) -> std::vector<Tensor> {
    throw StateError("create_graph: " + why);
  };
}

}  // namespace qkv::autograd
