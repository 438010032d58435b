#include "nn/attention_checks.h"

#include <string>

#include "autograd/ops/row_lengths.h"
#include "tensor/error.h"

namespace qkv::nn {

void check_dropout(const char* layer, float p) {
  if (!(p >= 0.0f && p < 1.0f))
    throw ValueError(std::string(layer) + ": dropout must be in [0, 1), got " + std::to_string(p));
}

void check_input(const Module& layer, const char* what, const Tensor& x, int64_t B, int64_t features) {
  if (x.dim() != 3 || (B >= 0 && x.size(0) != B) || x.size(2) != features)
    throw ShapeError(layer.where() + ": " + what + " of shape " + shape_str(x.shape()) + " must be (" +
                     (B >= 0 ? std::to_string(B) : std::string("B")) + ", T, " + std::to_string(features) +
                     ")");
}

void check_keys_values(const Module& layer, const Tensor& keys, const Tensor& values) {
  if (values.dim() != 3 || values.size(0) != keys.size(0) || values.size(1) != keys.size(1))
    throw ShapeError(layer.where() + ": values of shape " + shape_str(values.shape()) +
                     " must pair with keys of shape " + shape_str(keys.shape()) + ": expected (" +
                     std::to_string(keys.size(0)) + ", " + std::to_string(keys.size(1)) + ", dv)");
}

void check_valid_lens(const Module& layer, const IndexTensor& valid_lens, int64_t B, int64_t Q, int64_t K,
                      const char* per_example_only) {
  if (!valid_lens.defined()) return;
  const Shape& s = valid_lens.shape();
  if (s != Shape{B} && (per_example_only || s != Shape{B, Q}))
    throw ShapeError(layer.where() + ": valid_lens of shape " + shape_str(s) + " does not fit " +
                     std::to_string(B) + " sequences of " + std::to_string(Q) + " queries: expected (" +
                     std::to_string(B) + ")" +
                     (per_example_only ? std::string(" (") + per_example_only + ")"
                                       : " or (" + std::to_string(B) + "," + std::to_string(Q) + ")"));
  const int64_t* v = valid_lens.data();
  for (int64_t i = 0; i < valid_lens.numel(); ++i)
    if (v[i] < 0 || v[i] > K) check_valid_lengths(layer.where(), valid_lens, K, ", the number of keys");
}

}  // namespace qkv::nn
