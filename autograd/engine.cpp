#include "autograd/engine.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <unordered_map>
#include <utility>

#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "autograd/node.h"
#include "autograd/observer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/reference_mode.h"

namespace qkv::autograd {
namespace {

// ---- Buffer reuse: the fast path's only tricks with memory, all off in the reference mode ------
//
// Each of the three lets a buffer that nothing else will read serve again instead of allocating
// one more: a leaf takes its first gradient as it is (adopt_first_gradient), a backward writes its
// input's gradient over the gradient it received (BackwardContext::grad_is_scratch) or over a
// saved tensor the engine frees after it (BackwardContext::saved_freed_after). Whether nothing
// else reads a buffer is a question of who holds it, which only reference counts answer; the
// reference mode (tensor/reference_mode.h) answers "someone may" every time, so that nothing is
// written over and a reader can follow the engine without these tricks.

// Whether `grad` is a whole buffer that nothing but this handle reaches: a fresh result, as most
// backward functions return, rather than g passed through or a view of a tensor still in use.
bool sole_owner(const Tensor& grad) {
  if (reference_mode()) return false;
  return grad.shared_impl().use_count() == 1 && grad.storage().use_count() == 1 && grad.is_contiguous() &&
         grad.offset() == 0 && grad.numel() == grad.storage()->numel();
}

// A leaf's first gradient becomes its own: taken as it is when nothing else reaches it (a copy of
// a weight's gradient at every step would cost as much as the transpose it saved), else copied,
// since a later += must not write into a tensor someone else reads.
Tensor adopt_first_gradient(const Tensor& grad) { return sole_owner(grad) ? grad.detach() : grad.clone(); }

// What a backward function may write over: g when nothing else holds it and no observer reads it
// after the call; the saved tensors when the engine frees them right after it.
BackwardContext reuse_allowed(const Node& node, const std::vector<bool>& needs, const Tensor& g,
                              bool observers_read_g, bool retain_graph) {
  return BackwardContext{node.saved, needs, !observers_read_g && sole_owner(g),
                         !retain_graph && !reference_mode()};
}

// ---- The walk ---------------------------------------------------------------------------------

// Leaves accumulate: a parameter used twice, or two backward calls without zero_grad, sums up.
void accumulate_into_leaf(TensorImpl& leaf, Tensor grad) {
  if (leaf.grad)
    Tensor(leaf.grad).add_(grad);
  else
    leaf.grad = adopt_first_gradient(grad).shared_impl();
}

// Nodes reachable from root, each before the nodes of its inputs: the reverse of a depth-first
// post-order, computed with an explicit stack.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  static std::atomic<uint64_t> pass{0};
  const uint64_t mark = ++pass;
  std::vector<std::shared_ptr<Node>> post_order;
  std::vector<std::pair<Node*, size_t>> stack;  // a node and the next input to visit
  std::vector<std::shared_ptr<Node>> owners;    // keeps the nodes on the stack alive
  root->visit_mark = mark;
  stack.emplace_back(root.get(), 0);
  owners.push_back(root);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const std::shared_ptr<Node>& child = node->inputs[next++].node;
      if (child && child->visit_mark != mark) {
        child->visit_mark = mark;
        stack.emplace_back(child.get(), 0);
        owners.push_back(child);
      }
    } else {
      post_order.push_back(std::move(owners.back()));
      owners.pop_back();
      stack.pop_back();
    }
  }
  std::reverse(post_order.begin(), post_order.end());
  return post_order;
}

void check_saved_versions(const Node& node) {
  for (size_t i = 0; i < node.saved.size(); ++i)
    if (node.saved[i].defined() && node.saved[i].storage()->version() != node.saved_versions[i])
      throw StateError("backward: a tensor saved by '" + node.op +
                       "' for its gradient was modified in place afterwards (saved tensor " +
                       std::to_string(i) + ", shape " + shape_str(node.saved[i].shape()) +
                       "); make a copy (clone) before modifying it");
}

void release(Node& node) {
  node.saved.clear();
  node.saved_versions.clear();
  node.backward = nullptr;
  node.inputs.clear();
  node.released = true;
}

// The gradient backward starts from: the one given, or 1 for a scalar.
Tensor seed_gradient(const Tensor& root, const Tensor& grad) {
  if (!root.defined()) throw StateError("backward: the tensor is undefined");
  if (!root.requires_grad())
    throw StateError("backward: the tensor of shape " + shape_str(root.shape()) +
                     " does not require grad and has no grad_fn (was it computed under "
                     "NoGradGuard, or from tensors without requires_grad?)");
  if (!grad.defined()) {
    if (root.numel() != 1)
      throw ShapeError("backward: a gradient can be implied only for a scalar output, got shape " +
                       shape_str(root.shape()) + "; pass the gradient explicitly");
    return ones(root.shape());
  }
  if (grad.shape() != root.shape())
    throw ShapeError("backward: gradient of shape " + shape_str(grad.shape()) +
                     " does not match the output's shape " + shape_str(root.shape()));
  return grad;
}

