// The tagger's run directory (examples/common/run_directory.h): besides the config, the checkpoints
// (after each epoch) and metrics.csv (one row per epoch), it holds
//   words.txt tags.txt   the vocabularies, one token per line (data/vocab.h)
//   profile.csv          with --profile: the op profile of the first epoch's training steps
//   figures/*.png        curves, attention heatmaps, the positional encoding, the confusion matrix
//   ablate/              the runs `tagger ablate` trains, each a run directory of its own
// A checkpoint's state keeps a digest of each vocabulary, and the ranks it was trained on when more
// than one. A fresh run replaces an old one in its directory only once its first epoch is saved
// whole; what this adds up to, for a user, is in docs/tagger.md, "What a run directory guarantees".
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "examples/common/run_directory.h"
#include "examples/tagger/dataset.h"
#include "examples/tagger/model.h"

namespace tagger {

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, dev_loss = 0, dev_acc = 0;
  double lr = 0;            // the learning rate of the epoch's last step
  double tokens_per_s = 0;  // training tokens (real, not padding) per second of training steps
  double seconds = 0;       // the epoch's wall time, training and dev evaluation
  template <class F>
  void fields(F&& f) {
    f("epoch", epoch);
    f("train_loss", train_loss);
    f("train_acc", train_acc);
    f("dev_loss", dev_loss);
    f("dev_acc", dev_acc);
    f("lr", lr);
    f("tokens_per_s", tokens_per_s, qkv::examples::kTiming);
    f("seconds", seconds, qkv::examples::kTiming);
  }
};

extern const qkv::examples::RunLayout kRunLayout;

// The entries a tagger checkpoint keeps besides the common state: the vocabularies' digests, and
// the ranks it was trained on when more than one (so that the resume of a run in one process
// writes the bytes it always wrote).
qkv::io::Json::Object checkpoint_extras(const Vocabs& vocabs, int64_t world_size);

// What a run directory holds of a run, loaded once for --resume, eval and predict: the config,
// vocabularies and epoch history as of one of its checkpoints ("best.safetensors" or
// "last.safetensors"). words.txt and tags.txt must be the vocabularies it was trained with, token
// for token (their digests are in the checkpoint). ValueError when a file is missing or disagrees.
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
