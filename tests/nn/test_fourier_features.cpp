// Fourier features of positions (nn/fourier_features.h): the features by their formula, learned
// frequencies that get a gradient, random ones that are seeded and saved with the model, the 1-D
// scheme at lengths past any max_len.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/grad_mode.h"
#include "gradcheck_registry.h"
#include "io/scratch_dir.h"
#include "model_io/weights.h"
#include "nn/fourier_features.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

nn::FourierFeaturesOptions small(int64_t coordinates, bool learned) {
  return {.coordinates = coordinates, .frequencies = 3, .hidden = 5, .out = 4, .learned = learned, .scale = 0.7f};
}

bool has_parameter(const nn::Module& m, const std::string& name) {
  for (const auto& [n, p] : m.named_parameters())
    if (n == name) return true;
  return false;
}

}  // namespace

QKV_GRADCHECK_MODULE("FourierFeatures learned 2-D", {In::uniform({5, 2}, 0.0f, 1.0f)},
                     [] { return std::make_shared<nn::FourierFeatures>(small(2, true)); },
                     [](nn::FourierFeatures& m, const Inputs& x) { return m.forward(x[0]); });
QKV_GRADCHECK_MODULE("FourierFeatures random 1-D", {In::uniform({6, 1}, 0.0f, 3.0f)},
                     [] { return std::make_shared<nn::FourierFeatures>(small(1, false)); },
                     [](nn::FourierFeatures& m, const Inputs& x) { return m.forward(x[0]); });

TEST_CASE("FourierFeatures computes [cos(xWᵀ), sin(xWᵀ)]/√F, and starts small") {
  nn::FourierFeatures f(small(2, true));
  const std::vector<float> W = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};  // (3, 2)
  {
    NoGradGuard no_grad;
    f.frequencies.copy_(tensor(W, {3, 2}));
  }
  const std::vector<float> x = {0.1f, 0.9f, 3.0f, -2.0f};  // (2, 2)
  const Tensor r = f.features(tensor(x, {2, 2}));
  REQUIRE(r.shape() == Shape{2, 6});
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 3; ++j) {
      const double angle = double{x[2 * n]} * W[2 * j] + double{x[2 * n + 1]} * W[2 * j + 1];
      CHECK(r.at({n, j}) == doctest::Approx(std::cos(angle) / std::sqrt(3.0)).epsilon(1e-6));
      CHECK(r.at({n, 3 + j}) == doctest::Approx(std::sin(angle) / std::sqrt(3.0)).epsilon(1e-6));
    }
  // The MLP's output layer starts N(0, 0.02²) with no bias: P starts as small as a learned table.
  CHECK(f.output->bias.abs().max().item() == 0.0f);
  const float spread = f.output->weight.pow(2.0f).mean().sqrt().item();
  CHECK(spread > 0.01f);
  CHECK(spread < 0.04f);
  CHECK(f.forward(tensor(x, {2, 2})).abs().max().item() < 0.2f);
}

TEST_CASE("learned frequencies are parameters and learn; random ones are a saved buffer drawn from the seed") {
  manual_seed(3);
  nn::FourierFeatures learned(small(1, true));
  CHECK(learned.frequencies.requires_grad());
  learned.forward(tensor({0.0f, 1.0f, 2.0f}, {3, 1})).sum().backward();
  REQUIRE(learned.frequencies.grad().defined());
  CHECK(learned.frequencies.grad().abs().max().item() > 0.0f);
  CHECK(has_parameter(learned, "frequencies"));

  manual_seed(3);
  nn::FourierFeatures a(small(1, false));
  manual_seed(3);
  nn::FourierFeatures b(small(1, false));
  manual_seed(4);
  nn::FourierFeatures c(small(1, false));
  CHECK_FALSE(a.frequencies.requires_grad());
  CHECK_FALSE(has_parameter(a, "frequencies"));
  CHECK(a.frequencies.to_vector() == b.frequencies.to_vector());  // the seed picks them
  CHECK(a.frequencies.to_vector() != c.frequencies.to_vector());
  // Saved with the weights: a model made from another seed reads with the saved ones.
  ScratchDir dir;
  io::save_safetensors(dir / "a.safetensors", a);
  CHECK(a.state_dict().count("frequencies") == 1);
  io::load_safetensors(dir / "a.safetensors", c);
  CHECK(c.frequencies.to_vector() == a.frequencies.to_vector());
  const Tensor x = tensor({0.0f, 5.0f, 17.0f}, {3, 1});
  CHECK((c.forward(x) - a.forward(x)).abs().max().item() == 0.0f);
}

TEST_CASE("the Fourier schemes read any length, and a step at an offset is the rows of the whole") {
  for (const std::string name : {"learned-fourier", "random-fourier"}) {
    CAPTURE(name);
    const auto scheme = nn::position_scheme(name)({.num_hiddens = 8, .num_heads = 2, .max_len = 4});
    const Tensor X = randn({2, 40, 8});  // ten times max_len
    const Tensor Y = scheme->encode_input(X);
    REQUIRE(Y.shape() == X.shape());
    // The same vector is added to every sequence of the batch, and it changes with the position.
    const Tensor P = Y - X;
    CHECK((P.select(0, 0) - P.select(0, 1)).abs().max().item() < 1e-6f);
    CHECK((P.select(1, 0) - P.select(1, 39)).abs().max().item() > 1e-3f);
    const Tensor tail = scheme->encode_input_at(X.narrow(1, 30, 10), 30);
    CHECK((tail - Y.narrow(1, 30, 10)).abs().max().item() < 1e-5f);
    CHECK_THROWS_AS(scheme->encode_input_at(X, -1), ValueError);
    CHECK_THROWS_AS(scheme->encode_input(randn({2, 5, 6})), ShapeError);
  }
  CHECK_THROWS_AS(nn::position_scheme("learned-fourier")({.num_hiddens = 7, .num_heads = 1, .max_len = 4}), ValueError);
  CHECK_THROWS_AS(nn::FourierFeatures({.scale = 0.0f}), ValueError);
  CHECK_THROWS_AS(nn::FourierFeatures({.frequencies = 0}), ValueError);
}
