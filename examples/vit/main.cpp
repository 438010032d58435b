// vit: a tiny Vision Transformer on Fashion-MNIST, beside logistic regression and an MLP. Its
// commands are the table in main() (`vit --help`). Fashion-MNIST comes from Debian's
// dataset-fashion-mnist, decompressed once into --cache (examples/vit/images.h).
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/debug/profiler.h"
#include "data/idx.h"
#include "examples/common/program.h"
#include "examples/common/timing.h"
#include "examples/vit/ablation.h"
#include "examples/vit/baselines.h"
#include "examples/vit/figures.h"
#include "examples/vit/train.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/threads.h"

namespace {

using namespace vit;
using qkv::examples::Args;

// The options of the config (examples/common/config.h), with --no-flip and --no-test-flip for its flip
// and test_flip.
std::vector<Args::Option> model_options() {
  std::vector<Args::Option> o = qkv::examples::options_of(Config{});
  o.insert(o.end(), {{"no-flip", "false", "do not mirror training images left-right at random"},
                     {"no-test-flip", "false",
                      "classify each validation and test image alone, not with its mirror image beside it (test-time "
                      "augmentation: the two logits summed)"},
                     qkv::examples::kThreadsOption,
                     qkv::examples::kReferenceOption});
  return o;
}

Config config_from(const Args& a) {
  Config c;
  qkv::examples::read_options(a, c);
  if (a.has("no-flip")) c.flip = !a.flag("no-flip");
  if (a.has("no-test-flip")) c.test_flip = !a.flag("no-test-flip");
  c.matmul = qkv::examples::resolved_matmul(c.matmul);
  c.model.rows = c.model.cols = 0;  // from the data
  if (a.has("schemes")) c.model.positions = split_names(a.str("schemes")).front();  // ablate: each is checked
  if (!a.has("data")) return c.validate(), c;  // bench: a model on random images
  if (c.data.empty()) throw qkv::ValueError("--data is empty; expected fashion-mnist, generated or a directory");
  if (c.cache.empty()) throw qkv::ValueError("--cache is empty; expected a directory");
  if (a.given("cache") && c.data != "fashion-mnist")
    throw qkv::ValueError("--cache is where Fashion-MNIST is kept; with --data " + c.data + " it would not be read");
  if (a.given("classes") && (c.data == "fashion-mnist" || c.data == "generated"))
    throw qkv::ValueError("--classes is for --data DIR; " + c.data + " has 10");
  if (a.given("validation") && c.data == "generated")
    throw qkv::ValueError("--validation is for Fashion-MNIST and --data DIR; --data generated holds out a quarter of --generated");
  if (a.given("generated") && c.data != "generated")
    throw qkv::ValueError("--generated is the size of --data generated; with --data " + c.data + " it would not be read");
  // Paths are kept absolute, so that eval, predict and --resume find the same data from anywhere.
  if (c.data != "fashion-mnist" && c.data != "generated") c.data = std::filesystem::absolute(c.data).string();
  c.cache = std::filesystem::absolute(c.cache).string();
  c.validate();
  return c;
}

int cmd_train(const Args& a) {
  qkv::examples::start_command(a, "vit");
  TrainOptions o;
  static_cast<qkv::examples::RunOptions&>(o) = qkv::examples::run_options_from(a);
  o.baselines = !a.flag("no-baselines");
  const Config config = qkv::examples::train_config<Config>(a, o, "epochs", {"no-baselines"}, [&] { return config_from(a); });
  if (!o.resume) qkv::examples::use_matmul_precision(config.matmul);  // refused before anything is written
  qkv::examples::announce_training("vit", o);
  train(config, o);
  if (o.figures) draw_run_figures(o.run_dir);
  return 0;
}

int cmd_eval(const Args& a) {
  qkv::examples::start_command(a, "vit");
  Run run = load_run(a.str("run"), "best");
  qkv::examples::use_matmul_precision(run.config.matmul, /*saved_run=*/true);
  const ImageData data = load_data(run.config);
  if (a.flag("test-flip")) run.config.test_flip = run.config.flip = true;
  const Evaluation test = evaluate(*run.model, data.test, run.config);
  std::cout << "test accuracy of the best checkpoint (" << data.source << ", " << data.test.size() << " images"
            << (run.config.flips_tests() ? ", each with its mirror image" : "") << "): " << std::fixed
            << std::setprecision(2) << 100 * test.accuracy << " %\n";
  print_per_class(std::cout, data.test, test.predicted, data.class_names);
  const std::filesystem::path file = std::filesystem::path(a.str("run")) / "baselines.json";
  if (std::filesystem::exists(file)) {
    const Baselines b = Baselines::from_json(
        qkv::examples::parse_json_of(qkv::io::read_text_file(file, "vit eval"), file.string()), file.string());
    std::cout << "baselines on test (" << file.string() << "): logistic regression " << 100 * b.logistic.test_accuracy
              << " %, MLP " << 100 * b.mlp.test_accuracy << " %\n";
  }
  return 0;
}

int cmd_predict(const Args& a) {
  qkv::examples::start_command(a, "vit");
  if (!a.given("images")) throw qkv::ValueError("vit predict: --images FILE is required (an IDX file of N×rows×cols bytes)");
  Run run = load_run(a.str("run"), "best");
  qkv::examples::use_matmul_precision(run.config.matmul, /*saved_run=*/true);
  qkv::data::IdxBytes idx = qkv::data::read_idx(a.str("images"));
  if (idx.shape.size() != 3 || idx.shape[1] != run.config.model.rows || idx.shape[2] != run.config.model.cols)
    throw qkv::ValueError("vit predict: " + a.str("images") + " holds images of shape " +
                          qkv::shape_str(qkv::Shape(idx.shape.begin(), idx.shape.end())) + "; the run was trained on (N, " +
                          std::to_string(run.config.model.rows) + ", " + std::to_string(run.config.model.cols) + ")");
  ImageSet set;
  set.rows = idx.shape[1], set.cols = idx.shape[2];
  set.pixels = std::move(idx.values);
  set.labels.assign(static_cast<size_t>(idx.shape[0]), 0);
  const Evaluation e = evaluate(*run.model, set, run.config);
  const std::vector<std::string> classes = class_names_of(run.config);
  for (size_t i = 0; i < e.predicted.size(); ++i) std::cout << i << "\t" << classes[e.predicted[i]] << "\n";
  return 0;
}

int cmd_figures(const Args& a) {
  qkv::examples::start_command(a, "vit");
  draw_run_figures(a.str("run"));
  return 0;
}

// Training steps of `config`'s model on random images, timed as bench/vit_torch.py times the same
// model in PyTorch: untimed warm-up steps, then the median.
int cmd_bench(const Args& a) {
  qkv::examples::start_command(a, "vit");
  Config config = config_from(a);
  config.model.rows = config.model.cols = 28;
  config.validate();
  qkv::examples::use_matmul_precision(config.matmul);
  qkv::manual_seed(1);
  ViT model(config.model);
  auto optimizer = make_optimizer(model, config);
  const int64_t B = config.batch, N = config.model.num_patches(), P = config.model.patch * config.model.patch;
  const qkv::Tensor x = qkv::randn({B, N, P});
  std::vector<int64_t> labels;
  for (int64_t b = 0; b < B; ++b) labels.push_back(static_cast<int64_t>(qkv::default_generator().next_below(10)));
  const qkv::IndexTensor targets(labels);
  model.train();
  qkv::examples::TrainStep train_step(model, *optimizer, {.clip = config.clip});
  const auto step = [&] {
    train_step(B, 0, [&](const qkv::examples::Rows&) {
      return qkv::examples::Share{qkv::nn::functional::cross_entropy(
                                      model.forward(x), targets, {.label_smoothing = static_cast<float>(config.label_smoothing)}),
                                  B};
    });
  };
  const qkv::examples::StepTimes t = qkv::examples::time_steps(step, a.integer_in("warmup-steps", 0, 10000),
                                                               a.integer_in("bench-steps", 1, 100'000), a.flag("profile") ? 3 : 0);
  std::printf("config=vit threads=%d ms_per_step=%.2f images_per_s=%.0f peak_rss_mib=%.0f cpu_ms_per_step=%.2f %s "
              "parameters=%lld matmul=%s recompute=%s\n",
              qkv::get_num_threads(), 1e3 * t.wall, static_cast<double>(B) / t.wall, t.peak_rss_mib, 1e3 * t.cpu,
              qkv::examples::flop_figures(t).c_str(), static_cast<long long>(model.num_parameters()),
              config.matmul.c_str(), config.model.recompute ? "true" : "false");
  return 0;
}

int cmd_ablate(const Args& a) {
  qkv::examples::start_command(a, "vit");
  Config config = config_from(a);
  AblationOptions o;
  o.out = a.str("out");
  o.schemes = split_names(a.str("schemes"));
  qkv::examples::use_matmul_precision(config.matmul);  // refused before anything is written
  run_ablation(config, o);
  return 0;
}

std::vector<Args::Option> train_options() {
  std::vector<Args::Option> o = model_options();
  for (const Args::Option& more : qkv::examples::run_options("runs/vit"))
    if (more.name != "reduce") o.push_back(more);  // vit trains in one process
  o.push_back({"no-baselines", "false", "train no baselines"});
  return o;
}

// The model's options but `unread` (what the command sets itself, or never reads), then `more`.
std::vector<Args::Option> with_model_options(const std::vector<std::string>& unread, std::vector<Args::Option> more) {
  std::vector<Args::Option> o = qkv::examples::without(model_options(), unread);
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Args::Option> run_only = {qkv::examples::run_option("runs/vit"), qkv::examples::kThreadsOption,
                                              qkv::examples::kReferenceOption};
  std::vector<Args::Option> predict = run_only;
  predict.insert(predict.begin() + 1, {"images", "", "an IDX file of images of the size the run was trained on"});
  std::vector<Args::Option> eval = run_only;
  eval.insert(eval.begin() + 1, {"test-flip", "false",
                                 "classify each image and its mirror image, their logits summed (a run trained on mirror "
                                 "images without --no-test-flip always does)"});
  return qkv::examples::run_program(
      argc, argv,
      {"vit", "a tiny Vision Transformer on Fashion-MNIST, beside logistic regression and an MLP",
       {{"train", "train a ViT on Fashion-MNIST (or --data generated | DIR); baselines, checkpoints, figures",
         train_options(), cmd_train},
        {"eval", "test accuracy of a trained run, per class, beside the baselines", eval, cmd_eval},
        {"predict", "the class of each image of an IDX file", predict, cmd_predict},
        {"figures", "draw a trained run's figures into RUN/figures", run_only, cmd_figures},
        {"ablate", "train one ViT per position scheme and compare them (table and figures)",
         with_model_options({"positions"},  // --schemes names them
                            {{"out", "runs/vit-ablation", "directory of the table, the figures and one run per scheme"},
                             {"schemes", qkv::examples::join(position_names(), ","),
                              "the position schemes to train, comma-separated"}}),
         cmd_ablate},
        {"bench", "time training steps of the model train would train",
         // Steps on random 28×28 images of 10 classes from seed 1: no data, no epochs, no schedule.
         with_model_options({"data", "cache", "validation", "generated", "classes", "epochs", "seed", "warmup",
                             "no-flip", "no-test-flip"},
                            {{"bench-steps", "20", "timed training steps"},
                             {"warmup-steps", "3", "untimed training steps first"},
                             {"profile", "false", "also print the op profile of three training steps"}}),
         cmd_bench}}});
}
