// vit: a tiny Vision Transformer on Fashion-MNIST, beside logistic regression and an MLP.
//
//   vit train    [--run DIR] [model and budget options]   train; baselines, checkpoints, figures
//   vit eval     [--run DIR]                  test accuracy of the best checkpoint, per class, beside the baselines
//   vit predict  [--run DIR] --images FILE    the class of each image of an IDX file (N×rows×cols)
//   vit figures  [--run DIR]                  draw a trained run's figures (again) into DIR/figures
//   vit ablate   [--out DIR] [--epochs N]     the position schemes side by side, and their figures
//   vit bench    [model options]              training steps, timed as bench/vit_torch.py times PyTorch's
//
// Fashion-MNIST comes from Debian's dataset-fashion-mnist, decompressed once into --cache
// (examples/vit/images.h). Threads come from QKV_NUM_THREADS or --threads.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/debug/profiler.h"
#include "data/idx.h"
#include "examples/common/args.h"
#include "examples/common/ranks.h"
#include "examples/common/run_directory.h"
#include "examples/vit/ablation.h"
#include "examples/vit/baselines.h"
#include "examples/vit/figures.h"
#include "examples/vit/train.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "optim/clip.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace {

using namespace vit;
using qkv::examples::Args;

const char* const kUsage =
    "usage: vit COMMAND [OPTIONS]\n"
    "commands:\n"
    "  train    train a ViT on Fashion-MNIST (or --data generated | DIR); baselines, checkpoints, figures\n"
    "  eval     test accuracy of a trained run, per class, beside the baselines\n"
    "  predict  the class of each image of an IDX file\n"
    "  figures  draw a trained run's figures into RUN/figures\n"
    "  ablate   train one ViT per position scheme and compare them (table and figures)\n"
    "  bench    time training steps of the model train would train\n"
    "run `vit COMMAND --help` for its options\n";

std::vector<Args::Option> model_options() {
  const Config d;
  using qkv::examples::option_text;
  return {{"data", d.data, "fashion-mnist, generated (shapes; for tests), or a directory of four IDX files named as Fashion-MNIST's"},
          {"cache", d.cache, "the directory Fashion-MNIST is decompressed into and read from"},
          {"validation", std::to_string(d.validation), "training images held out for validation"},
          {"generated", std::to_string(d.generated), "with --data generated: training images"},
          {"classes", std::to_string(d.model.classes), "with --data DIR: the number of classes"},
          {"patch", std::to_string(d.model.patch), "side of the square patches"},
          {"d-model", std::to_string(d.model.d_model), "model width"},
          {"heads", std::to_string(d.model.heads), "attention heads"},
          {"layers", std::to_string(d.model.layers), "Transformer blocks"},
          {"ffn-hidden", std::to_string(d.model.ffn_hidden), "hidden width of the feed-forward sublayer"},
          {"positions", d.model.positions, "patch positions: " + join(position_names())},
          {"pool", d.model.pool, "cls (a class token) or mean (the mean of the patches' outputs)"},
          {"dropout", option_text(d.model.dropout), "dropout"},
          {"epochs", std::to_string(d.epochs), "epochs"},
          {"batch", std::to_string(d.batch), "images per step"},
          {"warmup", std::to_string(d.warmup), "linear warmup steps, then cosine decay to 0"},
          {"seed", std::to_string(d.seed), "seed of the initialization, the order and the flips"},
          {"lr", option_text(d.lr), "peak learning rate (AdamW)"},
          {"weight-decay", option_text(d.weight_decay), "AdamW weight decay on the matrices"},
          {"clip", option_text(d.clip), "gradient norm clipping (0: none)"},
          {"label-smoothing", option_text(d.label_smoothing), "label smoothing of the cross-entropy"},
          {"no-flip", "false", "do not mirror training images left-right at random"},
          {"threads", "0", "threads"},
          qkv::examples::kReferenceOption};
}

Config config_from(const Args& a) {
  Config c;
  c.data = a.str("data");
  c.cache = a.str("cache");
  c.validation = a.integer("validation");
  c.generated = a.integer("generated");
  c.model.classes = a.integer("classes");
  c.model.patch = a.integer("patch");
  c.model.d_model = a.integer("d-model");
  c.model.heads = a.integer("heads");
  c.model.layers = a.integer("layers");
  c.model.ffn_hidden = a.integer("ffn-hidden");
  c.model.positions = a.str("positions");
  c.model.pool = a.str("pool");
  c.model.dropout = static_cast<float>(a.number("dropout"));
  c.epochs = a.integer("epochs");
  c.batch = a.integer("batch");
  c.warmup = a.integer("warmup");
  c.seed = a.integer("seed");
  c.lr = a.number("lr");
  c.weight_decay = a.number("weight-decay");
  c.clip = a.number("clip");
  c.label_smoothing = a.number("label-smoothing");
  c.flip = !a.flag("no-flip");
  c.model.rows = c.model.cols = 0;  // from the data
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
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  TrainOptions o;
  o.run_dir = a.str("run");
  o.resume = a.flag("resume");
  o.figures = !a.flag("no-figures");
  o.baselines = !a.flag("no-baselines");
  Config config;
  if (o.resume) {
    for (const Args::Option& opt : model_options())
      if (a.given(opt.name) && opt.name != "epochs" && opt.name != "threads" && opt.name != "reference")
        throw qkv::ValueError("--resume continues the run with its saved config; --" + opt.name + " cannot change it");
    config.epochs = a.given("epochs") ? a.integer_in("epochs", 1, 10000) : 0;
  } else {
    config = config_from(a);
  }
  std::cout << "vit: training on " << qkv::get_num_threads() << " thread(s)"
            << (qkv::reference_mode() ? std::string(", ") + qkv::examples::kReferenceModeNote : "")
            << ", run directory " << o.run_dir << std::endl;
  train(config, o);
  if (o.figures) draw_run_figures(o.run_dir);
  return 0;
}

