// Observers: how debugging tools watch autograd without being woven into it.
//
// The engine and record() only announce what happens; tools that want to know (autograd/debug/:
// anomaly mode, the profiler, the graph dump's gradient norms) implement Observer and register
// themselves while they are on:
//
//   op_started / op_finished   an OpScope opens and closes: every op's forward (its autograd::Op
//                              opens one before the work) and each node's backward (the engine)
//   op_recorded                Op::record() saw an op's result: `node` is the node it attached, or
//                              null when the op joined no graph (grad mode off, no input needing it)
//   flops_counted              an op counted the floating-point operations of its kernels
//   backward_started           the engine sorted a graph and is about to walk it (anomaly mode
//                              looks for graphs of earlier steps still alive outside this one)
//   node_finished              a node's backward returned one gradient per input
//
// An observer keeps what it learns about a node on the node itself, in Node::notes (autograd/node.h),
// which the engine never reads and which die with the node. With no observer registered, each
// announcement is one relaxed load of an atomic counter and an untaken branch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/node.h"

namespace qkv {

enum class Pass { Forward, Backward };

namespace autograd {

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void op_started(const char* /*op*/, Pass /*pass*/) {}
  virtual void op_finished(const char* /*op*/, Pass /*pass*/) {}
  virtual void op_recorded(const char* /*op*/, const Tensor& /*out*/, const std::vector<Tensor>& /*inputs*/,
                           Node* /*node*/) {}
  virtual void flops_counted(int64_t /*flops*/) {}
  virtual void backward_started(const std::vector<std::shared_ptr<Node>>& /*order*/) {}
  virtual void node_finished(Node& /*node*/, const Tensor& /*grad*/, const std::vector<Tensor>& /*grads*/) {}
  // Whether node_finished reads the values of `grad`, the gradient the node received (anomaly mode
  // looks for NaN in it). While no observer does, a backward may write its result over that
  // gradient (BackwardContext::grad_is_scratch), and node_finished gets the reused buffer.
  virtual bool reads_node_gradient() const { return false; }
};

// Observers hear about every thread's ops, in the order they registered; one that cares about its
// own thread only checks that itself. An observer must stay alive until it is removed.
void add_observer(Observer* observer);
void remove_observer(Observer* observer);

namespace detail {
extern std::atomic<int> observer_count;
void notify_op_started(const char* op, Pass pass);
void notify_op_finished(const char* op, Pass pass);
void notify_op_recorded(const char* op, const Tensor& out, const std::vector<Tensor>& inputs, Node* node);
void notify_flops_counted(int64_t flops);
void notify_backward_started(const std::vector<std::shared_ptr<Node>>& order);
void notify_node_finished(Node& node, const Tensor& grad, const std::vector<Tensor>& grads);
}  // namespace detail

// True when some observer is registered: the test that guards every announcement.
inline bool observed() { return detail::observer_count.load(std::memory_order_relaxed) != 0; }

// True when some registered observer reads the gradient a node received (reads_node_gradient).
bool node_gradient_observed();

// Marks the running of one op: opened by every op's forward through its autograd::Op
// (autograd/function.h), under the name it records its node with, and by the engine around each
// node's backward. A fused op in the reference mode opens none of its own: the ops of its
// reference open theirs.
class OpScope {
 public:
  explicit OpScope(const char* op, Pass pass = Pass::Forward) {
    if (observed()) open(op, pass);
  }
  ~OpScope() {
    if (op_) detail::notify_op_finished(op_, pass_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  void open(const char* op, Pass pass) {
    op_ = op;
    pass_ = pass;
    detail::notify_op_started(op, pass);
  }
  const char* op_ = nullptr;  // set when observers heard the start: they hear the end too
  Pass pass_ = Pass::Forward;
};

// Adds to the FLOP count of the op in progress: a multiply-add is 2.
inline void add_flops(int64_t flops) {
  if (observed()) detail::notify_flops_counted(flops);
}

}  // namespace autograd
}  // namespace qkv
