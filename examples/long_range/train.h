// Training the long_range model as the tagger trains (examples/tagger): one tag per token, the
// masked cross-entropy over the real tokens of a padded batch (nn::functional::sequence_cross_entropy),
// AdamW with a linear warm-up and a cosine decay, gradients clipped to norm 1. Every step draws a
// fresh batch from the training generator (seeded by --seed), so that the model cannot memorize
// and no validation set is needed; the test set is fixed (a constant seed of its own, whatever
// --seed is) so that every mechanism and every run is scored on the same sequences.
//
// compare trains each mechanism at each length with the same budget (steps, batch, model, seed)
// and sets their test accuracy and training time side by side, as Long Range Arena's tables do
// (Tay et al. 2021, Tables 1 and 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/common/run_directory.h"
#include "examples/long_range/model.h"
#include "examples/long_range/task.h"
#include "io/json.h"

namespace long_range {

// A run's config: the task, the model and the budget (config.json, examples/common/config.h).
struct Config {
  TaskOptions task;
  ModelOptions model;
  int64_t steps = 1500, batch = 8;
  double lr = 3e-3, weight_decay = 0.01;
  uint64_t seed = 0;            // the initialization, the training batches, Performer's features
  int64_t test_sequences = 64;  // the fixed test set
  std::string matmul = "highest";  // float32 products, or bfloat16 operands (tensor/precision.h)
  template <class F>
  void fields(F&& f) {
    f({"length"}, task.length);
    f({"keys"}, task.keys);
    f({"values"}, task.values);
    f({"attention"}, model.attention);
    f({"window"}, model.window);
    f({"features"}, model.features);
    f({"d_model"}, model.d_model);
    f({"heads"}, model.heads);
    f({"layers"}, model.layers);
    f({"steps"}, steps);
    f({"batch"}, batch);
    f({"lr"}, lr);
    f({"weight_decay"}, weight_decay);
    f({"seed"}, seed);
    f({"test"}, test_sequences);
    f({"matmul", "", "", /*later=*/true}, matmul);  // runs saved before it: highest
  }
  void validate() const;  // check_options
};

// The config, and where and how a training runs (examples/common/run_directory.h): a checkpoint
// and a row of metrics.csv every log_every steps (a tenth of the steps by default).
struct TrainOptions : Config, qkv::examples::RunOptions {
  int64_t log_every = 0;  // steps between loss lines and checkpoints; 0: a tenth of the steps
};

extern const qkv::examples::RunLayout kRunLayout;

// ValueError naming the option unless the task, the model and the budget are in range.
void check_options(const Config& options);

// About the bytes a training of `config` takes: its test set and the activations of one step.
double training_bytes_estimate(const Config& config);

// The fixed test set of `count` sequences: a function of the task alone.
std::vector<Sequence> test_set(const TaskOptions& task, int64_t count);

struct Evaluation {
  double accuracy = 0, loss = 0;  // over the real tokens
};
// The model in eval mode, without a graph, over `set` in batches of `batch`.
Evaluation evaluate(TaggerModel& model, const std::vector<Sequence>& set, int64_t batch);

constexpr int64_t kRecentDraw = 100;

// How far a token sees through a stack of window layers: layers · window (each layer widens it).
int64_t reach(const ModelOptions& model);

struct TrainResult {
  Config config;  // what was trained: a resumed run's own
  double test_accuracy = 0, test_loss = 0;
  double final_loss = 0;           // the mean training loss of the last tenth of the steps
  double train_seconds = 0;        // the training steps' wall time: data, forward, backward, update
  double ms_per_step = 0;
  int64_t parameters = 0;
  TaskStats stats;                 // of the test set, for the reach of the model's window
  // performer: the training steps run on its current random features (drawn afresh every 1000
  // training forwards), -1 for the other mechanisms or before the first new draw. At most
  // kRecentDraw, train and compare say the test accuracy understates the model.
  int64_t steps_on_current_draw = -1;
  std::vector<double> losses;      // every step's
};
// A fresh run in options.run_dir, or with options.resume the continuation of the run there (with
// options.steps when above 0, else its own); the model as it ends is tested. A resumed run draws
// the batches an uninterrupted one would have (the data generator's state is in the checkpoint),
// but Performer counts its forwards to the next redraw afresh (nn/performer.h), so a resumed
// Performer run is not bit for bit the uninterrupted one, and its note on the latest draw counts
// from the resumed step.
TrainResult train(const TrainOptions& options);

struct CompareOptions {
  TrainOptions base;                  // the model, batch, lr and seed shared by every run, and the
                                      // directory under which each run has its own (MECHANISM-LENGTH)
  std::vector<int64_t> lengths;       // each trained with steps[i] steps
  std::vector<int64_t> steps;
  std::vector<std::string> mechanisms;
};
struct CompareRow {
  std::string mechanism;
  int64_t length = 0, steps = 0;
  TrainResult result;
};
// ValueError naming the option: lengths and mechanisms empty, unknown or repeated, steps not one
// per length, or any run's options out of range; checked for every run before the first trains.
void check_compare(const CompareOptions& options);
// Every mechanism at every length, lengths in order and mechanisms in order within each.
std::vector<CompareRow> compare(const CompareOptions& options);

// The results as a markdown table (mechanism, length, test accuracy, train seconds, ms/step), with
// a line of the setup and the chance and window references of each length; and as JSON.
std::string compare_markdown(const CompareOptions& options, const std::vector<CompareRow>& rows);
qkv::io::Json compare_json(const CompareOptions& options, const std::vector<CompareRow>& rows);

}  // namespace long_range
