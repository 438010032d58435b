// The reference mode (tensor/reference_mode.h): every fused op against its composed reference, one
// table entry per op (as ggml's test-backend-ops), the switch itself, and the engine's plain
// allocation. The kernels' OpenMP path is in tests/tensor/test_reference_kernels.cpp, whole models
// in tests/examples/test_reference_models.cpp.
//
// HOW TO ADD AN ENTRY: a fused op gets a line in fused_ops() below: its name as the graph records
// it, the reference function it reaches, the inputs (every one that requires grad has its gradient
// compared), and a call of the public op.
// Each entry runs the call in the default mode, where the graph must hold the fused node, and under
// ReferenceModeGuard, where it must not; the outputs and every input's gradient must agree.
#include <doctest/doctest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "autograd/node.h"
#include "autograd/ops/attention.h"
#include "autograd/ops/band.h"
#include "autograd/ops/cross_entropy.h"
#include "autograd/ops/dropout.h"
#include "autograd/ops/embedding.h"
#include "autograd/ops/graph_attention.h"
#include "autograd/ops/gru.h"
#include "autograd/ops/layer_norm.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/rotary.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/unary.h"
#include "autograd/ops/unfold.h"
#include "child_process.h"
#include "graph_testing.h"
#include "tensor/factories.h"
#include "tensor/reference_mode.h"
#include "tensor/storage.h"

using namespace qkv;
using qkv::testing::graph_has;

