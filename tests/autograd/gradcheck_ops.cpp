// Gradcheck entries for the tensor ops of autograd/ops (see tests/gradcheck_registry.h).
#include <cmath>

#include "autograd/functional.h"
#include "autograd/ops/adjoint.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/unary.h"
#include "gradcheck_registry.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

using X = const Inputs&;

}  // namespace

// ---- binary, with broadcasting ------------------------------------------------------------
QKV_GRADCHECK("add", {In::normal({2, 3}), In::normal({2, 3})}, [](X x) { return x[0] + x[1]; });
QKV_GRADCHECK("add broadcast row", {In::normal({2, 3}), In::normal({3})}, [](X x) { return x[0] + x[1]; });
QKV_GRADCHECK("add broadcast both", {In::normal({2, 1, 4}), In::normal({3, 1})}, [](X x) { return x[0] + x[1]; });
QKV_GRADCHECK("sub broadcast", {In::normal({3, 1}), In::normal({2, 1, 4})}, [](X x) { return x[0] - x[1]; });
QKV_GRADCHECK("mul broadcast", {In::normal({2, 3, 4}), In::normal({3, 1})}, [](X x) { return x[0] * x[1]; });
QKV_GRADCHECK("div broadcast", {In::normal({2, 3}), In::uniform({2, 1}, 0.5f, 2.0f)}, [](X x) { return x[0] / x[1]; });
QKV_GRADCHECK("pow tensor exponent", {In::uniform({2, 3}, 0.5f, 2.0f), In::normal({3})},
              [](X x) { return x[0].pow(x[1]); });
QKV_GRADCHECK("maximum", {In::fixed({2, 3}, {0.5f, -1, 2, 0.1f, 3, -2}), In::fixed({3}, {0, 1, -1})},
              [](X x) { return maximum(x[0], x[1]); });
QKV_GRADCHECK("minimum", {In::fixed({2, 3}, {0.5f, -1, 2, 0.1f, 3, -2}), In::fixed({3}, {0, 1, -1})},
              [](X x) { return minimum(x[0], x[1]); });
QKV_GRADCHECK("where", {In::fixed({2, 3}, {1, 0, 1, 0, 0, 1}).no_grad(), In::normal({2, 3}), In::normal({3})},
              [](X x) { return where(x[0], x[1], x[2]); });
QKV_GRADCHECK("masked_fill", {In::normal({2, 3}), In::fixed({3}, {0, 1, 0}).no_grad()},
              [](X x) { return x[0].masked_fill(x[1], -5.0f); });

// ---- with a scalar --------------------------------------------------------------------------
QKV_GRADCHECK("add and sub scalar", {In::normal({2, 3})}, [](X x) { return (x[0] + 2.0f) - 0.5f; });
QKV_GRADCHECK("mul scalar", {In::normal({2, 3})}, [](X x) { return 3.0f * x[0]; });
QKV_GRADCHECK("div scalar", {In::normal({2, 3})}, [](X x) { return x[0] / 4.0f; });
QKV_GRADCHECK("rsub scalar", {In::normal({2, 3})}, [](X x) { return 1.0f - x[0]; });
QKV_GRADCHECK("rdiv scalar", {In::uniform({2, 3}, 0.5f, 2.0f)}, [](X x) { return 2.0f / x[0]; });
QKV_GRADCHECK("neg", {In::normal({2, 3})}, [](X x) { return -x[0]; });
QKV_GRADCHECK("pow scalar", {In::uniform({2, 3}, 0.5f, 2.0f)}, [](X x) { return x[0].pow(2.5f); });

// ---- unary ---------------------------------------------------------------------------------
QKV_GRADCHECK("sqrt", {In::uniform({2, 3}, 0.5f, 2.0f)}, [](X x) { return x[0].sqrt(); });
QKV_GRADCHECK("rsqrt", {In::uniform({2, 3}, 0.5f, 2.0f)}, [](X x) { return x[0].rsqrt(); });
QKV_GRADCHECK("exp", {In::normal({2, 3})}, [](X x) { return x[0].exp(); });
QKV_GRADCHECK("log", {In::uniform({2, 3}, 0.5f, 2.0f)}, [](X x) { return x[0].log(); });
QKV_GRADCHECK("sin", {In::normal({2, 3})}, [](X x) { return x[0].sin(); });
QKV_GRADCHECK("cos", {In::normal({2, 3})}, [](X x) { return x[0].cos(); });
QKV_GRADCHECK("tanh", {In::normal({2, 3})}, [](X x) { return x[0].tanh(); });
QKV_GRADCHECK("sigmoid", {In::normal({2, 3})}, [](X x) { return x[0].sigmoid(); });
QKV_GRADCHECK("relu", {In::away_from_zero({2, 3})}, [](X x) { return x[0].relu(); });
QKV_GRADCHECK("gelu", {In::normal({2, 3})}, [](X x) { return x[0].gelu(); });
QKV_GRADCHECK("gelu tanh approximation", {In::normal({2, 3})}, [](X x) { return x[0].gelu(true); });
QKV_GRADCHECK("gelu reference", {In::normal({2, 3})}, [](X x) { return gelu_reference(x[0]); });
QKV_GRADCHECK("abs", {In::away_from_zero({2, 3})}, [](X x) { return x[0].abs(); });
QKV_GRADCHECK("clamp", {In::fixed({2, 3}, {-2, -0.5f, 0.3f, 0.9f, 1.7f, 0})}, [](X x) { return x[0].clamp(-1, 1); });

