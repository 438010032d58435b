#include "examples/potential/train.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "examples/common/timing.h"
#include "optim/adam.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

namespace potential {
namespace {

using qkv::Tensor;

// The clusters' coordinates (n, N, 3), energies (n) and forces (n, N, 3) as tensors.
struct Batch {
  Tensor x, energy, forces;
};

Batch stack_clusters(const std::vector<Cluster>& clusters) {
  if (clusters.empty()) throw qkv::ValueError("potential: no clusters");
  const int64_t n = static_cast<int64_t>(clusters.size()), N = static_cast<int64_t>(clusters[0].positions.size() / 3);
  std::vector<float> x, e, f;
  for (const Cluster& c : clusters) {
    x.insert(x.end(), c.positions.begin(), c.positions.end());
    e.push_back(static_cast<float>(c.energy));
    f.insert(f.end(), c.forces.begin(), c.forces.end());
  }
  return {qkv::tensor(x, {n, N, 3}), qkv::tensor(e, {n}), qkv::tensor(f, {n, N, 3})};
}

Tensor mean_square(const Tensor& a, const Tensor& b) {
  const Tensor d = a - b;
  return (d * d).mean();
}

}  // namespace

TrainResult train(const std::vector<Cluster>& train_set, const std::vector<Cluster>& test_set, const TrainOptions& o) {
  const auto start = qkv::examples::Clock::now();
  qkv::manual_seed(o.seed);
  TrainResult r;
  r.model = std::make_shared<Potential>(o.model);
  const Batch all = stack_clusters(train_set);
  // Energies as z-scores; the forces, −∂E/∂x, in the same unit (the energies' standard deviation).
  const std::vector<float> e = all.energy.to_vector();
  r.energy_mean = std::accumulate(e.begin(), e.end(), 0.0) / static_cast<double>(e.size());
  double var = 0;
  for (float v : e) var += (v - r.energy_mean) * (v - r.energy_mean);
  r.energy_std = std::sqrt(var / static_cast<double>(e.size()));
  if (!(r.energy_std > 0)) r.energy_std = 1;
  const Tensor energy = (all.energy - static_cast<float>(r.energy_mean)) / static_cast<float>(r.energy_std);
  const Tensor forces = all.forces / static_cast<float>(r.energy_std);

  qkv::optim::Adam adam(r.model->parameters(), {.lr = o.lr});
  qkv::Generator gen(o.seed);
  std::vector<int64_t> order(train_set.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  const bool with_forces = o.force_weight > 0;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    qkv::shuffle(order, gen);
    for (size_t b = 0; b < order.size(); b += static_cast<size_t>(o.batch)) {
      const qkv::IndexTensor idx(std::vector<int64_t>(order.begin() + static_cast<int64_t>(b),
                                                      order.begin() + static_cast<int64_t>(std::min(order.size(), b + o.batch))));
      const Tensor x = all.x.index_select(0, idx);
      // With forces, the energy's gradient with respect to the coordinates is recorded
      // (create_graph), so that the loss on it reaches the weights.
      const EnergyForces p = with_forces ? energy_and_forces(*r.model, x, true) : EnergyForces{r.model->energy(x), Tensor()};
      Tensor loss = mean_square(p.energy, energy.index_select(0, idx));
      if (with_forces) loss = loss + mean_square(p.forces, forces.index_select(0, idx)) * static_cast<float>(o.force_weight);
      adam.zero_grad();
      loss.backward();
      adam.step();
    }
    r.per_epoch.push_back(evaluate(r, test_set));
  }
  r.test = r.per_epoch.back();
  r.seconds = qkv::examples::seconds_since(start);
  return r;
}

Errors evaluate(const TrainResult& r, const std::vector<Cluster>& clusters) {
  double energy_sq = 0, force_sq = 0;
  const float scale = static_cast<float>(r.energy_std);
  for (size_t begin = 0; begin < clusters.size(); begin += kEvalChunk) {
    const size_t end = std::min(clusters.size(), begin + static_cast<size_t>(kEvalChunk));
    const Batch part = stack_clusters({clusters.begin() + static_cast<int64_t>(begin), clusters.begin() + static_cast<int64_t>(end)});
    const EnergyForces p = energy_and_forces(*r.model, part.x, false);
    const Tensor energy = p.energy * scale + static_cast<float>(r.energy_mean);
    energy_sq += mean_square(energy, part.energy).item() * static_cast<double>(end - begin);
    force_sq += mean_square(p.forces * scale, part.forces).item() * static_cast<double>(end - begin);
  }
  const double n = static_cast<double>(clusters.size());
  return {std::sqrt(energy_sq / n), std::sqrt(force_sq / n)};
}

Errors baseline(const TrainResult& r, const std::vector<Cluster>& clusters) {
  double e2 = 0, f2 = 0, components = 0;
  for (const Cluster& k : clusters) {
    e2 += (k.energy - r.energy_mean) * (k.energy - r.energy_mean);
    for (float v : k.forces) f2 += static_cast<double>(v) * v, components += 1;
  }
  return {std::sqrt(e2 / static_cast<double>(clusters.size())), std::sqrt(f2 / components)};
}

double training_bytes_estimate(const TrainOptions& o, int64_t atoms) {
  const double rows = static_cast<double>(std::max(o.batch, kEvalChunk)) * static_cast<double>(atoms * atoms);
  // The (…, K) Gaussians and their offsets, kept by forward, by the recorded backward and again by
  // the second backward's walk: about a dozen such tensors at once.
  return 4.0 * rows * (12.0 * static_cast<double>(o.model.radial) + 40.0);
}

Cluster predict(const TrainResult& r, const std::vector<float>& positions) {
  const int64_t N = static_cast<int64_t>(positions.size() / 3);
  const EnergyForces p = energy_and_forces(*r.model, qkv::tensor(positions, {1, N, 3}), false);
  Cluster c;
  c.positions = positions;
  c.energy = p.energy.item() * r.energy_std + r.energy_mean;
  c.forces = (p.forces * static_cast<float>(r.energy_std)).to_vector();
  return c;
}

}  // namespace potential
