// The Performer, Linformer and talking-heads attention against PyTorch goldens written from their
// papers' equations (tests/nn/efficient_attention_golden.py: Choromanski et al. 2021 Lemma 1 and
// FAVOR+, Wang et al. 2020 eq. 7, Shazeer et al. 2020 section 4), in float64 and independently of
// the headers: the output and the gradient of every parameter and of the input.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/attention_interface.h"
#include "nn/attention_testing.h"
#include "nn/efficient_attention_golden_values.h"
#include "nn/performer.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

// The block sizes of every case: B = 2, T = 5, D = 8, H = 2 (d = 4); Linformer's n = max_len = 6,
// so that T < n exercises the first T columns of E and F.
nn::AttentionSetup golden_setup(const EfficientAttentionGolden& g) {
  return {.num_hiddens = 8, .num_heads = 2, .max_len = 6, .dropout = 0.0f, .positions = nullptr,
          .attend = g.attend == "causal" ? nn::AttentionRestriction::causal() : nn::AttentionRestriction::full(),
          .features = g.features};
}


// The Performer's random features ω are a buffer drawn from a generator; the script fixes them to
// 0.8·sin(0.5 + 1.3·i), which the estimator takes as any other draw: m rows of d = 4.
void fill_features(nn::Attention& attention, int64_t m) {
  auto* performer = dynamic_cast<nn::Performer*>(&attention);
  if (!performer) return;
  REQUIRE(performer->features.shape() == Shape{m, 4});
  NoGradGuard no_grad;
  float* data = performer->features.data();
  for (int64_t i = 0; i < performer->features.numel(); ++i) data[i] = 0.8f * std::sin(0.5f + 1.3f * i);
}

// The input X (B, T, D) = sin(0.8 + 0.47·i), a leaf so that its gradient is checked too.
Tensor golden_input() {
  Tensor x = zeros({2, 5, 8});
  float* data = x.data();
  for (int64_t i = 0; i < x.numel(); ++i) data[i] = std::sin(0.8f + 0.47f * i);
  return x.requires_grad_();
}

// Σ grad[i]·sin(0.7·i + 0.1), the script's checksum of a gradient.
double grad_checksum(const Tensor& grad) {
  const Tensor weights = arange(static_cast<float>(grad.numel())).mul(0.7f).add(0.1f).sin();
  return (grad.reshape({-1}) * weights).sum().item();
}

void check_checksum(const std::string& name, const Tensor& grad,
                    const std::pair<std::string, double>& expected) {
  CAPTURE(name);
  CHECK(name == expected.first);
  REQUIRE(grad.defined());
  CHECK(grad_checksum(grad) == doctest::Approx(expected.second).epsilon(1e-3).scale(1e-3));
}

}  // namespace

TEST_CASE("the Performer, Linformer and talking-heads attention match the PyTorch golden values from the papers") {
  const IndexTensor lens{5, 3};
  for (const EfficientAttentionGolden& g : kEfficientAttentionGoldens) {
    CAPTURE(g.name);
    const std::shared_ptr<nn::Attention> attention = nn::attention_mechanism(g.mechanism)(golden_setup(g));
    attention->eval();  // the Performer redraws its features only in training
    fill_parameters(*attention);
    fill_features(*attention, g.features);
    const Tensor X = golden_input();
    const Tensor out = attention->forward(X, X, X, lens);
    REQUIRE(out.shape() == Shape{2, 5, 8});
    const std::vector<float> got = out.to_vector();
    REQUIRE(got.size() == g.output.size());
    for (size_t n = 0; n < got.size(); ++n) CHECK(got[n] == doctest::Approx(g.output[n]).epsilon(1e-4));
    const Tensor probe = arange(static_cast<float>(out.numel())).mul(0.3f).cos().reshape(out.shape());
    (out * probe).sum().backward();
    const auto named = attention->named_parameters();
    REQUIRE(named.size() + 1 == g.grad_checksums.size());  // the parameters, then the input
    for (size_t k = 0; k < named.size(); ++k)
      check_checksum(named[k].first, named[k].second.grad(), g.grad_checksums[k]);
    check_checksum("input", X.grad(), g.grad_checksums.back());
  }
}
