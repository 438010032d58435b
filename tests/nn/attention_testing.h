// Helpers shared by the attention tests: comparisons, and d2l's composed masked_softmax, the
// reference that the fused op and the layers are checked against.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/module.h"
#include "tensor/factories.h"

namespace qkv::testing {

// Element by element, |a - b| <= tol·(1 + |b|).
inline void check_close(const Tensor& a, const Tensor& b, float tol) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  for (size_t i = 0; i < va.size(); ++i) CHECK(std::fabs(va[i] - vb[i]) <= tol * (1.0f + std::fabs(vb[i])));
}

// t's values in row-major order against `expected`.
inline void check_values(const Tensor& t, const std::vector<float>& expected, float tol) {
  check_close(t.reshape({-1}), tensor(expected, {static_cast<int64_t>(expected.size())}), tol);
}

// d2l 11.3.2.1, line by line: the (B·Q) lengths (repeat_interleave for (B) lengths), sequence_mask
// arange(K)[None, :] < valid_len[:, None], masked logits set to -1e6, softmax over the last dim.
// X is (B, Q, K).
inline Tensor d2l_masked_softmax(const Tensor& X, const IndexTensor& valid_lens) {
  const Shape shape = X.shape();
  const IndexTensor lens = valid_lens.dim() == 1 ? valid_lens.repeat_interleave(shape[1]) : valid_lens.reshape({-1});
  const Tensor keep = arange(static_cast<float>(shape[2])).unsqueeze(0).lt(to_float(lens).unsqueeze(1));
  return X.reshape({-1, shape[2]}).masked_fill(keep.eq(0.0f), -1e6f).reshape(shape).softmax(-1);
}

// value(i, j) = 0.5·sin(1 + 0.37·i + 0.91·j) for flat index i of the j-th parameter: how the
// golden tests and their scripts fill a layer's parameters alike.
inline void fill_parameters(nn::Module& m) {
  NoGradGuard no_grad;
  int j = 0;
  for (auto& [name, p] : m.named_parameters()) {
    float* data = p.data();
    for (int64_t i = 0; i < p.numel(); ++i) data[i] = 0.5f * std::sin(1.0f + 0.37f * i + 0.91f * j);
    ++j;
  }
}

}  // namespace qkv::testing
