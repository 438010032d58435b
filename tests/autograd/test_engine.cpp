// The backward engine: accumulation, retain_graph, detach, NoGradGuard, deep graphs, memory.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/function.h"
#include "autograd/node.h"
#include "qkv.h"

using namespace qkv;

TEST_CASE("backward of a scalar fills the gradients of leaves") {
  // y = Σ (a·b + a)  →  dy/da = b + 1,  dy/db = a
  Tensor a = tensor({1.0f, 2.0f, 3.0f}, true);
  Tensor b = tensor({4.0f, 5.0f, 6.0f}, true);
  (a * b + a).sum().backward();
  CHECK(a.grad().to_vector() == std::vector<float>{5, 6, 7});
  CHECK(b.grad().to_vector() == std::vector<float>{1, 2, 3});
}

TEST_CASE("gradients accumulate across backward calls until zero_grad") {
  Tensor w = tensor({2.0f}, true);
  (w * 3.0f).sum().backward();
  (w * 3.0f).sum().backward();
  CHECK(w.grad().item() == 6.0f);
  w.zero_grad();
  CHECK_FALSE(w.grad().defined());
  (w * w).sum().backward();
  CHECK(w.grad().item() == 4.0f);
  w.zero_grad(/*set_to_none=*/false);
  CHECK(w.grad().item() == 0.0f);
}

TEST_CASE("a tensor used twice receives the sum of both gradients") {
  Tensor x = tensor({3.0f}, true);
  Tensor y = x * x + x.exp();  // dy/dx = 2x + e^x
  y.backward();
  CHECK(x.grad().item() == doctest::Approx(6.0f + std::exp(3.0f)));
}

TEST_CASE("backward with an explicit gradient for a non-scalar output") {
  Tensor x = tensor({1.0f, 2.0f}, true);
  Tensor y = x * 3.0f;
  y.backward(tensor({1.0f, 10.0f}));
  CHECK(x.grad().to_vector() == std::vector<float>{3, 30});
}

TEST_CASE("backward of a non-scalar without a gradient is refused") {
  Tensor x = tensor({1.0f, 2.0f}, true);
  CHECK_THROWS_WITH_AS((x * 2.0f).backward(), doctest::Contains("only for a scalar output"), ShapeError);
  CHECK_THROWS_WITH_AS((x * 2.0f).backward(tensor({1.0f})), doctest::Contains("does not match"), ShapeError);
}

TEST_CASE("a second backward needs retain_graph") {
  Tensor x = tensor({2.0f}, true);
  Tensor y = (x * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  CHECK(x.grad().item() == 8.0f);  // 4 + 4
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("retain_graph"), StateError);
}

TEST_CASE("backward frees the graph's saved tensors unless retained") {
  Tensor x = randn({256, 256}, true);
  const int64_t before = memory_stats().live_bytes;
  Tensor loss;
  {
    Tensor h = x.tanh().exp();  // tanh saves its output, exp saves its output
    loss = h.sum();
  }
  const int64_t with_graph = memory_stats().live_bytes;
  CHECK(with_graph - before >= 2 * 256 * 256 * 4);  // two saved 256×256 activations
  loss.backward();
  // What remains: x's gradient (one 256×256 buffer) and the scalar loss.
  CHECK(memory_stats().live_bytes - before <= 256 * 256 * 4 + 64);
}

TEST_CASE("backward frees the saved tensors of nodes that no gradient reached") {
  Tensor x = randn({256, 256}, true);
  const int64_t before = memory_stats().live_bytes;
  Tensor loss;
  {
    const Tensor h = x.tanh();  // saves its 256×256 output
    // An op whose backward sends nothing to its input: the tanh node receives no gradient.
    const Tensor cut = autograd::Op("cut").record(
        h.detach().clone(), {h}, {},
        [](const Tensor&, const autograd::BackwardContext&) { return std::vector<Tensor>{Tensor()}; });
    loss = cut.sum() + x.sum();
  }
  CHECK(memory_stats().live_bytes - before >= 256 * 256 * 4);
  loss.backward();
  CHECK(x.grad().to_vector() == ones({256, 256}).to_vector());  // from x.sum() alone
  CHECK(memory_stats().live_bytes - before <= 256 * 256 * 4 + 64);
}

TEST_CASE("a chain of 100000 ops backpropagates without overflowing the stack") {
  Tensor x = tensor({1.0f}, true);
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0f + 0.0f;
  y.backward();
  CHECK(x.grad().item() == 1.0f);
  // Dropping a long retained graph must not recurse either.
  Tensor z = x;
  for (int i = 0; i < 100000; ++i) z = z + 1.0f;
  z.backward(Tensor(), true);
  z = Tensor();
  CHECK(x.grad().item() == 2.0f);
}

TEST_CASE("detach cuts the graph and shares the data") {
  Tensor x = tensor({1.0f, 2.0f}, true);
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.data() == x.data());
  Tensor y = (x * d).sum();  // d is a constant: dy/dx = d
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{1, 2});
}

TEST_CASE("NoGradGuard stops recording and restores the mode") {
  Tensor x = tensor({1.0f}, true);
  {
    NoGradGuard guard;
    CHECK_FALSE(is_grad_enabled());
    Tensor y = x * 2.0f;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  CHECK(is_grad_enabled());
  CHECK((x * 2.0f).requires_grad());
}

TEST_CASE("gradients flow through views: permute slice and expand") {
  Tensor x = arange(6.0f).reshape({2, 3}).detach().requires_grad_();
  // y = Σ xᵀ[1:3, :] · 2, and the broadcast of x[0] over 4 rows.
  Tensor y = x.t().slice(0, 1, 3).sum() * 2.0f + x.select(0, 0).expand({4, 3}).sum();
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{4, 6, 6, 0, 2, 2});
}

