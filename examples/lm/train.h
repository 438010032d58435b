// Training and evaluating the character-level GPT. Its run directory (examples/common/run_directory.h)
// holds, besides the config, the checkpoints and metrics.csv (one row per evaluation: step, train
// and validation bits per character, lr, seconds):
//   baselines.json       the baselines' bits per character on the same split (baselines.h)
//   figures/*.png        curves, attention over a generated passage, bits by position (figures.h)
// A training is refused, naming the directory, where another holds it, where it holds an lm run (it
// is continued with --resume, never overwritten), and where it holds anything else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/program.h"
#include "examples/common/run_directory.h"
#include "examples/lm/baselines.h"
#include "examples/lm/model.h"
#include "examples/lm/text.h"
#include "io/json.h"
#include "nn/ffn.h"
#include "nn/position_scheme.h"
#include "optim/adam.h"

namespace lm {

struct Config {
  ModelConfig model;     // model.vocab_size comes from the data
  std::string text;      // a user's UTF-8 file; empty: Moby-Dick
  std::string cache = kDefaultCache;
  int64_t steps = 11000, batch = 4, warmup = 200, eval_every = 1000, seed = 1;
  double lr = 2e-3, weight_decay = 0.1, clip = 1.0;
  std::string chars;     // the vocabulary's characters in order, UTF-8 (without the unknown symbol)
  std::string matmul = "auto";  // float32 products, or bfloat16 operands (tensor/precision.h; resolved_matmul)

