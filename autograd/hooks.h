// Gradient hooks: a function of yours, called when a backward pass has finished a leaf's gradient.
//
//   const HookHandle h = register_post_accumulate_grad_hook(w, [](const Tensor& w) { ... w.grad() ... });
//
// As PyTorch's Tensor.register_post_accumulate_grad_hook: during loss.backward(), once every
// contribution of this pass has been added into w.grad(), the engine calls the hook with w. A
// parameter used three times in the graph is complete after the third; the engine counts the edges
// that lead to each hooked leaf before it walks the graph, and calls the hook when the last of them
// has been walked. So the hook runs once per pass for every hooked leaf the graph reaches, even one
// that received nothing (a path whose gradient was never needed): its .grad() is then what it was
// before the pass. A leaf the graph does not reach is not called at all.
//
// Hooks run on the thread that called backward, with grad mode off, in the order they were
// registered; the gradient is final, so a hook may read it, scale it or send it elsewhere (the
// data-parallel reducer starts an all-reduce there, dist/reducer.h). An exception from a hook
// leaves backward, and the rest of that graph is not walked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::autograd {

using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

struct LeafHooks {
  std::vector<std::pair<uint64_t, PostAccumulateGradHook>> hooks;  // (id, hook), in registration order
};

// Removes its hook when destroyed or by remove(); move-only. The leaf may die first.
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<TensorImpl> leaf, uint64_t id) : leaf_(std::move(leaf)), id_(id) {}
  HookHandle(HookHandle&& other) noexcept : leaf_(std::move(other.leaf_)), id_(std::exchange(other.id_, 0)) {}
  HookHandle& operator=(HookHandle&& other) noexcept;
  HookHandle(const HookHandle&) = delete;
  HookHandle& operator=(const HookHandle&) = delete;
  ~HookHandle() { remove(); }
  void remove();

 private:
  std::weak_ptr<TensorImpl> leaf_;
  uint64_t id_ = 0;  // 0: nothing to remove
};

// Registers `hook` on `leaf`, a tensor that requires grad and was computed by no op (a parameter).
// Throws StateError for any other tensor.
[[nodiscard]] HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);

namespace detail {
// How many hooks are registered: the engine counts edges only while some are.
int64_t hook_count();
// Calls the leaf's hooks in order.
void run_hooks(const std::shared_ptr<TensorImpl>& leaf);
}  // namespace detail

}  // namespace qkv::autograd
