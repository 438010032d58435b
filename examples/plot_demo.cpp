// plot_demo: draws one figure of each kind qkv's examples produce, from made-up data, so that the
// plotting layer (plot/plot.h) can be seen and checked on its own. Every title says "synthetic".
//   usage: plot_demo OUTPUT_DIR
// writes attention.png, positional_encoding.png, confusion.png, loss.png and scaling.png.
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "plot/plot.h"

namespace plot = qkv::plot;

namespace {

// Self-attention weights over a sentence: each query favours nearby keys, and "it" looks back at
// "animal", the way a trained head resolving the pronoun might. Rows are softmax-normalized.
plot::HeatmapSpec attention_figure() {
  const std::vector<std::string> tokens = {"the",    "animal",  "didn't", "cross", "the",
                                           "street", "because", "it",     "was",   "tired"};
  const int n = static_cast<int>(tokens.size());
  plot::HeatmapSpec spec;
  spec.rows = spec.cols = n;
  spec.row_labels = spec.col_labels = tokens;
  for (int q = 0; q < n; ++q) {
    std::vector<double> scores(n);
    double total = 0;
    for (int k = 0; k < n; ++k) {
      scores[k] = -0.7 * std::abs(q - k) + (tokens[q] == "it" && tokens[k] == "animal" ? 4.0 : 0.0);
      total += std::exp(scores[k]);
    }
    for (int k = 0; k < n; ++k)
      spec.values.push_back(static_cast<float>(std::exp(scores[k]) / total));
  }
  spec.title = "Self-attention weights (synthetic)";
  spec.x_label = "key";
  spec.y_label = "query";
  spec.value_min = 0.0f;
  return spec;
}

// The sinusoidal encoding of "Attention Is All You Need" (d2l 11.6.3):
// P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(i / 10000^(2j/d)).
plot::HeatmapSpec positional_encoding_figure() {
  const int positions = 60, d = 32;
  plot::HeatmapSpec spec;
  spec.rows = positions;
  spec.cols = d;
  for (int i = 0; i < positions; ++i) {
    for (int c = 0; c < d; ++c) {
      const double angle = i / std::pow(10000.0, (c / 2 * 2) / static_cast<double>(d));
      spec.values.push_back(static_cast<float>(c % 2 == 0 ? std::sin(angle) : std::cos(angle)));
    }
  }
  spec.title = "Positional encoding (60 x 32)";
  spec.x_label = "encoding dimension";
  spec.y_label = "position";
  spec.colormap = plot::Colormap::BlueWhiteRed;
  spec.value_min = -1.0f;
  spec.value_max = 1.0f;
  return spec;
}

// Counts of (true tag, predicted tag) over the 17 universal POS tags: frequent tags, and the
// confusions a tagger typically makes (NOUN/PROPN, ADJ/NOUN, AUX/VERB, ADP/SCONJ...).
plot::HeatmapSpec confusion_figure() {
  const std::vector<std::string> tags = {"ADJ",   "ADP",   "ADV", "AUX",  "CCONJ", "DET",
                                         "INTJ",  "NOUN",  "NUM", "PART", "PRON",  "PROPN",
                                         "PUNCT", "SCONJ", "SYM", "VERB", "X"};
  const std::vector<int> correct = {812, 1460, 540,  702,  388, 1297, 41,   2210, 230,
                                    301, 918,  1025, 1834, 215, 38,   1603, 12};
  const int n = static_cast<int>(tags.size());
  const auto index = [&](const std::string& tag) {
    for (int i = 0; i < n; ++i)
      if (tags[i] == tag) return i;
    return -1;
  };
  std::vector<float> counts(n * n, 0.0f);
  for (int i = 0; i < n; ++i) counts[i * n + i] = static_cast<float>(correct[i]);
  const struct {
    const char* truth;
    const char* predicted;
    int count;
  } confusions[] = {
      {"NOUN", "PROPN", 96}, {"PROPN", "NOUN", 121}, {"ADJ", "NOUN", 64},  {"NOUN", "ADJ", 47},
      {"AUX", "VERB", 58},   {"VERB", "AUX", 33},    {"ADP", "SCONJ", 29}, {"SCONJ", "ADP", 41},
      {"ADV", "ADJ", 22},    {"DET", "PRON", 18},    {"PRON", "DET", 25},  {"PART", "ADP", 14},
      {"X", "NOUN", 9},      {"SYM", "PUNCT", 7},    {"NUM", "NOUN", 5},   {"INTJ", "ADV", 3},
      {"VERB", "NOUN", 39},  {"NOUN", "VERB", 44},   {"ADV", "ADP", 17},   {"CCONJ", "ADV", 4}};
  for (const auto& c : confusions)
    counts[index(c.truth) * n + index(c.predicted)] = static_cast<float>(c.count);
  plot::HeatmapSpec spec;
  spec.rows = spec.cols = n;
  spec.values = counts;
  spec.row_labels = spec.col_labels = tags;
  spec.title = "UPOS confusion matrix (synthetic counts)";
  spec.x_label = "predicted tag";
  spec.y_label = "true tag";
  spec.colormap = plot::Colormap::Blues;
  spec.annotate = true;
  spec.annotate_decimals = 0;
  return spec;
}

// Training curves that fall (loss) and rise (accuracy) like a small tagger's, with a fixed wobble.
plot::LinePlotSpec loss_figure() {
  plot::Series train_loss{"train loss", {}, {}}, val_loss{"validation loss", {}, {}};
  plot::Series train_acc{"train accuracy", {}, {}}, val_acc{"validation accuracy", {}, {}};
  for (int epoch = 1; epoch <= 30; ++epoch) {
    const double wobble = 0.03 * std::sin(1.7 * epoch);
    for (plot::Series* s : {&train_loss, &val_loss, &train_acc, &val_acc}) s->x.push_back(epoch);
    train_loss.y.push_back(1.9 * std::exp(-epoch / 6.0) + 0.08 + wobble * 0.5);
    val_loss.y.push_back(1.9 * std::exp(-epoch / 7.0) + 0.2 + 0.004 * epoch + wobble);
    train_acc.y.push_back(0.97 - 0.7 * std::exp(-epoch / 5.0) + wobble * 0.2);
    val_acc.y.push_back(0.92 - 0.7 * std::exp(-epoch / 6.0) + wobble * 0.3);
  }
  plot::LinePlotSpec spec;
  spec.series = {train_loss, val_loss, train_acc, val_acc};
  spec.title = "Tagger training (synthetic)";
  spec.x_label = "epoch";
  spec.y_label = "loss / accuracy";
  return spec;
}

// Time per forward pass against sequence length: quadratic attention against linear-time layers.
plot::LinePlotSpec scaling_figure() {
  plot::Series attention{"attention, O(n^2)", {}, {}}, fused{"fused attention, O(n^2)", {}, {}};
  plot::Series gru{"GRU, O(n)", {}, {}}, ffn{"feed-forward, O(n)", {}, {}};
  for (int n = 16; n <= 4096; n *= 2) {
    for (plot::Series* s : {&attention, &fused, &gru, &ffn}) s->x.push_back(n);
    attention.y.push_back(2e-6 * n * n + 0.02);
    fused.y.push_back(0.8e-6 * n * n + 0.03);
    gru.y.push_back(0.004 * n + 0.05);
    ffn.y.push_back(0.0009 * n + 0.01);
  }
  plot::LinePlotSpec spec;
  spec.series = {attention, fused, gru, ffn};
  spec.title = "Forward time vs sequence length (synthetic)";
  spec.x_label = "sequence length n";
  spec.y_label = "time (ms)";
  spec.log_x = spec.log_y = true;
  spec.markers = true;
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    plot::draw_heatmap(attention_figure()).write_png(dir / "attention.png");
    plot::draw_heatmap(positional_encoding_figure()).write_png(dir / "positional_encoding.png");
    plot::draw_heatmap(confusion_figure()).write_png(dir / "confusion.png");
    plot::draw_line_plot(loss_figure()).write_png(dir / "loss.png");
    plot::draw_line_plot(scaling_figure()).write_png(dir / "scaling.png");
    std::printf("wrote 5 figures to %s\n", dir.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
