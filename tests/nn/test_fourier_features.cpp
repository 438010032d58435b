// Fourier features of positions (nn/fourier_features.h): the features by their formula, learned
// frequencies that get a gradient, random ones that are seeded and saved with the model, the 1-D
// scheme at lengths past any max_len; and the bilinear resampling of position tables
// (nn/functional/interpolate.h) against PyTorch.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/grad_mode.h"
#include "gradcheck_registry.h"
#include "io/scratch_dir.h"
#include "model_io/weights.h"
#include "nn/fourier_features.h"
#include "nn/functional/interpolate.h"
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
QKV_GRADCHECK("resize_bilinear up and down", {In::normal({3, 2, 2})},
              [](const Inputs& x) { return nn::functional::resize_bilinear(x[0], 5, 1); });

TEST_CASE("FourierFeatures computes [cos(xWᵀ), sin(xWᵀ)]/√F, then its MLP") {
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
  const Tensor expected = f.output->forward(f.hidden->forward(r).gelu());
  CHECK((f.forward(tensor(x, {2, 2})) - expected).abs().max().item() == 0.0f);
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

TEST_CASE("resize_bilinear matches PyTorch's bilinear interpolate (align_corners=False)") {
  // tests/nn/resize_golden.py
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[static_cast<size_t>(i)] = static_cast<float>(std::pow(i, 1.5));
  const Tensor x = tensor(values, {2, 3, 2});
  const std::vector<std::pair<Shape, std::vector<float>>> golden = {
      {{3, 5, 2}, {0,        1,        1.131371f, 2.678461f, 2.828427f, 5.196153f, 5.931371f, 8.786665f,
                   8,        11.18034f, 7.348469f, 9.76013f,  9.500251f, 12.29531f, 12.72792f, 16.09808f,
                   16.978f,  20.7382f, 19.81139f, 23.83161f, 14.69694f, 18.52026f, 17.86913f, 21.91216f,
                   22.62742f, 27,      28.02463f, 32.68972f, 31.62278f, 36.48287f}},
      {{4, 7, 2}, {0,         1,         0.404061f, 1.59945f,  1.616244f, 3.397801f, 2.828427f, 5.196152f,
                   5.044816f, 7.760804f, 7.261204f, 10.32546f, 8,         11.18034f, 3.674235f, 5.380065f,
                   4.260512f, 6.132501f, 6.019343f, 8.389808f, 7.778175f, 10.64711f, 10.40425f, 13.58663f,
                   13.03033f, 16.52614f, 13.90569f, 17.50597f, 11.0227f,  14.14019f, 11.97341f, 15.1986f,
                   14.82554f, 18.37382f, 17.67767f, 21.54904f, 21.12313f, 25.23827f, 24.56859f, 28.9275f,
                   25.71708f, 30.15724f, 14.69694f, 18.52026f, 15.82986f, 19.73165f, 19.22864f, 23.36583f,
                   22.62742f, 27,        26.48257f, 31.06409f, 30.33772f, 35.12817f, 31.62278f, 36.48287f}},
      {{1, 2, 2}, {8.693333f, 11.34462f, 18.04052f, 21.89822f}},
  };
  for (const auto& [shape, expected] : golden) {
    CAPTURE(shape_str(shape));
    const Tensor y = nn::functional::resize_bilinear(x, shape[0], shape[1]);
    REQUIRE(y.shape() == shape);
    const std::vector<float> got = y.to_vector();
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(2e-6));
  }
  CHECK((nn::functional::resize_bilinear(x, 2, 3) - x).abs().max().item() == 0.0f);  // the same size: itself
  CHECK_THROWS_AS(nn::functional::resize_bilinear(randn({2, 3}), 4, 4), ShapeError);
  CHECK_THROWS_AS(nn::functional::resize_bilinear(x, 0, 4), ValueError);
}
