// Adam and AdamW, exactly torch.optim.Adam and torch.optim.AdamW. The documented algorithm, for
// t = 1, 2, ... (lr γ, betas β1 β2, weight_decay λ):
//   g ← ∇θ + λ·θ                       (Adam's L2 penalty, when λ ≠ 0)
//   θ ← θ - γ·λ·θ                      (AdamW instead: decoupled weight decay)
//   m ← β1·m + (1-β1)·g
//   v ← β2·v + (1-β2)·g²
//   v_max ← max(v_max, v)              (amsgrad: then v_max replaces v below)
//   θ ← θ - γ·m̂ / (√v̂ + ε),   m̂ = m / (1-β1^t),  v̂ = v / (1-β2^t)
// computed in PyTorch's order of operations (equal in exact arithmetic):
//   step_size = γ / (1-β1^t),   denom = √v / √(1-β2^t) + ε,   θ ← θ - step_size · m / denom.
// ε is added after the bias correction of v, not to √v as in the Adam paper's "efficient" form.
// The bias corrections and step size are computed in double, the per-element math in float.
// (PyTorch 2 updates m with lerp_, m + (1-β1)·(g - m): equal in exact arithmetic; we keep the
// documented form.)
#pragma once

#include <utility>

#include "optim/optimizer.h"

namespace qkv::optim {

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;  // an L2 penalty added to the gradient
  bool amsgrad = false;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  Adam(std::vector<ParamGroup> groups, const AdamOptions& options = {});
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(const char* name, std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled);

 private:
  void update(float* p, const float* g, int64_t n, double lr, double weight_decay, ParamState& state) override;
  AdamOptions options_;
  bool decoupled_;
};

struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;  // decoupled: θ shrinks by γ·λ·θ each step
  bool amsgrad = false;
};

// Adam with decoupled weight decay (Loshchilov & Hutter, "Decoupled Weight Decay Regularization").
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options = {});
};

}  // namespace qkv::optim
