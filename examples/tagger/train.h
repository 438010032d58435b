// Training the tagger: data in, a run directory out (run_dir.h). train() starts a run or, with
// options.resume, continues one; resume() continues a saved one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/tagger/dataset.h"
#include "examples/tagger/evaluate.h"
#include "examples/tagger/model.h"
#include "examples/tagger/run_dir.h"

namespace tagger {

// The run directory, what is printed and drawn, the ranks (examples/common/run_directory.h), and
// the tagger's own: the profile of the first epoch, the sentence whose attention is drawn. Under
// mpirun each rank takes its stride of the rows of every batch and rank 0 writes the run directory.
struct TrainOptions : qkv::examples::RunOptions {
  TrainOptions() { run_dir = "runs/tagger"; }
  bool profile = false;  // profile the first epoch's steps: print the op table, write run_dir/profile.csv
  std::string example = "they saw the saw and i can can the can";  // attention figure sentence
};

struct TrainResult {
  std::vector<EpochMetrics> history;
  std::vector<double> step_losses;  // every training step's loss, this call only
  double best_dev_acc = 0;
  Evaluation test;                // of the best checkpoint
  double train_tokens_per_s = 0;  // over the whole call
  double test_tokens_per_s = 0;   // tagging speed on the test split
};

// A fresh run in options.run_dir (it replaces an old run there once its first epoch is saved), or
// with options.resume the continuation of the run there up to config.epochs (0: the run's own).
// Training stops at the first step whose loss or gradient norm is not finite, throwing qkv::Error
// with the epoch, the step and a hint: nothing of that epoch is saved, so the run directory keeps
// the checkpoints and metrics of the last finished epoch.
TrainResult train(Config config, const Data& data, const TrainOptions& options);

// Continues the run in options.run_dir from `saved` (its last checkpoint) up to saved.config.epochs,
// with the same results, bit for bit, as a run that was never interrupted.
TrainResult resume(const SavedRun& saved, const Data& data, TrainOptions options);

}  // namespace tagger
