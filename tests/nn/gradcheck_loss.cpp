// Gradcheck entries for the losses of nn/functional/loss.h (see tests/gradcheck_registry.h).
// Class targets are IndexTensors captured by the lambdas; class weights are inputs marked
// no_grad, since losses treat them as constants.
#include "gradcheck_registry.h"
#include "nn/functional/loss.h"

using namespace qkv;
using namespace qkv::testing;
namespace F = qkv::nn::functional;
using F::Reduction;
using X = const Inputs&;

QKV_GRADCHECK("cross_entropy", {In::normal({4, 5})},
              [](X x) { return F::cross_entropy(x[0], IndexTensor{0, 3, 4, 1}); });
QKV_GRADCHECK("cross_entropy weighted smoothed with ignore_index", {In::normal({2, 3, 4}), In::uniform({4}, 0.5f, 2.0f).no_grad()},
              [](X x) {
                const IndexTensor y({0, 3, -100, 2, 1, 3}, {2, 3});
                return F::cross_entropy(x[0], y, {.weight = x[1], .label_smoothing = 0.2f});
              });
QKV_GRADCHECK("cross_entropy unreduced with classes in dim 1", {In::normal({2, 4, 3})},
              [](X x) {
                const IndexTensor y({0, 3, 2, 1, 1, 0}, {2, 3});
                return F::cross_entropy(x[0], y, {.reduction = Reduction::None, .class_dim = 1});
              });
QKV_GRADCHECK("nll_loss weighted with ignore_index", {In::normal({4, 3}), In::uniform({3}, 0.5f, 2.0f).no_grad()},
              [](X x) { return F::nll_loss(x[0], IndexTensor{2, -100, 0, 1}, {.weight = x[1]}); });
QKV_GRADCHECK("mse_loss", {In::normal({3, 4}), In::normal({3, 4})},
              [](X x) { return F::mse_loss(x[0], x[1]); });
QKV_GRADCHECK("binary_cross_entropy_with_logits", {In::normal({3, 4}), In::uniform({3, 4}, 0.0f, 1.0f)},
              [](X x) { return F::binary_cross_entropy_with_logits(x[0], x[1]); });
QKV_GRADCHECK("binary_cross_entropy_with_logits with pos_weight and weight",
              {In::normal({3, 4}), In::uniform({3, 4}, 0.0f, 1.0f), In::uniform({4}, 0.5f, 3.0f),
               In::uniform({3, 1}, 0.5f, 2.0f).no_grad()},
              [](X x) {
                return F::binary_cross_entropy_with_logits(x[0], x[1], {.weight = x[3], .pos_weight = x[2],
                                                                        .reduction = Reduction::Sum});
              });
QKV_GRADCHECK("sequence_cross_entropy", {In::normal({2, 3, 4})},
              [](X x) {
                return F::sequence_cross_entropy(x[0], IndexTensor({1, 0, 3, 2, 9, 9}, {2, 3}), IndexTensor{3, 1}, 0.1f);
              });