// ---- views and copies ----------------------------------------------------------------------
QKV_GRADCHECK("reshape", {In::normal({2, 3, 4})}, [](X x) { return x[0].reshape({4, -1}) * x[0].reshape({4, 6}); });
QKV_GRADCHECK("flatten and unsqueeze and squeeze", {In::normal({2, 3})},
              [](X x) { return x[0].flatten().unsqueeze(0).squeeze(0) * 2.0f; });
QKV_GRADCHECK("permute", {In::normal({2, 3, 4})}, [](X x) { return x[0].permute({2, 0, 1}) * x[0].permute({2, 0, 1}); });
QKV_GRADCHECK("transpose", {In::normal({2, 3})}, [](X x) { return x[0].t().matmul(x[0]); });
QKV_GRADCHECK("slice with step", {In::normal({5, 3})}, [](X x) { return x[0].slice(0, 1, 5, 2) * 2.0f; });
QKV_GRADCHECK("narrow", {In::normal({2, 6})}, [](X x) { return x[0].narrow(1, 2, 3).exp(); });
QKV_GRADCHECK("select", {In::normal({3, 4})}, [](X x) { return x[0].select(0, 1) * x[0].select(1, -1).sum(); });
QKV_GRADCHECK("expand", {In::normal({3, 1})}, [](X x) { return x[0].expand({2, 3, 4}) * 1.5f; });
QKV_GRADCHECK("contiguous", {In::normal({3, 4})}, [](X x) { return x[0].t().contiguous().sin(); });
QKV_GRADCHECK("clone", {In::normal({3, 4})}, [](X x) { return x[0].clone() * x[0]; });
QKV_GRADCHECK("split and chunk", {In::normal({5, 4})}, [](X x) {
  const auto parts = split(x[0], 2, 0);     // rows 2 + 2 + 1
  const auto halves = chunk(x[0], 2, 1);    // columns 2 + 2
  return parts[0].sum() * parts[2].sum() + halves[1].exp().sum();
});

// ---- reductions ----------------------------------------------------------------------------
QKV_GRADCHECK("sum all", {In::normal({2, 3})}, [](X x) { return (x[0] * x[0]).sum(); });
QKV_GRADCHECK("sum dims keepdim", {In::normal({2, 3, 4})}, [](X x) { return x[0].sum({0, 2}, true) * x[0]; });
QKV_GRADCHECK("mean", {In::normal({2, 3, 4})}, [](X x) { return x[0].mean({-1}).exp(); });
QKV_GRADCHECK("var", {In::normal({3, 5})}, [](X x) { return x[0].var({1}); });
QKV_GRADCHECK("norm 2", {In::normal({3, 4})}, [](X x) { return x[0].norm(2.0f, {1}); });
// An element at 0: the 2-norm is smooth there, and its second derivative must see it.
QKV_GRADCHECK("norm 2 with a zero", {In::fixed({2, 3}, {0.0f, 0.7f, -1.2f, 0.4f, 0.0f, 0.9f})},
              [](X x) { return x[0].norm(2.0f, {1}); });
QKV_GRADCHECK("norm 1", {In::away_from_zero({3, 4})}, [](X x) { return x[0].norm(1.0f); });
QKV_GRADCHECK("norm 3", {In::away_from_zero({3, 4})}, [](X x) { return x[0].norm(3.0f, {0}, true); });
QKV_GRADCHECK("norm inf", {In::fixed({2, 3}, {0.5f, -2, 1, 0.3f, 0.1f, -0.9f})}, [](X x) { return x[0].norm(INFINITY, {1}); });
QKV_GRADCHECK("max dim", {In::fixed({2, 3}, {0.5f, -2, 1, 0.3f, 0.1f, -0.9f})}, [](X x) { return x[0].max(1).first; });
QKV_GRADCHECK("max all", {In::fixed({2, 3}, {0.5f, -2, 1, 0.3f, 0.1f, -0.9f})}, [](X x) { return x[0].max(); });
QKV_GRADCHECK("min dim keepdim", {In::fixed({2, 3}, {0.5f, -2, 1, 0.3f, 0.1f, -0.9f})},
              [](X x) { return x[0].min(0, true).first * 2.0f; });

// ---- products, softmax ---------------------------------------------------------------------
QKV_GRADCHECK("linear", {In::normal({2, 3, 4}), In::normal({5, 4}), In::normal({5})},
              [](X x) { return linear_with_bias(x[0], x[1], x[2]); });
