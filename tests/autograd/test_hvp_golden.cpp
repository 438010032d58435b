// Hessian-vector products against PyTorch (torch.autograd.functional.hvp, float64): the tagger's
// model at a tiny size and a two-layer MLP, with respect to all their parameters
// (tests/autograd/hvp_golden.py writes the values). Checked in both modes: the fast path's fused
// ops (attention, layer norm, cross-entropy) differentiate their composed references there.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/hvp_golden_values.h"
#include "nn/attention_testing.h"
#include "qkv.h"
#include "tensor/reference_mode.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

// The tagger's model at a tiny size: encoder, linear tag head.
struct TinyTagger : nn::Module {
  TinyTagger() {
    encoder = register_module("encoder", std::make_shared<nn::TransformerEncoder>(nn::TransformerEncoderOptions{
                                             .vocab_size = 7, .num_hiddens = 8, .ffn_num_hiddens = 12, .num_heads = 2,
                                             .num_layers = 2, .dropout = 0.0f, .max_len = 8,
                                             .positions = nn::position_scheme("sinusoidal"),
                                             .ffn = nn::feed_forward("relu")}));
    head = register_module("head", std::make_shared<nn::Linear>(8, 4));
  }
  std::shared_ptr<nn::TransformerEncoder> encoder;
  std::shared_ptr<nn::Linear> head;
};

// The direction: 0.3·cos(2 + 0.53·i + 0.71·j) for parameter j at flat index i.
std::vector<Tensor> direction(const std::vector<Tensor>& params) {
  std::vector<Tensor> v;
  for (size_t j = 0; j < params.size(); ++j) {
    Tensor t = Tensor::empty(params[j].shape());
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = 0.3f * std::cos(2.0f + 0.53f * i + 0.71f * j);
    v.push_back(t);
  }
  return v;
}

// `loss` of the parameters (swapped in for the module's own), H·v against the golden: within 1e-4
// of the golden's norm, as a whole (‖H·v − golden‖ / ‖golden‖) and element by element.
void check_hvp(nn::Module& model, const std::function<Tensor()>& loss, const HvpGolden& golden) {
  fill_parameters(model);
  const std::vector<Tensor> params = model.parameters();
  const FunctionalResult r = hvp_tensors(loss, params, direction(params));
  CHECK(r.output.item() == doctest::Approx(golden.loss).epsilon(1e-5));
  std::vector<float> got;
  for (const Tensor& h : r.product)
    for (float x : h.to_vector()) got.push_back(x);
  REQUIRE(got.size() == golden.hvp.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff += (got[i] - golden.hvp[i]) * (got[i] - golden.hvp[i]);
    norm += golden.hvp[i] * golden.hvp[i];
  }
  CHECK(std::sqrt(diff / norm) < 1e-4);
  const double scale = std::sqrt(norm / static_cast<double>(got.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - golden.hvp[i]) <= 1e-4 * std::max(std::fabs(golden.hvp[i]), scale));
  }
}

}  // namespace

TEST_CASE("the Hessian-vector product of the tagger's tiny model matches PyTorch") {
  const IndexTensor ids({1, 5, 0, 6, 2, 3, 2, 4, 4, 1}, {2, 5}), lens{5, 3};
  const IndexTensor tags({0, 3, 1, 2, 2, 1, 1, 0, -100, -100}, {2, 5});  // past a sentence: ignored
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    TinyTagger model;
    check_hvp(model, [&] { return nn::functional::cross_entropy(model.head->forward(model.encoder->forward(ids, lens)), tags); },
              kTaggerHvp);
  }
}

TEST_CASE("the Hessian-vector product of a two-layer MLP matches PyTorch") {
  std::vector<float> x;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) x.push_back(0.3f * std::sin(0.7f * i + 0.2f * j));
  const Tensor X = tensor(x, {4, 5});
  const IndexTensor y{2, 0, 1, 2};
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const ReferenceModeGuard mode(reference);
    nn::Sequential mlp;
    mlp.push_back(std::make_shared<nn::Linear>(5, 6)).push_back(std::make_shared<nn::Tanh>());
    mlp.push_back(std::make_shared<nn::Linear>(6, 3));
    check_hvp(mlp, [&] { return nn::functional::cross_entropy(mlp.forward(X), y); }, kMlpHvp);
  }
}