  // Every field under its config.json key and option (examples/common/config.h).
  template <class F>
  void fields(F&& f) {
    f({"text", "train on this UTF-8 file instead of Moby-Dick"}, text);
    f({"cache", "the directory Moby-Dick is fetched into (npm) and read from"}, cache);
    f({"context", "characters the model reads at once"}, model.context);
    f({"positions", "position scheme: " + qkv::examples::join(qkv::nn::position_scheme_names())}, model.positions);
    f({"ffn", "feed-forward sublayer: " + qkv::examples::join(qkv::nn::feed_forward_names())}, model.ffn);
    qkv::examples::encoder_fields(f, model);
    f({"steps", "training steps"}, steps);
    f({"batch", "windows per step"}, batch);
    f({"eval_every", "steps between evaluations (and checkpoints)"}, eval_every);
    f({"seed", "seed of the initialization and the batches"}, seed);
    qkv::examples::adamw_fields(f, warmup, lr, weight_decay, clip);
    f({"matmul", qkv::examples::kMatmulAutoHelp, "", /*later=*/true, qkv::io::Json("highest")}, matmul);  // runs before it: highest
    f({"recompute", qkv::examples::kRecomputeHelp, "", /*later=*/true}, model.recompute);
    f({"chars"}, chars);
  }
  // Ranges of every field; ValueError naming the field (and its option) otherwise.
  void validate() const;
};

// About the bytes a training step of `config` takes with a vocabulary of V: the parameters, their
// gradients and AdamW's two moments, and the activations backward keeps (per block the
// projections, norms and FFN of every token and each head's (T, T) attention weights, one block's
// and every block's input with --recompute; the logits).
// An estimate, meant to refuse what cannot fit before anything is allocated.
double training_bytes_estimate(const Config& config, int64_t V);

// The run directory's files and rules (examples/common/run_directory.h).
extern const qkv::examples::RunLayout kRunLayout;

// The splits as ids, with the vocabulary of the training part.
struct Data {
  Splits text;
  CharVocab vocab;
  Ids train, validation, test;
  int32_t start_id = 0;  // what the model reads before a piece's first character: '\n', or unknown
};
// What a trained run knows of its text, to read it again: the vocabulary's characters (UTF-8) and
// the digest of a --text file (Splits::digest; empty for Moby-Dick, and for a run of an earlier qkv,
// which kept none).
struct RunText {
  std::string chars, digest;
};

// Moby-Dick or config.text, split and encoded with the vocabulary of the training part, or for a
// trained run's text (`run`) with the run's. Refuses, naming --text or --context, a text whose
// training part has no piece longer than the context, and a run's text file that has changed since
// the run was trained on it (its vocabulary and baselines are the old text's).
Data load_data(const Config& config, const RunText& run = {});

// How evaluate_bits reads a text. Each character is scored once, each piece read after start_id,
// in windows of the model's context T:
//   NonOverlapping  windows side by side: a character is read after the 0 … T − 1 characters before
//                   it in its window, (T − 1)/2 on average. The headline figure, and validation's.
//   Sliding         windows advancing by T/8, each scoring its last T/8 characters: every character
//                   is read after at least 7T/8 of those before it (all of them near a piece's start),
//                   as a model reading a long text would; eight times the work.
enum class Scoring { NonOverlapping, Sliding };

// Bits per character of `pieces` under the model, read as `scoring` says. by_position, when given,
// receives the mean bits at each position of non-overlapping windows, (context) values: how much a
// longer context helps.
double evaluate_bits(CharGPT& model, const Ids& pieces, int32_t start_id, Scoring scoring = Scoring::NonOverlapping,
                     std::vector<double>* by_position = nullptr);

// The AdamW of nanoGPT: decoupled weight decay on the matrices (and the tied embedding), none on
// the biases, the norms' gains and learned Fourier frequencies; betas (0.9, 0.99).
std::unique_ptr<qkv::optim::AdamW> make_optimizer(CharGPT& model, const Config& config);

// One evaluation of a training: a row of metrics.csv, and of each checkpoint's history. Its loss
// is the training bits per character since the last row, its score the validation's.
inline constexpr const char* kColumns[] = {"step", "train_bits_per_char", "validation_bits_per_char", "lr", "seconds"};
using Evaluation = qkv::examples::MetricsRow<kColumns>;

// The run directory, figures, what is printed and the ranks (examples/common/run_directory.h), and
// whether a fresh run computes the baselines (baselines.json; without it lm eval prints none).
struct TrainOptions : qkv::examples::RunOptions {
  bool baselines = true;
};

// One step on a batch of windows, inputs (B, T) and targets (B·T): the mean cross-entropy of
// predicting each target from the inputs up to it, backward, clipping, AdamW (TrainStep).
qkv::examples::StepResult train_step(qkv::examples::TrainStep& step, CharGPT& model, int64_t k,
                                     const qkv::IndexTensor& inputs, const qkv::IndexTensor& targets);

// The baselines on the test part, trained on the training part (baselines.h): a unigram, the
// interpolated Kneser–Ney n-gram of the order best on validation (up to 8), and the compressors
// (absent where not installed).
struct BaselineBits {
  double unigram = 0;
  int ngram_order = 0;
  double ngram = 0;
  CompressorBits bzip2, xz;  // no rate where not installed, or where there is none (compressor_bits)
  qkv::io::Json to_json() const;
  static BaselineBits from_json(const qkv::io::Json& json, const std::string& source);
};
BaselineBits compute_baselines(const Data& data);
// One line per baseline, as train and eval print them.
void print_baselines(std::ostream& out, const BaselineBits& baselines);
// The width of the names in the columns of bits per character that train, eval and print_baselines print.
inline constexpr int kLabelWidth = 38;

struct TrainResult {
  double best_validation_bits = 0, test_bits = 0, test_bits_sliding = 0;  // test: Scoring's two ways
  BaselineBits baselines;
  double tokens_per_second = 0;
  double training_seconds = 0;  // of this call's steps
};

// A fresh run (options.resume false) or the continuation of the one in options.run_dir.
TrainResult train(Config config, const TrainOptions& options);

// A trained run: its config, vocabulary, evaluations and the model of a checkpoint ("best" or "last").
struct Run {
  Config config;
  std::string text_digest;  // RunText::digest
  RunText text() const { return {config.chars, text_digest}; }
  CharVocab vocab;
  std::vector<Evaluation> history;
  std::shared_ptr<CharGPT> model;
};
Run load_run(const std::filesystem::path& run_dir, const std::string& checkpoint = "best");

}  // namespace lm
