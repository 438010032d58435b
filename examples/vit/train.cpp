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
#include "examples/common/config_fields.h"
#include "examples/common/progress.h"
#include "examples/common/ranks.h"
#include "examples/common/run_directory.h"
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

// Every field of the Config under its config.json key, for writing and strict reading.
template <class C, class F>
void for_each_field(C& c, F&& f) {
  f("data", c.data);
  f("cache", c.cache);
  f("validation", c.validation);
  f("generated", c.generated);
  f("rows", c.model.rows);
  f("cols", c.model.cols);
  f("classes", c.model.classes);
  f("patch", c.model.patch);
  f("d_model", c.model.d_model);
  f("heads", c.model.heads);
  f("layers", c.model.layers);
  f("ffn_hidden", c.model.ffn_hidden);
  f("positions", c.model.positions);
  f("pool", c.model.pool);
  f("dropout", c.model.dropout);
  f("epochs", c.epochs);
  f("batch", c.batch);
  f("warmup", c.warmup);
  f("seed", c.seed);
  f("lr", c.lr);
  f("weight_decay", c.weight_decay);
  f("clip", c.clip);
  f("label_smoothing", c.label_smoothing);
  f("flip", c.flip);
  f("pixel_mean", c.pixel_mean);
  f("pixel_std", c.pixel_std);
}
const auto kFields = [](auto& c, auto&& f) { for_each_field(c, f); };

const std::vector<std::string> kRunFiles = {"config.json", "baselines.json", "metrics.csv", "last.safetensors",
                                            "best.safetensors", "results.json"};

constexpr int64_t kMaxPatches = 1024;

// The generator streams of an epoch's order and its mirrorings (examples/common/ranks.h).
constexpr uint64_t kOrderStream = 0, kFlipStream = 1;

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
  check_int("epochs", epochs, 1, 10000);
  check_int("batch", batch, 1, 65536);
  check_int("warmup", warmup, 0, 100'000'000);
  check_int("seed", seed, 0, std::numeric_limits<int64_t>::max());
  check_number("lr", lr, 0.0, 10.0, /*open_lo=*/true);
  check_number("weight_decay", weight_decay, 0.0, 10.0);
  check_number("clip", clip, 0.0, 1e6);
  check_number("label_smoothing", label_smoothing, 0.0, 0.99);
  check_number("pixel_mean", pixel_mean, 0.0, 1.0);
  check_number("pixel_std", pixel_std, 0.0, 1.0, /*open_lo=*/true);
  check_position_width(model.positions, model.d_model);
}

Json Config::to_json() const { return qkv::examples::fields_to_json(*this, kFields); }

Config Config::from_json(const Json& json, const std::string& source) {
  Config c;
  qkv::examples::fields_from_json(json, source, "a vit", c, kFields);
  try {
    c.validate();
  } catch (const qkv::ValueError& e) {
    throw qkv::ValueError(source + ": " + e.what());
  }
  return c;
}

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
  int64_t right = 0;
  for (int64_t start = 0; start < set.size(); start += kEvalBatch) {
    const std::vector<int64_t> idx = range(start, std::min(set.size(), start + kEvalBatch));
    const Tensor x = patches(set, idx, c.model.patch, static_cast<float>(c.pixel_mean), static_cast<float>(c.pixel_std));
    const qkv::IndexTensor predicted = model.forward(x).argmax(1);
    for (size_t i = 0; i < idx.size(); ++i) {
      e.predicted.push_back(static_cast<int32_t>(predicted.data()[i]));
      right += e.predicted.back() == set.labels[idx[i]];
    }
  }
  e.accuracy = set.size() ? static_cast<double>(right) / static_cast<double>(set.size()) : 0.0;
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

