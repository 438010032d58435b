// potential: a neural potential that needs gradients of gradients. A network maps a cluster of
// atoms to its energy (examples/potential/model.h); the forces on the atoms are −∂E/∂x, the
// gradient of that energy with respect to the coordinates. Training on the forces as well as the
// energies puts a loss on a gradient, whose own gradient with respect to the weights is a second
// derivative (qkv::grad with create_graph). The data are Lennard-Jones clusters, energies and
// forces in closed form (examples/potential/lj.h). docs/double_backward.md has the results.
//
//   potential train    both trainings (energies alone; energies and forces), the table and figures
//   potential graph    the autograd graph of one training step with forces, as DOT and JSON
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "autograd/debug/graph_dump.h"
#include "examples/common/memory.h"
#include "examples/common/program.h"
#include "examples/potential/figures.h"
#include "examples/potential/lj.h"
#include "examples/potential/train.h"
#include "io/file.h"
#include "io/json.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace {

using namespace potential;
using qkv::examples::Args;

std::vector<Args::Option> train_options_spec() {
  const TrainOptions d;
  const ClusterOptions c;
  using qkv::examples::option_text;
  return {{"out", "runs/potential", "output directory: results.json and the figures"},
          {"atoms", std::to_string(c.atoms), "atoms per cluster"},
          {"train-clusters", "200", "training clusters"},
          {"test-clusters", "500", "held-out clusters (a different seed)"},
          {"noise", option_text(c.noise),
           "how far each atom is shaken from a relaxed cluster (sigma); a noise that keeps putting two atoms closer "
           "than 0.92 is refused (large clusters need less)"},
          {"epochs", std::to_string(d.epochs), "training epochs (each training the same)"},
          {"batch", std::to_string(d.batch), "clusters per step"},
          {"lr", option_text(d.lr), "learning rate (Adam)"},
          {"force-weight", "1", "weight of the force loss in the training with forces"},
          {"radial", std::to_string(d.model.radial), "Gaussians of the distances per atom"},
          {"hidden", std::to_string(d.model.hidden), "width of the atom network"},
          {"seed", "1", "seed of the clusters, the initialization and the batches"},
          qkv::examples::kThreadsOption,
          qkv::examples::kReferenceOption};
}

