#include "examples/potential/lj.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "tensor/error.h"
#include "tensor/random.h"

namespace potential {
namespace {

double min_pair_distance(const std::vector<float>& x) {
  const size_t n = x.size() / 3;
  double best = INFINITY;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      double s = 0;
      for (size_t c = 0; c < 3; ++c) s += (x[3 * i + c] - x[3 * j + c]) * static_cast<double>(x[3 * i + c] - x[3 * j + c]);
      best = std::min(best, std::sqrt(s));
    }
  return best;
}

// N atoms uniform in a box of side 1.1·N^(1/3), placed one by one, each at least 0.9 from those
// before it (a draw too close is drawn again; the box grows by a tenth after 1,000 such draws).
std::vector<float> random_start(int64_t atoms, qkv::Generator& gen) {
  double side = 1.1 * std::cbrt(static_cast<double>(atoms));
  std::vector<float> x;
  int64_t misses = 0;
  while (static_cast<int64_t>(x.size()) < 3 * atoms) {
    float p[3];
    for (float& v : p) v = static_cast<float>(side * gen.next_uniform());
    bool fits = true;
    for (size_t j = 0; j < x.size() && fits; j += 3) {
      double d = 0;
      for (size_t c = 0; c < 3; ++c) d += (p[c] - x[j + c]) * static_cast<double>(p[c] - x[j + c]);
      fits = d >= 0.81;
    }
    if (fits) {
      x.insert(x.end(), p, p + 3);
    } else if (++misses % 1000 == 0) {
      side *= 1.1;
    }
  }
  return x;
}

// Steepest descent on the energy, each atom moved at most 0.05 per step.
void relax(std::vector<float>& x, int64_t steps) {
  for (int64_t s = 0; s < steps; ++s) {
    const Cluster c = lennard_jones(x);
    for (size_t i = 0; i < x.size(); ++i) x[i] += std::clamp(0.01f * c.forces[i], -0.05f, 0.05f);
  }
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// A standard normal draw (Box–Muller).
double standard_normal(qkv::Generator& gen) {
  const double u = 1.0 - gen.next_uniform(), v = gen.next_uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

}  // namespace

Cluster lennard_jones(const std::vector<float>& positions) {
  if (positions.size() % 3 != 0 || positions.size() < 6)
    throw qkv::ShapeError("lennard_jones: expected N·3 coordinates of at least 2 atoms, got " +
                          std::to_string(positions.size()));
  const size_t n = positions.size() / 3;
  Cluster c;
  c.positions = positions;
  std::vector<double> f(positions.size(), 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      double d[3], r2 = 0;
      for (size_t k = 0; k < 3; ++k) d[k] = positions[3 * i + k] - static_cast<double>(positions[3 * j + k]), r2 += d[k] * d[k];
      const double inv6 = 1.0 / (r2 * r2 * r2), inv12 = inv6 * inv6;
      c.energy += 4.0 * (inv12 - inv6);
      // −V'(r)/r = 4 (12 r⁻¹⁴ − 6 r⁻⁸): the force on i along x_i − x_j, and its opposite on j
      const double along = 4.0 * (12.0 * inv12 - 6.0 * inv6) / r2;
      for (size_t k = 0; k < 3; ++k) f[3 * i + k] += along * d[k], f[3 * j + k] -= along * d[k];
    }
  c.forces.assign(f.begin(), f.end());
  return c;
}

std::vector<Cluster> generate_clusters(int64_t count, const ClusterOptions& o, uint64_t seed) {
  // A relaxed cluster's nearest neighbours sit near 2^(1/6) ≈ 1.12: a minimum distance above 1.05
  // would reject almost every shaken cluster.
  if (o.atoms < 2 || count < 0 || !(o.noise >= 0 && o.noise <= 0.2) || !(o.min_distance > 0 && o.min_distance <= 1.05))
    throw qkv::ValueError("generate_clusters: expected at least 2 atoms, noise in [0, 0.2] and a minimum distance in "
                          "(0, 1.05]");
  qkv::Generator gen(seed);
  std::vector<Cluster> clusters;
  while (static_cast<int64_t>(clusters.size()) < count) {
    std::vector<float> x = random_start(o.atoms, gen);
    relax(x, o.relax_steps);
    std::vector<float> shaken(x.size());
    for (int attempt = 0;; ++attempt) {
      if (attempt == 1000)
        throw qkv::ValueError("generate_clusters: 1,000 shakings in a row put two of the " + std::to_string(o.atoms) +
                              " atoms closer than " + number(o.min_distance) + " sigma; lower --noise (" +
                              number(o.noise) + ")");
      for (size_t i = 0; i < x.size(); ++i) shaken[i] = x[i] + static_cast<float>(o.noise * standard_normal(gen));
      if (min_pair_distance(shaken) >= o.min_distance) break;
    }
    clusters.push_back(lennard_jones(shaken));
  }
  return clusters;
}

}  // namespace potential
