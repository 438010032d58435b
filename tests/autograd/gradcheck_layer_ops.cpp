// Gradcheck entries for the fused ops behind layers of nn/ (see tests/gradcheck_registry.h):
// layer_norm, gru_cell, gru_sequence, masked_softmax, dropout, unfold1d and masked_max (embedding is
// reached by the Embedding entry of tests/nn/gradcheck_layers.cpp).
#include "autograd/ops/dropout.h"
#include "autograd/ops/gru.h"
#include "autograd/ops/layer_norm.h"
#include "autograd/ops/rotary.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/unfold.h"
#include "gradcheck_registry.h"
#include "tensor/random.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

using X = const Inputs&;

}  // namespace

QKV_GRADCHECK("layer_norm", {In::normal({2, 3, 6}), In::normal({6}), In::normal({6})},
              [](X x) { return layer_norm(x[0], x[1], x[2], 1e-5f); });
QKV_GRADCHECK("layer_norm without affine", {In::normal({4, 5})},
              [](X x) { return layer_norm(x[0], Tensor(), Tensor(), 1e-5f); });
QKV_GRADCHECK("gru_cell", {In::normal({2, 6}), In::normal({2, 6}), In::normal({2, 2})},
              [](X x) { return gru_cell(x[0], x[1], x[2]); });
QKV_GRADCHECK("gru_sequence", {In::normal({3, 2, 6}), In::normal({2, 2}), In::normal({6, 2}), In::normal({6})},
              [](X x) { return gru_sequence(x[0], x[1], x[2], x[3]); });
QKV_GRADCHECK("gru_sequence reverse without bias", {In::normal({4, 2, 6}), In::normal({2, 2}), In::normal({6, 2})},
              [](X x) { return gru_sequence(x[0], x[1], x[2], Tensor(), /*reverse=*/true); });
// A bias that needs no gradient still enters the gates (and the rule create_graph runs).
QKV_GRADCHECK("gru_sequence with a fixed bias",
              {In::normal({3, 2, 6}), In::normal({2, 2}), In::normal({6, 2}), In::normal({6}).no_grad()},
              [](X x) { return gru_sequence(x[0], x[1], x[2], x[3]); });
QKV_GRADCHECK("gru_sequence of one step", {In::normal({1, 3, 9}), In::normal({3, 3}), In::normal({9, 3}), In::normal({9})},
              [](X x) { return gru_sequence(x[0], x[1], x[2], x[3]); });
QKV_GRADCHECK("masked_softmax with a length per example", {In::normal({2, 3, 5})},
              [](X x) { return masked_softmax(x[0], IndexTensor{2, 5}); });
QKV_GRADCHECK("masked_softmax with a length per query and an empty row", {In::normal({2, 3, 4})},
              [](X x) { return masked_softmax(x[0], IndexTensor({1, 4, 2, 0, 3, 4}, {2, 3})); });
QKV_GRADCHECK("masked_softmax over heads", {In::normal({2, 2, 3, 4})},
              [](X x) { return masked_softmax(x[0], IndexTensor({3, 1, 4, 2, 2, 1}, {2, 3})); });
QKV_GRADCHECK("masked_softmax without lengths", {In::normal({3, 5})},
              [](X x) { return masked_softmax(x[0], IndexTensor()); });
// A generator made afresh on every call draws the same mask each time; 15 elements, so that the
// odd last one (drawn alone, not in a pair) is checked too.
QKV_GRADCHECK("dropout", {In::normal({3, 5})}, [](X x) {
  Generator g(7);
  return dropout(x[0], 0.4f, g);
});
QKV_GRADCHECK("unfold1d with padding", {In::normal({2, 4, 3})}, [](X x) { return unfold1d(x[0], 3, 1); });
QKV_GRADCHECK("unfold1d without padding", {In::normal({2, 5, 2})}, [](X x) { return unfold1d(x[0], 2, 0); });
QKV_GRADCHECK("unfold1d dilated with a kernel wider than the sequence", {In::normal({1, 3, 2})},
              [](X x) { return unfold1d(x[0], 3, 2, 2); });
QKV_GRADCHECK("masked_max", {In::normal({3, 4, 5})},
              [](X x) { return masked_max(x[0], IndexTensor{4, 1, 2}); });
// Rotary positions: the heads of a (B, T, H·d) projection read through their strides, and the
// packed (B, T, 3·H·d) projection, its V passed through; the tables are constants.
QKV_GRADCHECK("rotary on strided heads", {In::normal({2, 3, 8})}, [](X x) {
  const Tensor angles = tensor({0.3f, 1.1f, -0.7f, 2.0f, 0.9f, -1.4f}).view({3, 2});
  return rotary(x[0].view({2, 3, 2, 4}).permute({0, 2, 1, 3}), angles.cos(), angles.sin());
});
QKV_GRADCHECK("rotary_packed", {In::normal({2, 3, 12})}, [](X x) {
  const Tensor angles = tensor({0.3f, 1.1f, -0.7f, 2.0f, 0.9f, -1.4f}).view({3, 2});
  return rotary_packed(x[0], 1, angles.cos(), angles.sin());
});