TrainOptions train_options(const Args& a) {
  TrainOptions o;
  o.epochs = a.integer_in("epochs", 1, 100'000);
  o.batch = a.integer_in("batch", 1, 100'000);
  o.lr = a.number_in("lr", 1e-6, 1.0);
  o.model.radial = a.integer_in("radial", 2, 256);
  o.model.hidden = a.integer_in("hidden", 1, 4096);
  o.seed = static_cast<uint64_t>(a.integer_in("seed", 0, INT64_MAX));
  return o;
}

ClusterOptions cluster_options(const Args& a) {
  ClusterOptions c;
  c.atoms = a.integer_in("atoms", 2, 64);
  c.noise = a.number_in("noise", 0.0, 0.2);
  return c;
}

void print_row(const char* name, const TrainResult& r) {
  std::printf("  %-22s %12.4f %14.4f %9.1f\n", name, r.test.energy, r.test.force, r.seconds);
}

qkv::io::Json errors_json(const Errors& e) {
  return qkv::io::Json::Object{{"energy_rmse", e.energy}, {"force_rmse", e.force}};
}

qkv::io::Json results_json(const Args& a, const ClusterOptions& c, const TrainOptions& o, const TrainResult& energies,
                           const TrainResult& forces, const Errors& nothing) {
  using qkv::io::Json;
  const auto run = [](const TrainResult& r) {
    Json j = errors_json(r.test);
    j.as_object().push_back({"seconds", r.seconds});
    return j;
  };
  return Json::Object{{"atoms", c.atoms}, {"noise", c.noise}, {"train_clusters", a.integer("train-clusters")},
                      {"test_clusters", a.integer("test-clusters")}, {"epochs", o.epochs}, {"batch", o.batch},
                      {"lr", o.lr}, {"force_weight", o.force_weight}, {"radial", o.model.radial},
                      {"hidden", o.model.hidden}, {"seed", static_cast<int64_t>(o.seed)},
                      {"mean_and_zero_forces", errors_json(nothing)}, {"energies_alone", run(energies)},
                      {"energies_and_forces", run(forces)}, {"force_error_ratio", forces.test.force / energies.test.force}};
}

int cmd_train(const Args& a) {
  qkv::examples::start_command(a, "potential", /*announce=*/true);
  TrainOptions o = train_options(a);
  const double force_weight = a.number_in("force-weight", 1e-6, 1e6);
  const ClusterOptions c = cluster_options(a);
  const int64_t n_train = a.integer_in("train-clusters", 1, 100'000), n_test = a.integer_in("test-clusters", 1, 100'000);
  const std::vector<std::string> files = {"results.json", "force_error.png", "scan_energy.png", "scan_force.png"};
  qkv::examples::refuse_existing("out", qkv::examples::directory_option(a, "out"), files);
  qkv::examples::check_fits("potential train", training_bytes_estimate(o, c.atoms), "clusters of " + std::to_string(c.atoms) + " atoms",
                            "--atoms, --radial or --batch");
  // One cluster before anything is written: a --noise that keeps shaking atoms too close together
  // is refused there. Then the output directory, before the long work.
  generate_clusters(1, c, o.seed);
  const std::string out = qkv::examples::prepare_out(a, "out", files);
  const std::vector<Cluster> train_set = generate_clusters(n_train, c, o.seed);
  const std::vector<Cluster> test_set = generate_clusters(n_test, c, o.seed + 1000);
  std::printf("Lennard-Jones clusters of %lld atoms: %lld to train on, %lld held out\n",
              static_cast<long long>(c.atoms), static_cast<long long>(n_train), static_cast<long long>(n_test));
  const TrainResult energies = train(train_set, test_set, o);
  o.force_weight = force_weight;
  const TrainResult forces = train(train_set, test_set, o);
  const Errors nothing = baseline(energies, test_set);
  std::printf("held-out errors (RMSE):\n  %-22s %12s %14s %9s\n", "trained on", "energy (ε)", "force (ε/σ)", "seconds");
  std::printf("  %-22s %12.4f %14.4f\n", "(the mean; no forces)", nothing.energy, nothing.force);
  print_row("energies alone", energies);
  print_row("energies and forces", forces);
  std::printf("force error with forces / without: %.3f\n", forces.test.force / energies.test.force);
  const qkv::io::Json results = results_json(a, c, o, energies, forces, nothing);
  qkv::io::write_text_file(out + "/results.json", qkv::io::to_json(results) + "\n", "potential train");
  draw_force_error(energies, forces, out + "/force_error.png");
  draw_scan(test_set[0], energies, forces, out + "/scan_energy.png", out + "/scan_force.png");
  for (const std::string& f : files) std::printf("wrote %s/%s\n", out.c_str(), f.c_str());
  return 0;
}

// How many nodes of each op the graph behind `root` has.
std::map<std::string, int> op_counts(const qkv::Tensor& root) {
  std::map<std::string, int> counts;
  const qkv::io::Json graph = qkv::io::parse_json(qkv::autograd::graph_to_json(root));
  for (const qkv::io::Json& node : graph.find("nodes")->as_array()) ++counts[node.find("op")->as_string()];
  return counts;
}

// One training step with forces on a small model and one cluster: the graph of its loss holds the
// forward (the energy), what the backward recorded (the forces, −∂E/∂x, with create_graph) and the
// loss on both. Printed as op counts of the energy's graph and of the whole step's, and written out.
int cmd_graph(const Args& a) {
  qkv::examples::start_command(a, "potential", /*announce=*/true);
  const std::vector<std::string> files = {"step.dot", "step.json"};
  const std::string out = qkv::examples::prepare_out(a, "out", files);
  const Cluster c = generate_clusters(1, {.atoms = 3}, 1)[0];
  qkv::manual_seed(1);
  const Potential model({.radial = 4, .hidden = 4});
  const EnergyForces p = energy_and_forces(model, qkv::tensor(c.positions, {1, 3, 3}), /*create_graph=*/true);
  const qkv::Tensor f = qkv::tensor(c.forces, {1, 3, 3}) - p.forces;
  const qkv::Tensor loss = (p.energy - static_cast<float>(c.energy)).pow(2.0f).sum() + (f * f).mean();
  const std::map<std::string, int> energy = op_counts(p.energy), step = op_counts(loss);
  int energy_total = 0, step_total = 0;
  std::printf("%-14s %8s %8s\n", "op", "energy", "step");
  for (const auto& [op, n] : step) {
    const int e = energy.count(op) ? energy.at(op) : 0;
    std::printf("%-14s %8d %8d\n", op.c_str(), e, n);
    energy_total += e, step_total += n;
  }
  std::printf("%-14s %8d %8d\n", "all", energy_total, step_total);
  qkv::autograd::GraphDumpOptions options;
  options.names = model.named_parameters();
  qkv::io::write_text_file(out + "/step.dot", qkv::autograd::graph_to_dot(loss, options), "potential graph");
  qkv::io::write_text_file(out + "/step.json", qkv::autograd::graph_to_json(loss, options) + "\n", "potential graph");
  for (const std::string& file : files) std::printf("wrote %s/%s\n", out.c_str(), file.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::examples::run_program(
      argc, argv,
      {"potential", "a neural potential trained on energies, or on energies and forces (gradients of gradients)",
       {{"train", "train on energies alone and on energies and forces; the held-out errors, results.json, figures",
         train_options_spec(), cmd_train},
        {"graph", "the autograd graph of one training step with forces (step.dot, step.json)",
         {{"out", "runs/potential-graph", "output directory"}, qkv::examples::kThreadsOption,
          qkv::examples::kReferenceOption},
         cmd_graph}}});
}
