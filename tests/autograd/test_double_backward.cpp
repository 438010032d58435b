// Gradients of gradients: qkv::grad, create_graph and retain_graph, the errors that say why a
// second derivative cannot be taken, hvp and jvp against finite differences, and checkpoint.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "autograd/ops/layer_norm.h"
#include "autograd/ops/map.h"
#include "graph_testing.h"
#include "qkv.h"
#include "tensor/reference_mode.h"

using namespace qkv;

namespace {

BackwardOptions create_graph() {
  BackwardOptions o;
  o.create_graph = true;
  return o;
}

// Central differences of a vector function of one tensor along v: (f(x + εv) − f(x − εv)) / 2ε.
std::vector<float> directional(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, const Tensor& v,
                               float eps = 1e-2f) {
  const NoGradGuard no_grad;
  const std::vector<float> plus = f(x + v * eps).to_vector(), minus = f(x - v * eps).to_vector();
  std::vector<float> d(plus.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = (plus[i] - minus[i]) / (2.0f * eps);
  return d;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

}  // namespace

TEST_CASE("grad returns first and second derivatives as tensors") {
  // y = x³:  dy/dx = 3x²,  d²y/dx² = 6x,  d³y/dx³ = 6
  const Tensor x = tensor({-1.0f, 0.5f, 2.0f}, true);
  const Tensor y = (x * x * x).sum();
  const Tensor dy = grad({y}, {x}, {}, create_graph())[0];
  CHECK(dy.to_vector() == std::vector<float>{3.0f, 0.75f, 12.0f});
  CHECK(dy.requires_grad());
  const Tensor d2y = grad({dy.sum()}, {x}, {}, create_graph())[0];
  CHECK(d2y.to_vector() == std::vector<float>{-6.0f, 3.0f, 12.0f});
  const Tensor d3y = grad({d2y.sum()}, {x})[0];
  CHECK(d3y.to_vector() == std::vector<float>{6.0f, 6.0f, 6.0f});
  CHECK_FALSE(d3y.requires_grad());  // taken without create_graph: a plain tensor
  CHECK_FALSE(x.grad().defined());   // grad() adds into no .grad()
}

TEST_CASE("grad sums over several outputs with their grad_outputs and asks only what leads to its inputs") {
  const Tensor a = tensor({1.0f, 2.0f}, true), b = tensor({3.0f, -1.0f}, true);
  const Tensor u = a * b, w = a.exp();
  const std::vector<Tensor> g = grad({u, w}, {a}, {tensor({1.0f, 2.0f}), tensor({0.5f, 0.0f})});
  // d/da (1·u₀ + 2·u₁ + 0.5·w₀) = (b₀ + 0.5·e^a₀, 2·b₁)
  CHECK(g[0].to_vector()[0] == doctest::Approx(3.0f + 0.5f * std::exp(1.0f)));
  CHECK(g[0].to_vector()[1] == doctest::Approx(-2.0f));
  CHECK_FALSE(b.grad().defined());
  // An input that is an intermediate tensor: the gradient that arrives at it.
  const Tensor s = a * 2.0f;
  const Tensor loss = (s * s).sum();
  CHECK(grad({loss}, {s})[0].to_vector() == std::vector<float>{4.0f, 8.0f});
}

TEST_CASE("grad leaves nothing behind in the nodes it does not walk") {
  // w reaches y through a node of its own (w.t()); grad() with respect to c alone must not leave
  // w.t()'s gradient waiting there for the next backward through it.
  const Tensor c = tensor({0.5f, -1.0f}, true), w = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}, true);
  const Tensor y = c.unsqueeze(0).tanh().matmul(w.t()).sum();
  BackwardOptions keep;
  keep.retain_graph = true;
  grad({y}, {c}, {}, keep);
  y.backward();
  // dy/dw[i][j] = tanh(c_j), for each row i
  const float t0 = std::tanh(0.5f), t1 = std::tanh(-1.0f);
  check_close(w.grad().to_vector(), {t0, t1, t0, t1}, 1e-6f);
}

TEST_CASE("grad leaves no seed behind in an output that leads to none of its inputs") {
  Tensor w = tensor({3.0f}, true);
  const Tensor x = tensor({2.0f}, true);
  const Tensor a = (x * x).sum(), b = (w * w).sum();
  BackwardOptions keep;
  keep.retain_graph = true;
  CHECK(grad({a, b}, {x}, {}, keep)[0].item() == 4.0f);
  b.backward();
  CHECK(w.grad().item() == 6.0f);  // 2w, not twice that
}

