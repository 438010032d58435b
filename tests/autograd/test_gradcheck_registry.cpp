// Runs every entry of the gradcheck registry (tests/gradcheck_registry.h says how to add one).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <cctype>
#include <set>
#include <sstream>

#include "autograd/node.h"
#include "gradcheck_registry.h"
#include "tensor/reference_mode.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

uint64_t seed_of(const std::string& name) { return std::hash<std::string>{}(name) & 0xFFFFFFFF; }

std::vector<Tensor> make_inputs(const GradcheckEntry& e) {
  Generator gen(seed_of(e.name));
  std::vector<Tensor> xs;
  for (const In& in : e.inputs) {
    Tensor t;
    switch (in.kind) {
      case In::Kind::Normal: t = randn(in.shape, false, &gen); break;
      case In::Kind::Uniform: t = uniform(in.shape, in.lo, in.hi, false, &gen); break;
      case In::Kind::AwayFromZero: {
        t = uniform(in.shape, in.lo, in.hi, false, &gen);
        const Tensor sign = rand(in.shape, false, &gen).lt(0.5f) * 2.0f - 1.0f;
        t = t * sign;
        break;
      }
      case In::Kind::Fixed: t = tensor(in.values, in.shape); break;
    }
    if (in.grad) t.requires_grad_(true);
    xs.push_back(t);
  }
  return xs;
}

// The same values in a strided layout, reached through the graph: stored transposed (2+ dims), with
// a gap after every element and an offset of 1, so that 1-d inputs and dims of size 1 are strided
// too. E.g. (3,1) becomes strides (2,6), offset 1; (4) becomes stride 2, offset 1.
Tensor non_contiguous(const Tensor& x) {
  if (x.dim() == 0) return x;
  const Tensor t = x.dim() >= 2 ? x.transpose(-1, -2) : x;
  const Tensor spread = stack({zeros_like(t), t}, -1).select(-1, 1);  // t's values, every other float
  return x.dim() >= 2 ? spread.transpose(-1, -2) : spread;
}

void collect_ops(const std::shared_ptr<autograd::Node>& root, std::set<std::string>& ops) {
  std::vector<autograd::Node*> stack;
  std::set<autograd::Node*> seen;
  if (root) stack.push_back(root.get());
  while (!stack.empty()) {
    autograd::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    ops.insert(n->op);
    for (const auto& e : n->inputs)
      if (e.node) stack.push_back(e.node.get());
  }
}

// An op is defined where a call opens with its name as a string literal, `Op op("mul")` or
// `pointwise("exp", ...)`: an identifier, '(', the literal in [a-z_0-9], then ',' or ')'.
std::vector<std::string> op_names_in(const std::string& s) {
  std::vector<std::string> names;
  for (size_t open = s.find("(\""); open != std::string::npos; open = s.find("(\"", open + 1)) {
    if (open == 0 || !(std::isalnum(static_cast<unsigned char>(s[open - 1])) || s[open - 1] == '_')) continue;
    size_t end = open + 2;
    while (end < s.size() && (std::islower(static_cast<unsigned char>(s[end])) || std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '_')) ++end;
    if (end > open + 2 && std::islower(static_cast<unsigned char>(s[open + 2])) &&
        (s.compare(end, 2, "\",") == 0 || s.compare(end, 2, "\")") == 0))
      names.push_back(s.substr(open + 2, end - open - 2));
  }
  return names;
}

// Entries whose second derivatives are checked with a larger atol, and why. In float32 the first
// gradient of a deep model carries rounding noise of about 1e-5, which the finite differences
// (divided by 2ε = 0.02) turn into ~1e-3 in the numeric second derivative.
const std::map<std::string, std::pair<float, const char*>>& looser_twice() {
  static const std::map<std::string, std::pair<float, const char*>> entries = {
      {"Transformer encoder-decoder in eval",
       {3e-3f, "three stacks of attention and GELU: its first gradient's float32 noise reaches the "
               "finite differences (ε = 0.005 and 0.02 pass at the default atol)"}},
  };
  return entries;
}

