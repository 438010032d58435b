#include "autograd/engine.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
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
                         !retain_graph && !reference_mode(), &node};
}

// ---- The walk ---------------------------------------------------------------------------------

// Leaves accumulate: a parameter used twice, or two backward calls without zero_grad, sums up.
// Under create_graph the gradient is a tensor of the new graph and is summed out of place (an
// in-place add would be an edit of a recorded tensor).
void accumulate_into_leaf(TensorImpl& leaf, Tensor grad, bool create_graph) {
  if (create_graph)  // a gradient someone else holds is copied (recorded) before it becomes .grad()
    leaf.grad = (leaf.grad ? Tensor(leaf.grad) + grad : sole_owner(grad) ? grad : grad.clone()).shared_impl();
  else if (leaf.grad)
    Tensor(leaf.grad).add_(grad);
  else
    leaf.grad = adopt_first_gradient(grad).shared_impl();
}

// Nodes reachable from the roots, each before the nodes of its inputs: the reverse of a depth-first
// post-order, computed with an explicit stack. The inputs of a node for which `stop` says true are
// not visited (unless another path leads to them).
template <class Stop>
std::vector<std::shared_ptr<Node>> topological_order(const std::vector<std::shared_ptr<Node>>& roots, Stop stop) {
  static std::atomic<uint64_t> pass{0};
  const uint64_t mark = ++pass;
  std::vector<std::shared_ptr<Node>> post_order;
  std::vector<std::pair<Node*, size_t>> stack;  // a node and the next input to visit
  std::vector<std::shared_ptr<Node>> owners;    // keeps the nodes on the stack alive
  for (const std::shared_ptr<Node>& root : roots) {
    if (root->visit_mark == mark) continue;
    root->visit_mark = mark;
    stack.emplace_back(root.get(), 0);
    owners.push_back(root);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->inputs.size() && !stop(node)) {
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
  node.saved_from.clear();
  node.saved_graph.clear();
  node.backward = nullptr;
  node.graph_backward = nullptr;
  node.inputs.clear();
  node.released = true;
}

// The gradient backward starts from: the one given, or 1 for a scalar.
Tensor seed_gradient(const Tensor& root, const Tensor& grad) {
  if (!root.defined()) throw StateError("backward: the tensor is undefined");
  if (!root.requires_grad())
    throw StateError("backward: the tensor of shape " + shape_str(root.shape()) +
                     " does not require grad and has no grad_fn (was it computed under "
                     "NoGradGuard, or from tensors without requires_grad, or is it a gradient "
                     "taken without create_graph?)");
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
// Under create_graph, the rule that records (graph_backward, or backward when it is written with
// recorded ops) runs on the saved tensors attached to their graphs, with no buffer reuse.
std::vector<Tensor> run_backward(const std::shared_ptr<Node>& node, const Tensor& g, const std::vector<bool>& needs,
                                 bool observers_read_g, bool retain_graph, bool create_graph) {
  check_saved_versions(*node);
  std::vector<Tensor> grads;
  if (create_graph) {
    const std::vector<Tensor> attached = node->saved_attached(node);
    const BackwardContext ctx{attached, needs, false, false, node.get()};
    grads = node->graph_backward ? node->graph_backward(g, ctx) : node->backward(g, ctx);
    // Every backward is linear in g: a gradient that does not require grad while g does was
    // computed outside the graph (on buffers), and its own gradients would be silently zero.
    if (g.requires_grad())
      for (size_t i = 0; i < grads.size(); ++i)
        if (grads[i].defined() && needs[i] && !grads[i].requires_grad())
          throw StateError("create_graph: the backward of '" + node->op + "' computed the gradient of input " +
                           std::to_string(i) + " outside the graph; it has no rule written with "
                           "differentiable ops (autograd/function.h, graph_backward)");
  } else {
    grads = node->backward(g, reuse_allowed(*node, needs, g, observers_read_g, retain_graph));
  }
  if (grads.size() != node->inputs.size())
    throw Error("backward of '" + node->op + "' returned " + std::to_string(grads.size()) + " gradients for " +
                std::to_string(node->inputs.size()) + " inputs");
  return grads;
}

// Where the gradients of a walk go. backward(): into every leaf it reaches (.grad() accumulates).
// grad(): to the tensors it asks about (`targets`), caught where they arrive (a leaf's edge, or the
// node that produced a computed tensor), nothing into any .grad(), and only the nodes that lead to
// a target are walked. backward_until: into the leaves, but the targets are stops, caught, and the
// walk goes no further than them.
class Targets {
 public:
  enum class Mode { Accumulate, Collect };
  Targets(const std::vector<Tensor>& targets, Mode mode) : caught_(targets.size()), mode_(mode) {
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].grad_fn())
        at_node_[targets[i].grad_fn().get()].push_back(i);
      else
        at_leaf_[targets[i].impl()].push_back(i);
    }
  }
  bool accumulates() const { return mode_ == Mode::Accumulate; }
  // backward_until in the middle of a grad() walk (a checkpoint recomputing in it): the leaves it
  // reaches are the enclosing walk's to catch, or to leave alone, not to accumulate into.
  Targets* enclosing = nullptr;
  bool leaf(const TensorImpl* t) const { return !at_leaf_.empty() && at_leaf_.count(t) != 0; }
  bool node(const Node* n) const { return !at_node_.empty() && at_node_.count(n) != 0; }
  void catch_at_leaf(const TensorImpl* t, const Tensor& g) { add(at_leaf_.at(t), g); }
  void catch_at_node(const Node* n, const Tensor& g) { add(at_node_.at(n), g); }
  std::vector<Tensor>& caught() { return caught_; }

  // runs[j]: order[j]'s backward is called. Collecting, only where some target lies below (order
  // lists inputs after their consumers, so walking it backwards meets every input first);
  // accumulating, everywhere but at a stop.
  std::vector<bool> runs(const std::vector<std::shared_ptr<Node>>& order) {
    std::vector<bool> runs(order.size());
    if (accumulates()) {
      for (size_t j = 0; j < order.size(); ++j) runs[j] = !node(order[j].get());
      return runs;
    }
    for (size_t j = order.size(); j-- > 0;) {
      bool any = order[j]->released;  // its edges are gone: run it, so that backward says why
      for (const Edge& e : order[j]->inputs)
        any = any || (e.leaf && leaf(e.leaf.get())) || (e.node && (node(e.node.get()) || walked_.count(e.node.get())));
      runs[j] = any;
      if (any) walked_.insert(order[j].get());
    }
    return runs;
  }

  // needs[i]: input i of `node` is to receive a gradient: every input that requires one when
  // accumulating; when collecting, only those on the way to a target (a gradient sent elsewhere
  // would wait in a node no one walks, and join the next backward through it).
  std::vector<bool> needs(const Node& n) const {
    std::vector<bool> needs(n.inputs.size());
    for (size_t i = 0; i < needs.size(); ++i) {
      const Edge& e = n.inputs[i];
      needs[i] = accumulates() ? e.needed()
                               : (e.leaf && leaf(e.leaf.get())) || (e.node && (node(e.node.get()) || walked_.count(e.node.get())));
    }
    return needs;
  }

 private:
  void add(const std::vector<size_t>& slots, const Tensor& g) {
    for (size_t i : slots) caught_[i] = caught_[i].defined() ? caught_[i] + g : g;
  }
  std::unordered_map<const TensorImpl*, std::vector<size_t>> at_leaf_;
  std::unordered_map<const Node*, std::vector<size_t>> at_node_;
  std::unordered_set<const Node*> walked_;  // collecting: the nodes that run
  std::vector<Tensor> caught_;
  Mode mode_;
};

