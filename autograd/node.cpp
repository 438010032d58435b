#include "autograd/node.h"

namespace qkv::autograd {

int64_t Node::saved_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& t : saved)
    if (t.defined()) bytes += t.storage()->numel() * static_cast<int64_t>(sizeof(float));
  return bytes;
}

Node::~Node() {
  // Destroying a node drops its inputs' nodes, which drop theirs... Done recursively, a long chain
  // would need one stack frame per node. Instead, take over the inputs of every node we hold the
  // last reference to, so each one dies with no inputs left to recurse into.
  std::vector<std::shared_ptr<Node>> pending;
  for (Edge& e : inputs)
    if (e.node) pending.push_back(std::move(e.node));
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    if (n.use_count() == 1) {
      for (Edge& e : n->inputs)
        if (e.node) pending.push_back(std::move(e.node));
      n->inputs.clear();
    }
  }
}

}  // namespace qkv::autograd
