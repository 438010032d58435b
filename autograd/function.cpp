#include "autograd/function.h"

#include "autograd/grad_mode.h"
#include "autograd/observer.h"

namespace qkv::autograd {
namespace {

// Gives `out` a node that remembers where each input's gradient goes and what backward needs.
Node* attach_node(const char* op, Tensor& out, const std::vector<Tensor>& inputs,
                  const std::vector<Tensor>& save, BackwardFn backward) {
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
  node->backward = std::move(backward);
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
                  BackwardFn backward) const {
  Node* node = needs_graph(inputs) ? attach_node(name_, out, inputs, save, std::move(backward)) : nullptr;
  if (observed()) detail::notify_op_recorded(name_, out, inputs, node);
  return out;
}

}  // namespace qkv::autograd
