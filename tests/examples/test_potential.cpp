// The neural potential (examples/potential): the Lennard-Jones data against finite differences,
// the model's forces as the gradient of its energy and its invariances, a short training in both
// modes (forces in the loss must help the held-out forces), and the program as a user runs it.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "child_process.h"
#include "examples/potential/lj.h"
#include "examples/potential/model.h"
#include "examples/potential/train.h"
#include "io/scratch_dir.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"

using namespace potential;
namespace fs = std::filesystem;

TEST_CASE("Lennard-Jones: the pair minimum at 2^(1/6), and forces that are minus the energy's gradient") {
  const float r = std::pow(2.0f, 1.0f / 6.0f);
  const Cluster dimer = lennard_jones({0, 0, 0, r, 0, 0});
  CHECK(dimer.energy == doctest::Approx(-1.0).epsilon(1e-6));
  for (float f : dimer.forces) CHECK(std::fabs(f) < 1e-4f);
  const Cluster c = generate_clusters(1, {}, 3)[0];
  REQUIRE(c.positions.size() == 24);
  for (size_t i = 0; i < c.positions.size(); ++i) {
    std::vector<float> plus = c.positions, minus = c.positions;
    plus[i] += 1e-3f, minus[i] -= 1e-3f;
    const double numeric = -(lennard_jones(plus).energy - lennard_jones(minus).energy) / 2e-3;
    CHECK(c.forces[i] == doctest::Approx(numeric).epsilon(2e-2).scale(1.0));
  }
  // The same seed, the same clusters; a relaxed, shaken cluster sits near a minimum.
  CHECK(generate_clusters(2, {}, 3)[1].energy == generate_clusters(2, {}, 3)[1].energy);
  CHECK(c.energy < -8.0);
  CHECK_THROWS_AS(generate_clusters(1, {.atoms = 1}, 1), qkv::ValueError);
  CHECK_THROWS_AS(lennard_jones({0, 0, 0}), qkv::ShapeError);
}

TEST_CASE("the potential's forces are minus its energy's gradient, and turning, moving or renumbering the atoms changes nothing") {
  qkv::manual_seed(2);
  const Potential model({.radial = 6, .hidden = 8});
  const Cluster c = generate_clusters(1, {.atoms = 5}, 4)[0];
  const qkv::Tensor x = qkv::tensor(c.positions, {1, 5, 3});
  const EnergyForces p = energy_and_forces(model, x, false);
  const std::vector<float> f = p.forces.to_vector();
  for (size_t i = 0; i < c.positions.size(); ++i) {
    std::vector<float> plus = c.positions, minus = c.positions;
    plus[i] += 1e-2f, minus[i] -= 1e-2f;
    const qkv::NoGradGuard no_grad;
    const double numeric = -(model.energy(qkv::tensor(plus, {1, 5, 3})).item() -
                             model.energy(qkv::tensor(minus, {1, 5, 3})).item()) / 2e-2;
    CHECK(f[i] == doctest::Approx(numeric).epsilon(1e-2).scale(1.0));
  }
  // A rotation by 90° about z, a shift, and atoms 0 and 3 swapped.
  std::vector<float> moved(c.positions.size());
  for (size_t a = 0; a < 5; ++a) {
    const size_t from = a == 0 ? 3 : a == 3 ? 0 : a;
    moved[3 * a] = -c.positions[3 * from + 1] + 0.7f;
    moved[3 * a + 1] = c.positions[3 * from] - 1.1f;
    moved[3 * a + 2] = c.positions[3 * from + 2] + 2.0f;
  }
  const qkv::NoGradGuard no_grad;
  CHECK(model.energy(qkv::tensor(moved, {1, 5, 3})).item() == doctest::Approx(p.energy.item()).epsilon(1e-5));
  CHECK_THROWS_AS(model.energy(qkv::zeros({1, 5, 2})), qkv::ShapeError);
}

TEST_CASE("training on forces as well as energies predicts held-out forces far better, the same in both modes") {
  const std::vector<Cluster> train_set = generate_clusters(100, {}, 1), test_set = generate_clusters(100, {}, 2);
  TrainOptions o;
  o.model = {.radial = 16, .hidden = 16};
  o.epochs = 200;
  std::vector<double> force_errors;
  for (const bool reference : {false, true}) {
    CAPTURE(reference);
    const qkv::ReferenceModeGuard mode(reference);
    o.force_weight = 0;
    const TrainResult energies = train(train_set, test_set, o);
    o.force_weight = 1;
    const TrainResult forces = train(train_set, test_set, o);
    REQUIRE(forces.per_epoch.size() == 200);
    CHECK(forces.test.force < 0.5 * energies.test.force);
    CHECK(forces.per_epoch.back().force < forces.per_epoch.front().force);
    force_errors.push_back(forces.test.force);
  }
  CHECK(force_errors[1] == doctest::Approx(force_errors[0]).epsilon(1e-3));
}

TEST_CASE("potential train writes its table, results and figures, refuses to overwrite them, and potential graph dumps a step") {
  qkv::testing::ScratchDir dir;
  const std::string out = (dir / "run").string();
  const std::vector<std::string> quick = {"train", "--out", out, "--atoms", "5", "--train-clusters", "20",
                                          "--test-clusters", "20", "--epochs", "3", "--radial", "4", "--hidden", "4"};
  const auto r = qkv::testing::run_program(qkv::testing::kPotentialProgram, quick);
  REQUIRE_MESSAGE(r.exit_code == 0, r.errors);
  CHECK(r.output.find("energies and forces") != std::string::npos);
  CHECK(r.output.find("force error with forces / without: ") != std::string::npos);
  for (const char* f : {"results.json", "force_error.png", "scan_energy.png", "scan_force.png"}) CHECK(fs::exists(out + "/" + f));
  const std::string results = qkv::testing::read_file(out + "/results.json");
  CHECK(results.find("\"force_error_ratio\":") != std::string::npos);
  const auto again = qkv::testing::run_program(qkv::testing::kPotentialProgram, quick);
  CHECK(again.exit_code == 1);
  CHECK(again.errors.find("holds results.json already") != std::string::npos);
  CHECK(qkv::testing::read_file(out + "/results.json") == results);
  const auto bad = qkv::testing::run_program(qkv::testing::kPotentialProgram, {"train", "--out", out + "2", "--noise", "1"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.errors.find("--noise") != std::string::npos);
  CHECK_FALSE(fs::exists(out + "2"));
  const auto g = qkv::testing::run_program(qkv::testing::kPotentialProgram, {"graph", "--out", out + "-graph"});
  REQUIRE_MESSAGE(g.exit_code == 0, g.errors);
  const std::string dot = qkv::testing::read_file(out + "-graph/step.dot");
  CHECK(dot.find("digraph") != std::string::npos);
  CHECK(dot.find("atom.0.weight") != std::string::npos);
}
