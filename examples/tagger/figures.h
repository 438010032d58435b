// The tagger's figures, PNGs drawn with plot/plot.h. Each function writes one or more files into
// `dir` and returns their paths.
#pragma once

#include <string>
#include <vector>

#include "examples/tagger/train.h"

namespace tagger {

// Throws ValueError, naming the option, for what the figures would refuse once training is done:
// an empty example sentence or one longer than the tagger reads, an attention or confusion
// heatmap too large to draw. train and resume call it before the first step.
void check_figures(const Config& config, const Vocabs& vocabs, const std::string& example);

// loss_accuracy.png: train and dev loss (left) and accuracy (right) per epoch.
std::string draw_curves(const std::vector<EpochMetrics>& history, const std::string& dir);

// attention_layer<l>_head<h>.png for every layer and head: the model's self-attention weights on
// `words`, queries down, keys across, tokens on both axes. Words outside the vocabulary are read
// as <unk>. Nothing for models without attention.
std::vector<std::string> draw_attention(TaggerModel& model, const Vocabs& vocabs,
                                        const std::vector<std::string>& words, const std::string& dir);

// positional_encoding.png: the first `positions` rows of P (positions down, dimensions across),
// d2l's figure of the sinusoidal encoding.
std::string draw_positional_encoding(const Tensor& P, int64_t positions, const std::string& dir);

// confusion.png: counts of gold (rows) against predicted (columns) tags.
std::string draw_confusion(const std::vector<std::vector<int64_t>>& confusion, const qkv::data::Vocab& tags,
                           const std::string& dir);

}  // namespace tagger