namespace {

using Inputs = std::vector<Tensor>;

struct FusedOpCase {
  std::string name;       // the fused node's op name in the graph
  std::string reference;  // the composed reference the reference mode reaches (autograd/ops/*.h)
  std::function<Inputs()> inputs;
  std::function<std::vector<Tensor>(const Inputs&)> call;  // the outputs to compare
  float tolerance = 1e-5f;
};

// The generator's position after a draw, as an output to compare: both modes must draw the same
// numbers from it, no more and no fewer.
Tensor position_of(const Generator& g) { return scalar_tensor(static_cast<float>(g.state().offset)); }

Tensor normal(const Shape& shape, uint64_t seed, bool grad = true) {
  Generator g(seed);
  return randn(shape, grad, &g);
}

// Fresh leaves with the same values as `xs`, so that each run accumulates its own gradients.
Inputs fresh(const Inputs& xs) {
  Inputs out;
  for (const Tensor& x : xs) {
    if (!x.defined()) {
      out.push_back(x);
      continue;
    }
    Tensor c = x.detach().clone();
    if (x.requires_grad()) c.requires_grad_();
    out.push_back(c);
  }
  return out;
}

struct Run {
  std::vector<Tensor> outputs, grads;
  bool fused_node = false;
};

// The outputs, then backward of Σ outputs[0] · r for a fixed random r, and every input's gradient.
Run run(const FusedOpCase& c, const Inputs& values) {
  Inputs xs = fresh(values);
  const std::vector<Tensor> out = c.call(xs);
  Run r;
  r.fused_node = graph_has(out[0], c.name);
  for (const Tensor& o : out) r.outputs.push_back(o.defined() ? o.detach().clone() : o);
  if (out[0].requires_grad()) (out[0] * normal(out[0].shape(), 99, false)).sum().backward();
  for (const Tensor& x : xs) r.grads.push_back(x.defined() && x.requires_grad() ? x.grad() : Tensor());
  return r;
}

void check_close(const Tensor& a, const Tensor& b, float tol, const std::string& what) {
  REQUIRE_MESSAGE(a.defined() == b.defined(), what);
  if (!a.defined()) return;
  REQUIRE_MESSAGE(a.shape() == b.shape(), what);
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  float worst = 0.0f;
  for (size_t i = 0; i < va.size(); ++i) {
    const bool same_inf = std::isinf(va[i]) && va[i] == vb[i];
    worst = std::max(worst, same_inf ? 0.0f : std::fabs(va[i] - vb[i]) / (1.0f + std::fabs(vb[i])));
  }
  CHECK_MESSAGE(worst <= tol, what << ": largest difference " << worst << " above " << tol);
}

IndexTensor index(std::vector<int64_t> v, Shape s) { return IndexTensor(std::move(v), std::move(s)); }

std::vector<FusedOpCase> fused_ops() {
  std::vector<FusedOpCase> cases;
  cases.push_back({"linear", "linear_with_bias_reference", [] { return Inputs{normal({4, 3, 5}, 1), normal({6, 5}, 2), normal({6}, 3)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{linear_with_bias(x[0], x[1], x[2])}; }});
  // Every vector tail of the fast loop, and values out to ±4, where Φ saturates.
  cases.push_back({"gelu", "gelu_reference", [] { return Inputs{normal({3, 37}, 39) * 1.5f}; },
                   [](const Inputs& x) { return std::vector<Tensor>{x[0].gelu()}; }});
  cases.push_back({"layer_norm", "layer_norm_reference",
                   [] { return Inputs{normal({3, 5, 37}, 4) * 3.0f + 2.0f, normal({37}, 5), normal({37}, 6)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{layer_norm(x[0], x[1], x[2], 1e-5f)}; }, 1e-4f});
  cases.push_back({"layer_norm", "layer_norm_reference", [] { return Inputs{normal({4, 9}, 7)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{layer_norm(x[0], Tensor(), Tensor(), 1e-3f)}; },
                   1e-4f});
  // Lengths per example and per query, one of them 0 (a row that sees nothing), and a −∞ logit.
  cases.push_back({"masked_softmax", "masked_softmax_reference",
                   [] {
                     Tensor x = normal({2, 3, 4, 5}, 8).detach();
                     x.data()[7] = -std::numeric_limits<float>::infinity();
                     return Inputs{x.requires_grad_()};
                   },
                   [](const Inputs& x) {
                     return std::vector<Tensor>{masked_softmax(x[0], index({1, 2, 3, 4, 5, 0, 2, 4}, {2, 4}))};
                   }});
  cases.push_back({"masked_softmax", "masked_softmax_reference", [] { return Inputs{normal({3, 4, 6}, 9)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{masked_softmax(x[0], IndexTensor{6, 2, 0})}; }});
  cases.push_back({"masked_softmax", "masked_softmax_reference", [] { return Inputs{normal({2, 7}, 10)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{masked_softmax(x[0], IndexTensor())}; }});
  cases.push_back({"dropout", "dropout_reference", [] { return Inputs{normal({4, 51}, 11)}; },
                   [](const Inputs& x) {
                     Generator g(12);
                     const Tensor y = dropout(x[0], 0.3f, g);
                     return std::vector<Tensor>{y, position_of(g)};
                   }});
  cases.push_back({"embedding", "embedding_reference", [] { return Inputs{normal({10, 6}, 13)}; },
                   [](const Inputs& x) {
                     return std::vector<Tensor>{embedding(index({1, 4, 4, 9, 1, 0, 2, 4}, {2, 4}), x[0], -9)};
                   }});
  cases.push_back({"masked_max", "masked_max_reference", [] { return Inputs{normal({3, 5, 4}, 14)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{masked_max(x[0], IndexTensor{5, 1, 3})}; }});
  cases.push_back({"unfold1d", "unfold1d_reference", [] { return Inputs{normal({2, 7, 3}, 15)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{unfold1d(x[0], 3, 2, 2)}; }});
  cases.push_back({"cross_entropy", "softmax_cross_entropy_reference", [] { return Inputs{normal({6, 5}, 16), uniform({5}, 0.5f, 2.0f)}; },
                   [](const Inputs& x) {
                     return std::vector<Tensor>{
                         softmax_cross_entropy(x[0], IndexTensor{0, 4, -1, 2, 2, 1}, x[1], -1, 0.1f)};
                   }});
  cases.push_back({"cross_entropy", "softmax_cross_entropy_reference",
                   [] {
                     Tensor x = normal({5, 4}, 40).detach();
                     x.data()[1] = -std::numeric_limits<float>::infinity();  // a class never predicted
                     return Inputs{x.requires_grad_()};
                   },
                   [](const Inputs& x) {
                     return std::vector<Tensor>{softmax_cross_entropy(x[0], IndexTensor{0, 3, 7, 2, 7}, Tensor(), 7, 0.0f)};
                   }});
  cases.push_back({"cross_entropy", "softmax_cross_entropy_reference", [] { return Inputs{normal({4, 3}, 17)}; },
                   [](const Inputs& x) {
                     return std::vector<Tensor>{softmax_cross_entropy(x[0], IndexTensor{2, 0, 1, 1}, Tensor(), -100, 0.0f)};
                   }});
  // Logits of every size, exact zeros (where softplus is smooth but relu and abs have a kink) and
  // values far in both tails among them.
  cases.push_back({"binary_cross_entropy_with_logits", "sigmoid_cross_entropy_reference",
                   [] {
                     Tensor x = (normal({4, 3}, 18) * 4.0f).detach();
                     x.data()[0] = x.data()[5] = 0.0f, x.data()[7] = 30.0f, x.data()[9] = -40.0f;
                     return Inputs{x.requires_grad_(), uniform({4, 3}, 0, 1, true), uniform({3}, 0.5f, 3.0f, true)};
                   },
                   [](const Inputs& x) { return std::vector<Tensor>{sigmoid_cross_entropy(x[0], x[1], x[2])}; }});
  cases.push_back({"gru_cell", "gru_cell_reference", [] { return Inputs{normal({3, 12}, 19), normal({3, 12}, 20), normal({3, 4}, 21)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{gru_cell(x[0], x[1], x[2])}; }});
  for (const bool reverse : {false, true})
    cases.push_back({"gru_sequence", "gru_sequence_reference",
                     [] { return Inputs{normal({5, 3, 12}, 22), normal({3, 4}, 23), normal({12, 4}, 24), normal({12}, 25)}; },
                     [reverse](const Inputs& x) {
                       return std::vector<Tensor>{gru_sequence(x[0], x[1], x[2], x[3], reverse)};
                     }});
  cases.push_back({"gru_sequence", "gru_sequence_reference", [] { return Inputs{normal({4, 2, 6}, 26), normal({2, 2}, 27), normal({6, 2}, 28)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{gru_sequence(x[0], x[1], x[2], Tensor())}; }});
  cases.push_back({"band_scores", "band_scores_reference", [] { return Inputs{normal({2, 3, 7, 4}, 29), normal({2, 3, 7, 4}, 30)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{band_scores(x[0], x[1], 2, 0.5f)}; }});
  cases.push_back({"band_sum", "band_sum_reference", [] { return Inputs{normal({2, 3, 7, 3}, 31), normal({2, 3, 7, 5}, 32)}; },
                   [](const Inputs& x) { return std::vector<Tensor>{band_sum(x[0], x[1], 1)}; }});
  // Attention with every extra: lengths per query, a mask, a bias that requires grad, dropout.
  for (const bool need_weights : {true, false})
    cases.push_back({"fused_attention", "fused_attention_reference",
                     [] {
                       Tensor mask = ones({1, 1, 5, 6});
                       mask.data()[3] = mask.data()[10] = 0.0f;
                       // The bias is shared by the heads: its gradient is summed over them.
                       return Inputs{normal({2, 3, 5, 4}, 33), normal({2, 3, 6, 4}, 34), normal({2, 3, 6, 4}, 35),
                                     mask, normal({2, 1, 5, 6}, 36)};
                     },
                     [need_weights](const Inputs& x) {
                       Generator g(37);
                       const FusedAttention a =
                           fused_attention(x[0], x[1], x[2], index({5, 3, 1, 0, 6, 6, 2, 4, 6, 5}, {2, 5}), x[3],
                                           x[4].expand({2, 3, 5, 6}), 0.25f, g, need_weights);
                       return std::vector<Tensor>{a.output, a.weights, position_of(g)};
                     }, 1e-4f});
  cases.push_back({"fused_attention_packed", "fused_attention_packed_reference", [] { return Inputs{normal({2, 5, 24}, 38)}; },
                   [](const Inputs& x) {
                     Generator g(39);
                     const FusedAttention a = fused_attention_packed(x[0], 2, IndexTensor{5, 3}, Tensor(), Tensor(),
                                                                     0.5f, g);
                     return std::vector<Tensor>{a.output, a.weights, position_of(g)};
                   }, 1e-4f});
  // Rotary positions: the heads of a (B, T, H·d) projection read through their strides, d2l's
  // (B·H, T, d), and the packed (B, T, 3·H·d) projection; tables of 5 positions, of pairs of angles.
  const auto table = [](int64_t T, int64_t pairs, bool sine) {
    Tensor t = normal({T, pairs}, 43, false);
    return sine ? t.sin() : t.cos();
  };
  cases.push_back({"rotary", "rotary_reference", [] { return Inputs{normal({2, 5, 12}, 44)}; },
                   [table](const Inputs& x) {
                     const Tensor heads = x[0].view({2, 5, 3, 4}).permute({0, 2, 1, 3});
                     return std::vector<Tensor>{rotary(heads, table(5, 2, false), table(5, 2, true))};
                   }});
  cases.push_back({"rotary", "rotary_reference", [] { return Inputs{normal({6, 5, 8}, 45)}; },
                   [table](const Inputs& x) {
                     return std::vector<Tensor>{rotary(x[0], table(5, 4, false), table(5, 4, true))};
                   }});
  cases.push_back({"rotary_packed", "rotary_packed_reference", [] { return Inputs{normal({2, 5, 24}, 46)}; },
                   [table](const Inputs& x) {
                     return std::vector<Tensor>{rotary_packed(x[0], 2, table(5, 2, false), table(5, 2, true))};
                   }});
  // Two heads on a graph with self-loops and a node (4) without incoming edges.
  cases.push_back({"graph_attention", "graph_attention_reference",
                   [] { return Inputs{normal({5, 2, 3}, 40), normal({5, 2, 3}, 41), normal({5, 2, 3}, 42)}; },
                   [](const Inputs& x) {
                     const GraphEdges g = GraphEdges::from_pairs(5, {0, 1, 2, 0, 3, 1, 4, 2}, {1, 0, 0, 0, 2, 2, 2, 3});
                     const GraphAttention a = graph_attention(x[0], x[1], x[2], g);
                     return std::vector<Tensor>{a.output, a.weights};
                   }});
  return cases;
}

}  // namespace

TEST_CASE("every fused op runs its composed reference in the reference mode: the same values and gradients") {
  for (const FusedOpCase& c : fused_ops()) {
    CAPTURE(c.name);
    const Inputs values = c.inputs();
    const Run fast = run(c, values);
    Run plain;
    {
      const ReferenceModeGuard reference;
      plain = run(c, values);
    }
    CHECK_MESSAGE(fast.fused_node, c.name << ": the default mode runs the fused op");
    CHECK_MESSAGE(!plain.fused_node, c.name << ": the reference mode runs the composition instead");
    for (size_t i = 0; i < fast.outputs.size(); ++i)
      check_close(plain.outputs[i], fast.outputs[i], c.tolerance, c.name + " output " + std::to_string(i));
    for (size_t i = 0; i < fast.grads.size(); ++i)
      check_close(plain.grads[i], fast.grads[i], c.tolerance, c.name + " gradient of input " + std::to_string(i));
  }
}

TEST_CASE("every composed reference declared in autograd/ops has an entry in the table above") {
  // A reference is declared as `Tensor NAME_reference(` or `FusedAttention NAME_reference(`.
  std::set<std::string> declared, covered;
  for (const auto& f : std::filesystem::directory_iterator(std::string(QKV_SOURCE_DIR) + "/autograd/ops")) {
    if (f.path().extension() != ".h") continue;
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (size_t at = s.find("_reference("); at != std::string::npos; at = s.find("_reference(", at + 1)) {
      size_t begin = at;
      while (begin > 0 && (std::isalnum(static_cast<unsigned char>(s[begin - 1])) || s[begin - 1] == '_')) --begin;
      declared.insert(s.substr(begin, at + 10 - begin));
    }
  }
  for (const FusedOpCase& c : fused_ops()) covered.insert(c.reference);
  REQUIRE(declared.size() >= 15);
  for (const std::string& name : declared) CHECK_MESSAGE(covered.count(name), "no table entry reaches " << name);
}

TEST_CASE("embedding's reference keeps its own copy of the ids, as the op does") {
  // A caller may refill its id buffer with the next batch before backward.
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    Tensor w = randn({5, 3}, true);
    IndexTensor ids{1, 3, 3};
    const Tensor y = embedding(ids, w);
    ids.data()[0] = ids.data()[1] = ids.data()[2] = 0;
    y.sum().backward();
    CHECK(w.grad().sum({1}).to_vector() == std::vector<float>{0, 3, 0, 6, 0});
  }
}

TEST_CASE("the reference mode is one process-wide switch with a scoped guard") {
  const bool before = reference_mode();
  set_reference_mode(false);
  {
    const ReferenceModeGuard on;
    CHECK(reference_mode());
    {
      const ReferenceModeGuard off(false);
      CHECK(!reference_mode());
    }
    CHECK(reference_mode());
  }
  CHECK(!reference_mode());
  set_reference_mode(true);
  CHECK(reference_mode());
  set_reference_mode(before);
}

namespace {

// An op that reports what the engine let its backward write over, and passes g through.
struct Allowed {
  bool grad_is_scratch = false, saved_freed_after = false;
};

Tensor report(const Tensor& x, Allowed& seen) {
  return autograd::Op("report").record(x * 1.0f, {x}, {x},
      [&seen](const Tensor& g, const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        seen = {ctx.grad_is_scratch, ctx.saved_freed_after};
        return {g * 2.0f};
      });
}

}  // namespace

TEST_CASE("the engine allocates plainly in the reference mode: no gradient written over another or adopted") {
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    Tensor x = randn({64, 64}, true);
    Allowed seen;
    // The gradient reaching `report` is a fresh product (mul's backward): nothing else holds it.
    const Tensor y = report(x, seen) * 3.0f;
    y.backward(ones({64, 64}));
    CHECK(seen.grad_is_scratch == !reference);
    CHECK(seen.saved_freed_after == !reference);
    CHECK(x.grad().at({5, 7}) == doctest::Approx(6.0f));
  }
  // (x.relu() · c).sum(): mul's backward makes g·c, a buffer the engine alone holds. The fast path
  // writes relu's dx over it and the leaf x takes it as its gradient: the seed and one buffer of n.
  // The plain one makes dx a buffer of its own and copies it into x's gradient: two more.
  const int64_t n = 4096;
  Tensor x = randn({n}, true);
  const Tensor c = randn({n});
  std::vector<float> grads[2];
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    x.zero_grad();
    const Tensor loss = (x.relu() * c).sum();
    const int64_t before = memory_stats().allocated_bytes;
    loss.backward();
    CHECK(memory_stats().allocated_bytes - before == 4 * (1 + (reference ? 3 : 1) * n));
    grads[reference] = x.grad().to_vector();
  }
  CHECK(grads[0] == grads[1]);
}

QKV_CHILD("print the reference mode", [](const std::vector<std::string>&) {
  std::printf("reference_mode=%d\n", reference_mode() ? 1 : 0);
  return 0;
});

TEST_CASE("QKV_REFERENCE=1 turns the reference mode on for a whole process and a bad value is reported") {
  CHECK(testing::run_child("print the reference mode", {}, {"QKV_REFERENCE=1"}).output == "reference_mode=1\n");
  CHECK(testing::run_child("print the reference mode", {}, {"QKV_REFERENCE=0"}).output == "reference_mode=0\n");
  const testing::ChildResult bad = testing::run_child("print the reference mode", {}, {"QKV_REFERENCE=yes"});
  CHECK(bad.output == "reference_mode=0\n");
  CHECK(bad.errors == "qkv: ignoring QKV_REFERENCE='yes' (expected 1 or 0)\n");
}
