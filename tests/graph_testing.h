// What a test asks of the graph behind a tensor.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "tensor/tensor.h"

namespace qkv::testing {

// Whether the graph behind `t` holds a node named `op`.
inline bool graph_has(const Tensor& t, const std::string& op) {
  std::vector<const autograd::Node*> stack;
  std::set<const autograd::Node*> seen;
  if (t.grad_fn()) stack.push_back(t.grad_fn().get());
  while (!stack.empty()) {
    const autograd::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (n->op == op) return true;
    for (const auto& e : n->inputs)
      if (e.node) stack.push_back(e.node.get());
  }
  return false;
}

// Every parameter's gradient as `run` leaves them, one vector of floats per parameter in order:
// for comparing two ways of computing them bit for bit (recomputation, checkpoint).
template <class Run>
std::vector<std::vector<float>> gradients_after(const std::vector<Tensor>& parameters, Run run) {
  run();
  std::vector<std::vector<float>> grads;
  for (const Tensor& p : parameters) grads.push_back(p.grad().to_vector());
  return grads;
}

}  // namespace qkv::testing
