// What a trained seq2seq model does on its test pairs, drawn (`seq2seq figures`): the error by source
// length, and what a wider beam buys against what it costs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "examples/seq2seq/model.h"
#include "examples/seq2seq/task.h"

namespace seq2seq {

// One beam width's decoding of the test pairs.
struct BeamPoint {
  int64_t beam = 0;
  Metrics score;
  double seconds = 0;                    // decoding the whole set
  std::vector<std::string> predictions;  // in the order of the pairs
};

// The test pairs decoded at each beam width (the same length penalty), timed.
std::vector<BeamPoint> beam_sweep(Translator& model, const Task& task, const std::vector<Pair>& pairs,
                                  const std::vector<int64_t>& beams, double length_penalty);

// The headline error (1 − exact match) of `outputs` by source length in symbols: lengths with at
// least `min_count` pairs, as (length, error, count).
struct LengthPoint {
  int64_t length = 0;
  double error = 0;
  int64_t count = 0;
};
std::vector<LengthPoint> error_by_length(const Task& task, const std::vector<std::string>& outputs,
                                         const std::vector<Pair>& pairs, int64_t min_count = 20);

// The two figures, as PNGs in `dir`: error_by_length.png and beam_width.png (error and seconds
// against the beam width). Returns their paths.
std::vector<std::filesystem::path> write_figures(const std::vector<LengthPoint>& by_length,
                                                 const std::vector<BeamPoint>& sweep, const std::string& task_name,
                                                 const std::filesystem::path& dir);

}  // namespace seq2seq