TEST_CASE("grad with respect to some inputs, through fused ops and checkpoint, touches no .grad() and matches backward") {
  // A layer norm, attention and a GRU (fused in the fast mode), and a checkpointed block: grad()
  // with respect to x alone gives backward's x.grad(), and the parameters' .grad() stay undefined.
  manual_seed(4);
  nn::TransformerEncoderBlock block(nn::TransformerBlockOptions{.num_hiddens = 8, .ffn_num_hiddens = 16,
                                                                .num_heads = 2, .dropout = 0.0f});
  nn::GRU gru(8, 4);
  const Tensor x0 = randn({2, 3, 8});
  for (const bool reference : {false, true})
    for (const bool recompute : {false, true}) {
      CAPTURE(reference);
      CAPTURE(recompute);
      const ReferenceModeGuard mode(reference);
      const auto loss_of = [&](const Tensor& x) {
        const auto body = [&](const std::vector<Tensor>& in) { return block.forward(in[0], IndexTensor{3, 2}); };
        const Tensor h = recompute ? checkpoint(body, {x}) : body({x});
        return (gru.forward(h.transpose(0, 1)).output.tanh() * 0.5f).sum();
      };
      Tensor x = x0.clone().requires_grad_(true);
      loss_of(x).backward();
      const std::vector<float> want = x.grad().to_vector();
      block.zero_grad();
      gru.zero_grad();
      const Tensor fresh = x0.clone().requires_grad_(true);
      for (const bool twice : {false, true}) {
        BackwardOptions o;
        o.create_graph = twice;
        check_close(grad({loss_of(fresh)}, {fresh}, {}, o)[0].to_vector(), want, 1e-5f);
        for (const Tensor& p : block.parameters()) CHECK_FALSE(p.grad().defined());
        for (const Tensor& p : gru.parameters()) CHECK_FALSE(p.grad().defined());
      }
    }
}

TEST_CASE("create_graph gives each leaf a .grad() of its own") {
  // a + b sends the same gradient to both leaves: an in-place change of one must not reach the other.
  Tensor a = tensor({1.0f, 2.0f}, true), b = tensor({3.0f, 4.0f}, true);
  (a + b).sum().backward({}, create_graph());
  {
    const NoGradGuard no_grad;
    a.grad().detach().mul_(5.0f);
  }
  CHECK(b.grad().to_vector() == std::vector<float>{1.0f, 1.0f});
  // pow's second derivative at a = 0 with exponent 0 is 0, not 0·∞
  const Tensor base = tensor({0.0f, 1.0f}, true), e = tensor({0.0f, 2.0f}, true);
  const Tensor d = grad({base.pow(e).sum()}, {base}, {}, create_graph())[0];
  for (float v : grad({d.sum()}, {base, e})[1].to_vector()) CHECK(std::isfinite(v));
}

TEST_CASE("backward with create_graph leaves differentiable gradients in .grad()") {
  // E = Σ x⁴/4, so the force F = −dE/dx = −x³, and a loss on the force, L = Σ F² = Σ x⁶, has
  // dL/dx = 6x⁵.
  Tensor x = tensor({0.5f, -1.5f}, true);
  (x.pow(4.0f) / 4.0f).sum().backward({}, create_graph());
  const Tensor force = -x.grad();
  CHECK(force.requires_grad());
  x.zero_grad();
  (force * force).sum().backward();
  check_close(x.grad().to_vector(), {6.0f * std::pow(0.5f, 5.0f), 6.0f * std::pow(-1.5f, 5.0f)}, 1e-5f);
}

TEST_CASE("differentiating what was not recorded is an error that says why") {
  const Tensor x = tensor({1.0f, 2.0f}, true);
  SUBCASE("a gradient taken without create_graph") {
    const Tensor g = grad({(x * x).sum()}, {x})[0];
    CHECK_THROWS_WITH_AS(grad({g.sum()}, {x}), doctest::Contains("create_graph"), StateError);
  }
  SUBCASE("an input the outputs do not depend on") {
    const Tensor other = tensor({1.0f}, true);
    CHECK_THROWS_WITH_AS(grad({(x * x).sum()}, {other}), doctest::Contains("not used"), StateError);
    BackwardOptions unused;
    unused.allow_unused = true;
    CHECK_FALSE(grad({(x * x).sum()}, {other}, {}, unused)[0].defined());
  }
  SUBCASE("an input that does not require grad") {
    const Tensor c = tensor({1.0f, 2.0f});
    CHECK_THROWS_WITH_AS(grad({(x * c).sum()}, {c}), doctest::Contains("does not require grad"), StateError);
  }
  SUBCASE("a gradient graph used after its graph was freed") {
    BackwardOptions freed = create_graph();
    freed.retain_graph = false;  // asked for explicitly: the first graph goes, the new one reads it
    const Tensor y = (x.exp() * x).sum();
    const Tensor g = grad({y}, {x}, {}, freed)[0];
    CHECK_THROWS_WITH_AS(grad({g.sum()}, {x}), doctest::Contains("second time"), StateError);
  }
  SUBCASE("an op whose backward computes outside the graph") {
    // A rule on buffers with no graph_backward: create_graph refuses it instead of a zero.
    const auto square = [](const Tensor& t) {
      const autograd::Op op("raw_square");
      return op.record(ops::map1(t, [](float v) { return v * v; }), {t}, {t},
                       [](const Tensor& g, const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
                         return {ops::map2(g, ctx.saved[0], "raw_square", [](float gv, float v) { return 2 * gv * v; })};
                       });
    };
    const Tensor y = (square(x) * x).sum();
    CHECK_THROWS_WITH_AS(grad({y}, {x}, {}, create_graph()), doctest::Contains("raw_square"), StateError);
    CHECK(grad({(square(x) * x).sum()}, {x})[0].to_vector() == std::vector<float>{3.0f, 12.0f});  // first order is fine
  }
}

