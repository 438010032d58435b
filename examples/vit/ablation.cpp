#include "examples/vit/ablation.h"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "examples/vit/figures.h"
#include "io/file.h"
#include "tensor/error.h"

namespace vit {

namespace fs = std::filesystem;

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names = qkv::examples::split_list("schemes", list);
  for (const std::string& name : names)
    if (const auto& known = position_names(); std::find(known.begin(), known.end(), name) == known.end())
      throw qkv::ValueError("--schemes: '" + name + "' is not a position scheme; expected some of " +
                            qkv::examples::join(known));
  return names;
}

std::vector<AblationRow> run_ablation(const Config& config, const AblationOptions& o) {
  // Every scheme's config is checked before the first one trains, and nothing of an earlier
  // ablation is overwritten.
  if (fs::exists(fs::path(o.out) / "ablation.md"))
    throw qkv::ValueError("vit ablate: " + (fs::path(o.out) / "ablation.md").string() +
                          " exists; choose another --out (nothing was changed)");
  for (const std::string& scheme : o.schemes) {
    Config c = config;
    c.model.positions = scheme;
    c.validate();
    if (fs::exists(fs::path(o.out) / scheme))
      throw qkv::ValueError("vit ablate: " + (fs::path(o.out) / scheme).string() +
                            " exists; choose another --out (nothing was changed)");
  }
  std::vector<AblationRow> rows;
  TrainResult baselines;
  for (size_t i = 0; i < o.schemes.size(); ++i) {
    Config c = config;
    c.model.positions = o.schemes[i];
    TrainOptions t;
    t.run_dir = (fs::path(o.out) / o.schemes[i]).string();
    t.baselines = i == 0;
    t.verbose = o.verbose;
    const TrainResult r = train(c, t);
    if (i == 0) baselines = r;
    const Run run = load_run(t.run_dir, "best");
    rows.push_back({o.schemes[i], r.best_validation_accuracy, r.test_accuracy, r.training_seconds,
                    run.model->num_parameters()});
    if (const qkv::Tensor P = run.model->positions->table(); P.defined())
      draw_position_similarity(P, run.config.model.grid_rows(), run.config.model.grid_cols(),
                               "Position similarity, " + o.schemes[i])
          .write_png((fs::path(o.out) / ("positions-" + o.schemes[i] + ".png")).string());
  }
  std::ostringstream md;
  md << "| positions | validation accuracy | test accuracy | parameters | training seconds |\n|---|---|---|---|---|\n"
     << std::fixed;
  for (const AblationRow& r : rows)
    md << "| " << r.scheme << " | " << std::setprecision(2) << 100 * r.validation_accuracy << " % | "
       << 100 * r.test_accuracy << " % | " << r.parameters << " | " << std::setprecision(0) << r.seconds << " |\n";
  if (baselines.has_baselines)
    md << "\nBaselines on test: logistic regression " << std::setprecision(2) << 100 * baselines.logistic_accuracy
       << " %, MLP " << 100 * baselines.mlp_accuracy << " %\n";
  qkv::io::write_text_file(fs::path(o.out) / "ablation.md", md.str(), "vit ablate");
  if (o.verbose) std::cout << "\n" << md.str();
  return rows;
}

}  // namespace vit
