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

// The model's errors on `clusters`, its energies mapped back through the training scaling. The
// clusters go through the model kEvalChunk at a time.
constexpr int64_t kEvalChunk = 256;
Errors evaluate(const TrainResult& r, const std::vector<Cluster>& clusters);

// What knowing nothing of the positions gives on `clusters`: r's mean training energy, zero forces.
Errors baseline(const TrainResult& r, const std::vector<Cluster>& clusters);

// About the bytes training takes with clusters of `atoms` atoms: the (B, N, N, K) distance
// features and what the two backward passes keep of them, for a batch or an evaluation chunk,
// whichever is larger. An estimate, to refuse before anything is allocated.
double training_bytes_estimate(const TrainOptions& o, int64_t atoms);

// The model's energy (ε) and forces (N·3) for one cluster.
Cluster predict(const TrainResult& r, const std::vector<float>& positions);

}  // namespace potential