int cmd_eval(const Args& a) {
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  Run run = load_run(a.str("run"), "best");
  const ImageData data = load_data(run.config);
  const Evaluation test = evaluate(*run.model, data.test, run.config);
  std::cout << "test accuracy of the best checkpoint (" << data.source << ", " << data.test.size() << " images): "
            << std::fixed << std::setprecision(2) << 100 * test.accuracy << " %\n";
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
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  if (!a.given("images")) throw qkv::ValueError("vit predict: --images FILE is required (an IDX file of N×rows×cols bytes)");
  Run run = load_run(a.str("run"), "best");
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
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  draw_run_figures(a.str("run"));
  return 0;
}

// Median of `values`.
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// Training steps of `config`'s model on random images, timed as bench/vit_torch.py times the same
// model in PyTorch: untimed warm-up steps, then the median.
int cmd_bench(const Args& a) {
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  Config config = config_from(a);
  config.model.rows = config.model.cols = 28;
  config.validate();
  qkv::manual_seed(1);
  ViT model(config.model);
  auto optimizer = make_optimizer(model, config);
  const int64_t B = config.batch, N = config.model.num_patches(), P = config.model.patch * config.model.patch;
  const qkv::Tensor x = qkv::randn({B, N, P});
  std::vector<int64_t> labels;
  for (int64_t b = 0; b < B; ++b) labels.push_back(static_cast<int64_t>(qkv::default_generator().next_below(10)));
  const qkv::IndexTensor targets(labels);
  const int64_t warmup = a.integer_in("warmup-steps", 0, 10000), steps = a.integer_in("bench-steps", 1, 100'000);
  std::vector<double> wall;
  model.train();
  const auto step = [&] {
    const qkv::Tensor loss = qkv::nn::functional::cross_entropy(model.forward(x), targets,
                                                                {.label_smoothing = static_cast<float>(config.label_smoothing)});
    optimizer->zero_grad();
    loss.backward();
    qkv::optim::clip_grad_norm_(model.parameters(), config.clip > 0 ? config.clip : std::numeric_limits<double>::infinity());
    optimizer->step();
  };
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    step();
    if (s >= warmup) wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (a.flag("profile")) {  // three more steps, op by op (autograd/debug/profiler.h)
    qkv::Profiler profiler;
    for (int i = 0; i < 3; ++i) step();
    profiler.stop();
    std::cout << profiler.report();
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("config=vit threads=%d ms_per_step=%.2f images_per_s=%.0f peak_rss_mib=%.0f parameters=%lld\n",
              qkv::get_num_threads(), 1e3 * median(wall), static_cast<double>(B) / median(wall),
              static_cast<double>(usage.ru_maxrss) / 1024.0, static_cast<long long>(model.num_parameters()));
  return 0;
}

int cmd_ablate(const Args& a) {
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  Config config = config_from(a);
  AblationOptions o;
  o.out = a.str("out");
  o.schemes = split_names(a.str("schemes"));
  qkv::examples::make_output_directory("out", o.out);
  run_ablation(config, o);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!qkv::examples::start_world(argc, argv, "vit")) return 1;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    qkv::examples::refuse_many_ranks("vit", cmd + " (vit trains in one process)");
    std::vector<Args::Option> spec;
    int (*run)(const Args&) = nullptr;
    const Args::Option threads{"threads", "0", "threads"};
    if (cmd == "train") {
      spec = model_options();
      spec.push_back({"run", "runs/vit", "run directory (config, checkpoints, metrics, figures)"});
      spec.push_back({"resume", "false", "continue the run in --run from its last epoch (--epochs may extend it)"});
      spec.push_back({"no-figures", "false", "draw no figures"});
      spec.push_back({"no-baselines", "false", "train no baselines"});
      run = cmd_train;
    } else if (cmd == "eval") {
      spec = {{"run", "runs/vit", "run directory of a trained model"}, threads, qkv::examples::kReferenceOption};
      run = cmd_eval;
    } else if (cmd == "predict") {
      spec = {{"run", "runs/vit", "run directory of a trained model"},
              {"images", "", "an IDX file of images of the size the run was trained on"},
              threads,
              qkv::examples::kReferenceOption};
      run = cmd_predict;
    } else if (cmd == "figures") {
      spec = {{"run", "runs/vit", "run directory of a trained model"}, threads, qkv::examples::kReferenceOption};
      run = cmd_figures;
    } else if (cmd == "ablate") {
      spec = model_options();
      spec.push_back({"out", "runs/vit-ablation", "directory of the table, the figures and one run per scheme"});
      std::string all;
      for (const std::string& n : position_names()) all += (all.empty() ? "" : ",") + n;
      spec.push_back({"schemes", all, "the position schemes to train, comma-separated"});
      run = cmd_ablate;
    } else if (cmd == "bench") {
      spec = model_options();
      spec.push_back({"bench-steps", "20", "timed training steps"});
      spec.push_back({"warmup-steps", "3", "untimed training steps first"});
      spec.push_back({"profile", "false", "also print the op profile of three training steps"});
      run = cmd_bench;
    } else {
      std::cerr << "vit: unknown command '" << cmd << "'\n" << kUsage;
      return 2;
    }
    const Args args(argc - 2, argv + 2, spec, "usage: vit " + cmd + " [OPTIONS]");
    if (args.help_requested()) {
      std::cout << args.help();
      return 0;
    }
    return run(args);
  } catch (const std::exception& e) {
    return qkv::examples::fail("vit", e.what());
  }
}
