// Training the tagger: data in, a run directory out (run_dir.h). train() starts a run, resume()
// continues one; the training loop itself is Trainer::train_steps in train.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/tagger/dataset.h"
#include "examples/tagger/evaluate.h"
#include "examples/tagger/model.h"
#include "examples/tagger/run_dir.h"

namespace qkv::dist {
class ProcessGroup;
}

namespace tagger {

struct TrainOptions {
  std::string run_dir = "runs/tagger";
  int64_t stop_after = -1;  // stop after this many epochs of this call (>= 1), as if interrupted
  bool figures = true;
  bool verbose = true;   // data summary, epoch lines, result tables; false: silent (tests, ablate)
  bool progress = true;  // the progress bar on stderr (plain lines when not a terminal)
  bool profile = false;  // profile the first epoch's steps: print the op table, write run_dir/profile.csv
  std::string example = "they saw the saw and i can can the can";  // attention figure sentence
  // The ranks that train together (dist/world.h, docs/distributed.md): each takes its stride of the
  // rows of every batch, gradients are summed by the reducer, rank 0 prints and writes the run
  // directory (the other ranks should be quiet: verbose, progress and figures off). Null, or a
  // group of one, trains in this process alone, exactly as before.
  qkv::dist::ProcessGroup* group = nullptr;
  // Add the ranks' gradients in rank order rather than in the MPI library's order (--reduce fixed).
  bool fixed_order_reduction = false;
};

struct TrainResult {
  std::vector<EpochMetrics> history;
  std::vector<double> step_losses;  // every training step's loss, this call only
  double best_dev_acc = 0;
  Evaluation test;                // of the best checkpoint
  double train_tokens_per_s = 0;  // over the whole call
  double test_tokens_per_s = 0;   // tagging speed on the test split
};

// Both stop at the first step whose loss or gradient norm is not finite, throwing qkv::Error with
// the epoch, the step and a hint: nothing of that epoch is saved, so the run directory keeps the
// checkpoints and metrics of the last finished epoch.

// A fresh run in options.run_dir (whatever an old run left there is removed first).
TrainResult train(Config config, const Data& data, const TrainOptions& options);

// Continues the run in options.run_dir from `saved` (its last checkpoint) up to saved.config.epochs,
// with the same results, bit for bit, as a run that was never interrupted.
TrainResult resume(SavedRun saved, const Data& data, const TrainOptions& options);

}  // namespace tagger