QKV_GRADCHECK("linear 2d", {In::normal({3, 4}), In::normal({2, 4}), In::normal({2})},
              [](X x) { return linear_with_bias(x[0], x[1], x[2]); });
QKV_GRADCHECK("matmul 2d", {In::normal({3, 4}), In::normal({4, 5})}, [](X x) { return x[0].matmul(x[1]); });
QKV_GRADCHECK("matmul batched", {In::normal({2, 3, 4}), In::normal({2, 4, 5})}, [](X x) { return x[0].matmul(x[1]); });
QKV_GRADCHECK("matmul shared weight", {In::normal({2, 3, 4}), In::normal({4, 5})}, [](X x) { return x[0].matmul(x[1]); });
QKV_GRADCHECK("matmul broadcast batch", {In::normal({2, 1, 3, 4}), In::normal({3, 4, 2})},
              [](X x) { return x[0].matmul(x[1]); });
QKV_GRADCHECK("matmul transposed operands", {In::normal({4, 3}), In::normal({5, 4})},
              [](X x) { return x[0].t().matmul(x[1].t()); });
QKV_GRADCHECK("matmul vector cases", {In::normal({4}), In::normal({4, 3}), In::normal({2, 3})},
              [](X x) { return x[0].matmul(x[1]) * x[2].matmul(x[1].t().matmul(x[0])).sum() + x[0].matmul(x[0]); });
QKV_GRADCHECK("softmax last dim", {In::normal({2, 5})}, [](X x) { return x[0].softmax(-1); });
QKV_GRADCHECK("softmax middle dim", {In::normal({2, 3, 4})}, [](X x) { return x[0].softmax(1); });
QKV_GRADCHECK("log_softmax", {In::normal({3, 5})}, [](X x) { return x[0].log_softmax(-1); });

// ---- indexing and joining ------------------------------------------------------------------
QKV_GRADCHECK("index_select with repeats", {In::normal({4, 3})},
              [](X x) { return x[0].index_select(0, IndexTensor{2, 0, 2}); });
QKV_GRADCHECK("index_select inner dim", {In::normal({2, 4, 3})},
              [](X x) { return x[0].index_select(1, IndexTensor{3, 1}); });
QKV_GRADCHECK("gather", {In::normal({3, 4})},
              [](X x) { return x[0].gather(1, IndexTensor({0, 3, 1, 1, 2, 0}, {3, 2})); });
QKV_GRADCHECK("repeat_interleave", {In::normal({2, 3, 2})}, [](X x) { return x[0].repeat_interleave(2, 1); });
QKV_GRADCHECK("repeat_interleave per slice", {In::normal({3, 2})},
              [](X x) { return x[0].repeat_interleave(IndexTensor{2, 0, 3}, 0); });
// Values far apart next to the finite-difference step, so that no perturbation reorders them.
QKV_GRADCHECK("sort", {In::fixed({3, 4}, {0.3f, -1.2f, 2.0f, 0.9f, -0.5f, 1.5f, -2.0f, 0.1f, 1.1f, 0.7f, -0.8f, 2.4f})},
              [](X x) { return x[0].sort(1).first; });
QKV_GRADCHECK("sort descending dim 0",
              {In::fixed({4, 3}, {0.3f, -1.2f, 2.0f, 0.9f, -0.5f, 1.5f, -2.0f, 0.1f, 1.1f, 0.7f, -0.8f, 2.4f})},
              [](X x) { return x[0].sort(0, true).first; });
QKV_GRADCHECK("bmm", {In::normal({2, 3, 4}), In::normal({2, 4, 2})}, [](X x) { return bmm(x[0], x[1]); });
QKV_GRADCHECK("cat", {In::normal({2, 3}), In::normal({2, 2})}, [](X x) { return cat({x[0], x[1], x[0]}, 1); });
QKV_GRADCHECK("stack", {In::normal({2, 3}), In::normal({2, 3})}, [](X x) { return stack({x[0], x[1]}, 1); });

// ---- the indexing ops' adjoints (what their backward applies, autograd/ops/adjoint.h) -----------
QKV_GRADCHECK("unslice with step", {In::normal({2, 3})},
              [](X x) { return unslice(x[0], {5, 3}, 0, 1, 5, 2).sin(); });
QKV_GRADCHECK("index_add with repeats", {In::normal({3, 2})},
              [](X x) { return index_add({4, 2}, 0, IndexTensor{2, 0, 2}, x[0]).sin(); });
QKV_GRADCHECK("scatter_add", {In::normal({3, 2})},
              [](X x) { return scatter_add({3, 4}, 1, IndexTensor({0, 3, 1, 1, 2, 0}, {3, 2}), x[0]).sin(); });

// ---- recomputation (autograd/functional.h) ---------------------------------------------------
QKV_GRADCHECK("checkpoint", {In::normal({2, 3}), In::normal({3, 4})}, [](X x) {
  return checkpoint([](const Inputs& in) { return in[0].matmul(in[1]).tanh() * in[0].sum(); }, {x[0], x[1]});
});
