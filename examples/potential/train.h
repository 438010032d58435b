// Training the neural potential (examples/potential/model.h) on Lennard-Jones clusters, on
// energies alone or on energies and forces, and the errors on held-out clusters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "examples/potential/lj.h"
#include "examples/potential/model.h"

namespace potential {

struct TrainOptions {
  ModelConfig model;
  int64_t epochs = 300, batch = 32;
  double lr = 3e-3;
  // The loss: mean squared energy error, plus force_weight times the mean squared error of the
  // force components (both in units of the training energies' standard deviation). 0: energies alone.
  double force_weight = 0;
  uint64_t seed = 1;
};

// Root-mean-square errors on a set of clusters, in the data's units (ε, and ε/σ for forces).
struct Errors {
  double energy = 0, force = 0;
};

struct TrainResult {
  std::vector<Errors> per_epoch;  // on the held-out clusters, after each epoch
  Errors test;                    // after the last epoch
  double seconds = 0;
  std::shared_ptr<Potential> model;
  double energy_mean = 0, energy_std = 1;  // the scaling the model was trained in
};

TrainResult train(const std::vector<Cluster>& train_set, const std::vector<Cluster>& test_set, const TrainOptions& o);

// The model's errors on `clusters`, its energies mapped back through the training scaling.
Errors evaluate(const TrainResult& r, const std::vector<Cluster>& clusters);

// The model's energy (ε) and forces (N·3) for one cluster.
Cluster predict(const TrainResult& r, const std::vector<float>& positions);

}  // namespace potential
