// Training and evaluating the ViT, and its run directory:
//   config.json          the Config: the model, the data, the budget
//   baselines.json       logistic regression and the MLP on the same split (baselines.h)
//   last.safetensors     the checkpoint after the last epoch, for --resume
//   best.safetensors     the checkpoint of the best validation accuracy so far
//   metrics.csv          one row per epoch: loss, validation accuracy, lr, seconds
//   results.json         the test accuracy of the best checkpoint, the baselines', the speed
//   figures/*.png        docs/vit.md lists them
//   .lock                the lock a training holds (io::DirectoryLock)
// Every file but the figures is written atomically (io/file.h). A training is refused, naming the
// directory, where another holds the lock, where the directory holds a run (continued with
// --resume, never overwritten) and where it holds anything else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "examples/vit/images.h"
#include "examples/vit/model.h"
#include "io/json.h"
#include "optim/adam.h"

namespace vit {

struct Config {
  ModelConfig model;              // model.rows and model.cols come from the data
  std::string data = "fashion-mnist";  // fashion-mnist, generated, or a directory of IDX files
  std::string cache = kDefaultCache;
  int64_t validation = 5000;      // training images held out for validation
  int64_t generated = 2000;       // with data = generated: training images (validation and test: a quarter each)
  int64_t epochs = 16, batch = 128, warmup = 300, seed = 1;
  double lr = 1e-3, weight_decay = 0.05, clip = 1.0, label_smoothing = 0.1;
  bool flip = true;               // mirror each training image left-right with probability 1/2
  double pixel_mean = 0, pixel_std = 1;  // of the training images, filled in by the training

  void validate() const;
  qkv::io::Json to_json() const;
  static Config from_json(const qkv::io::Json& json, const std::string& source);
};

// The data config.data names, the model's rows and cols set from it.
ImageData load_data(Config& config);

// Accuracy and the predicted class of every image of `set`, in batches, in eval mode, no graph.
struct Evaluation {
  double accuracy = 0;
  std::vector<int32_t> predicted;
};
Evaluation evaluate(ViT& model, const ImageSet& set, const Config& config);

// AdamW with decoupled weight decay on the matrices only (not biases, norms, the class token or
// the learned positions), as the ViT paper trains.
std::unique_ptr<qkv::optim::AdamW> make_optimizer(ViT& model, const Config& config);

// The order of the training images in `epoch`: a permutation drawn from a generator seeded by
// (seed, epoch), so that a resumed run sees the same batches.
std::vector<int64_t> epoch_order(int64_t n, int64_t seed, int64_t epoch);

struct EpochRecord {
  int64_t epoch = 0;
  double train_loss = 0, validation_accuracy = 0, lr = 0, seconds = 0;
};

struct TrainOptions {
  std::string run_dir = "runs/vit";
  bool resume = false, figures = true, verbose = true, progress = true, baselines = true;
  int64_t stop_after = -1;  // stop after this many epochs of this call, as if interrupted (tests)
};

struct TrainResult {
  double best_validation_accuracy = 0, test_accuracy = 0;
  bool has_baselines = false;                      // false with options.baselines false
  double logistic_accuracy = 0, mlp_accuracy = 0;  // test accuracy of the baselines
  double images_per_second = 0, training_seconds = 0;
};
TrainResult train(Config config, const TrainOptions& options);

// A trained run: its config and the model of a checkpoint ("best" or "last"), in eval mode.
struct Run {
  Config config;
  std::shared_ptr<ViT> model;
};
Run load_run(const std::filesystem::path& run_dir, const std::string& checkpoint = "best");
// The run's config.json, read strictly; ValueError naming the file.
Config read_run_config(const std::filesystem::path& run_dir);
std::vector<EpochRecord> read_metrics(const std::filesystem::path& run_dir);

}  // namespace vit