// The config, the epochs so far and the best validation accuracy: what --resume continues from, kept
// in the checkpoint itself so that the two can never disagree. Not the seconds (metrics.csv has
// them): a checkpoint's bytes depend on the seed alone, not on how fast the machine was.
std::string checkpoint_text(const Config& c, const std::vector<EpochRecord>& history, double best) {
  Json::Array rows;
  for (const EpochRecord& e : history)
    rows.push_back(Json(Json::Array{Json(e.epoch), Json(e.train_loss), Json(e.validation_accuracy), Json(e.lr)}));
  return qkv::io::to_json(Json(Json::Object{{"config", c.to_json()}, {"history", Json(rows)}, {"best", Json(best)}}));
}

// The history and best accuracy of a checkpoint's text; ValueError naming the file otherwise.
std::vector<EpochRecord> read_history(const Json& text, const fs::path& file, double& best) {
  const Json* rows = text.is_object() ? text.find("history") : nullptr;
  const Json* best_json = text.is_object() ? text.find("best") : nullptr;
  if (!rows || !rows->is_array() || !best_json || (!best_json->is_double() && !best_json->is_int()))
    throw qkv::ValueError("vit: " + file.string() + " is not a vit checkpoint: its config text has no history and best");
  std::vector<EpochRecord> history;
  for (const Json& row : rows->as_array()) {
    const bool ok = row.is_array() && row.as_array().size() == 4 && row.as_array()[0].is_int();
    if (!ok || row.as_array()[0].as_int() != static_cast<int64_t>(history.size()) + 1)
      throw qkv::ValueError("vit: " + file.string() + ": history row " + std::to_string(history.size() + 1) +
                            " is not [epoch, train_loss, validation_accuracy, lr] of that epoch");
    const Json::Array& r = row.as_array();
    history.push_back({r[0].as_int(), r[1].as_double(), r[2].as_double(), r[3].as_double(), 0.0});
  }
  best = best_json->as_double();
  return history;
}

void write_metrics(const fs::path& dir, const std::vector<EpochRecord>& history) {
  std::ostringstream csv;
  csv << "epoch,train_loss,validation_accuracy,lr,seconds\n" << std::setprecision(6);
  for (const EpochRecord& e : history)
    csv << e.epoch << ',' << e.train_loss << ',' << e.validation_accuracy << ',' << e.lr << ',' << e.seconds << '\n';
  qkv::io::write_text_file(dir / "metrics.csv", csv.str(), "vit");
}

// One epoch of training steps; returns the mean loss. Each step: a batch of patches (mirrored at
// random with config.flip), the cross-entropy, backward, clipping, AdamW, the schedule.
double train_epoch(ViT& model, qkv::optim::Optimizer& optimizer, qkv::optim::LRScheduler& schedule,
                   const ImageSet& train, const Config& c, int64_t epoch, qkv::examples::Progress* progress) {
  const std::vector<int64_t> order = epoch_order(train.size(), c.seed, epoch);
  qkv::Generator flips;
  flips.set_state(qkv::examples::keyed_stream(static_cast<uint64_t>(c.seed), kFlipStream, epoch));
  double loss_sum = 0;
  int64_t steps = 0;
  for (int64_t start = 0; start < train.size(); start += c.batch) {
    const std::vector<int64_t> idx(order.begin() + start, order.begin() + std::min(train.size(), start + c.batch));
    std::vector<std::uint8_t> mirror(idx.size(), 0);
    std::vector<int64_t> targets;
    for (size_t i = 0; i < idx.size(); ++i) {
      if (c.flip) mirror[i] = flips.next_chance(0.5);
      targets.push_back(train.labels[idx[i]]);
    }
    const Tensor x =
        patches(train, idx, c.model.patch, static_cast<float>(c.pixel_mean), static_cast<float>(c.pixel_std), mirror);
    const Tensor loss = qkv::nn::functional::cross_entropy(
        model.forward(x), qkv::IndexTensor(targets), {.label_smoothing = static_cast<float>(c.label_smoothing)});
    optimizer.zero_grad();
    loss.backward();
    const double norm =
        qkv::optim::clip_grad_norm_(model.parameters(), c.clip > 0 ? c.clip : std::numeric_limits<double>::infinity());
    const double value = loss.item();
    if (!std::isfinite(value) || !std::isfinite(norm))
      throw qkv::Error("vit train: epoch " + std::to_string(epoch) + ", step " + std::to_string(steps + 1) +
                       ": the loss or gradient is not finite; lower --lr. The run keeps its checkpoints of the last epoch");
    optimizer.step();
    schedule.step();
    loss_sum += value;
    ++steps;
    if (progress) progress->update(steps, "loss " + std::to_string(value).substr(0, 5));
  }
  return loss_sum / static_cast<double>(std::max<int64_t>(steps, 1));
}

