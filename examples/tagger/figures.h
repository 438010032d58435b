// The tagger's figures, PNGs drawn with plot/plot.h. Each function writes one or more files into
// `dir` and returns their paths.
#pragma once

#include <string>
#include <vector>

#include "examples/tagger/train.h"
#include "plot/plot.h"

namespace tagger {

// Throws ValueError, naming the option, for what the figures would refuse once training is done:
// an empty example sentence or one longer than the tagger reads, an attention or confusion
// heatmap too large to draw (its counts as wide as `test_tokens`, the most a cell can hold). train
// and resume call it before the first step.
void check_figures(const Config& config, const Vocabs& vocabs, const std::string& example, int64_t test_tokens);

// loss_accuracy.png: train and dev loss (left) and accuracy (right) per epoch.
std::string draw_curves(const std::vector<EpochMetrics>& history, const std::string& dir);

// attention_layer<l>.png for every layer: the model's self-attention weights on `words`, one
// heatmap per head in a grid (as d2l's show_heatmaps), queries down, keys across, tokens on both
// axes. Words outside the vocabulary are read as <unk>. Nothing for models without attention, and
// nothing for a layer whose mechanism never forms the (T, T) weights (performer, linformer): a
// blank grid would read as a layer that attends nowhere. Then `skipped`, if given, gets a one-line
// note saying so ("no attention figure: attention Performer forms no (T, T) weights"); else "".
std::vector<std::string> draw_attention(TaggerModel& model, const Vocabs& vocabs,
                                        const std::vector<std::string>& words, const std::string& dir,
                                        std::string* skipped = nullptr);

// positional_encoding.png: the first `positions` rows of P (positions down, dimensions across),
// d2l's figure of the sinusoidal encoding.
std::string draw_positional_encoding(const Tensor& P, int64_t positions, const std::string& dir);

// position_bias.png: the bias (H or 1, 2·max_offset + 1) a position scheme adds to the attention
// scores for each offset -max_offset..max_offset, one row per head (relative, ALiBi, clipped).
std::string draw_position_bias(const Tensor& bias, int64_t max_offset, const std::string& scheme,
                               const std::string& dir);

// The confusion matrix of `tags` with the counts of `confusion` (rows gold, columns predicted;
// zeros when empty): each cell coloured by its share of its gold row, so that a few errors in a
// frequent tag's row stand out from the zeros as clearly as in a rare one's, and labelled with its
// count (an empty cell with nothing).
qkv::plot::HeatmapSpec confusion_figure(const qkv::data::Vocab& tags,
                                        const std::vector<std::vector<int64_t>>& confusion);

// confusion.png: confusion_figure drawn.
std::string draw_confusion(const std::vector<std::vector<int64_t>>& confusion, const qkv::data::Vocab& tags,
                           const std::string& dir);

}  // namespace tagger
