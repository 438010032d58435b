// Training and evaluating the ViT. Its run directory (examples/common/run_directory.h) holds, besides
// the config, the checkpoints (after each epoch) and metrics.csv (one row per epoch: loss,
// validation accuracy, lr, seconds):
//   baselines.json       logistic regression and the MLP on the same split (baselines.h)
//   results.json         the test accuracy of the best checkpoint, the baselines', the speed
//   figures/*.png        docs/vit.md lists them
// A training is refused, naming the directory, where another holds it, where the directory holds a
// run (continued with --resume, never overwritten) and where it holds anything else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "examples/common/program.h"
#include "examples/common/run_directory.h"
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
  int64_t epochs = 24, batch = 128, warmup = 300, seed = 1;
  double lr = 1e-3, weight_decay = 0.05, clip = 1.0, label_smoothing = 0.0;
  bool flip = true;               // mirror each training image left-right with probability 1/2 (option --no-flip)
  int64_t crop = 1;               // move each training image by up to ±crop pixels each way (Augmentation)
  bool test_flip = true;          // with flip: classify each image and its mirror image, their logits summed
                                  // (test-time augmentation; option --no-test-flip)
  double pixel_mean = 0, pixel_std = 1;  // of the training images, filled in by the training
  std::string matmul = "auto";  // float32 products, or bfloat16 operands (tensor/precision.h; resolved_matmul)

  // Every field under its config.json key and option (examples/common/config.h).
  template <class F>
  void fields(F&& f) {
    f({"data", "fashion-mnist, generated (shapes; for tests), or a directory of four IDX files named as Fashion-MNIST's"}, data);
    f({"cache", "the directory Fashion-MNIST is decompressed into and read from"}, cache);
    f({"validation", "training images held out for validation"}, validation);
    f({"generated", "with --data generated: training images"}, generated);
    f({"rows"}, model.rows);
    f({"cols"}, model.cols);
    f({"classes", "with --data DIR: the number of classes"}, model.classes);
    f({"patch", "side of the square patches"}, model.patch);
    f({"positions", "patch positions: " + qkv::examples::join(position_names())}, model.positions);
    f({"pool", "cls (a class token) or mean (the mean of the patches' outputs)"}, model.pool);
    qkv::examples::encoder_fields(f, model);
    f({"epochs", "epochs"}, epochs);
    f({"batch", "images per step"}, batch);
    f({"seed", "seed of the initialization, the order, the flips and the crops"}, seed);
    qkv::examples::adamw_fields(f, warmup, lr, weight_decay, clip);
    f({"label_smoothing", "label smoothing of the cross-entropy"}, label_smoothing);
    f({"matmul", qkv::examples::kMatmulAutoHelp, "", /*later=*/true, qkv::io::Json("highest")}, matmul);  // runs before it: highest
    f({"recompute", qkv::examples::kRecomputeHelp, "", /*later=*/true}, model.recompute);
    f({"flip"}, flip);
    // Runs saved before the key cropped nothing.
    f({"crop", "random crop: pad each training image with this many black pixels and cut it back to its size at a "
               "random place (0: none)", "", /*later=*/true, qkv::io::Json(int64_t{0})},
      crop);
    // Runs saved before the key evaluated each image once. (Option --no-test-flip.)
    f({"test_flip", "", "", /*later=*/true, qkv::io::Json(false)}, test_flip);
    f({"pixel_mean"}, pixel_mean);
    f({"pixel_std"}, pixel_std);
  }
  void validate() const;
  // Whether evaluation sees each image's mirror image too: only a model trained on mirror images.
  bool flips_tests() const { return flip && test_flip; }
};

// The most patches an image is cut into, in training and when a model reads another size
// (validate, vit ablate): attention keeps (B, H, T, T) weights.
inline constexpr int64_t kMaxPatches = 1024;

// The run directory's files and rules (examples/common/run_directory.h).
extern const qkv::examples::RunLayout kRunLayout;

// The data config.data names, the model's rows and cols set from it.
ImageData load_data(Config& config);

// Accuracy and the predicted class of every image of `set`, in batches, in eval mode, no graph.
struct Evaluation {
  double accuracy = 0;
  double accuracy_one_view = 0;  // each image alone: with config.flips_tests(), from the same forward
  std::vector<int32_t> predicted;
};
Evaluation evaluate(ViT& model, const ImageSet& set, const Config& config);

// AdamW with decoupled weight decay on the matrices only (not biases, norms, the class token or
// the learned positions), as the ViT paper trains.
std::unique_ptr<qkv::optim::AdamW> make_optimizer(ViT& model, const Config& config);

// The order of the training images in `epoch`: a permutation drawn from a generator seeded by
// (seed, epoch), so that a resumed run sees the same batches.
std::vector<int64_t> epoch_order(int64_t n, int64_t seed, int64_t epoch);

// One epoch of a training: a row of metrics.csv, and of each checkpoint's history. Its loss is the
// epoch's training loss, its score the validation accuracy after it.
inline constexpr const char* kColumns[] = {"epoch", "train_loss", "validation_accuracy", "lr", "seconds"};
using EpochRecord = qkv::examples::MetricsRow<kColumns>;

// The run directory, figures, what is printed (examples/common/run_directory.h), and whether a fresh
// run trains its baselines.
struct TrainOptions : qkv::examples::RunOptions {
  bool baselines = true;
};

struct TrainResult {
  double best_validation_accuracy = 0, test_accuracy = 0;
  double test_accuracy_one_view = 0;               // each image alone (with flips_tests(), not test_accuracy)
  bool has_baselines = false;                      // false with options.baselines false
  double logistic_accuracy = 0, mlp_accuracy = 0;  // test accuracy of the baselines
  double images_per_second = 0, training_seconds = 0;
};
TrainResult train(Config config, const TrainOptions& options);

// A trained run: its config, epochs and the model of a checkpoint ("best" or "last"), in eval mode.
struct Run {
  Config config;
  std::vector<EpochRecord> history;
  std::shared_ptr<ViT> model;
};
Run load_run(const std::filesystem::path& run_dir, const std::string& checkpoint = "best");

}  // namespace vit
