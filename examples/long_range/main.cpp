// long_range: where attention's cost shows. A generated, seeded task over sequences of hundreds to
// thousands of tokens whose tags need distant context (keyed needle retrieval, in the spirit of
// Long Range Arena, Tay et al. 2021; examples/long_range/task.h defines it and its reference
// accuracies), trained with dense attention and with the cheaper mechanisms, to set accuracy and
// training time side by side. Its commands are the table in main() (`long_range --help`).
//
// --window is the ±w of window attention (Beltagy et al. 2020's sliding window; LRA's "local
// attention"); --features is Performer's m random features (Choromanski et al. 2021) or Linformer's
// k projected rows (Wang et al. 2020). Bad input is refused in one line naming the option, before
// anything is trained or written; compare refuses a DIR that holds compare.md or compare.json
// already, and writes each file atomically. Performer draws its random features again every 1000
// training forwards (nn/performer.h): a budget ending just after a draw tests a model on features
// it has not adapted to, and train and compare say so when it happens.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "examples/common/program.h"
#include "examples/long_range/train.h"
#include "io/file.h"
#include "io/json.h"
#include "tensor/error.h"

namespace {

using namespace long_range;
using qkv::examples::Args;

const std::vector<std::string> kFiles = {"compare.md", "compare.json"};

std::vector<Args::Option> common_options() {
  const TrainOptions d;
  using qkv::examples::option_text;
  return {{"window", std::to_string(d.model.window), "window attention attends within ±W tokens"},
          {"features", "0", "performer: random features m; linformer: projected length k (0: its default)"},
          {"batch", std::to_string(d.batch), "sequences per training step"},
          {"d-model", std::to_string(d.model.d_model), "model width"},
          {"heads", std::to_string(d.model.heads), "attention heads"},
          {"layers", std::to_string(d.model.layers), "encoder blocks"},
          {"keys", std::to_string(d.task.keys), "needles per sequence, one per key"},
          {"values", std::to_string(d.task.values), "values a needle carries: the tags (chance is 1/values)"},
          {"test", std::to_string(d.test_sequences), "sequences of the fixed test set"},
          {"lr", option_text(d.lr), "peak learning rate (AdamW, warm-up then cosine decay)"},
          {"seed", "0", "seed of the initialization and the training batches (the test set is fixed)"},
          {"matmul", "highest", qkv::examples::kMatmulHelp},
          qkv::examples::kThreadsOption,
          qkv::examples::kReferenceOption};
}

// The options every command shares, the length, mechanism and steps left as the defaults.
TrainOptions train_options(const Args& a) {
  TrainOptions o;
  o.model.window = a.integer_in("window", 1, kMaxLength);
  o.model.features = a.integer_in("features", 0, kMaxFeatures);
  o.batch = a.integer_in("batch", 1, 1024);
  o.model.d_model = a.integer_in("d-model", 2, 1024);
  o.model.heads = a.integer_in("heads", 1, 64);
  o.model.layers = a.integer_in("layers", 1, 16);
  o.task.keys = a.integer_in("keys", 1, kMaxKeys);
  o.task.values = a.integer_in("values", 2, kMaxValues);
  o.test_sequences = a.integer_in("test", 1, 100000);
  o.lr = a.number_in("lr", 1e-6, 1.0);
  o.seed = static_cast<uint64_t>(a.integer_in("seed", 0, (int64_t{1} << 62) - 1));
  o.matmul = a.str("matmul");
  return o;
}

// --window and --features belong to some mechanisms only: given with others alone, they would be
// silently ignored, so they are refused. `what` names the mechanisms as the command took them.
void check_applies(const Args& a, const std::vector<std::string>& mechanisms, const std::string& what) {
  auto has = [&](const std::string& m) { return std::find(mechanisms.begin(), mechanisms.end(), m) != mechanisms.end(); };
  if (a.given("window") && !has("window"))
    throw qkv::ValueError("--window applies to window attention only, and " + what + " has no window");
  if (a.given("features") && !has("performer") && !has("linformer"))
    throw qkv::ValueError("--features applies to performer and linformer only, and " + what + " has neither");
}

int cmd_train(const Args& a) {
  TrainOptions o = train_options(a);
  o.run_dir = qkv::examples::directory_option(a, "run");
  o.resume = a.flag("resume");
  if (o.resume) qkv::examples::check_resume_options(a, {"steps"});
  o.model.attention = a.str("attention");
  o.task.length = a.integer_in("length", kMinLength, kMaxLength);
  o.steps = a.integer_in("steps", 1, 1000000);
  check_options(o);
  check_applies(a, {o.model.attention}, "--attention " + o.model.attention);
  qkv::examples::start_command(a, "long_range", /*announce=*/true);
  if (!o.resume) qkv::examples::use_matmul_precision(o.matmul);  // a resumed run's own, in train()
  if (o.resume && !a.given("steps")) o.steps = 0;  // the run's own
  const TrainResult r = train(o);
  const TaskStats& s = r.stats;
  const Config& c = r.config;
  std::printf("test set: %lld sequences; majority tag %.1f%% (chance 1/%lld = %.1f%%); a query's needle is %.0f "
              "tokens away on average, within ±%lld (%lld window layers of ±%lld) for %.1f%% of them: window bound %.1f%%\n",
              static_cast<long long>(c.test_sequences), 100 * s.majority, static_cast<long long>(c.task.values),
              100.0 / static_cast<double>(c.task.values), s.mean_distance, static_cast<long long>(reach(c.model)),
              static_cast<long long>(c.model.layers), static_cast<long long>(c.model.window), 100 * s.within_window,
              100 * s.window_bound);
  std::printf("test accuracy %.1f%% (loss %.4f); training %.1f s, %.1f ms/step\n", 100 * r.test_accuracy, r.test_loss,
              r.train_seconds, r.ms_per_step);
  return 0;
}

std::vector<int64_t> integers(const std::string& option, const std::string& text) {
  std::vector<int64_t> values;
  for (const std::string& item : qkv::examples::split_list(option, text))
    values.push_back(qkv::examples::parse_integer(option, item));
  return values;
}

int cmd_compare(const Args& a) {
  CompareOptions c;
  c.base = train_options(a);
  c.lengths = integers("lengths", a.str("lengths"));
  c.mechanisms = qkv::examples::split_list("mechanisms", a.str("mechanisms"));
  c.steps = integers("steps", a.str("steps"));
  if (c.steps.size() == 1) c.steps.assign(c.lengths.size(), c.steps.front());
  for (const int64_t length : c.lengths)
    if (length < kMinLength || length > kMaxLength)
      throw qkv::ValueError("--lengths: " + std::to_string(length) + " is outside " + std::to_string(kMinLength) +
                            " .. " + std::to_string(kMaxLength));
  check_compare(c);
  check_applies(a, c.mechanisms, "--mechanisms " + a.str("mechanisms"));
  if (!a.given("out")) throw qkv::ValueError("compare needs --out DIR, the directory for compare.md and compare.json");
  const std::string out = a.str("out");
  qkv::examples::start_command(a, "long_range", /*announce=*/true);
  qkv::examples::use_matmul_precision(c.base.matmul);  // refused before anything is written
  qkv::examples::prepare_out(a, "out", kFiles);
  c.base.run_dir = out + "/runs";
  const std::vector<CompareRow> rows = compare(c);
  qkv::examples::refuse_existing("out", out, kFiles);  // the directory was ours to write when we began; it must still be
  const std::string md = compare_markdown(c, rows);
  qkv::io::write_text_file(out + "/compare.json", qkv::io::to_json(compare_json(c, rows)) + "\n", "long_range compare");
  qkv::io::write_text_file(out + "/compare.md", md, "long_range compare");
  std::printf("\n%s\nwrote %s/compare.md and %s/compare.json\n", md.c_str(), out.c_str(), out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Config defaults;
  const std::string steps = std::to_string(defaults.steps);
  std::vector<Args::Option> train = common_options(), compare = common_options();
  train.insert(train.begin(), {{"attention", "dense", "the attention: " + mechanism_list()},
                               {"length", "512", "the longest sequence (each has 3/4 of it to all of it)"},
                               {"steps", steps, "training steps"},
                               qkv::examples::run_option("runs/long_range", "run directory (config, checkpoints, metrics)"),
                               {"resume", "false", "continue the run in --run from its last checkpoint (--steps may extend it)"}});
  compare.insert(compare.begin(), {{"lengths", "512,2048", "the lengths, comma-separated"},
                                   {"mechanisms", "dense,window,performer,linformer", "the mechanisms, comma-separated"},
                                   {"steps", steps, "training steps of every run: one count, or one per length"},
                                   {"out", "", "the directory for compare.md, compare.json and runs/ (must not hold them)"}});
  return qkv::examples::run_program(
      argc, argv,
      {"long_range", "where attention's cost shows: keyed needle retrieval over long sequences",
       {{"train", "train one attention mechanism at one length; the test accuracy and the training time", train, cmd_train},
        {"compare", "every mechanism at every length with the same budget: DIR/compare.md and DIR/compare.json",
         compare, cmd_compare}}});
}