// The run that --resume continues: its config (with `epochs` when given, else its own), its history
// and best validation accuracy, from its last checkpoint; a run stopped before its first checkpoint
// starts again from its config.json.
Config read_resumed(const fs::path& dir, int64_t epochs, std::vector<EpochRecord>& history, double& best) {
  Config config = read_run_config(dir);
  if (fs::exists(dir / "last.safetensors")) {
    load_run(dir, "last");  // the checkpoint must be of this config
    const fs::path file = dir / "last.safetensors";
    history = read_history(qkv::examples::parse_json_of(qkv::io::read_checkpoint(file).config, file.string()), file, best);
    // The seconds of each epoch, from metrics.csv where it has the epoch (a kill may have come
    // between the checkpoint and its row).
    for (const EpochRecord& m : read_metrics(dir))
      if (m.epoch >= 1 && m.epoch <= static_cast<int64_t>(history.size())) history[m.epoch - 1].seconds = m.seconds;
  }
  const int64_t done = static_cast<int64_t>(history.size());
  if (epochs > 0) config.epochs = epochs;
  if (config.epochs < done)
    throw qkv::ValueError("vit train --resume: the run has trained " + std::to_string(done) + " epochs; --epochs " +
                          std::to_string(config.epochs) + " would undo them");
  if (config.epochs == done)
    throw qkv::ValueError("vit train --resume: the run is complete (" + std::to_string(done) +
                          " epochs); --epochs N with N > " + std::to_string(done) + " extends it (nothing was changed)");
  return config;
}

void write_results(const fs::path& dir, const TrainResult& r) {
  const auto baseline = [&](double accuracy) { return r.has_baselines ? Json(accuracy) : Json(nullptr); };
  const Json json(Json::Object{{"best_validation_accuracy", Json(r.best_validation_accuracy)},
                               {"test_accuracy", Json(r.test_accuracy)},
                               {"logistic_test_accuracy", baseline(r.logistic_accuracy)},
                               {"mlp_test_accuracy", baseline(r.mlp_accuracy)},
                               {"images_per_second", Json(r.images_per_second)},
                               {"training_seconds", Json(r.training_seconds)}});
  qkv::io::write_text_file(dir / "results.json", qkv::io::to_json(json) + "\n", "vit train");
}

// The baselines of a fresh run, computed and written; a resumed run's, read; none with
// options.baselines false.
std::optional<Baselines> run_baselines(const fs::path& dir, const ImageData& data, const Config& c, const TrainOptions& o) {
  if (fs::exists(dir / "baselines.json")) {
    const fs::path path = dir / "baselines.json";
    return Baselines::from_json(qkv::examples::parse_json_of(qkv::io::read_text_file(path, "vit"), path.string()),
                                path.string());
  }
  if (!o.baselines) return std::nullopt;
  if (o.verbose) std::cout << "baselines: logistic regression and an MLP on the pixels..." << std::flush;
  const Baselines b = compute_baselines(data, static_cast<float>(c.pixel_mean), static_cast<float>(c.pixel_std),
                                        static_cast<uint64_t>(c.seed));
  qkv::io::write_text_file(dir / "baselines.json", qkv::io::to_json(b.to_json()) + "\n", "vit train");
  if (o.verbose)
    std::cout << " test accuracy " << std::fixed << std::setprecision(2) << 100 * b.logistic.test_accuracy << " % and "
              << 100 * b.mlp.test_accuracy << " %" << std::endl;
  return b;
}

}  // namespace

