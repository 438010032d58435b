#include "examples/vit/ablation.h"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "examples/vit/figures.h"
#include "io/file.h"
#include "plot/plot.h"
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

std::vector<TestView> resolution_views(const ImageSet& test, int64_t patch) {
  const auto size = [](int64_t rows, int64_t cols) { return std::to_string(rows) + "×" + std::to_string(cols); };
  const int64_t pad = 2 * patch;
  return {{size(test.rows, test.cols) + ", as trained", test},
          {size(2 * test.rows, 2 * test.cols) + ", 2× upsampled", upsampled(test, 2)},
          {size(test.rows + pad, test.cols + pad) + ", padded, item at (" + std::to_string(pad) + ", " +
               std::to_string(pad) + ")",
           padded(test, test.rows + pad, test.cols + pad, pad, pad)}};
}

namespace {

// Test accuracy of a run's model at each view's size (the run's own evaluation: with its mirror
// images where it was trained on them).
std::vector<double> resolution_accuracies(const Run& run, const std::vector<TestView>& views) {
  std::vector<double> accuracy;
  for (const TestView& v : views) {
    Config c = run.config;
    c.model.rows = v.images.rows, c.model.cols = v.images.cols;
    const std::shared_ptr<ViT> model = resized(*run.model, v.images.rows, v.images.cols);
    accuracy.push_back(evaluate(*model, v.images, c).accuracy);
  }
  return accuracy;
}

void write_resolution(const std::vector<AblationRow>& rows, const std::vector<TestView>& views,
                      const AblationOptions& o) {
  std::ostringstream md;
  md << "| positions |";
  for (const TestView& v : views) md << " " << v.name << " |";
  md << "\n|---|";
  for (size_t i = 0; i < views.size(); ++i) md << "---|";
  md << "\n" << std::fixed << std::setprecision(2);
  qkv::plot::HeatmapSpec spec;
  spec.rows = static_cast<int>(rows.size()), spec.cols = static_cast<int>(views.size());
  for (const AblationRow& r : rows) {
    md << "| " << r.scheme << " |";
    for (const double a : r.resolution) {
      md << " " << 100 * a << " % |";
      spec.values.push_back(static_cast<float>(100 * a));
    }
    md << "\n";
    spec.row_labels.push_back(r.scheme);
  }
  // The figure's font has no ×; the views are resolution_views', in order.
  const std::vector<std::string> kinds = {"", " up", " padded"};
  for (size_t i = 0; i < views.size(); ++i)
    spec.col_labels.push_back(std::to_string(views[i].images.rows) + "x" + std::to_string(views[i].images.cols) +
                              kinds.at(i));
  spec.title = "Test accuracy (%) by the size of the test images";
  spec.x_label = "test images";
  spec.y_label = "positions";
  spec.annotate = true;
  spec.annotate_decimals = 1;
  qkv::plot::draw_heatmap(spec).write_png((fs::path(o.out) / "resolution.png").string());
  qkv::io::write_text_file(fs::path(o.out) / "resolution.md", md.str(), "vit ablate");
  if (o.verbose) std::cout << "\ntest accuracy at other sizes:\n\n" << md.str();
}

}  // namespace

std::vector<AblationRow> run_ablation(const Config& config, const AblationOptions& o) {
  // Every scheme's config is checked, with the data's size, before the first one trains; so are the
  // sizes the models are read at; and nothing of an earlier ablation is overwritten.
  Config data_config = config;
  const ImageData data = load_data(data_config);
  std::vector<std::string> files = {"ablation.md", "resolution.md", "resolution.png"};
  for (const std::string& scheme : o.schemes) {
    Config c = data_config;
    c.model.positions = scheme;
    c.validate();
    files.push_back("positions-" + scheme + ".png");
  }
  qkv::examples::refuse_existing_comparison("vit ablate", o.out, o.schemes, files);
  const std::vector<TestView> views = resolution_views(data.test, config.model.patch);
  for (const TestView& v : views)
    if (const int64_t n = (v.images.rows / config.model.patch) * (v.images.cols / config.model.patch); n > kMaxPatches)
      throw qkv::ValueError("vit ablate: the test images at " + v.name + " would be " + std::to_string(n) +
                            " patches of " + std::to_string(config.model.patch) + "×" + std::to_string(config.model.patch) +
                            "; at most " + std::to_string(kMaxPatches) + " (choose a larger --patch)");
  qkv::examples::make_output_directory("out", o.out);
  std::vector<AblationRow> rows;
  TrainResult baselines;
  for (size_t i = 0; i < o.schemes.size(); ++i) {
    Config c = config;
    c.model.positions = o.schemes[i];
    const TrainOptions t = qkv::examples::comparison_run<TrainOptions>(o.out, o.schemes[i], i == 0, o.verbose);
    const TrainResult r = train(c, t);
    if (i == 0) baselines = r;
    const Run run = load_run(t.run_dir, "best");
    rows.push_back({o.schemes[i], r.best_validation_accuracy, r.test_accuracy, r.training_seconds,
                    run.model->num_parameters(), resolution_accuracies(run, views)});
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
  write_resolution(rows, views, o);
  return rows;
}

}  // namespace vit
