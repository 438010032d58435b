// gradcheck: does an op's backward agree with its forward?
//
// The analytic gradient (from backward) is compared with central finite differences
//   dL/dx_i ≈ (L(x + ε·e_i) - L(x - ε·e_i)) / 2ε
// where L = Σ r ⊙ fn(inputs) for a fixed random r, so every output element takes part. Every input
// that requires grad is checked, element by element. Tensors are float32, so ε and the tolerances
// are looser than PyTorch's float64 defaults; keep inputs O(1) and away from kinks (relu at 0).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace qkv {

struct GradcheckOptions {
  float eps = 1e-2f;   // finite-difference step
  float atol = 1e-3f;  // pass when |analytic - numeric| <= atol + rtol·|numeric|
  float rtol = 1e-2f;
  uint64_t seed = 1234;  // for the projection r
};

struct GradcheckResult {
  bool ok = true;
  // The worst element over all inputs: which input, which flat index, both gradients.
  int64_t worst_input = -1;
  int64_t worst_index = -1;
  double analytic = 0.0, numeric = 0.0, error = 0.0;
  // What failed, readable, each input by its position and, when it has one (a module's parameter),
  // its name: "worst element: input 2 (blocks.0.attention.W_q.weight) index 5: ..."; empty when ok.
  std::string message;
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Fails when an element is outside tolerance, or when an input's analytic gradient is missing or
// identically zero while the numeric one is not (a backward that forgot an input).
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// The same check for a function that reads its tensors directly, such as a module's forward
// reading its parameters: each of `tensors` (contiguous leaves that require grad) is perturbed in
// place and restored; their .grad() is overwritten.
GradcheckResult gradcheck_tensors(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                                  const GradcheckOptions& options = {});

// gradgradcheck: does the gradient's own backward agree with its forward? With a fixed random v
// (the output gradient), G(inputs, v) = ∂(Σ v ⊙ fn(inputs))/∂inputs is taken with create_graph,
// and G is gradcheck'ed as a function of the inputs and of v: the second derivatives, and the
// gradient with respect to the output gradient that forward mode (jvp) reads, against central
// differences of G. Every op of fn must then have a backward rule written with recorded ops.
GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});
GradcheckResult gradgradcheck_tensors(const std::function<Tensor()>& fn, const std::vector<Tensor>& tensors,
                                      const GradcheckOptions& options = {});

}  // namespace qkv