TrainResult train(Config config, const TrainOptions& o) {
  const fs::path dir = o.run_dir;
  std::vector<EpochRecord> history;
  double best = 0;
  if (o.resume) config = read_resumed(dir, config.epochs, history, best);
  config.validate();
  ImageData data = load_data(config);  // before the run directory: bad data leaves nothing behind
  if (!o.resume) {
    const auto [mean, std] = pixel_statistics(data.train);
    config.pixel_mean = mean, config.pixel_std = std;
  }
  config.validate();
  const int64_t steps_per_epoch = (data.train.size() + config.batch - 1) / config.batch;
  if (config.warmup >= config.epochs * steps_per_epoch)
    throw qkv::ValueError("warmup (--warmup) " + std::to_string(config.warmup) + " steps; expected fewer than the " +
                          std::to_string(config.epochs * steps_per_epoch) + " steps of " + std::to_string(config.epochs) +
                          " epochs of " + std::to_string(data.train.size()) + " images in batches of " +
                          std::to_string(config.batch));
  qkv::manual_seed(static_cast<uint64_t>(config.seed));
  ViT model(config.model);
  auto optimizer = make_optimizer(model, config);
  const qkv::io::DirectoryLock lock = qkv::examples::prepare_run_directory(dir, o.resume, "vit", kRunFiles);
  // A resumed run's config.json says its --epochs too, so that the next --resume goes on from there.
  qkv::io::write_text_file(dir / "config.json", qkv::io::to_json(config.to_json()) + "\n", "vit train");
  if (o.verbose)
    std::cout << "vit: " << data.source << ", " << data.train.size() << " training images of " << config.model.rows
              << "×" << config.model.cols << ", " << data.validation.size() << " validation, " << data.test.size()
              << " test; " << model.num_parameters() << " parameters, " << config.model.num_patches() << " patches of "
              << config.model.patch << "×" << config.model.patch << ", positions " << config.model.positions << std::endl;
  TrainResult result;
  if (const std::optional<Baselines> b = run_baselines(dir, data, config, o)) {
    result.has_baselines = true;
    result.logistic_accuracy = b->logistic.test_accuracy, result.mlp_accuracy = b->mlp.test_accuracy;
  }
  int64_t epoch = static_cast<int64_t>(history.size());
  // The schedule reads the base learning rate before a checkpoint replaces it with its last step's.
  qkv::optim::WarmupLR schedule(*optimizer, config.warmup, config.epochs * steps_per_epoch);
  if (epoch > 0) qkv::io::load_checkpoint(dir / "last.safetensors", model, *optimizer);
  schedule.set_last_step(epoch * steps_per_epoch);
  std::optional<qkv::examples::Progress> progress;
  double seconds = history.empty() ? 0.0 : history.back().seconds, step_seconds = 0;
  const int64_t first = epoch;
  model.train();
  while (epoch < config.epochs && epoch - first != o.stop_after) {
    if (o.progress) progress.emplace("vit epoch " + std::to_string(epoch + 1), steps_per_epoch);
    const double lr = optimizer->lr();
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = train_epoch(model, *optimizer, schedule, data.train, config, epoch, progress ? &*progress : nullptr);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress) progress->finish("");
    step_seconds += took, seconds += took;
    ++epoch;
    const EpochRecord e{epoch, loss, evaluate(model, data.validation, config).accuracy, lr, seconds};
    history.push_back(e);
    const std::string text = checkpoint_text(config, history, std::max(best, e.validation_accuracy));
    if (e.validation_accuracy > best || epoch == 1) qkv::io::save_checkpoint(dir / "best.safetensors", model, *optimizer, epoch, text);
    best = std::max(best, e.validation_accuracy);
    qkv::io::save_checkpoint(dir / "last.safetensors", model, *optimizer, epoch, text);
    write_metrics(dir, history);
    if (o.verbose)
      std::cout << "epoch " << epoch << "/" << config.epochs << ": loss " << std::fixed << std::setprecision(4) << loss
                << ", validation accuracy " << std::setprecision(2) << 100 * e.validation_accuracy << " %, "
                << std::setprecision(1) << took << " s" << std::endl;
  }
  result.training_seconds = seconds;
  result.images_per_second =
      static_cast<double>((epoch - first) * data.train.size()) / std::max(step_seconds, 1e-9);
  result.best_validation_accuracy = best;
  if (epoch < config.epochs) return result;  // stopped early (stop_after): no test yet
  const Run run = load_run(dir, "best");
  result.test_accuracy = evaluate(*run.model, data.test, run.config).accuracy;
  write_results(dir, result);
  if (o.verbose)
    std::cout << "test accuracy (best validation checkpoint): " << std::fixed << std::setprecision(2)
              << 100 * result.test_accuracy << " %"
              << (result.has_baselines ? "; logistic regression " + percent(result.logistic_accuracy) + ", MLP " +
                                             percent(result.mlp_accuracy)
                                       : std::string())
              << "\n"
              << "training: " << std::setprecision(0) << result.images_per_second << " images/s, "
              << std::setprecision(1) << result.training_seconds << " s\n";
  return result;
}

