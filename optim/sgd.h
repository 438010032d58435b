// Stochastic gradient descent with momentum, dampening, Nesterov momentum and L2 weight decay,
// exactly torch.optim.SGD. Its documented algorithm, for t = 1, 2, ...:
//   g ← ∇θ + λ·θ                           (weight_decay λ, when λ ≠ 0)
//   b ← g if t = 1, else μ·b + (1-τ)·g     (momentum μ ≠ 0, dampening τ)
//   g ← g + μ·b if nesterov, else b        (when μ ≠ 0)
//   θ ← θ - γ·g                            (lr γ)
#pragma once

#include "optim/optimizer.h"

namespace qkv::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening = 0
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options = {});
  SGD(std::vector<ParamGroup> groups, const SGDOptions& options = {});
  const SGDOptions& options() const { return options_; }

 private:
  void update(float* p, const float* g, int64_t n, double lr, double weight_decay, ParamState& state) override;
  SGDOptions options_;
};

}  // namespace qkv::optim
