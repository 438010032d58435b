// A run directory: written while training, read back for eval, predict and --resume. It holds
//   config.json          the Config (model shape, budget, data sizes)
//   words.txt tags.txt   the vocabularies, one token per line (data/vocab.h)
//   best.safetensors     the checkpoint with the best dev accuracy so far
//   last.safetensors     the checkpoint after the last finished epoch, for --resume
//   metrics.csv          one row per epoch
//   profile.csv          with --profile: the op profile of the first epoch's training steps
//   figures/*.png        curves, attention heatmaps, the positional encoding, the confusion matrix
//   ablate/              the runs `tagger ablate` trains, each a run directory of its own
//   .lock                the lock a training holds (io::DirectoryLock)
// A checkpoint's config text holds the Config, a digest of each vocabulary, the epoch history and
// the best dev accuracy. The history there leaves out the timings (tokens_per_s, seconds), so that
// two runs with the same seed write checkpoints of the same bytes, whatever the thread count;
// metrics.csv keeps them, and load_saved_run takes them back from it (0 for an epoch it lacks).
// Every file is written atomically (io/file.h); a diverged run saves nothing (train.h). What this
// adds up to, for a user, is in docs/tagger.md, "What a run directory guarantees".
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "examples/tagger/dataset.h"
#include "examples/tagger/model.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "optim/optimizer.h"

namespace tagger {

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, dev_loss = 0, dev_acc = 0;
  double lr = 0;            // the learning rate of the epoch's last step
  double tokens_per_s = 0;  // training tokens (real, not padding) per second of training steps
  double seconds = 0;       // the epoch's wall time, training and dev evaluation
};

// Before a run trains or resumes: makes `dir` if missing, takes its lock, and returns it (hold it
// until the run ends: a second training into the same directory is then refused, naming it, and a
// killed run leaves no lock behind). Then finishes or undoes a fresh run's interrupted start
// (below), and refuses, naming the path:
//   - a directory that is neither empty nor a tagger run (one whose config.json reads as a tagger
//     Config): nothing of it is touched;
//   - a path that cannot be a directory or be written to, or something other than a file where the
//     run writes one (a directory named metrics.csv, say), so that no save fails after an epoch of
//     training.
// Last, it removes the temporary files that a run killed in the middle of writing one of its files
// left (io::remove_temp_files), and nothing else.
qkv::io::DirectoryLock prepare_run_directory(const std::filesystem::path& dir);

// A fresh run takes over its directory only once its first epoch is saved whole, so that the old
// run stays whole until then, whatever stops the new one:
//   1. new_run_staging gives an empty DIR/.new-run, where the run writes its config, vocabularies
//      (write_run_start), checkpoints and metrics;
//   2. commit_new_run marks them complete, then moves each over its namesake and removes what of the
//      old run the new one has no file for (a best checkpoint, profile.csv, the figures' PNGs).
// A start stopped before the mark leaves the old run as it was; one stopped after it is finished by
// the next command that opens the directory (prepare_run_directory, or load_saved_run when no run
// holds the lock).
std::filesystem::path new_run_staging(const std::filesystem::path& dir);
void write_run_start(const std::filesystem::path& staging, const Config& config, const Vocabs& vocabs);
void commit_new_run(const std::filesystem::path& dir);

// Writes the model and optimizer at `step` to `path`, with the config, a digest of each vocabulary,
// the epoch history and the best dev accuracy in the checkpoint's config text (what load_saved_run
// reads back).
// A run trained on several ranks records their number (world_size), which a resume reads back.
void save_run_checkpoint(const std::filesystem::path& path, const TaggerModel& model,
                         const qkv::optim::Optimizer& optimizer, int64_t step, const Config& config,
                         const Vocabs& vocabs, const std::vector<EpochMetrics>& history, double best_dev_acc,
                         int64_t world_size = 1);

void write_metrics_csv(const std::filesystem::path& path, const std::vector<EpochMetrics>& history);

// What a run directory holds of a run, loaded once for --resume, eval and predict: the config,
// vocabularies and epoch history as of one of its checkpoints ("best.safetensors" or
// "last.safetensors"). config.json must agree with the config the checkpoint was saved with but
// for the epochs, which --epochs may have extended since; the checkpoint's config is the one
// returned. words.txt and tags.txt must be the vocabularies it was trained with, token for token
// (their digests are in the checkpoint). ValueError when a file is missing or disagrees.
struct SavedRun {
  std::string checkpoint_path;
  qkv::io::Checkpoint checkpoint;  // read and checked, not applied
  Config config;
  Vocabs vocabs;
  std::vector<EpochMetrics> history;
  double best_dev_acc = 0;
  int64_t world_size = 1;  // the ranks it was trained on
};
SavedRun load_saved_run(const std::string& run_dir, const std::string& checkpoint);

// A trained run loaded for eval and predict: config, vocabularies and the best checkpoint.
struct Run {
  Config config;
  Vocabs vocabs;
  std::shared_ptr<TaggerModel> model;
};
Run load_run(const std::string& run_dir);

}  // namespace tagger
