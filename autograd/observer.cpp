#include "autograd/observer.h"

#include <algorithm>
#include <mutex>

namespace qkv::autograd {
namespace {

// Recursive: an observer may run ops (a norm, say), whose announcements come back here.
std::recursive_mutex g_mutex;
std::vector<Observer*> g_observers;

template <class F>
void notify(F&& tell) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  for (Observer* o : g_observers) tell(*o);
}

}  // namespace

namespace detail {
std::atomic<int> observer_count{0};
}

void add_observer(Observer* observer) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  g_observers.push_back(observer);
  detail::observer_count.store(static_cast<int>(g_observers.size()));
}

void remove_observer(Observer* observer) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  g_observers.erase(std::remove(g_observers.begin(), g_observers.end(), observer), g_observers.end());
  detail::observer_count.store(static_cast<int>(g_observers.size()));
}

bool node_gradient_observed() {
  if (!observed()) return false;
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  return std::any_of(g_observers.begin(), g_observers.end(),
                     [](const Observer* o) { return o->reads_node_gradient(); });
}

namespace detail {

void notify_op_started(const char* op, Pass pass) {
  notify([&](Observer& o) { o.op_started(op, pass); });
}
void notify_op_finished(const char* op, Pass pass) {
  notify([&](Observer& o) { o.op_finished(op, pass); });
}
void notify_op_recorded(const char* op, const Tensor& out, const std::vector<Tensor>& inputs, Node* node) {
  notify([&](Observer& o) { o.op_recorded(op, out, inputs, node); });
}
void notify_flops_counted(int64_t flops) {
  notify([&](Observer& o) { o.flops_counted(flops); });
}
void notify_backward_started(const std::vector<std::shared_ptr<Node>>& order) {
  notify([&](Observer& o) { o.backward_started(order); });
}
void notify_node_finished(Node& node, const Tensor& grad, const std::vector<Tensor>& grads) {
  notify([&](Observer& o) { o.node_finished(node, grad, grads); });
}

}  // namespace detail
}  // namespace qkv::autograd
