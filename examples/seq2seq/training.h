// Training and evaluating a translator on a task (examples/seq2seq/task.h): its config, batches
// with teacher forcing, the training (a run directory of its own, examples/common/run_directory.h,
// with a checkpoint after each epoch), the translation of whole splits and the scores.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "examples/common/run_directory.h"
#include "examples/seq2seq/dates.h"
#include "examples/seq2seq/model.h"
#include "examples/seq2seq/task.h"
#include "optim/optimizer.h"

namespace seq2seq {

// What a run needs to be repeated: the task and its data, the model's shape, the budget. Saved as
// JSON in the run directory and in every checkpoint, with the two alphabets, so that a checkpoint
// whose vocabularies are not its task's is refused.
struct Config {
  std::string task = "dates";
  int64_t seed = 0;
  int64_t train_size = 8000, dev_size = 500, test_size = 1000;
  ModelConfig model;  // model.source_vocab and model.target_vocab are this program's
  int64_t batch = 64, epochs = 40;
  double lr = 0.005, clip = 1;
  std::string schedule = "constant";  // the learning rate after warm-up: constant, or cosine to 0 at the last epoch
  int64_t warmup = 0;                  // steps of linear warm-up from 0
  double label_smoothing = 0;          // ε of the loss (nn/functional/loss.h)
  int64_t beam = 1;           // the dev and test translations' beam (1: greedy search)
  double length_penalty = 0;  // their α (nn/decoding.h)
  std::string source_alphabet = kSourceAlphabet, target_alphabet = kTargetAlphabet;