Config read_run_config(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  if (!fs::exists(path)) throw qkv::ValueError("vit: " + dir.string() + " (--run) holds no vit run (no config.json)");
  return Config::from_json(qkv::examples::parse_json_of(qkv::io::read_text_file(path, "vit"), path.string()),
                           path.string());
}

Run load_run(const fs::path& dir, const std::string& which) {
  const fs::path config_path = dir / "config.json";
  Run run;
  run.config = read_run_config(dir);
  const fs::path file = dir / (which + ".safetensors");
  const qkv::io::Checkpoint checkpoint = qkv::io::read_checkpoint(file);
  const Json text = qkv::examples::parse_json_of(checkpoint.config, file.string() + " (its config text)");
  const Json* saved = text.is_object() ? text.find("config") : nullptr;
  if (!saved || !text.find("history") || !text.find("best"))
    throw qkv::ValueError("vit: " + file.string() + " is not a vit checkpoint (its config text has no vit config)");
  Config from_checkpoint = Config::from_json(*saved, file.string());
  from_checkpoint.epochs = run.config.epochs;  // --resume may have extended the run since
  if (qkv::io::to_json(from_checkpoint.to_json()) != qkv::io::to_json(run.config.to_json()))
    throw qkv::ValueError("vit: " + file.string() + " was saved with another config than " + config_path.string());
  run.model = std::make_shared<ViT>(run.config.model);
  run.model->load_state_dict(checkpoint.model);
  run.model->eval();
  return run;
}

std::vector<EpochRecord> read_metrics(const fs::path& dir) {
  const fs::path path = dir / "metrics.csv";
  std::vector<EpochRecord> history;
  if (!fs::exists(path)) return history;
  std::istringstream in(qkv::io::read_text_file(path, "vit"));
  std::string line;
  std::getline(in, line);
  int64_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    EpochRecord e;
    char c1, c2, c3, c4;
    std::istringstream row(line);
    if (!(row >> e.epoch >> c1 >> e.train_loss >> c2 >> e.validation_accuracy >> c3 >> e.lr >> c4 >> e.seconds) ||
        c1 != ',' || c2 != ',' || c3 != ',' || c4 != ',')
      throw qkv::ValueError("vit: " + path.string() + ":" + std::to_string(number) +
                            ": expected epoch,train_loss,validation_accuracy,lr,seconds");
    history.push_back(e);
  }
  return history;
}

}  // namespace vit