// Checks one entry: an op with respect to its inputs, a module with respect to its inputs and its
// parameters; with `twice`, through gradgradcheck (its second derivatives, and its gradient's
// dependence on the output gradient). With `strided`, inputs reach the op through non-contiguous
// views.
GradcheckResult check_entry(const GradcheckEntry& e, bool strided, bool twice = false) {
  auto with_layout = [strided](const std::function<Tensor(const Inputs&)>& fn) {
    return [strided, fn](const Inputs& xs) {
      if (!strided) return fn(xs);
      Inputs views;
      for (const Tensor& x : xs) views.push_back(non_contiguous(x));
      return fn(views);
    };
  };
  GradcheckOptions o = e.options;
  if (const auto it = looser_twice().find(e.name); twice && it != looser_twice().end()) o.atol = it->second.first;
  if (e.fn) return twice ? gradgradcheck(with_layout(e.fn), make_inputs(e), o) : gradcheck(with_layout(e.fn), make_inputs(e), o);
  manual_seed(seed_of(e.name));
  const ModuleCheck mc = e.make_module();
  const Inputs xs = make_inputs(e);
  std::vector<Tensor> checked;
  for (const Tensor& x : xs)
    if (x.requires_grad()) checked.push_back(x);
  for (const Tensor& p : mc.module->parameters()) checked.push_back(p);
  const auto fn = with_layout(mc.fn);
  const auto run = [&] { return fn(xs); };
  return twice ? gradgradcheck_tensors(run, checked, o) : gradcheck_tensors(run, checked, o);
}

Tensor run_entry(const GradcheckEntry& e) {
  if (e.fn) return e.fn(make_inputs(e));
  return e.make_module().fn(make_inputs(e));
}

}  // namespace

TEST_CASE("gradcheck registry: every entry passes with contiguous inputs") {
  REQUIRE(gradcheck_registry().size() > 0);
  for (const GradcheckEntry& e : gradcheck_registry()) {
    CAPTURE(e.name);
    const GradcheckResult r = check_entry(e, false);
    CHECK_MESSAGE(r.ok, e.name << ": " << r.message);
  }
}

TEST_CASE("gradcheck registry: every entry passes with non-contiguous inputs") {
  for (const GradcheckEntry& e : gradcheck_registry()) {
    CAPTURE(e.name);
    const GradcheckResult r = check_entry(e, true);
    CHECK_MESSAGE(r.ok, e.name << " (non-contiguous): " << r.message);
  }
}

TEST_CASE("gradcheck registry: every entry passes in the reference mode") {
  // The fused ops run their composed references there: their gradients are checked too, with
  // contiguous and with non-contiguous inputs.
  const ReferenceModeGuard reference;
  for (const GradcheckEntry& e : gradcheck_registry())
    for (const bool strided : {false, true}) {
      CAPTURE(e.name);
      CAPTURE(strided);
      const GradcheckResult r = check_entry(e, strided);
      CHECK_MESSAGE(r.ok, e.name << " (reference mode): " << r.message);
    }
}

TEST_CASE("gradgradcheck registry: every entry is twice differentiable, in both modes") {
  // Each entry's backward is recorded (create_graph) and differentiated again: the fused ops run
  // their composed references there, every other op the rule written beside its fast backward.
  for (const bool reference : {false, true})
    for (const GradcheckEntry& e : gradcheck_registry()) {
      const ReferenceModeGuard mode(reference);
      CAPTURE(e.name);
      CAPTURE(reference);
      GradcheckResult r;
      try {
        r = check_entry(e, false, /*twice=*/true);
      } catch (const std::exception& ex) {
        r.ok = false;
        r.message = ex.what();
      }
      CHECK_MESSAGE(r.ok, e.name << std::string(reference ? " (reference mode)" : "") << ": " << r.message);
    }
}

TEST_CASE("gradcheck registry: every op defined in autograd/ops has an entry") {
  std::set<std::string> reached;
  for (const GradcheckEntry& e : gradcheck_registry()) collect_ops(run_entry(e).grad_fn(), reached);

  std::set<std::string> defined;
  for (const auto& f : std::filesystem::directory_iterator(std::string(QKV_SOURCE_DIR) + "/autograd/ops")) {
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    for (const std::string& op : op_names_in(text.str())) defined.insert(op);
  }
  REQUIRE(defined.size() > 30);
  for (const std::string& op : defined) CHECK_MESSAGE(reached.count(op), "no gradcheck entry reaches op '" << op << "'");
}