TEST_CASE("hvp matches finite differences of the gradient") {
  // f(W, x) = Σ tanh(x·W)²: a two-input scalar function with a full Hessian.
  Generator gen(7);
  const Tensor W = randn({3, 4}, false, &gen), x = randn({2, 3}, false, &gen);
  const Tensor vW = randn({3, 4}, false, &gen), vx = randn({2, 3}, false, &gen);
  const TensorsFn f = [](const std::vector<Tensor>& in) {
    const Tensor h = in[1].matmul(in[0]).tanh();
    return (h * h).sum();
  };
  const FunctionalResult r = hvp(f, {W, x}, {vW, vx});
  CHECK(r.output.item() == doctest::Approx(f({W, x}).item()));
  // H·v = d/dt ∇f(p + t·v) at t = 0, with both inputs moved along their directions.
  const auto gradient_at = [&](float t) {
    std::vector<Tensor> p{(W + vW * t).requires_grad_(true), (x + vx * t).requires_grad_(true)};
    return grad({f(p)}, p);
  };
  const float eps = 1e-2f;
  const std::vector<Tensor> plus = gradient_at(eps), minus = gradient_at(-eps);
  for (size_t i = 0; i < 2; ++i) check_close(r.product[i].to_vector(), ((plus[i] - minus[i]) / (2 * eps)).to_vector(), 2e-3f);
}

TEST_CASE("jvp, forward mode as the reverse of a reverse, matches finite differences") {
  Generator gen(11);
  const Tensor x = randn({2, 5}, false, &gen), v = randn({2, 5}, false, &gen);
  const auto f = [](const Tensor& t) { return (t.softmax(-1) * t.sin()).matmul(t.t()); };
  const FunctionalResult r = jvp([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x}, {v});
  CHECK(r.product[0].shape() == Shape{2, 2});
  check_close(r.product[0].to_vector(), directional(f, x, v), 2e-3f);
  // A function that is linear in x: J·v is f(v) exactly.
  const FunctionalResult linear = jvp([](const std::vector<Tensor>& in) { return in[0] * 3.0f; }, {x}, {v});
  check_close(linear.product[0].to_vector(), (v * 3.0f).to_vector(), 1e-6f);
  CHECK_THROWS_AS(jvp([](const std::vector<Tensor>& in) { return in[0]; }, {x}, {v.t()}), ShapeError);
}

TEST_CASE("checkpoint drops a block's activations and recomputes them, with gradients equal to the bit") {
  manual_seed(3);
  nn::TransformerEncoderBlock block(nn::TransformerBlockOptions{.num_hiddens = 8, .ffn_num_hiddens = 16,
                                                                .num_heads = 2, .dropout = 0.1f});
  Generator gen(5);
  const Tensor x0 = randn({2, 5, 8}, false, &gen);
  const auto run = [&](bool recompute) {
    block.zero_grad();
    Tensor x = x0.clone().requires_grad_(true);
    manual_seed(42);  // the same dropout draws in both runs
    const auto body = [&](const std::vector<Tensor>& in) { return block.forward(in[0], IndexTensor{3, 5}); };
    std::vector<Tensor> tensors = block.parameters();
    tensors.push_back(x);
    return testing::gradients_after(tensors, [&] {
      const Tensor y = recompute ? checkpoint(body, {x}) : body({x});
      (y * y).sum().backward();
    });
  };
  CHECK(run(false) == run(true));
}

TEST_CASE("checkpoint keeps only its inputs: the graph holds no activation of the block") {
  const Tensor x = randn({64, 64}, true);
  const auto body = [](const std::vector<Tensor>& in) { return in[0].matmul(in[0]).tanh().matmul(in[0]).exp(); };
  const Tensor plain = body({x}), recomputed = checkpoint(body, {x});
  CHECK(recomputed.to_vector() == plain.to_vector());
  CHECK(recomputed.grad_fn_name() == "checkpoint");
  CHECK(recomputed.grad_fn()->saved_bytes() == 64 * 64 * 4);  // x alone
  CHECK(recomputed.grad_fn()->inputs.size() == 1);
}

TEST_CASE("under create_graph a parameter's gradient hook runs once, with its whole gradient, in both modes") {
  // Layer norm's rule there differentiates its reference in a walk of its own, which stops at the
  // parameters: their hooks are the outer walk's to run.
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    Tensor w = ones({4}, true), x = randn({3, 4}, true);
    int calls = 0;
    std::vector<float> seen;
    const auto handle = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& t) {
      ++calls;
      CHECK_FALSE(is_grad_enabled());
      seen = t.grad().to_vector();
    });
    const Tensor y = (layer_norm(x, w, Tensor(), 1e-5f) * x).sum();
    y.backward({}, create_graph());
    CHECK(calls == 1);
    CHECK(seen == w.grad().to_vector());
    w.zero_grad(), x.zero_grad();  // their .grad() are graphs that lead back to them: a cycle
  }
}
