// Training and evaluating the character-level GPT, and its run directory:
//   config.json          the Config: the model, the budget, the data and its characters
//   baselines.json       the baselines' bits per character on the same split (baselines.h)
//   last.safetensors     the checkpoint after the last evaluation, for --resume
//   best.safetensors     the checkpoint with the lowest validation bits per character so far
//   metrics.csv          one row per evaluation: step, train and validation bits per character, lr
//   figures/*.png        curves, attention over a generated passage, bits by position
//   .lock                the lock a training holds (io::DirectoryLock)
// Every file but the figures is written atomically (io/file.h). A training is refused, naming the directory, where
// another holds the lock, where the directory holds an lm run (it is continued with --resume, never
// overwritten), and where it holds anything else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "examples/lm/baselines.h"
#include "examples/lm/model.h"
#include "examples/lm/text.h"
#include "io/json.h"
#include "optim/adam.h"

namespace qkv::dist {
class ProcessGroup;
}

namespace lm {

struct Config {
  ModelConfig model;     // model.vocab_size comes from the data
  std::string text;      // a user's UTF-8 file; empty: Moby-Dick
  std::string cache = kDefaultCache;
  int64_t steps = 13000, batch = 4, warmup = 200, eval_every = 1000, seed = 1;
  double lr = 2e-3, weight_decay = 0.1, clip = 1.0;
  std::string chars;     // the vocabulary's characters in order, UTF-8 (without the unknown symbol)

  // Ranges of every field; ValueError naming the field (and its option) otherwise.
  void validate() const;
  qkv::io::Json to_json() const;
  // Strict: every key once, of its kind, no other; then validate(). ValueError naming `source`.
  static Config from_json(const qkv::io::Json& json, const std::string& source);
};

// The splits as ids, with the vocabulary of the training part.
struct Data {
  Splits text;
  CharVocab vocab;
  Ids train, validation, test;
  int32_t start_id = 0;  // what the model reads before a piece's first character: '\n', or unknown
};
// Moby-Dick or config.text, split and encoded with the vocabulary `chars` (empty: the training
// part's). Refuses, naming --text or --context, a text whose training part has no piece longer than
// the context.
Data load_data(const Config& config, const std::string& chars = "");

// Bits per character of `pieces` under the model: every character, each piece read after start_id,
// in windows of the context advancing by half of it (the second half of each window scored, with
// the context before it; all of the first). by_position, when given, receives the mean bits at each
// position of windows that do not overlap, (context) values: how much a longer context helps.
double evaluate_bits(CharGPT& model, const Ids& pieces, int32_t start_id, std::vector<double>* by_position = nullptr);

// The AdamW of nanoGPT: decoupled weight decay on the matrices (and the tied embedding), none on
// the biases and the norms' gains; betas (0.9, 0.99).
std::unique_ptr<qkv::optim::AdamW> make_optimizer(CharGPT& model, const Config& config);

// One training step: the mean cross-entropy of predicting each target from the inputs up to it,
// backward, the gradient clipped to norm `clip` (0: not clipped), and the optimizer's step unless
// the loss or the gradient norm is not finite. inputs (B, T), targets (B·T).
struct StepResult {
  double loss = 0, grad_norm = 0;  // in nats; the norm before clipping
};
StepResult train_step(CharGPT& model, qkv::optim::Optimizer& optimizer, const qkv::IndexTensor& inputs,
                      const qkv::IndexTensor& targets, double clip);

// One evaluation of a training: a row of metrics.csv, and of each checkpoint's history.
struct Evaluation {
  int64_t step = 0;
  double train_bits = 0, validation_bits = 0, lr = 0;
  double seconds = 0;  // of training since the run began (a resumed run's go on from its last)
};
// The evaluations a checkpoint of an lm run holds; ValueError naming the file otherwise.
std::vector<Evaluation> read_evaluations(const std::filesystem::path& checkpoint_file);

struct TrainOptions {
  std::string run_dir = "runs/lm";
  bool resume = false;
  bool figures = true;
  bool verbose = true;
  bool progress = true;
  int64_t stop_after = -1;  // stop after this many evaluations of this call, as if interrupted (tests)
  // The ranks that train together (dist/world.h, docs/distributed.md): every rank draws the same
  // global batch of windows and takes its stride of them; rank 0 evaluates, prints and writes the
  // run directory (the others should be quiet). Null, or a group of one, trains in one process.
  qkv::dist::ProcessGroup* group = nullptr;
  bool fixed_order_reduction = false;  // add the ranks' gradients in rank order (--reduce fixed)
};

// The baselines on the test part, trained on the training part (baselines.h): a unigram, the
// interpolated Kneser–Ney n-gram of the order best on validation (up to 8), and the compressors
// (absent where not installed).
struct BaselineBits {
  double unigram = 0;
  int ngram_order = 0;
  double ngram = 0;
  std::optional<double> bzip2, xz;
  qkv::io::Json to_json() const;
  static BaselineBits from_json(const qkv::io::Json& json, const std::string& source);
};
BaselineBits compute_baselines(const Data& data);
// One line per baseline, as train and eval print them.
void print_baselines(std::ostream& out, const BaselineBits& baselines);

struct TrainResult {
  double best_validation_bits = 0, test_bits = 0;
  BaselineBits baselines;
  double tokens_per_second = 0;
};

// A fresh run (options.resume false) or the continuation of the one in options.run_dir.
TrainResult train(Config config, const TrainOptions& options);

// A trained run: its config, vocabulary and the model of a checkpoint ("best" or "last").
struct Run {
  Config config;
  CharVocab vocab;
  std::shared_ptr<CharGPT> model;
};
Run load_run(const std::filesystem::path& run_dir, const std::string& checkpoint = "best");
// The run's config.json, read strictly; ValueError naming the file.
Config read_run_config(const std::filesystem::path& run_dir);

}  // namespace lm
