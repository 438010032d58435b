#include "examples/potential/figures.h"

#include <cmath>

#include "plot/plot.h"

namespace potential {

void draw_force_error(const TrainResult& energies, const TrainResult& forces, const std::string& path) {
  qkv::plot::LinePlotSpec spec;
  spec.title = "held-out force error during training";
  spec.x_label = "epoch";
  spec.y_label = "force RMSE (epsilon / sigma)";
  spec.log_y = true;
  for (const auto& [name, r] : {std::pair{"energies alone", &energies}, std::pair{"energies and forces", &forces}}) {
    qkv::plot::Series s{name, {}, {}};
    for (size_t e = 0; e < r->per_epoch.size(); ++e) {
      s.x.push_back(static_cast<double>(e + 1));
      s.y.push_back(r->per_epoch[e].force);
    }
    spec.series.push_back(s);
  }
  qkv::plot::draw_line_plot(spec).write_png(path);
}

void draw_scan(const Cluster& cluster, const TrainResult& energies, const TrainResult& forces,
               const std::string& energy_path, const std::string& force_path) {
  // Atom 0 and its nearest neighbour j: atom 0 moves along the unit vector u from j to it.
  const std::vector<float>& x0 = cluster.positions;
  const size_t n = x0.size() / 3;
  size_t j = 1;
  double best = INFINITY;
  for (size_t k = 1; k < n; ++k) {
    double d = 0;
    for (size_t c = 0; c < 3; ++c) d += (x0[c] - x0[3 * k + c]) * static_cast<double>(x0[c] - x0[3 * k + c]);
    if (d < best) best = d, j = k;
  }
  const double r0 = std::sqrt(best);
  double u[3];
  for (size_t c = 0; c < 3; ++c) u[c] = (x0[c] - x0[3 * j + c]) / r0;
  qkv::plot::Series e_true{"true (Lennard-Jones)", {}, {}}, f_true{"true (Lennard-Jones)", {}, {}};
  qkv::plot::Series e_a{"energies alone", {}, {}}, f_a{"energies alone", {}, {}};
  qkv::plot::Series e_b{"energies and forces", {}, {}}, f_b{"energies and forces", {}, {}};
  for (double r = 1.0; r <= 1.8 + 1e-9; r += 0.01) {
    std::vector<float> x = x0;
    for (size_t c = 0; c < 3; ++c) x[c] = static_cast<float>(x0[3 * j + c] + r * u[c]);
    const auto along = [&](const Cluster& k) { return k.forces[0] * u[0] + k.forces[1] * u[1] + k.forces[2] * u[2]; };
    const Cluster t = lennard_jones(x), a = predict(energies, x), b = predict(forces, x);
    for (auto* s : {&e_true, &e_a, &e_b, &f_true, &f_a, &f_b}) s->x.push_back(r);
    e_true.y.push_back(t.energy), e_a.y.push_back(a.energy), e_b.y.push_back(b.energy);
    f_true.y.push_back(along(t)), f_a.y.push_back(along(a)), f_b.y.push_back(along(b));
  }
  qkv::plot::LinePlotSpec spec;
  spec.x_label = "distance of atom 0 to its nearest neighbour (sigma)";
  spec.title = "a held-out cluster, one atom moved: energy";
  spec.y_label = "energy (epsilon)";
  spec.series = {e_a, e_b, e_true};  // the trainings in the colours of the force error figure
  qkv::plot::draw_line_plot(spec).write_png(energy_path);
  spec.title = "a held-out cluster, one atom moved: force on it along the move";
  spec.y_label = "force (epsilon / sigma)";
  spec.series = {f_a, f_b, f_true};
  qkv::plot::draw_line_plot(spec).write_png(force_path);
}

}  // namespace potential