TEST_CASE("broadcast gradients are summed back to the input's shape") {
  Tensor a = ones({2, 3}, true);
  Tensor bias = tensor({1.0f, 2.0f, 3.0f}, true);
  (a * bias).sum().backward();
  CHECK(bias.grad().shape() == Shape{3});
  CHECK(bias.grad().to_vector() == std::vector<float>{2, 2, 2});
  CHECK(a.grad().to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("an in-place change to a saved tensor is caught at backward") {
  Tensor x = tensor({1.0f, 2.0f}, true);
  Tensor h = x * 1.0f;  // not a leaf: no requires_grad refusal for it under NoGradGuard
  Tensor y = (h * h).sum();
  {
    NoGradGuard guard;
    h.mul_(2.0f);
  }
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("modified in place"), StateError);
}

TEST_CASE("in-place writes to a tensor that requires grad are refused while recording") {
  Tensor w = ones({2}, true);
  CHECK_THROWS_AS(w.add_(ones({2})), StateError);
  {
    NoGradGuard guard;
    w.add_(ones({2}), 0.5f);
  }
  CHECK(w.to_vector() == std::vector<float>{1.5f, 1.5f});
}

TEST_CASE("requires_grad_ only on leaves and backward needs a graph") {
  Tensor x = ones({2}, true);
  Tensor y = x * 2.0f;
  CHECK_THROWS_AS(y.requires_grad_(false), StateError);
  CHECK_THROWS_WITH_AS(ones({1}).backward(), doctest::Contains("does not require grad"), StateError);
}

TEST_CASE("backward on a leaf accumulates the seed") {
  Tensor x = tensor({1.0f}, true);
  x.backward();
  CHECK(x.grad().item() == 1.0f);
}

TEST_CASE("a leaf's first gradient is its own: a fresh one is taken without a copy, a shared one copied") {
  // linear's weight gradient reaches the weight through weight.t()'s backward, a view: the leaf
  // takes that buffer itself, so backward allocates the weight's gradient once and copies nothing.
  Tensor w = tensor({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}}, true);      // (out 2, in 3)
  const Tensor x = tensor({{{1.0f, 0.0f, 2.0f}}, {{0.0f, 1.0f, 1.0f}}});  // (2, 1, 3)
  const Tensor loss = x.matmul(w.t()).sum();
  const int64_t before = memory_stats().allocated_bytes;
  loss.backward();
  // dw[o][i] = Σ_rows x[row][i]. Buffers: the seed (1 float), sum's gradient made contiguous for
  // the product (4), dw (6); a copy into the leaf would add 6 more.
  CHECK(w.grad().to_vector() == std::vector<float>{1, 1, 3, 1, 1, 3});
  CHECK(w.grad().is_contiguous());
  CHECK(memory_stats().allocated_bytes - before <= 4 * (1 + 4 + 6));

  // add's backward sends the same g to both inputs: each leaf must get a copy of its own, or a
  // later += into one would change the other.
  Tensor a = tensor({1.0f, 2.0f}, true), b = tensor({3.0f, 4.0f}, true);
  (a + b).backward(tensor({1.0f, 1.0f}));
  a.grad().add_(tensor({10.0f, 10.0f}));
  CHECK(b.grad().to_vector() == std::vector<float>{1, 1});
  CHECK(a.grad().to_vector() == std::vector<float>{11, 11});
}

TEST_CASE("an elementwise backward writes over the gradient it receives when nothing else holds it") {
  const int64_t n = 4096;
  Tensor x = randn({n}, true);
  const Tensor c = randn({n});
  auto relu_grad_and_bytes = [&] {
    x.zero_grad();
    const Tensor loss = (x.relu() * c).sum();
    const int64_t before = memory_stats().allocated_bytes;
    loss.backward();
    return std::pair{x.grad().to_vector(), memory_stats().allocated_bytes - before};
  };
  // mul's backward makes g·c, a fresh buffer the engine alone holds; relu's backward writes
  // dx = g·c·[x > 0] over it, and x takes it as its gradient. Buffers: the seed (1 float), g·c (n).
  const auto [grad, bytes] = relu_grad_and_bytes();
  CHECK(bytes == 4 * (1 + n));
  const std::vector<float> xv = x.to_vector(), cv = c.to_vector();
  for (int64_t i = 0; i < n; ++i) CHECK(grad[i] == (xv[i] > 0.0f ? cv[i] : 0.0f));
  // Anomaly mode reads g after the backward call, so then g is left as it was: relu's gradient
  // takes a buffer of its own, with the same values. An observer that does not read g, such as
  // the profiler, changes nothing.
  {
    Profiler profiler;
    CHECK(relu_grad_and_bytes().second == 4 * (1 + n));
  }
  const DetectAnomaly anomaly;
  const auto [checked_grad, checked_bytes] = relu_grad_and_bytes();
  CHECK(checked_bytes == 4 * (1 + 2 * n));
  CHECK(checked_grad == grad);
}

TEST_CASE("graph nodes name their op and remember saved bytes") {
  Tensor x = randn({4, 8}, true);
  Tensor y = x.tanh();
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->op == "tanh");
  CHECK(y.grad_fn()->saved_bytes() == 4 * 8 * 4);
  CHECK(y.grad_fn()->out_shape == Shape{4, 8});
}
