// The neural potential's figures.
#pragma once

#include <string>

#include "examples/potential/train.h"

namespace potential {

// Held-out force error against epoch, one line per training (energies alone; energies and forces).
void draw_force_error(const TrainResult& energies, const TrainResult& forces, const std::string& path);

// One held-out cluster with its first atom moved along the line to its nearest neighbour: the
// energy (top) and the force along that line (bottom) against the distance, the true ones and
// both models'. Two files, `energy_path` and `force_path`.
void draw_scan(const Cluster& cluster, const TrainResult& energies, const TrainResult& forces,
               const std::string& energy_path, const std::string& force_path);

}  // namespace potential
