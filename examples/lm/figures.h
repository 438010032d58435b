// The language model's figures, PNG files in RUN/figures:
//   loss.png              training and validation bits per character by step, the baselines as lines
//   attention.png         one head of the last block over a passage the model generated: the causal
//                         triangle, each character's weights over those before it
//   bits_by_position.png  test bits per character at each position of the context window: what a
//                         longer context buys
#pragma once

#include <string>
#include <vector>

#include "examples/lm/train.h"

namespace lm {

// All three, for the trained run in run_dir (its best checkpoint); returns the files written.
std::vector<std::string> draw_training_figures(const std::string& run_dir);

// attention.png's heatmap for a passage, ids (a prompt and what was generated after it): one head of
// the last block over its last 64 characters at most, written to `path`.
void draw_sample_attention(CharGPT& model, const CharVocab& vocab, const std::vector<int32_t>& ids,
                           const std::string& path);

}  // namespace lm
