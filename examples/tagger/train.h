// Training, evaluation and prediction for the tagger: data in, a run directory out.
//
// A run directory holds
//   config.json          the Config (model shape, budget, data sizes)
//   words.txt tags.txt   the vocabularies, one token per line (data/vocab.h)
//   best.safetensors     the checkpoint with the best dev accuracy so far
//   last.safetensors     the checkpoint after the last finished epoch, for --resume; its config
//                        text also holds the epoch history
//   metrics.csv          one row per epoch
//   figures/*.png        curves, attention heatmaps, the positional encoding, the confusion matrix
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "examples/tagger/corpus.h"
#include "examples/tagger/model.h"
#include "io/checkpoint.h"

namespace tagger {

struct Data {
  std::vector<TaggedSentence> train, dev, test;
  std::string description;  // "built-in corpus (seed 0)" or the file names
};

// The built-in corpus when config's three file names are empty; otherwise all three files.
Data load_data(const Config& config);
// A tagged file: CoNLL-U when the name ends in .conllu, two-column CoNLL otherwise.
std::vector<TaggedSentence> read_tagged(const std::string& path);

struct Vocabs {
  qkv::data::Vocab words;  // <pad> <unk> and training words seen min_freq times
  qkv::data::Vocab tags;   // every tag of all three splits: the label set is closed, not learned
};
Vocabs build_vocabs(const Data& data, int64_t min_freq);

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, dev_loss = 0, dev_acc = 0;
  double lr = 0;            // the learning rate of the epoch's last step
  double tokens_per_s = 0;  // training tokens (real, not padding) per second of training steps
  double seconds = 0;       // the epoch's wall time, training and dev evaluation
};

struct Evaluation {
  double loss = 0;
  TaggingScore score;
  std::vector<std::vector<std::string>> predicted;  // per sentence, per token
  std::vector<std::vector<int64_t>> confusion;      // [gold][predicted] counts, tag-vocab order
};

// Tags `sentences` in eval mode, batch by batch, without building a graph.
Evaluation evaluate(TaggerModel& model, const Vocabs& vocabs, const TagLexicon& lexicon,
                    const std::vector<TaggedSentence>& sentences, int64_t batch_size);

struct TrainOptions {
  std::string run_dir = "runs/tagger";
  int64_t stop_after = -1;  // stop after this many epochs of this call (>= 1), as if interrupted
  bool figures = true;
  bool verbose = true;   // data summary, epoch lines, result tables; false: silent (tests, ablate)
  bool progress = true;  // the progress bar on stderr (plain lines when not a terminal)
  bool profile = false;  // profile the first epoch's steps: print the op table, write run_dir/profile.csv
  std::string example = "they saw the saw and i can can the can";  // attention figure sentence
};

struct TrainResult {
  std::vector<EpochMetrics> history;
  std::vector<double> step_losses;  // every training step's loss, this call only
  double best_dev_acc = 0;
  Evaluation test;                // of the best checkpoint
  double train_tokens_per_s = 0;  // over the whole call
};

// A fresh run in options.run_dir (whatever an old run left there is removed first).
TrainResult train(Config config, const Data& data, const TrainOptions& options);

// What a run directory holds of a run, loaded once for --resume, eval and predict: the config,
// vocabularies and epoch history as of one of its checkpoints ("best.safetensors" or
// "last.safetensors"). config.json must agree with the config the checkpoint was saved with but
// for the epochs, which --epochs may have extended since; the checkpoint's config is the one
// returned. ValueError when a file is missing or the two configs disagree.
struct SavedRun {
  std::string checkpoint_path;
  qkv::io::Checkpoint checkpoint;  // read and checked, not applied
  Config config;
  Vocabs vocabs;
  std::vector<EpochMetrics> history;
  double best_dev_acc = 0;
};
SavedRun load_saved_run(const std::string& run_dir, const std::string& checkpoint);

// Continues the run in options.run_dir from `saved` (its last checkpoint) up to saved.config.epochs,
// with the same results, bit for bit, as a run that was never interrupted.
TrainResult resume(SavedRun saved, const Data& data, const TrainOptions& options);

// A trained run loaded for eval and predict: config, vocabularies and the best checkpoint.
struct Run {
  Config config;
  Vocabs vocabs;
  std::shared_ptr<TaggerModel> model;
};
Run load_run(const std::string& run_dir);

// Tags whitespace-separated sentences with a loaded run.
std::vector<std::vector<std::string>> predict(Run& run,
                                              const std::vector<std::vector<std::string>>& sentences);

// The eval subcommand's report: overall and per-tag accuracy and the confusion matrix as text.
void print_evaluation(std::ostream& out, const Evaluation& evaluation, const qkv::data::Vocab& tags);

std::vector<std::string> split_words(const std::string& line);

// The accuracy tables of `train` and `ablate`: a header and one row per tagger, columns overall,
// ambiguous and repeated; `extra` is appended to the line (ablate's tokens/s).
void print_score_header(std::ostream& out, const std::string& first_column, const std::string& extra = "");
void print_score_row(std::ostream& out, const std::string& name, const TaggingScore& score,
                     const std::string& extra = "");

}  // namespace tagger
