#include "autograd/hooks.h"

#include "autograd/grad_mode.h"

#include <algorithm>
#include <atomic>

#include "tensor/error.h"

namespace qkv::autograd {
namespace {

std::atomic<int64_t> registered_hooks{0};
std::atomic<uint64_t> next_id{1};

}  // namespace

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  if (!leaf.defined() || !leaf.requires_grad() || !leaf.is_leaf())
    throw StateError("register_post_accumulate_grad_hook: the tensor must be a leaf that requires grad (a "
                     "parameter); " +
                     std::string(!leaf.defined()          ? "it is undefined"
                                 : !leaf.requires_grad() ? "it does not require grad"
                                                         : "it was computed by '" + leaf.grad_fn_name() + "'"));
  if (!hook) throw ValueError("register_post_accumulate_grad_hook: the hook is empty");
  TensorImpl& impl = *leaf.impl();
  if (!impl.hooks) impl.hooks = std::make_shared<LeafHooks>();
  ++registered_hooks;
  const uint64_t id = next_id++;
  impl.hooks->hooks.emplace_back(id, std::move(hook));
  return HookHandle(leaf.shared_impl(), id);
}

HookHandle& HookHandle::operator=(HookHandle&& other) noexcept {
  if (this != &other) {
    remove();
    leaf_ = std::move(other.leaf_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void HookHandle::remove() {
  if (id_ == 0) return;
  if (const std::shared_ptr<TensorImpl> leaf = leaf_.lock(); leaf && leaf->hooks)
    std::erase_if(leaf->hooks->hooks, [&](const auto& entry) { return entry.first == id_; });
  --registered_hooks;  // removed now, or gone with its leaf
  id_ = 0;
  leaf_.reset();
}

namespace detail {

int64_t hook_count() { return registered_hooks.load(std::memory_order_relaxed); }

void run_hooks(const std::shared_ptr<TensorImpl>& leaf) {
  if (!leaf->hooks) return;
  // A copy: a hook may register or remove hooks.
  const std::vector<std::pair<uint64_t, PostAccumulateGradHook>> hooks = leaf->hooks->hooks;
  const Tensor t(leaf);
  const NoGradGuard no_grad;  // as hooks.h promises, even in a backward that records a graph
  for (const auto& [id, hook] : hooks) hook(t);
}

}  // namespace detail
}  // namespace qkv::autograd
