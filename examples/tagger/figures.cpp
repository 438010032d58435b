#include "examples/tagger/figures.h"

#include <algorithm>
#include <filesystem>

#include "autograd/grad_mode.h"
#include "plot/plot.h"
#include "tensor/error.h"

namespace tagger {

namespace fs = std::filesystem;
using qkv::plot::Image;

namespace {

// Two images side by side on a white background.
Image side_by_side(const Image& a, const Image& b) {
  Image out(a.width() + b.width(), std::max(a.height(), b.height()));
  for (int y = 0; y < a.height(); ++y) {
    for (int x = 0; x < a.width(); ++x) out.set_pixel(x, y, a.pixel(x, y));
  }
  for (int y = 0; y < b.height(); ++y) {
    for (int x = 0; x < b.width(); ++x) out.set_pixel(a.width() + x, y, b.pixel(x, y));
  }
  return out;
}

qkv::plot::LinePlotSpec curve(const std::vector<EpochMetrics>& history, const std::string& title,
                              const std::string& y_label, double EpochMetrics::*train,
                              double EpochMetrics::*dev) {
  qkv::plot::Series tr{"train", {}, {}}, dv{"dev", {}, {}};
  for (const EpochMetrics& m : history) {
    tr.x.push_back(static_cast<double>(m.epoch));
    tr.y.push_back(m.*train);
    dv.x.push_back(static_cast<double>(m.epoch));
    dv.y.push_back(m.*dev);
  }
  qkv::plot::LinePlotSpec spec;
  spec.series = {tr, dv};
  spec.title = title;
  spec.x_label = "epoch";
  spec.y_label = y_label;
  spec.markers = true;
  spec.width = 480;
  spec.height = 360;
  return spec;
}

// The attention heatmap of `words`, its values zero.
qkv::plot::HeatmapSpec attention_spec(const std::vector<std::string>& words, const std::string& title) {
  qkv::plot::HeatmapSpec spec;
  spec.rows = spec.cols = static_cast<int>(words.size());
  spec.values.assign(words.size() * words.size(), 0.0f);
  spec.row_labels = spec.col_labels = words;
  spec.title = title;
  spec.x_label = "key (attended token)";
  spec.y_label = "query token";
  spec.value_min = 0.0f;
  spec.value_max = 1.0f;
  return spec;
}

// The heads of one layer side by side, at most this many to a row, as d2l's show_heatmaps.
constexpr int kHeadsPerRow = 4;

// The attention figure of one layer: one heatmap of `words` per head (values zero where `weights`
// is undefined), tiled.
Image attention_grid(const std::vector<std::string>& words, int64_t layer, int64_t heads, const Tensor& weights) {
  std::vector<Image> panels;
  for (int64_t h = 0; h < heads; ++h) {
    qkv::plot::HeatmapSpec spec =
        attention_spec(words, "Attention, layer " + std::to_string(layer + 1) + " head " + std::to_string(h + 1));
    if (weights.defined()) spec.values = weights.select(0, 0).select(0, h).contiguous().to_vector();
    panels.push_back(qkv::plot::draw_heatmap(spec));
  }
  return qkv::plot::tile(panels, kHeadsPerRow);
}

}  // namespace

qkv::plot::HeatmapSpec confusion_figure(const qkv::data::Vocab& tags,
                                        const std::vector<std::vector<int64_t>>& confusion) {
  return qkv::plot::confusion_heatmap(confusion, tags.tokens(), "gold tag", "predicted tag");
}

namespace {

// "attention Performer": the class of layer l's attention, for the note of a figure not drawn.
std::string mechanism_of(const TaggerModel& model, size_t layer) {
  const auto* transformer = dynamic_cast<const TransformerTagger*>(&model);
  if (!transformer) return "the attention";
  const auto block = transformer->encoder->blocks->at<qkv::nn::TransformerEncoderBlock>(layer);
  return "attention " + block->attention->type_name();
}

// The example sentence must have words, and no more than the tagger reads.
void check_example(const std::vector<std::string>& words) {
  if (words.empty()) throw qkv::ValueError("--example: the sentence whose attention is drawn is empty");
  if (words.size() > static_cast<size_t>(kMaxSentenceLength)) {
    throw qkv::ValueError("--example: the sentence has " + std::to_string(words.size()) +
                          " words; the tagger takes at most " + std::to_string(kMaxSentenceLength));
  }
}

}  // namespace

void check_figures(const Config& config, const Vocabs& vocabs, const std::string& example, int64_t test_tokens) {
  const std::vector<std::string> words = split_words(example);
  check_example(words);
  try {
    if (config.model == "transformer") {
      const qkv::plot::ImageSize one = qkv::plot::heatmap_size(attention_spec(words, "Attention, layer 1 head 1"));
      const int64_t columns = std::min<int64_t>(config.heads, kHeadsPerRow);
      const int64_t rows = (config.heads + columns - 1) / columns;
      if (one.width * columns > Image::kMaxSide || one.height * rows > Image::kMaxSide)
        throw qkv::ValueError(std::to_string(config.heads) + " heads of " + std::to_string(one.width) + "x" +
                              std::to_string(one.height) + " pixels do not fit in one image");
    }
  } catch (const qkv::Error& e) {
    throw qkv::ValueError(std::string("--example: its attention figure cannot be drawn: ") + e.what());
  }
  try {
    qkv::plot::HeatmapSpec confusion = confusion_figure(vocabs.tags, {});
    // Every cell as wide as the widest count can be, all the test tokens in one cell.
    confusion.cell_text.assign(confusion.cell_text.size(), std::to_string(test_tokens));
    qkv::plot::heatmap_size(confusion);
  } catch (const qkv::Error& e) {
    throw qkv::ValueError("the confusion matrix of " + std::to_string(vocabs.tags.size()) +
                          " tags cannot be drawn (" + e.what() + "); train with --no-figures");
  }
}

std::string draw_curves(const std::vector<EpochMetrics>& history, const std::string& dir) {
  if (history.empty()) throw qkv::ValueError("draw_curves: no epochs to draw");
  auto loss = curve(history, "Loss (cross-entropy per token)", "loss", &EpochMetrics::train_loss,
                    &EpochMetrics::dev_loss);
  loss.log_y = true;
  auto acc = curve(history, "Token accuracy", "accuracy", &EpochMetrics::train_acc, &EpochMetrics::dev_acc);
  const std::string path = (fs::path(dir) / "loss_accuracy.png").string();
  side_by_side(qkv::plot::draw_line_plot(loss), qkv::plot::draw_line_plot(acc)).write_png(path);
  return path;
}

std::vector<std::string> draw_attention(TaggerModel& model, const Vocabs& vocabs,
                                        const std::vector<std::string>& words, const std::string& dir,
                                        std::string* skipped) {
  check_example(words);
  if (skipped) skipped->clear();
  const bool was_training = model.is_training();
  model.eval();
  {
    qkv::NoGradGuard no_grad;
    model.forward(make_input(vocabs, {&words}, model.reads_chars()));
  }
  model.train(was_training);
  std::vector<std::string> paths;
  const std::vector<Tensor> layers = model.attention_weights();
  for (size_t l = 0; l < layers.size(); ++l) {
    const Tensor& w = layers[l];  // (1, H, T, T), or undefined: the mechanism forms no weights
    if (!w.defined()) {
      if (skipped && skipped->empty())
        *skipped = "no attention figure: " + mechanism_of(model, l) + " forms no (T, T) weights";
      continue;
    }
    const std::string path = (fs::path(dir) / ("attention_layer" + std::to_string(l + 1) + ".png")).string();
    attention_grid(words, static_cast<int64_t>(l), w.size(1), w).write_png(path);
    paths.push_back(path);
  }
  return paths;
}

std::string draw_position_bias(const Tensor& bias, int64_t max_offset, const std::string& scheme,
                               const std::string& dir) {
  if (!bias.defined() || bias.dim() != 2 || bias.size(1) != 2 * max_offset + 1)
    throw qkv::ShapeError("draw_position_bias: expected a bias of (H, " + std::to_string(2 * max_offset + 1) +
                          ") for offsets -" + std::to_string(max_offset) + ".." + std::to_string(max_offset));
  qkv::plot::HeatmapSpec spec;
  spec.rows = static_cast<int>(bias.size(0));
  spec.cols = static_cast<int>(bias.size(1));
  spec.values = bias.contiguous().to_vector();
  for (int64_t o = -max_offset; o <= max_offset; ++o) spec.col_labels.push_back(std::to_string(o));
  for (int64_t h = 0; h < bias.size(0); ++h)
    spec.row_labels.push_back(bias.size(0) == 1 ? "all heads" : "head " + std::to_string(h + 1));
  spec.title = "Bias added to the attention scores by offset (" + scheme + ")";
  spec.x_label = "offset j - i of key from query";
  spec.colormap = qkv::plot::Colormap::BlueWhiteRed;
  const std::string path = (fs::path(dir) / "position_bias.png").string();
  qkv::plot::draw_heatmap(spec).write_png(path);
  return path;
}

std::string draw_positional_encoding(const Tensor& P, int64_t positions, const std::string& dir) {
  const int64_t n = std::min(positions, P.size(0));
  qkv::plot::HeatmapSpec spec;
  spec.rows = static_cast<int>(n);
  spec.cols = static_cast<int>(P.size(1));
  spec.values = P.narrow(0, 0, n).contiguous().to_vector();
  spec.title = "Sinusoidal positional encoding P";
  spec.x_label = "encoding dimension";
  spec.y_label = "position";
  spec.colormap = qkv::plot::Colormap::BlueWhiteRed;
  spec.value_min = -1.0f;
  spec.value_max = 1.0f;
  const std::string path = (fs::path(dir) / "positional_encoding.png").string();
  qkv::plot::draw_heatmap(spec).write_png(path);
  return path;
}

std::string draw_confusion(const std::vector<std::vector<int64_t>>& confusion, const qkv::data::Vocab& tags,
                           const std::string& dir) {
  if (static_cast<int64_t>(confusion.size()) != tags.size())
    throw qkv::ShapeError("draw_confusion: " + std::to_string(confusion.size()) + " rows for " +
                          std::to_string(tags.size()) + " tags");
  const std::string path = (fs::path(dir) / "confusion.png").string();
  qkv::plot::draw_heatmap(confusion_figure(tags, confusion)).write_png(path);
  return path;
}

}  // namespace tagger
