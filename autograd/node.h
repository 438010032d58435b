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
};

// Returns one gradient per input, in order; an undefined Tensor for an input that needs none.
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
  Shape out_shape;
  bool released = false;  // backward ran and the graph was freed

  // What observers (autograd/observer.h) keep about this node, each its own kind of note; the
  // engine never reads them, and they die with the node.
  std::vector<std::unique_ptr<NodeNote>> notes;

  // Scratch space of the engine during one backward pass.
  Tensor grad_sum;  // the sum of gradients arriving from consumers
  uint64_t visit_mark = 0;

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
