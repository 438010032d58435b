// The neural potential: a network that maps an atom cluster's coordinates to its energy, in the
// manner of Behler & Parrinello (2007). Each atom i sees its neighbours through radial features,
// K Gaussians of the distances r_ij,
//   G_ik = Σ_{j≠i} exp(−η (r_ij − μ_k)²),   μ_k evenly spaced over [0.85, 2.6], η from the spacing,
// which do not change when the cluster moves, turns or has its atoms renumbered; a small MLP
// (tanh, twice differentiable everywhere) maps them to the atom's energy, and the cluster's energy
// is the sum over its atoms.
//
// The forces are not a second output: F = −∂E/∂x, the gradient of the energy with respect to the
// coordinates, taken with qkv::grad. With create_graph that gradient is itself a graph, so a loss
// on the forces can be differentiated with respect to the weights: a gradient of a gradient.
#pragma once

#include <cstdint>
#include <memory>

#include "nn/container.h"
#include "nn/module.h"

namespace potential {

struct ModelConfig {
  int64_t radial = 16;   // K, the Gaussians of the distances
  int64_t hidden = 32;   // width of the atom MLP's two hidden layers
};

class Potential : public qkv::nn::Module {
 public:
  explicit Potential(const ModelConfig& config);
  // x (B, N, 3) → energies (B), in the units the model was trained in.
  qkv::Tensor energy(const qkv::Tensor& x) const;
  // The radial features (B, N, K) of each atom.
  qkv::Tensor features(const qkv::Tensor& x) const;

  ModelConfig config;
  qkv::Tensor centers;  // μ (K), a constant
  float eta = 0;
  std::shared_ptr<qkv::nn::Sequential> atom;  // (…, K) → (…, 1)
};

// The energies (B) and forces −∂E/∂x (B, N, 3) at x (B, N, 3). With create_graph the forces are a
// graph that a loss on them differentiates (training); without, plain tensors (evaluation).
struct EnergyForces {
  qkv::Tensor energy, forces;
};
EnergyForces energy_and_forces(const Potential& model, const qkv::Tensor& x, bool create_graph);

}  // namespace potential
