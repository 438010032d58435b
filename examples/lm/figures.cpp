#include "examples/lm/figures.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "autograd/grad_mode.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "plot/plot.h"
#include "tensor/error.h"

namespace lm {
namespace fs = std::filesystem;
using qkv::io::Json;

namespace {

// A horizontal line across the steps, for a baseline.
qkv::plot::Series level(const std::string& name, double y, double x0, double x1) {
  return {name, {x0, x1}, {y, y}};
}

void draw_loss(const fs::path& run, const fs::path& path) {
  qkv::plot::Series train{"train", {}, {}}, validation{"validation", {}, {}};
  for (const Evaluation& e : load_run(run, "last").history) {
    train.x.push_back(static_cast<double>(e.step));
    train.y.push_back(e.loss);
    validation.x.push_back(static_cast<double>(e.step));
    validation.y.push_back(e.score);
  }
  qkv::plot::LinePlotSpec spec;
  spec.title = "Bits per character (lines: baselines on test)";
  spec.x_label = "step";
  spec.y_label = "bits per character";
  spec.markers = train.x.size() < 30;
  spec.series = {train, validation};
  const double x0 = 0, x1 = train.x.empty() ? 1 : train.x.back();
  if (const fs::path file = run / "baselines.json"; fs::exists(file)) {  // a run trained without them has none
    const BaselineBits b =
        BaselineBits::from_json(qkv::io::parse_json(qkv::io::read_text_file(file, "lm figures")), file.string());
    spec.series.push_back(level("unigram", b.unigram, x0, x1));
    spec.series.push_back(level("Kneser-Ney " + std::to_string(b.ngram_order) + "-gram", b.ngram, x0, x1));
    if (b.bzip2.bits) spec.series.push_back(level("bzip2", *b.bzip2.bits, x0, x1));
    if (b.xz.bits) spec.series.push_back(level("xz", *b.xz.bits, x0, x1));
  }
  double low = 1e9, top = 0;
  for (const auto& s : spec.series)
    for (const double y : s.y) low = std::min(low, y), top = std::max(top, y);
  spec.y_range = qkv::plot::AxisRange{std::max(0.0, std::min(low, 1.0) - 0.2), std::min(top, 5.0) + 0.2};
  qkv::plot::draw_line_plot(spec).write_png(path.string());
}

void draw_by_position(const Run& run, const Data& data, const fs::path& path) {
  std::vector<double> bits;
  evaluate_bits(*run.model, data.test, data.start_id, Scoring::NonOverlapping, &bits);
  qkv::plot::Series s{"test", {}, bits};
  for (size_t i = 0; i < bits.size(); ++i) s.x.push_back(static_cast<double>(i + 1));
  qkv::plot::LinePlotSpec spec;
  spec.title = "Test bits per character by position in the window";
  spec.x_label = "characters of context + 1";
  spec.y_label = "bits per character";
  spec.log_x = true;
  spec.series = {s};
  qkv::plot::draw_line_plot(spec).write_png(path.string());
}

std::string label(char32_t c) {
  if (c == U'\n') return "\\n";
  if (c == U' ') return "_";
  return encode_utf8(Piece(1, c));
}

}  // namespace

void draw_sample_attention(CharGPT& model, const CharVocab& vocab, const std::vector<int32_t>& ids,
                           const std::string& path) {
  const int64_t n = std::min<int64_t>({64, model.config.context, static_cast<int64_t>(ids.size())});
  const std::vector<int64_t> passage(ids.end() - n, ids.end());
  qkv::NoGradGuard no_grad;
  model.eval();
  model.forward(qkv::IndexTensor(passage, {1, n}));
  const qkv::Tensor w = model.encoder->attention_weights().back();  // (1, H, n, n)
  qkv::plot::HeatmapSpec spec;
  spec.rows = spec.cols = static_cast<int>(n);
  const qkv::Tensor head = w.narrow(1, 0, 1).contiguous();
  spec.values.assign(head.data(), head.data() + n * n);
  for (const int64_t id : passage) spec.row_labels.push_back(label(vocab.character(static_cast<int32_t>(id))));
  spec.col_labels = spec.row_labels;
  spec.title = "Last block, head 1: each character (row) over those before it";
  spec.x_label = "key";
  spec.y_label = "query";
  qkv::plot::draw_heatmap(spec).write_png(path);
}

std::vector<std::string> draw_training_figures(const std::string& run_dir) {
  const fs::path dir = fs::path(run_dir) / "figures";
  fs::create_directories(dir);
  const Run run = load_run(run_dir, "best");
  const Data data = load_data(run.config, run.text());
  std::vector<std::string> written;
  draw_loss(run_dir, dir / "loss.png");
  written.push_back((dir / "loss.png").string());
  // Greedy, from the opening of the first validation piece.
  const std::vector<int32_t>& opening = data.validation.front();
  const std::vector<int32_t> prompt(opening.begin(), opening.begin() + std::min<size_t>(8, opening.size()));
  std::vector<int32_t> passage = prompt.empty() ? std::vector<int32_t>{data.start_id} : prompt;
  const std::vector<int32_t> generated = generate(*run.model, passage, {.tokens = 80, .temperature = 0.0});
  passage.insert(passage.end(), generated.begin(), generated.end());
  draw_sample_attention(*run.model, run.vocab, passage, (dir / "attention.png").string());
  written.push_back((dir / "attention.png").string());
  draw_by_position(run, data, dir / "bits_by_position.png");
  written.push_back((dir / "bits_by_position.png").string());
  for (const std::string& f : written) std::cout << "lm: figure " << f << "\n";
  return written;
}

}  // namespace lm
