// gradcheck itself: it must pass a correct gradient and catch wrong, missing or zero ones.
#include <doctest/doctest.h>

#include "autograd/function.h"
#include "qkv.h"

using namespace qkv;

namespace {

// x³ with a backward that returns `factor`·3x² — correct when factor = 1.
Tensor cube(const Tensor& x, float factor) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x * x * x;
  }
  return autograd::Op("test_cube").record(out, {x}, {x},
      [factor](const Tensor& g, const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        return {g * ctx.saved[0] * ctx.saved[0] * (3.0f * factor)};
      });
}

}  // namespace

TEST_CASE("gradcheck passes a correct backward") {
  const GradcheckResult r = gradcheck([](const std::vector<Tensor>& x) { return cube(x[0], 1.0f); },
                                     {randn({3, 2}, true)});
  CHECK(r.ok);
  CHECK(r.message.empty());
  CHECK(r.error < 1e-2);
}

TEST_CASE("gradcheck reports the worst element of a wrong backward") {
  const Tensor x = tensor({0.5f, -1.5f, 1.0f}, true);
  const GradcheckResult r = gradcheck([](const std::vector<Tensor>& in) { return cube(in[0], 1.1f); }, {x});
  CHECK_FALSE(r.ok);
  // The error is 0.1·3x²·|r_i|, largest where x² is (index 1, x = -1.5) unless r_1 is tiny.
  CHECK(r.worst_input == 0);
  CHECK(r.worst_index == 1);
  CHECK(r.analytic == doctest::Approx(1.1 * r.numeric).epsilon(1e-3));
  CHECK(r.message.find("worst element: input 0 index 1") != std::string::npos);
}

TEST_CASE("gradcheck names a parameter by its name, not only its position") {
  // A module's parameters carry their dotted path; before, a failure said only "input 0".
  nn::Sequential net;
  net.push_back(std::make_shared<nn::Linear>(3, 1));
  const Tensor w = net.named_parameters().front().second;
  REQUIRE(w.name() == "0.weight");
  const Tensor x = tensor({{0.5f, -1.5f, 1.0f}});
  const GradcheckResult r = gradcheck(
      [&](const std::vector<Tensor>& in) { return cube(matmul(x, in[0].transpose(0, 1)), 1.1f); }, {w});
  CHECK_FALSE(r.ok);
  CHECK_MESSAGE(r.message.find("worst element: input 0 (0.weight) index") != std::string::npos, r.message);
}

TEST_CASE("gradcheck fails a gradient that is identically zero where the numeric one is not") {
  const GradcheckResult r = gradcheck([](const std::vector<Tensor>& in) { return cube(in[0], 0.0f); },
                                      {tensor({0.5f, 0.7f}, true)});
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("identically zero") != std::string::npos);
}

TEST_CASE("gradcheck fails when an input gets no gradient at all") {
  // The second input is used in the forward but cut off from the graph by detach().
  const GradcheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) { return in[0] * in[1].detach(); },
      {tensor({1.0f, 2.0f}, true), tensor({3.0f, 4.0f}, true)});
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("input 1") != std::string::npos);
  CHECK(r.message.find("missing") != std::string::npos);
}

TEST_CASE("gradcheck leaves the caller's inputs untouched") {
  Tensor x = tensor({1.0f, 2.0f}, true);
  gradcheck([](const std::vector<Tensor>& in) { return in[0].exp(); }, {x});
  CHECK_FALSE(x.grad().defined());
  CHECK(x.to_vector() == std::vector<float>{1.0f, 2.0f});
}
