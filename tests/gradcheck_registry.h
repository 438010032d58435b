// The gradcheck registry: one entry per differentiable op or layer, checked by one runner
// (tests/autograd/test_gradcheck_registry.cpp).
//
// HOW TO ADD AN ENTRY — in the test file of your op's family, at namespace scope:
//
//   QKV_GRADCHECK("mul broadcast", {In::normal({2, 3}), In::normal({3})},
//                 [](const Inputs& x) { return x[0] * x[1]; });
//
// The first argument names the entry; the list describes each input (shape and how its values are
// drawn); the lambda computes the op. A layer is checked with respect to its inputs AND its
// parameters with QKV_GRADCHECK_MODULE, which takes a factory and a forward:
//
//   QKV_GRADCHECK_MODULE("Linear", {In::normal({2, 3})},
//                        [] { return std::make_shared<nn::Linear>(3, 4); },
//                        [](nn::Linear& m, const Inputs& x) { return m.forward(x[0]); });
//
// The module is made after seeding the default generator from the entry's name, so its initial
// parameters are reproducible. Forward must be deterministic: give dropout a generator that is
// reset on every call, or check the module in eval(). An optional fourth argument, GradcheckOptions{...}, sets
// tolerances; In::...().no_grad() marks inputs that are not checked (masks, fixed data).
// Each entry runs twice: with contiguous inputs, and with every input of 2+ dims made
// non-contiguous (the same values stored transposed in memory), so strided paths are checked too.
// The runner also checks that every op defined in autograd/ops is reached by some entry: it finds
// op names as the string literal that opens a call, `Op op("mul")` or `pointwise("exp", ...)`
// (define new ops the same way), and an op that no entry's graph contains fails the suite.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "nn/module.h"
#include "tensor/factories.h"

namespace qkv::testing {

using Inputs = std::vector<Tensor>;

// How one input of an entry is made.
struct In {
  enum class Kind { Normal, Uniform, AwayFromZero, Fixed };
  Shape shape;
  Kind kind = Kind::Normal;
  float lo = 0.0f, hi = 1.0f;
  std::vector<float> values;  // Kind::Fixed
  bool grad = true;

  static In make(Shape s, Kind kind, float lo = 0.0f, float hi = 1.0f, std::vector<float> v = {}) {
    In in;
    in.shape = std::move(s), in.kind = kind, in.lo = lo, in.hi = hi, in.values = std::move(v);
    return in;
  }
  static In normal(Shape s) { return make(std::move(s), Kind::Normal); }
  // Values in [lo, hi): for log, sqrt, division...
  static In uniform(Shape s, float lo, float hi) { return make(std::move(s), Kind::Uniform, lo, hi); }
  // |values| in [0.2, 2) with random signs: for ops with a kink at 0 (relu, abs).
  static In away_from_zero(Shape s) { return make(std::move(s), Kind::AwayFromZero, 0.2f, 2.0f); }
  static In fixed(Shape s, std::vector<float> v) { return make(std::move(s), Kind::Fixed, 0, 0, std::move(v)); }
  In no_grad() const {
    In copy = *this;
    copy.grad = false;
    return copy;
  }
};

// A module under check and its forward bound to it.
struct ModuleCheck {
  std::shared_ptr<nn::Module> module;
  std::function<Tensor(const Inputs&)> fn;
};

struct GradcheckEntry {
  std::string name;
  std::vector<In> inputs;
  std::function<Tensor(const Inputs&)> fn;    // an op entry, or
  std::function<ModuleCheck()> make_module;  // a module entry
  GradcheckOptions options;
};

// The entries, in registration order.
std::vector<GradcheckEntry>& gradcheck_registry();

struct Registrar {
  Registrar(std::string name, std::vector<In> inputs, std::function<Tensor(const Inputs&)> fn,
            GradcheckOptions options = {}) {
    gradcheck_registry().push_back({std::move(name), std::move(inputs), std::move(fn), nullptr, options});
  }
};

struct ModuleRegistrar {
  template <class Make, class Forward>
  ModuleRegistrar(std::string name, std::vector<In> inputs, Make make, Forward forward, GradcheckOptions options = {}) {
    GradcheckEntry e{std::move(name), std::move(inputs), nullptr, nullptr, options};
    e.make_module = [make, forward]() -> ModuleCheck {
      auto m = make();
      return {m, [m, forward](const Inputs& x) { return forward(*m, x); }};
    };
    gradcheck_registry().push_back(std::move(e));
  }
};

}  // namespace qkv::testing

#define QKV_GRADCHECK_CONCAT2(a, b) a##b
#define QKV_GRADCHECK_CONCAT(a, b) QKV_GRADCHECK_CONCAT2(a, b)
#define QKV_GRADCHECK_MODULE(...)                                                          \
  static const ::qkv::testing::ModuleRegistrar QKV_GRADCHECK_CONCAT(qkv_gradcheck_, __LINE__) { \
    __VA_ARGS__                                                                               \
  }
#define QKV_GRADCHECK(...)                                                            \
  static const ::qkv::testing::Registrar QKV_GRADCHECK_CONCAT(qkv_gradcheck_, __LINE__) { \
    __VA_ARGS__                                                                        \
  }
