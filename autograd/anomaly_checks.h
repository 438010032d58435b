// The checks of anomaly mode (autograd/anomaly.h), called by record() and the engine.
#pragma once

#include <memory>
#include <vector>

#include "autograd/node.h"

namespace qkv::autograd::anomaly {

// Ops run by a node's backward are checked as part of that backward, not each on its own: the
// engine marks the running of a backward function with this.
class InBackward {
 public:
  InBackward();
  ~InBackward();
  InBackward(const InBackward&) = delete;
  InBackward& operator=(const InBackward&) = delete;

 private:
  bool previous_;
};

// Throws AnomalyError if `out` holds a NaN (an Inf) that none of the inputs held.
void check_forward(const char* op, const Tensor& out, const std::vector<Tensor>& inputs);
// Gives a new node its creation stack and step, and counts it as alive.
void track(Node& node);
void forget(const Node& node);  // from ~Node, for a tracked node
// Throws AnomalyError if a gradient the node's backward returned holds a NaN (an Inf) that the
// incoming gradient did not.
void check_backward(const Node& node, const Tensor& grad, const std::vector<Tensor>& grads);
// At the start of a backward over `order`: warns about tracked nodes of earlier steps that are
// still alive outside this graph, then starts a new step.
void check_stale_graphs(const std::vector<std::shared_ptr<Node>>& order);

}  // namespace qkv::autograd::anomaly
