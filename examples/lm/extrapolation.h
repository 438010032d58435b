// Train short, test long (Press, Smith & Lewis 2022, "Train Short, Test Long: Attention with Linear
// Biases Enables Input Length Extrapolation", Figure 1): one character GPT trained per position
// scheme, everything else equal (the same data, budget, seed and batches), at a context of L
// characters; then each one's test bits per character read in non-overlapping windows of L, 2L, 4L
// and 8L (with_context). A scheme that extrapolates reads a longer window at least as well as a short
// one (more characters before each); one that does not gets worse past L.
//
// A learned table has a row per position up to L and nothing past it: it is refused past L, and the
// table says so, rather than extended by a rule of ours.
//
// Each scheme's run is OUT/SCHEME, a whole run directory (lm eval and lm sample read it); the first
// also computes the baselines. OUT/extrapolation.md holds the table, OUT/extrapolation.json the
// numbers, OUT/extrapolation.png the curves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "examples/lm/train.h"

namespace lm {

struct ExtrapolationOptions {
  std::string out = "runs/lm-extrapolation";
  std::vector<std::string> schemes;  // each of nn::position_scheme_names()
  std::vector<int64_t> factors = {1, 2, 4, 8};  // evaluation lengths, in multiples of the context
  bool verbose = true;
};

// The budget the command trains each scheme with unless told otherwise: the model of lm train
// with 4 blocks, at a context of 64, batches of 32 windows, 1,500 steps, float32 products (so
// that the reference mode gives the same table).
Config extrapolation_defaults();

struct ExtrapolationRow {
  std::string scheme;
  std::vector<std::optional<double>> bits;  // per factor; none where the model refuses the length
  std::string refusal;                      // why, where it refuses
  int64_t parameters = 0;
  double seconds = 0;        // of training
  int64_t longest_piece = 0;  // characters of the longest test piece
};

// "a,b,c" → {"a", "b", "c"}, each one of nn::position_scheme_names(); ValueError naming --schemes.
std::vector<std::string> split_schemes(const std::string& list);
// "1,2,4,8" → {1, 2, 4, 8}: increasing, each in [1, 64]; ValueError naming --factors. run_extrapolation
// refuses a window (factor × context) longer than 2,048 characters.
std::vector<int64_t> split_factors(const std::string& list);

// Trains config once per scheme and evaluates each at every factor; writes OUT's files (refused,
// before anything is written, where OUT holds any of them or a scheme's run) and returns the rows.
std::vector<ExtrapolationRow> run_extrapolation(const Config& config, const ExtrapolationOptions& options);

}  // namespace lm