void check_not_released(const Node& node) {
  if (node.released)
    throw StateError("backward: trying to backward through the graph a second time (node '" + node.op +
                     "'); its saved tensors were freed after the first backward. "
                     "Pass retain_graph = true to the first call to keep them");
}

// Calls the node's backward function on g: one gradient per input, undefined where none is needed.
std::vector<Tensor> run_backward(Node& node, const Tensor& g, bool observers_read_g, bool retain_graph) {
  check_saved_versions(node);
  std::vector<bool> needs(node.inputs.size());
  for (size_t i = 0; i < needs.size(); ++i) needs[i] = node.inputs[i].needed();
  std::vector<Tensor> grads = node.backward(g, reuse_allowed(node, needs, g, observers_read_g, retain_graph));
  if (grads.size() != node.inputs.size())
    throw Error("backward of '" + node.op + "' returned " + std::to_string(grads.size()) + " gradients for " +
                std::to_string(node.inputs.size()) + " inputs");
  return grads;
}

// Sends each input its gradient: summed into the input's node, or accumulated into the leaf.
void send_to_inputs(Node& node, std::vector<Tensor> grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    Edge& edge = node.inputs[i];
    if (!edge.needed() || !grads[i].defined()) continue;
    if (grads[i].shape() != edge.shape)
      throw Error("backward of '" + node.op + "' produced a gradient of shape " +
                  shape_str(grads[i].shape()) + " for input " + std::to_string(i) + " of shape " +
                  shape_str(edge.shape));
    if (edge.node) {
      Tensor& sum = edge.node->grad_sum;
      sum = sum.defined() ? sum + grads[i] : grads[i];
    } else {
      accumulate_into_leaf(*edge.leaf, std::move(grads[i]));
    }
  }
}

// ---- Gradient hooks (autograd/hooks.h) --------------------------------------------------------
//
// A hooked leaf's gradient is complete once every edge of the graph that leads to it has been
// walked: count those edges before the walk, count them down as their nodes run (or are skipped
// because no gradient reached them), and call the hooks at zero.
class LeafCountdown {
 public:
  explicit LeafCountdown(const std::vector<std::shared_ptr<Node>>& order) {
    if (detail::hook_count() == 0) return;  // nothing to count
    for (const std::shared_ptr<Node>& node : order)
      for (const Edge& edge : node->inputs)
        if (edge.leaf && edge.leaf->hooks && !edge.leaf->hooks->hooks.empty()) ++remaining_[edge.leaf.get()];
  }
  // The node's edges have been walked: call the hooks of the leaves this completes.
  void walked(const Node& node) {
    if (remaining_.empty()) return;
    for (const Edge& edge : node.inputs) {
      if (!edge.leaf) continue;
      const auto it = remaining_.find(edge.leaf.get());
      if (it != remaining_.end() && --it->second == 0) detail::run_hooks(edge.leaf);
    }
  }

 private:
  std::unordered_map<const TensorImpl*, int64_t> remaining_;
};

}  // namespace

void backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  const Tensor seed = seed_gradient(root, grad);
  NoGradGuard no_grad;  // backward functions compute with ordinary ops, unrecorded
  const std::shared_ptr<Node>& root_node = root.grad_fn();
  if (!root_node) {  // backward() on a leaf: its gradient is the seed itself
    accumulate_into_leaf(*root.impl(), seed);
    detail::run_hooks(root.shared_impl());
    return;
  }
  const std::vector<std::shared_ptr<Node>> order = topological_order(root_node);
  LeafCountdown countdown(order);
  if (observed()) detail::notify_backward_started(order);
  const bool observers_read_g = node_gradient_observed();
  root_node->grad_sum = seed;
  for (const std::shared_ptr<Node>& node : order) {
    check_not_released(*node);
    Tensor g = std::move(node->grad_sum);
    node->grad_sum = Tensor();
    if (g.defined()) {  // else no gradient reached this node: all its consumers sent none
      const OpScope scope(node->op.c_str(), Pass::Backward);
      std::vector<Tensor> grads = run_backward(*node, g, observers_read_g, retain_graph);
      if (observed()) detail::notify_node_finished(*node, g, grads);
      g = Tensor();  // the gradients sent on may be views of g: a leaf can then take one alone
      send_to_inputs(*node, std::move(grads));
    }
    countdown.walked(*node);
    if (!retain_graph) release(*node);
  }
}

}  // namespace qkv::autograd
