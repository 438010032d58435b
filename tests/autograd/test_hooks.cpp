// Gradient hooks: called once per backward pass, after a leaf's last contribution, in order.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "autograd/hooks.h"
#include "qkv.h"

using namespace qkv;
using autograd::register_post_accumulate_grad_hook;

TEST_CASE("a hook sees the leaf's whole gradient: a leaf used three times is complete after the third") {
  Tensor w = tensor({2.0f}, true);
  std::vector<float> seen;
  const auto handle = register_post_accumulate_grad_hook(w, [&](const Tensor& t) { seen.push_back(t.grad().item()); });
  // y = w·w·3 + w: the three uses are three edges; dy/dw = 6w + 1 = 13
  Tensor y = (w * w * 3.0f + w).sum();
  y.backward();
  CHECK(seen == std::vector<float>{13.0f});
  (w * 2.0f).sum().backward();  // accumulates: 13 + 2
  CHECK(seen == std::vector<float>{13.0f, 15.0f});
}

TEST_CASE("hooks run in the order leaves complete and in registration order on a leaf") {
  // loss = sum(b · (a·x)): b's only edge is walked first (at the last op), then a's.
  Tensor a = tensor({1.0f, 2.0f}, true);
  Tensor b = tensor({3.0f, 4.0f}, true);
  const Tensor x = tensor({5.0f, 6.0f});
  std::vector<std::string> order;
  const auto h1 = register_post_accumulate_grad_hook(a, [&](const Tensor&) { order.push_back("a"); });
  const auto h2 = register_post_accumulate_grad_hook(b, [&](const Tensor&) { order.push_back("b"); });
  const auto h3 = register_post_accumulate_grad_hook(b, [&](const Tensor&) { order.push_back("b2"); });
  (b * (a * x)).sum().backward();
  CHECK(order == std::vector<std::string>{"b", "b2", "a"});
}

TEST_CASE("a hook is removed by its handle and is not called for a leaf the graph does not reach") {
  Tensor a = tensor({1.0f}, true);
  Tensor unused = tensor({1.0f}, true);
  int calls = 0, unused_calls = 0;
  {
    const auto h = register_post_accumulate_grad_hook(a, [&](const Tensor&) { ++calls; });
    const auto u = register_post_accumulate_grad_hook(unused, [&](const Tensor&) { ++unused_calls; });
    (a * 2.0f).sum().backward();
    CHECK(calls == 1);
  }
  (a * 2.0f).sum().backward();
  CHECK(calls == 1);
  CHECK(unused_calls == 0);
  auto h = register_post_accumulate_grad_hook(a, [&](const Tensor&) { ++calls; });
  h.remove();
  (a * 2.0f).sum().backward();
  CHECK(calls == 1);
}

TEST_CASE("a hook on a tensor that is not a leaf needing grad is refused") {
  const Tensor plain = tensor({1.0f});
  CHECK_THROWS_WITH_AS(register_post_accumulate_grad_hook(plain, [](const Tensor&) {}),
                       doctest::Contains("does not require grad"), StateError);
  Tensor w = tensor({1.0f}, true);
  const Tensor y = w * 2.0f;
  CHECK_THROWS_WITH_AS(register_post_accumulate_grad_hook(y, [](const Tensor&) {}),
                       doctest::Contains("computed by 'mul_scalar'"), StateError);
}

TEST_CASE("backward on a leaf itself calls its hook") {
  Tensor w = tensor({1.0f, 2.0f}, true);
  int calls = 0;
  const auto h = register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++calls; });
  w.backward(tensor({1.0f, 1.0f}));
  CHECK(calls == 1);
}