  Config();  // the dates task's vocabularies
  // The shipped defaults of a task and a model: the dates' GRU as d2l trains it, and the sizes
  // and budget measured best for the others (docs/seq2seq.md).
  static Config preset(const std::string& task, const std::string& model);
  // The vocabularies' sizes and alphabets of `task`'s symbols.
  void adopt_task();
  template <class F>
  void fields(F&& f) {
    f({"task", "the task: dates (generated) or cmudict (grapheme to phoneme)"}, task);
    f({"seed", "seed of the data, the initialization and the batch order"}, seed);
    f({"train_size", "training pairs (dates)"}, train_size);
    f({"dev_size", "development pairs, scored after every epoch (dates)"}, dev_size);
    f({"test_size", "test pairs, scored at the end (dates)"}, test_size);
    f({"model", "the encoder-decoder: gru (d2l 10.4) or transformer (d2l 11.7)"}, model.kind);
    f({"source_vocab"}, model.source_vocab);
    f({"target_vocab"}, model.target_vocab);
    f({"embed", "embedding width E"}, model.embed_size);
    f({"hidden", "GRU and attention width H"}, model.num_hiddens);
    f({"layers", "layers L of the encoder and of the decoder"}, model.num_layers);
    f({"heads", "the Transformer's attention heads"}, model.num_heads);
    f({"ffn", "the Transformer's FFN hidden units"}, model.ffn_num_hiddens);
    f({"dropout", "dropout (GRU: between layers and on the attention weights)"}, model.dropout);
    f({"batch", "batch size"}, batch);
    f({"lr", "Adam learning rate"}, lr);
    f({"clip", "gradient clipping: max joint norm"}, clip);
    f({"epochs", "epochs at most"}, epochs);
    f({"schedule", "the learning rate after the warm-up: constant, or cosine (to 0 at the last epoch)"}, schedule);
    f({"warmup", "steps of linear learning-rate warm-up from 0"}, warmup);
    f({"label_smoothing", "label smoothing of the loss"}, label_smoothing);
    f({"beam", "beam size of the dev and test translations (1: greedy search)"}, beam);
    f({"length_penalty", "the beam's length penalty alpha: log p / ((5 + |y|) / 6)^alpha"}, length_penalty);
    f({"source_alphabet"}, source_alphabet);
    f({"target_alphabet"}, target_alphabet);
  }
  // ValueError naming the first value out of its range, or alphabets other than its task's.
  void validate() const;
};

// The largest sizes a model may have, far above what the dates need (E 32, H 64, L 2): a config
// beyond them is a mistake or hostile, and would take the memory or the time of the machine.
inline constexpr int64_t kMaxEmbedSize = 4096, kMaxHiddens = 4096, kMaxLayers = 16, kMaxPairs = 1'000'000;

extern const qkv::examples::RunLayout kRunLayout;

// A pair as ids, both ending in <eos>.
struct Example {
  std::vector<int64_t> source, target;
};

// Every (source, target) of the pairs: a source with several targets is an example of each.
std::vector<Example> encode_pairs(const std::vector<Pair>& pairs, const Task& task);

// One training batch, d2l's (X, X_valid_len, Y, Y_valid_len) plus the decoder's input:
struct Batch {
  IndexTensor source, source_valid_lens;  // (B, T), (B)
  IndexTensor dec_input;                  // (B, S): <bos> then the target without its last id
  IndexTensor target, target_valid_lens;  // (B, S) ids ending in <eos>, padded; (B)
  std::vector<size_t> examples;           // the examples of its rows, in order
};

// The examples `rows` as one batch.
Batch collate(const std::vector<Example>& examples, const std::vector<size_t>& rows, int64_t pad_id, int64_t bos_id);

// Batches of similar source lengths, so little of the encoder's work is padding: the examples
// are shuffled, cut into pools of 32 batches, each pool is sorted by source length, cut into
// batches, and the batches are shuffled. A function of `seed` (pass seed + epoch).
std::vector<Batch> make_batches(const std::vector<Example>& examples, int64_t batch_size, uint64_t seed,
                                int64_t pad_id, int64_t bos_id);

// One step of teacher-forced training (examples/common/training.h): the masked cross-entropy of the
// logits against the target (the mean over real target tokens, <eos> included), backward, gradient
// clipping, the optimizer's step. On several ranks each reads its stride of the batch's rows.
qkv::examples::StepResult train_step(qkv::examples::TrainStep& step, Translator& model, const Batch& batch,
                                     const std::vector<Example>& examples, int64_t k, float label_smoothing = 0);

struct Evaluation {
  Metrics score;                              // the task's headline scores
  std::vector<std::string> predictions;      // in the order of the pairs
  std::vector<std::vector<int64_t>> outputs;  // their ids, <eos> included if it was produced
};

// The translation of every pair (in batches of similar lengths) by greedy or beam search, and the
// scores.
Evaluation evaluate(Translator& model, const Task& task, const std::vector<Pair>& pairs, int64_t beam = 1,
                    double length_penalty = 0, int64_t batch_size = 256);

// The options of translate() for the task's vocabularies, for sources of up to `source_len` ids.
DecodeOptions decode_options(const Task& task, int64_t source_len, int64_t beam = 1, double length_penalty = 0,
                             int64_t n_best = 1);

// Attention heatmaps of one translation, `output` its ids: a row per output symbol (decoder
// step), a column per source symbol, as d2l's show_heatmaps of dec_attention_weight_seq, one
// panel per map of the model (the Transformer's heads side by side, a row per layer); a PNG at `path`.
void write_heatmap(Translator& model, const Task& task, const std::string& source, const std::vector<int64_t>& output,
                   const std::string& path);

// One epoch of a training: a row of metrics.csv, and of each checkpoint's history.
struct EpochRow {
  int64_t epoch = 0, step = 0;
  double loss = 0, dev_exact = 0, dev_error_rate = 0, dev_bleu = 0, seconds = 0;
  template <class F>
  void fields(F&& f) {
    f("epoch", epoch);
    f("step", step);
    f("loss", loss);
    f("dev_exact_match", dev_exact);
    f("dev_error_rate", dev_error_rate);
    f("dev_bleu", dev_bleu);
    f("seconds", seconds, qkv::examples::kTiming);
  }
};

// The run directory, what is printed, the ranks (examples/common/run_directory.h); when training
// stops before its epochs run out (options of each call, so that --resume may go on past a stop);
// and how many test translations get an attention heatmap in RUN/figures.
struct TrainOptions : qkv::examples::RunOptions {
  double time_limit = -1;   // seconds of training, checked after each epoch; below 0: the task's (time_limit_of)
  double target = 1.0;      // the dev exact match that ends training
  int64_t heatmaps = 4;
  std::string cache = "cache/cmudict";  // where the cmudict task's dictionary is fetched to
};

// The time limit of a training: the options', or the task's budget, 5 minutes for the dates and 15
// for the dictionary.
double time_limit_of(const TrainOptions& options, const Config& config);

// Epochs until the dev exact match reaches the target, the epochs run out or the time limit has
// passed (checked after each epoch), a line and a checkpoint per epoch; then the test scores of the
// model as it ends, and the heatmaps. On several ranks, rank 0 evaluates and decides when to stop,
// and the others follow. A fresh run, or with options.resume the continuation of the run there.
Evaluation train(Config config, const TrainOptions& options);

// A model rebuilt from a checkpoint of a run: its config read strictly (examples/common/config.h),
// and its sizes checked against the tensors' (the layers their names count, the widths their shapes
// show) before a model is built. A checkpoint of an earlier qkv, whose config was key=value lines,
// is refused by name.
struct LoadedModel {
  std::unique_ptr<Translator> model;
  Config config;
};
LoadedModel load_model(const std::filesystem::path& path);

}  // namespace seq2seq
