// What the golden tests of Conv1d and CharEncoder share with tests/nn/char_golden.py: how inputs
// and parameters are filled, the probe the loss is weighted with, and the comparison.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "autograd/grad_mode.h"
#include "nn/char_golden_values.h"
#include "tensor/factories.h"

namespace qkv::testing {

// x[i] = sin(0.3·i + 0.1) over the flat index, as the golden script fills its inputs.
inline Tensor wave(const Shape& shape) {
  return arange(static_cast<float>(numel(shape))).mul(0.3f).add(0.1f).sin().reshape(shape);
}

// cos(0.3·m) over the flat index m: the script's loss is Σ out·probe.
inline Tensor probe(const Shape& shape) {
  return arange(static_cast<float>(numel(shape))).mul(0.3f).cos().reshape(shape);
}

// Parameter j filled with 0.5·sin(1 + 0.37·i + 0.91·j), as the script.
inline void fill_parameter(Tensor p, int j) {
  NoGradGuard no_grad;
  p.copy_(arange(static_cast<float>(p.numel()))
              .mul(0.37f)
              .add(1.0f + 0.91f * j)
              .sin()
              .mul(0.5f)
              .reshape(p.shape()));
}

inline void check_close(const Tensor& got, const std::vector<double>& want) {
  const std::vector<float> g = got.to_vector();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-4));
}

}  // namespace qkv::testing
