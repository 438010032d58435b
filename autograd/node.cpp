#include "autograd/node.h"

namespace qkv::autograd {

int64_t Node::saved_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& t : saved)
    if (t.defined()) bytes += t.storage()->numel() * static_cast<int64_t>(sizeof(float));
  return bytes;
}

std::vector<Tensor> Node::saved_attached(const std::shared_ptr<Node>& self) const {
  std::vector<Tensor> out = saved;
  for (size_t i = 0; i < saved_from.size(); ++i) {
    const int from = saved_from[i];
    if (from >= 0) {
      out[i] = attach_input(static_cast<size_t>(from), saved[i]);
    } else if (from == kSavedOutput) {
      out[i] = saved[i].detach();
      out[i].impl()->grad_fn = self;
      out[i].impl()->requires_grad = true;
    } else if (from == kSavedRecorded) {
      out[i] = Tensor(saved_graph[i]);
    }
  }
  return out;
}

Tensor Node::attach_input(size_t k, const Tensor& value) const {
  const Edge& edge = inputs.at(k);
  if (edge.leaf) return Tensor(edge.leaf);
  if (!edge.node) return value;
  Tensor t = value.detach();
  t.impl()->grad_fn = edge.node;
  t.impl()->requires_grad = true;
  return t;
}

Node::~Node() {
  // Destroying a node drops its inputs' nodes, which drop theirs... Done recursively, a long chain
  // would need one stack frame per node. Instead, take over the inputs of every node we hold the
  // last reference to, so each one dies with no inputs left to recurse into.
  std::vector<std::shared_ptr<Node>> pending;
  for (Edge& e : inputs)
    if (e.node) pending.push_back(std::move(e.node));
  for (std::shared_ptr<TensorImpl>& t : saved_graph)  // a saved tensor may hold a node no edge does
    if (t && t.use_count() == 1 && t->grad_fn) pending.push_back(std::move(t->grad_fn));
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    if (n.use_count() == 1) {
      for (Edge& e : n->inputs)
        if (e.node) pending.push_back(std::move(e.node));
      n->inputs.clear();
      for (std::shared_ptr<TensorImpl>& t : n->saved_graph)
        if (t && t.use_count() == 1 && t->grad_fn) pending.push_back(std::move(t->grad_fn));
      n->saved_graph.clear();
    }
  }
}

}  // namespace qkv::autograd