// Sends each input its gradient: summed into the input's node, or accumulated into the leaf (or
// caught there, for grad()).
void send_to_inputs(Node& node, std::vector<Tensor> grads, const std::vector<bool>& needs, bool create_graph,
                    Targets& targets) {
  for (size_t i = 0; i < grads.size(); ++i) {
    Edge& edge = node.inputs[i];
    if (!edge.needed() || !grads[i].defined() || !needs[i]) continue;
    if (grads[i].shape() != edge.shape)
      throw Error("backward of '" + node.op + "' produced a gradient of shape " +
                  shape_str(grads[i].shape()) + " for input " + std::to_string(i) + " of shape " +
                  shape_str(edge.shape));
    if (edge.node) {
      Tensor& sum = edge.node->grad_sum;
      sum = sum.defined() ? sum + grads[i] : grads[i];
    } else if (targets.leaf(edge.leaf.get())) {
      targets.catch_at_leaf(edge.leaf.get(), grads[i]);
    } else if (targets.enclosing) {
      if (targets.enclosing->leaf(edge.leaf.get())) targets.enclosing->catch_at_leaf(edge.leaf.get(), grads[i]);
    } else if (targets.accumulates()) {
      accumulate_into_leaf(*edge.leaf, std::move(grads[i]), create_graph);
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
  // Counts the edges of the nodes that run (runs[j]): a stop's are another walk's to count.
  LeafCountdown(const std::vector<std::shared_ptr<Node>>& order, const std::vector<bool>& runs) {
    if (detail::hook_count() == 0) return;  // nothing to count
    for (size_t j = 0; j < order.size(); ++j)
      if (runs[j])
        for (const Edge& edge : order[j]->inputs)
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

// The Targets of the grad() walk whose backward functions are running on this thread, if any.
thread_local Targets* collecting = nullptr;

// The walk from `roots`, each seeded with its gradient, sending gradients where `targets` says.
void walk(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds, const BackwardOptions& options,
          Targets& targets) {
  const bool create_graph = options.create_graph, retain_graph = options.retains();
  // Backward functions compute with ordinary ops, unrecorded, unless the pass records a graph.
  const GradModeGuard grad_mode(create_graph);
  std::vector<std::shared_ptr<Node>> root_nodes;
  for (size_t r = 0; r < roots.size(); ++r) {
    if (roots[r].grad_fn()) {
      root_nodes.push_back(roots[r].grad_fn());
    } else if (targets.leaf(roots[r].impl())) {  // grad() of a leaf with respect to itself
      targets.catch_at_leaf(roots[r].impl(), seeds[r]);
    } else if (targets.accumulates()) {  // backward() on a leaf: its gradient is the seed itself
      accumulate_into_leaf(*roots[r].impl(), seeds[r], create_graph);
      detail::run_hooks(roots[r].shared_impl());
    }
  }
  if (root_nodes.empty()) return;
  const std::vector<std::shared_ptr<Node>> order = topological_order(
      root_nodes, [&](const Node* n) { return targets.accumulates() && targets.node(n); });  // a stop
  const std::vector<bool> runs = targets.runs(order);
  // Seeds go only where this walk takes them again: a root that leads to no target keeps none.
  for (size_t r = 0; r < roots.size(); ++r) {
    Node* node = roots[r].grad_fn().get();
    if (!node) continue;
    const size_t j = static_cast<size_t>(std::find_if(order.begin(), order.end(), [&](const auto& n) { return n.get() == node; }) - order.begin());
    if (runs[j] || targets.node(node)) node->grad_sum = node->grad_sum.defined() ? node->grad_sum + seeds[r] : seeds[r];
  }
  // If backward throws, what this walk left in its nodes' sums must not join a later walk.
  struct Sweep {
    const std::vector<std::shared_ptr<Node>>& order;
    const std::vector<bool>& runs;
    const Targets& targets;
    ~Sweep() {
      for (size_t j = 0; j < order.size(); ++j)
        if (runs[j] || targets.node(order[j].get())) order[j]->grad_sum = Tensor();
    }
  } sweep{order, runs, targets};
  // The walk grad() is in the middle of, if any: backward_until hands it the leaves it reaches.
  struct Collecting {
    Targets* previous;
    explicit Collecting(Targets* t) : previous(collecting) { collecting = t; }
    ~Collecting() { collecting = previous; }
  } scope(targets.accumulates() ? collecting : &targets);
  const bool counts = targets.accumulates() && !targets.enclosing;  // grad() runs no hooks
  LeafCountdown countdown(order, counts ? runs : std::vector<bool>(order.size(), false));
  if (observed()) detail::notify_backward_started(order);
  const bool observers_read_g = node_gradient_observed();
  for (size_t j = 0; j < order.size(); ++j) {
    const std::shared_ptr<Node>& node = order[j];
    const bool caught = targets.node(node.get());
    // What is neither walked nor caught is left alone: below a target it may be another walk's (a
    // fused op's composed reference is differentiated in the middle of a backward).
    if (!runs[j] && !caught) continue;
    if (runs[j]) check_not_released(*node);
    Tensor g = std::move(node->grad_sum);
    node->grad_sum = Tensor();
    if (g.defined()) {  // else no gradient reached this node: all its consumers sent none
      if (caught) targets.catch_at_node(node.get(), g);
      if (runs[j]) {
        const OpScope scope(node->op.c_str(), Pass::Backward);
        const std::vector<bool> needs = targets.needs(*node);
        std::vector<Tensor> grads = run_backward(node, g, needs, observers_read_g, retain_graph, create_graph);
        if (observed()) detail::notify_node_finished(*node, g, grads);
        g = Tensor();  // the gradients sent on may be views of g: a leaf can then take one alone
        send_to_inputs(*node, std::move(grads), needs, create_graph, targets);
      }
    }
    if (runs[j]) countdown.walked(*node);
    if (runs[j] && !retain_graph) release(*node);
  }
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad, const BackwardOptions& options) {
  Targets leaves({}, Targets::Mode::Accumulate);
  walk({root}, {seed_gradient(root, grad)}, options, leaves);
}

std::vector<Tensor> backward_until(const Tensor& root, const Tensor& grad, const std::vector<Tensor>& stops,
                                   const BackwardOptions& options) {
  Targets targets(stops, Targets::Mode::Accumulate);
  targets.enclosing = collecting;
  walk({root}, {seed_gradient(root, grad)}, options, targets);
  return std::move(targets.caught());
}

}  // namespace qkv::autograd

namespace qkv {

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const BackwardOptions& options) {
  if (outputs.empty()) throw ValueError("grad: no outputs given");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw ValueError("grad: " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                     std::to_string(outputs.size()) + " outputs (give one per output, or none)");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw ValueError("grad: input " + std::to_string(i) + " is undefined");
    if (!inputs[i].requires_grad())
      throw StateError("grad: input " + std::to_string(i) + " of shape " + shape_str(inputs[i].shape()) +
                       " does not require grad, so nothing was recorded for it to be differentiated with "
                       "respect to");
  }
  std::vector<Tensor> seeds;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& given = grad_outputs.empty() ? Tensor() : grad_outputs[k];
    try {
      seeds.push_back(autograd::seed_gradient(outputs[k], given));
    } catch (const Error& e) {
      throw StateError("grad: output " + std::to_string(k) + ": " + e.what());
    }
  }
  autograd::Targets targets(inputs, autograd::Targets::Mode::Collect);
  autograd::walk(outputs, seeds, options, targets);
  std::vector<Tensor> grads = std::move(targets.caught());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined() || options.allow_unused) continue;
    throw StateError("grad: input " + std::to_string(i) + " of shape " + shape_str(inputs[i].shape()) +
                     " was not used to compute the outputs (no path of the graph leads to it); pass "
                     "allow_unused to get an undefined gradient for it");
  }
  return grads;
}

}  // namespace qkv
