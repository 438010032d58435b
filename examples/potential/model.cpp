#include "examples/potential/model.h"

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace potential {

using qkv::Tensor;

Potential::Potential(const ModelConfig& c) : config(c) {
  if (c.radial < 2 || c.hidden < 1)
    throw qkv::ValueError("Potential: expected at least 2 radial features and a hidden width of at least 1");
  const float lo = 0.85f, hi = 2.6f, spacing = (hi - lo) / static_cast<float>(c.radial - 1);
  centers = qkv::linspace(lo, hi, c.radial);
  eta = 0.5f / (spacing * spacing);  // neighbouring Gaussians cross at half their height's e^(−1/8)
  atom = register_module("atom", std::make_shared<qkv::nn::Sequential>());
  atom->push_back(std::make_shared<qkv::nn::Linear>(c.radial, c.hidden)).push_back(std::make_shared<qkv::nn::Tanh>());
  atom->push_back(std::make_shared<qkv::nn::Linear>(c.hidden, c.hidden)).push_back(std::make_shared<qkv::nn::Tanh>());
  atom->push_back(std::make_shared<qkv::nn::Linear>(c.hidden, 1));
}

Tensor Potential::features(const Tensor& x) const {
  if (x.dim() != 3 || x.size(2) != 3 || x.size(1) < 2)
    throw qkv::ShapeError("Potential: coordinates of shape " + qkv::shape_str(x.shape()) +
                          " must be (B, N, 3) with N >= 2");
  const int64_t N = x.size(1);
  const Tensor diff = x.unsqueeze(2) - x.unsqueeze(1);  // (B, N, N, 3): x_i − x_j
  // An atom's distance to itself would be √0, whose derivative is infinite: 1 is added on the
  // diagonal (a constant), and the diagonal is masked out of the sums.
  const Tensor self = qkv::eye(N);
  const Tensor r = ((diff * diff).sum({-1}) + self).sqrt();  // (B, N, N)
  const Tensor offset = r.unsqueeze(-1) - centers;             // (B, N, N, K)
  const Tensor gauss = (offset * offset * -eta).exp() * (1.0f - self).unsqueeze(-1);
  return gauss.sum({2});
}

Tensor Potential::energy(const Tensor& x) const { return atom->forward(features(x)).sum({1, 2}); }

EnergyForces energy_and_forces(const Potential& model, const Tensor& x, bool create_graph) {
  const qkv::GradModeGuard grad_mode(true);  // the forces are a gradient, even in evaluation
  const Tensor at = x.detach().requires_grad_(true);
  const Tensor e = model.energy(at);
  qkv::BackwardOptions options;
  options.create_graph = create_graph;
  const Tensor dE = qkv::grad({e.sum()}, {at}, {}, options)[0];  // Σ_b: each cluster's own gradient
  return {create_graph ? e : e.detach(), create_graph ? -dE : -dE.detach()};
}

}  // namespace potential
