// The fused layer_norm op against its composed reference, the same formula op by op (mean, sub,
// mul, rsqrt), forward and backward. Its finite-difference check is in gradcheck_layer_ops.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/ops/layer_norm.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

void check_close(const Tensor& a, const Tensor& b, float tol) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  for (size_t i = 0; i < va.size(); ++i) CHECK(std::fabs(va[i] - vb[i]) <= tol * (1.0f + std::fabs(vb[i])));
}

struct Run {
  Tensor y, dx, dw, db;
};

// Forward and backward of y·r summed, for a fixed random r.
Run run(bool fused, const Tensor& x0, const Tensor& w0, const Tensor& b0, float eps) {
  Tensor x = x0.detach().clone().requires_grad_();
  Tensor w = w0.defined() ? w0.detach().clone().requires_grad_() : Tensor();
  Tensor b = b0.defined() ? b0.detach().clone().requires_grad_() : Tensor();
  const Tensor y = fused ? layer_norm(x, w, b, eps) : layer_norm_reference(x, w, b, eps);
  Generator g(5);
  (y * randn(y.shape(), false, &g)).sum().backward();
  return {y.detach(), x.grad(), w.defined() ? w.grad() : Tensor(), b.defined() ? b.grad() : Tensor()};
}

}  // namespace

TEST_CASE("fused layer_norm matches the composed formula forward and backward") {
  Generator g(1);
  // An offset and scale per row, so the normalization has work to do.
  const Tensor x = randn({3, 5, 37}, false, &g) * 3.0f + randn({3, 5, 1}, false, &g) * 10.0f;
  const Tensor w = randn({37}, false, &g), b = randn({37}, false, &g);
  const Run fused = run(true, x, w, b, 1e-5f), ref = run(false, x, w, b, 1e-5f);
  check_close(fused.y, ref.y, 1e-5f);
  check_close(fused.dx, ref.dx, 1e-4f);
  check_close(fused.dw, ref.dw, 1e-4f);
  check_close(fused.db, ref.db, 1e-5f);
  // The result is normalized: each row of (y - b)/w has mean 0 and variance 1.
  const Tensor xhat = (fused.y - b) / w;
  check_close(xhat.mean({-1}), zeros({3, 5}), 1e-5f);
  check_close((xhat * xhat).mean({-1}), ones({3, 5}), 1e-3f);
}

TEST_CASE("fused layer_norm works without weight or bias") {
  Generator g(2);
  const Tensor x = randn({4, 9}, false, &g), w = randn({9}, false, &g), b = randn({9}, false, &g);
  const std::vector<std::pair<Tensor, Tensor>> cases = {{Tensor(), Tensor()}, {w, Tensor()}, {Tensor(), b}};
  for (const auto& [wc, bc] : cases) {
    CAPTURE(wc.defined());
    CAPTURE(bc.defined());
    const Run fused = run(true, x, wc, bc, 1e-3f), ref = run(false, x, wc, bc, 1e-3f);
    check_close(fused.y, ref.y, 1e-5f);
    check_close(fused.dx, ref.dx, 1e-4f);
    if (wc.defined()) check_close(fused.dw, ref.dw, 1e-4f);
    if (bc.defined()) check_close(fused.db, ref.db, 1e-5f);
  }
}

TEST_CASE("fused layer_norm reads strided inputs and skips gradients nobody needs") {
  Generator g(3);
  const Tensor base = randn({6, 4}, false, &g);
  Tensor x = base.detach().clone().requires_grad_();
  const Tensor w = ones({6});  // requires no grad: no dw is computed
  const Tensor y = layer_norm(x.t(), w, Tensor(), 1e-5f);  // (4, 6), not contiguous
  check_close(y, layer_norm_reference(base.t(), w, Tensor(), 1e-5f), 1e-5f);
  y.sum().backward();
  // Σ over a row of a normalized row is constant (0), so the gradient of y.sum() is 0.
  check_close(x.grad(), zeros({6, 4}), 1e-5f);
  CHECK_FALSE(w.grad().defined());
}

TEST_CASE("fused layer_norm gives bitwise identical results with 1 and 2 threads") {
  // Big enough that every loop of the kernel goes parallel; D odd so column ranges split unevenly.
  auto once = [] {
    Generator g(4);
    Tensor x = randn({300, 257}, true, &g), w = randn({257}, true, &g), b = randn({257}, true, &g);
    const Tensor y = layer_norm(x, w, b, 1e-5f);
    (y * randn({300, 257}, false, &g)).sum().backward();
    std::vector<float> out = y.to_vector();
    for (const Tensor& t : {x.grad(), w.grad(), b.grad()}) {
      const std::vector<float> v = t.to_vector();
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  };
  check_bitwise_identical_with_1_and_2_threads(once);
}

TEST_CASE("fused layer_norm names the shapes that do not fit") {
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 4}), ones({5}), Tensor()),
                       "layer_norm: weight of shape (5) does not fit input of shape (2,4): expected (4)", ShapeError);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 4}), Tensor(), ones({2, 4})),
                       "layer_norm: bias of shape (2,4) does not fit input of shape (2,4): expected (4)", ShapeError);
  CHECK_THROWS_AS(layer_norm(zeros({2, 0}), Tensor(), Tensor()), ShapeError);
  CHECK_THROWS_AS(layer_norm(scalar_tensor(1.0f), Tensor(), Tensor()), ShapeError);
  CHECK_THROWS_AS(layer_norm(zeros({2, 4}), Tensor(), Tensor(), -1.0f), ValueError);
}
