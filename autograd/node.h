// The autograd graph.
//
// Every differentiable op that sees an input requiring grad attaches a Node to its output. The node
// remembers where each input's gradient must go (an Edge), the tensors backward will need (saved),
// and a backward function: given dL/d(output), it returns dL/d(input) for each input.
//
//   x ──┐
//       ├─ mul ── y ── sum ── loss        loss.backward() walks this graph from right to left
//   w ──┘
//
// An edge leads either to another node (the input was computed) or to a leaf tensor that requires
// grad (a parameter), whose .grad() accumulates the result.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::autograd {

struct Node;

struct Edge {
  std::shared_ptr<Node> node;        // the input was produced by this node, or
  std::shared_ptr<TensorImpl> leaf;  // the input is this leaf, which accumulates its gradient
  Shape shape;                       // the input's shape: its gradient must have it
  bool needed() const { return node || leaf; }
};

// What a backward function receives besides the output gradient.
struct BackwardContext {
  const std::vector<Tensor>& saved;  // the tensors saved at forward time, in order
  const std::vector<bool>& needs;    // needs[i]: input i wants a gradient (skip the work if not)
  // True when the engine holds the only handle to the output gradient, a whole contiguous buffer
  // that nothing reads after this call: backward may write an input's gradient of the same shape
  // over it and return it, instead of taking a new buffer (an elementwise backward then passes the
  // gradient's memory on to its input, as an in-place op would). Never in the reference mode.
  bool grad_is_scratch = false;
  // True when the engine frees the saved tensors right after this call (the graph is not
  // retained): backward may then write a gradient over a saved tensor whose storage nothing else
  // holds, once it has read what it needs there. Never in the reference mode.
  bool saved_freed_after = false;
  // The node being differentiated: its input edges (Node::attach_input) for a graph rule.
  const Node* node = nullptr;
};

// Returns one gradient per input, in order; an undefined Tensor for an input that needs none.
// Under create_graph (BackwardOptions) the function runs with grad mode on, `saved` holds the
// saved tensors attached to their graphs (Node::saved_graph) and g may itself require grad: a rule
// written with recorded tensor ops then records the graph of the gradient it returns.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad, const BackwardContext&)>;

// A note an observer attaches to a node; it finds its own among Node::notes by its type.
struct NodeNote {
  virtual ~NodeNote() = default;
};

struct Node {
  std::string op;  // "mul", "matmul", ... — also the gradcheck registry's key
  std::vector<Edge> inputs;
  std::vector<Tensor> saved;  // detached views of what backward reads
  std::vector<uint64_t> saved_versions;
  BackwardFn backward;
  // The rule that create_graph runs instead of `backward` when `backward` computes on buffers (a
  // kernel, an elementwise lambda): the same gradient written with differentiable ops, or a fused
  // op's composed reference differentiated (autograd::composed_backward). Null when `backward` is
  // itself written with recorded ops and serves both.
  BackwardFn graph_backward;
  // Where each saved tensor sits in the graph, so that create_graph's rules can read it attached
  // (saved_attached): input k of this node (k >= 0), its output (kSavedOutput), or a constant.
  // saved[i] itself stays a detached view: the fast path never sees the graph through it.
  static constexpr int kSavedConstant = -1, kSavedOutput = -2, kSavedRecorded = -3;
  std::vector<int> saved_from;  // empty when every saved tensor is a constant
  // A saved tensor that was neither an input nor the output but required grad (computed with
  // recorded ops before the op ran) is held as it was: kSavedRecorded.
  std::vector<std::shared_ptr<TensorImpl>> saved_graph;
  Shape out_shape;
  bool released = false;  // backward ran and the graph was freed

  // What observers (autograd/observer.h) keep about this node, each its own kind of note; the
  // engine never reads them, and they die with the node.
  std::vector<std::unique_ptr<NodeNote>> notes;

  // Scratch space of the engine during one backward pass.
  Tensor grad_sum;  // the sum of gradients arriving from consumers
  uint64_t visit_mark = 0;

  // The saved tensors as create_graph's rules read them: attached to their graphs. `self` is this
  // node, which a saved output is attached to.
  std::vector<Tensor> saved_attached(const std::shared_ptr<Node>& self) const;
  // `value` (input k's values) attached where input k came from: the leaf itself, or a view with
  // input k's node as its grad_fn, so gradients sent into it reach what input k reached. A constant
  // when input k needs no gradient.
  Tensor attach_input(size_t k, const Tensor& value) const;
  // Bytes of saved tensors' storages (the memory this node keeps alive for backward).
  int64_t saved_bytes() const;
  // The first note of type T, or null.
  template <class T>
  T* note() const {
    for (const auto& n : notes)
      if (auto* t = dynamic_cast<T*>(n.get())) return t;
    return nullptr;
  }

  ~Node();  // frees long chains iteratively: a 100,000-op graph must not overflow the stack
};

}  // namespace qkv::autograd
