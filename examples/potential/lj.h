// Lennard-Jones clusters: the data of the neural potential (examples/potential), generated in
// closed form, nothing downloaded. In reduced units (ε = σ = 1) a pair of atoms at distance r has
//   V(r) = 4 (r⁻¹² − r⁻⁶),  V'(r) = 4 (6 r⁻⁷ − 12 r⁻¹³),
// a cluster's energy is the sum over its pairs, and the force on atom i is F_i = −∂E/∂x_i =
// Σ_j −V'(r_ij)·(x_i − x_j)/r_ij.
//
// A cluster is drawn as a chemist samples a small molecule's configurations: N atoms placed at
// random in a box (no two closer than 0.9), relaxed by steepest descent into a nearby minimum of
// the energy, then shaken with Gaussian noise (each coordinate, standard deviation `noise`), as
// thermal motion would; a shaken cluster with two atoms closer than `min_distance` is drawn again.
#pragma once

#include <cstdint>
#include <vector>

namespace potential {

struct Cluster {
  std::vector<float> positions;  // (N, 3), row-major
  double energy = 0;
  std::vector<float> forces;     // (N, 3)
};

// The energy and forces of the N atoms at `positions` (N·3 floats).
Cluster lennard_jones(const std::vector<float>& positions);

struct ClusterOptions {
  int64_t atoms = 8;
  double noise = 0.05;          // of the shaking, per coordinate
  double min_distance = 0.92;   // closer atoms would put energies and forces far out of scale
  int64_t relax_steps = 400;
};

// `count` clusters drawn as above from `seed`: the same seed, the same clusters.
std::vector<Cluster> generate_clusters(int64_t count, const ClusterOptions& options, uint64_t seed);

}  // namespace potential
