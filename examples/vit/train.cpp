#include "examples/vit/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <optional>
#include <sstream>

#include "autograd/grad_mode.h"
#include "examples/common/progress.h"
#include "examples/common/ranks.h"
#include "examples/common/run_directory.h"
#include "examples/common/timing.h"
#include "examples/vit/baselines.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace vit {

namespace fs = std::filesystem;
using qkv::Tensor;
using qkv::examples::check_int;
using qkv::examples::check_name;
using qkv::examples::check_number;
using qkv::io::Json;

namespace {

// The generator streams of an epoch's order, its mirrorings and its crops (examples/common/ranks.h).
constexpr uint64_t kOrderStream = 0, kFlipStream = 1, kCropStream = 2;

// Batches for evaluation: large, since no graph is kept.
constexpr int64_t kEvalBatch = 500;

std::string percent(double fraction) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100 * fraction << " %";
  return s.str();
}

std::vector<int64_t> range(int64_t start, int64_t end) {
  std::vector<int64_t> v(static_cast<size_t>(end - start));
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace

void Config::validate() const {
  check_int("validation", validation, 1, 1'000'000);
  check_int("generated", generated, 10, 1'000'000);
  // rows and cols are 0 until the data is read: what needs them is checked then.
  check_int("rows", model.rows, 0, 1024);
  check_int("cols", model.cols, model.rows ? 1 : 0, model.rows ? 1024 : 0);
  check_int("classes", model.classes, 2, 256);
  check_int("patch", model.patch, 1, 1024);
  if (model.rows && (model.rows % model.patch != 0 || model.cols % model.patch != 0))
    throw qkv::ValueError("patch (--patch) " + std::to_string(model.patch) + " does not tile images of " +
                          std::to_string(model.rows) + "×" + std::to_string(model.cols));
  // Attention keeps (B, H, T, T) weights: past about a thousand tokens a batch no longer fits.
  if (model.rows && model.num_patches() > kMaxPatches)
    throw qkv::ValueError("patch (--patch) " + std::to_string(model.patch) + " cuts images of " +
                          std::to_string(model.rows) + "×" + std::to_string(model.cols) + " into " +
                          std::to_string(model.num_patches()) + " patches; at most " + std::to_string(kMaxPatches));
  check_int("d_model", model.d_model, 4, 4096);
  check_int("heads", model.heads, 1, model.d_model);
  if (model.d_model % model.heads != 0)
    throw qkv::ValueError("d_model (--d-model) " + std::to_string(model.d_model) + " is not a multiple of heads (--heads) " +
                          std::to_string(model.heads));
  check_int("layers", model.layers, 1, 64);
  check_int("ffn_hidden", model.ffn_hidden, 1, 65536);
  check_name("positions", model.positions, position_names());
  check_name("pool", model.pool, {"cls", "mean"});
  check_number("dropout", model.dropout, 0.0, 0.9);
  // A crop of half the image or more could leave nothing of it.
  check_int("crop", crop, 0, model.rows ? (std::min(model.rows, model.cols) - 1) / 2 : 64);
  check_int("epochs", epochs, 1, 10000);
  check_int("batch", batch, 1, 65536);
  check_int("warmup", warmup, 0, 100'000'000);
  check_int("seed", seed, 0, std::numeric_limits<int64_t>::max());
  check_number("lr", lr, 0.0, 10.0, /*open_lo=*/true);
  check_number("weight_decay", weight_decay, 0.0, 10.0);
  check_number("clip", clip, 0.0, 1e6);
  check_number("label_smoothing", label_smoothing, 0.0, 0.99);
  check_name("matmul", matmul, {"auto", "highest", "medium"});  // auto: resolved before a run begins
  check_number("pixel_mean", pixel_mean, 0.0, 1.0);
  check_number("pixel_std", pixel_std, 0.0, 1.0, /*open_lo=*/true);
  check_position_width(model.positions, model.d_model);
}

const qkv::examples::RunLayout kRunLayout{.program = "vit",
                                          .files = {"baselines.json", "results.json"},
                                          .budget_key = "epochs",
                                          .read_config = qkv::examples::config_reader<Config>()};

ImageData load_data(Config& c) {
  ImageData d = c.data == "fashion-mnist" ? load_fashion_mnist(c.cache, c.validation)
                : c.data == "generated"   ? generated_images(c.generated, c.generated / 4, c.generated / 4, 16,
                                                             static_cast<uint64_t>(c.seed))
                                          : load_idx_directory(c.data, c.validation, static_cast<int>(c.model.classes));
  if (d.train.rows > 1024 || d.train.cols > 1024)
    throw qkv::ValueError("vit: the images of " + d.source + " are " + std::to_string(d.train.rows) + "×" +
                          std::to_string(d.train.cols) + "; at most 1024×1024");
  c.model.rows = d.train.rows, c.model.cols = d.train.cols;
  c.model.classes = static_cast<int64_t>(d.class_names.size());
  return d;
}

Evaluation evaluate(ViT& model, const ImageSet& set, const Config& c) {
  qkv::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  Evaluation e;
  int64_t right = 0, right_alone = 0;
  for (int64_t start = 0; start < set.size(); start += kEvalBatch) {
    const std::vector<int64_t> idx = range(start, std::min(set.size(), start + kEvalBatch));
    const auto cut = [&](bool mirror) {
      return patches(set, idx, c.model.patch, static_cast<float>(c.pixel_mean), static_cast<float>(c.pixel_std),
                     std::vector<Augmentation>(idx.size(), Augmentation{.mirror = mirror}));
    };
    const Tensor logits = model.forward(cut(false));
    const qkv::IndexTensor alone = logits.argmax(1);
    const qkv::IndexTensor predicted = c.flips_tests() ? (logits + model.forward(cut(true))).argmax(1) : alone;
    for (size_t i = 0; i < idx.size(); ++i) {
      e.predicted.push_back(static_cast<int32_t>(predicted.data()[i]));
      right += e.predicted.back() == set.labels[idx[i]];
      right_alone += alone.data()[i] == set.labels[idx[i]];
    }
  }
  const auto fraction = [&](int64_t n) {
    return set.size() ? static_cast<double>(n) / static_cast<double>(set.size()) : 0.0;
  };
  e.accuracy = fraction(right), e.accuracy_one_view = fraction(right_alone);
  if (was_training) model.train();
  return e;
}

std::unique_ptr<qkv::optim::AdamW> make_optimizer(ViT& model, const Config& c) {
  qkv::optim::ParamGroup decay, no_decay{.weight_decay = 0.0};
  for (const auto& [name, p] : model.named_parameters()) {
    const bool matrix = p.dim() >= 2 && name.rfind("positions.", 0) != 0 && name != "cls_token";
    (matrix ? decay : no_decay).params.push_back(p);
  }
  return std::make_unique<qkv::optim::AdamW>(std::vector<qkv::optim::ParamGroup>{decay, no_decay},
                                             qkv::optim::AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
}

std::vector<int64_t> epoch_order(int64_t n, int64_t seed, int64_t epoch) {
  qkv::Generator gen;
  gen.set_state(qkv::examples::keyed_stream(static_cast<uint64_t>(seed), kOrderStream, epoch));
  std::vector<int64_t> order = range(0, n);
  qkv::shuffle(order, gen);
  return order;
}

namespace {

// One epoch of training steps; returns the mean loss. Each step: a batch of patches (mirrored and
// cropped at random as config.flip and config.crop say), the cross-entropy, backward, clipping,
// AdamW, the schedule.
double train_epoch(ViT& model, qkv::examples::TrainStep& step, qkv::optim::LRScheduler& schedule, const ImageSet& train,
                   const Config& c, int64_t epoch, qkv::examples::Progress& progress) {
  const std::vector<int64_t> order = epoch_order(train.size(), c.seed, epoch);
  qkv::Generator flips, crops;
  flips.set_state(qkv::examples::keyed_stream(static_cast<uint64_t>(c.seed), kFlipStream, epoch));
  crops.set_state(qkv::examples::keyed_stream(static_cast<uint64_t>(c.seed), kCropStream, epoch));
  const auto shift = [&] { return static_cast<int>(crops.next_below(static_cast<uint64_t>(2 * c.crop + 1))) - static_cast<int>(c.crop); };
  double loss_sum = 0;
  int64_t steps = 0;
  for (int64_t start = 0; start < train.size(); start += c.batch) {
    const std::vector<int64_t> idx(order.begin() + start, order.begin() + std::min(train.size(), start + c.batch));
    std::vector<Augmentation> augment(idx.size());
    std::vector<int64_t> targets;
    for (size_t i = 0; i < idx.size(); ++i) {
      if (c.flip) augment[i].mirror = flips.next_chance(0.5);
      if (c.crop > 0) augment[i].dy = shift(), augment[i].dx = shift();
      targets.push_back(train.labels[idx[i]]);
    }
    const int64_t k = epoch * ((train.size() + c.batch - 1) / c.batch) + steps;  // the step of the whole run
    const auto r = step(static_cast<int64_t>(idx.size()), k, [&](const qkv::examples::Rows&) {
      const Tensor x = patches(train, idx, c.model.patch, static_cast<float>(c.pixel_mean),
                               static_cast<float>(c.pixel_std), augment);
      return qkv::examples::Share{qkv::nn::functional::cross_entropy(model.forward(x), qkv::IndexTensor(targets),
                                                                     {.label_smoothing = static_cast<float>(c.label_smoothing)}),
                                  static_cast<int64_t>(idx.size())};
    });
    if (!r.finite())
      throw qkv::Error("vit train: epoch " + std::to_string(epoch) + ", step " + std::to_string(steps + 1) +
                       ": the loss or gradient is not finite; lower --lr. The run keeps its checkpoints of the last epoch");
    schedule.step();
    loss_sum += r.loss;
    ++steps;
    progress.update(steps, "loss " + std::to_string(r.loss).substr(0, 5));
  }
  return loss_sum / static_cast<double>(std::max<int64_t>(steps, 1));
}

using State = qkv::examples::TrainingState<Config, EpochRecord>;

// A resumed run must have an epoch left to train.
void check_not_complete(const State& state) {
  const int64_t done = static_cast<int64_t>(state.history.rows.size());
  if (state.last && state.config.epochs == done)
    throw qkv::ValueError("vit train --resume: the run is complete (" + std::to_string(done) +
                          " epochs); --epochs N with N > " + std::to_string(done) + " extends it (nothing was changed)");
}

// The data, with a fresh run's pixel statistics in the config, and a warmup that fits the budget.
ImageData data_for(Config& config, bool fresh) {
  ImageData data = load_data(config);  // before the run directory: bad data leaves nothing behind
  if (fresh) {
    const auto [mean, std] = pixel_statistics(data.train);
    config.pixel_mean = mean, config.pixel_std = std;
  }
  config.validate();
  const int64_t steps = (data.train.size() + config.batch - 1) / config.batch;
  if (config.warmup >= config.epochs * steps)
    throw qkv::ValueError("warmup (--warmup) " + std::to_string(config.warmup) + " steps; expected fewer than the " +
                          std::to_string(config.epochs * steps) + " steps of " + std::to_string(config.epochs) +
                          " epochs of " + std::to_string(data.train.size()) + " images in batches of " +
                          std::to_string(config.batch));
  return data;
}

void write_results(const qkv::examples::RunDirectory& run, const TrainResult& r) {
  const auto baseline = [&](double accuracy) { return r.has_baselines ? Json(accuracy) : Json(nullptr); };
  const Json json(Json::Object{{"best_validation_accuracy", Json(r.best_validation_accuracy)},
                               {"test_accuracy", Json(r.test_accuracy)},
                               {"test_accuracy_one_view", Json(r.test_accuracy_one_view)},
                               {"logistic_test_accuracy", baseline(r.logistic_accuracy)},
                               {"mlp_test_accuracy", baseline(r.mlp_accuracy)},
                               {"images_per_second", Json(r.images_per_second)},
                               {"training_seconds", Json(r.training_seconds)}});
  run.write_text("results.json", qkv::io::to_json(json) + "\n");
}

// The baselines of a fresh run, computed and written; a resumed run's, read; none with
// options.baselines false.
TrainResult baselines(const qkv::examples::RunDirectory& run, const ImageData& data, const Config& c, const TrainOptions& o) {
  TrainResult r;
  std::optional<Baselines> b;
  if (const fs::path path = run.dir() / "baselines.json"; run.resume() && fs::exists(path)) {
    b = Baselines::from_json(qkv::examples::parse_json_of(qkv::io::read_text_file(path, "vit"), path.string()), path.string());
  } else if (o.baselines) {
    if (o.verbose) std::cout << "baselines: logistic regression and an MLP on the pixels..." << std::flush;
    b = compute_baselines(data, static_cast<float>(c.pixel_mean), static_cast<float>(c.pixel_std), static_cast<uint64_t>(c.seed));
    run.write_text("baselines.json", qkv::io::to_json(b->to_json()) + "\n");
    if (o.verbose)
      std::cout << " test accuracy " << std::fixed << std::setprecision(2) << 100 * b->logistic.test_accuracy << " % and "
                << 100 * b->mlp.test_accuracy << " %" << std::endl;
  }
  if (b) r.has_baselines = true, r.logistic_accuracy = b->logistic.test_accuracy, r.mlp_accuracy = b->mlp.test_accuracy;
  return r;
}

void describe(const ImageData& data, const Config& c, const ViT& model, const TrainOptions& o) {
  if (o.verbose)
    std::cout << "vit: " << data.source << ", " << data.train.size() << " training images of " << c.model.rows << "×"
              << c.model.cols << ", " << data.validation.size() << " validation, " << data.test.size() << " test; "
              << model.num_parameters() << " parameters, " << c.model.num_patches() << " patches of " << c.model.patch
              << "×" << c.model.patch << ", positions " << c.model.positions << std::endl;
}

// After an epoch: its row, the checkpoints and metrics.csv.
void evaluate_and_save(State& state, qkv::examples::RunDirectory& run, ViT& model,
                       const qkv::optim::Optimizer& optimizer, const ImageData& data, double loss, double lr,
                       double took, bool verbose) {
  const int64_t epoch = static_cast<int64_t>(state.history.rows.size()) + 1;
  const EpochRecord e{epoch, loss, evaluate(model, data.validation, state.config).accuracy, lr, state.seconds() + took};
  state.record(run, model, optimizer, epoch, e, e.score, e.score > state.best);
  if (verbose)
    std::cout << "epoch " << epoch << "/" << state.config.epochs << ": loss " << std::fixed << std::setprecision(4) << loss
              << ", validation accuracy " << std::setprecision(2) << 100 * e.score << " %, "
              << std::setprecision(1) << took << " s" << std::endl;
}

// The end of a training that ran its epochs: the best checkpoint on test, and results.json.
TrainResult finish(TrainResult result, const qkv::examples::RunDirectory& run, const ImageData& data,
                   const State& state, const TrainOptions& o) {
  result.training_seconds = state.seconds();
  result.best_validation_accuracy = state.best;
  if (static_cast<int64_t>(state.history.rows.size()) < state.config.epochs) return result;  // stopped early: no test yet
  const Run best = load_run(run.dir(), "best");
  const Evaluation test = evaluate(*best.model, data.test, best.config);
  result.test_accuracy = test.accuracy, result.test_accuracy_one_view = test.accuracy_one_view;
  write_results(run, result);
  if (o.verbose)
    std::cout << "test accuracy (best validation checkpoint): " << std::fixed << std::setprecision(2)
              << 100 * result.test_accuracy << " %"
              << (best.config.flips_tests() ? " (each image with its mirror image; " +
                                              percent(result.test_accuracy_one_view) + " from the image alone)"
                                        : std::string())
              << (result.has_baselines ? "; logistic regression " + percent(result.logistic_accuracy) + ", MLP " +
                                             percent(result.mlp_accuracy)
                                       : std::string())
              << "\n"
              << "training: " << std::setprecision(0) << result.images_per_second << " images/s, "
              << std::setprecision(1) << result.training_seconds << " s\n";
  return result;
}

}  // namespace

TrainResult train(Config config, const TrainOptions& o) {
  config.matmul = qkv::examples::resolved_matmul(config.matmul);  // the run keeps what its products are
  qkv::examples::RunDirectory run(o.run_dir, kRunLayout, o.resume);  // refusals: nothing written
  State state = qkv::examples::start_or_resume<Config, EpochRecord>(run, config, -1.0);
  qkv::examples::use_matmul_precision(state.config.matmul, /*saved_run=*/state.last.has_value());
  check_not_complete(state);
  const ImageData data = data_for(state.config, !state.last);
  const int64_t steps_per_epoch = (data.train.size() + state.config.batch - 1) / state.config.batch;
  qkv::manual_seed(static_cast<uint64_t>(state.config.seed));
  ViT model(state.config.model);
  auto optimizer = make_optimizer(model, state.config);
  // The schedule reads the base learning rate before a checkpoint replaces it with its last step's.
  qkv::optim::WarmupLR schedule(*optimizer, state.config.warmup, state.config.epochs * steps_per_epoch);
  run.open();
  describe(data, state.config, model, o);
  TrainResult result = baselines(run, data, state.config, o);
  state.load(model, *optimizer);
  int64_t epoch = static_cast<int64_t>(state.history.rows.size());
  schedule.set_last_step(epoch * steps_per_epoch);
  qkv::examples::TrainStep step(model, *optimizer, {.clip = state.config.clip});
  double step_seconds = 0;
  model.train();
  for (const int64_t first = epoch; epoch < state.config.epochs && epoch - first != o.stop_after; ++epoch) {
    auto progress = qkv::examples::Progress::shown_if(o.progress, "vit epoch " + std::to_string(epoch + 1), steps_per_epoch);
    const double lr = optimizer->lr();
    const auto t0 = qkv::examples::Clock::now();
    const double loss = train_epoch(model, step, schedule, data.train, state.config, epoch, progress);
    const double took = qkv::examples::seconds_since(t0);
    progress.finish("");
    step_seconds += took;
    evaluate_and_save(state, run, model, *optimizer, data, loss, lr, took, o.verbose);
    result.images_per_second = static_cast<double>((epoch + 1 - first) * data.train.size()) / step_seconds;
  }
  return finish(result, run, data, state, o);
}

Run load_run(const fs::path& dir, const std::string& which) {
  const qkv::examples::SavedRun saved = qkv::examples::load_saved_run(dir, kRunLayout, which);
  Run run;
  run.config = qkv::examples::config_of<Config>(saved, kRunLayout);
  run.history = qkv::examples::History<EpochRecord>::from_json(saved.state.history, saved.file.string()).rows;
  run.model = std::make_shared<ViT>(run.config.model);
  run.model->load_state_dict(saved.checkpoint.model);
  run.model->eval();
  return run;
}

}  // namespace vit
