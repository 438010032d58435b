#include "examples/tagger/options.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "examples/common/program.h"
#include "examples/tagger/brown.h"
#include "examples/tagger/train.h"
#include "nn/attention_interface.h"
#include "nn/ffn.h"
#include "nn/position_scheme.h"
#include "tensor/error.h"

namespace tagger {

using qkv::examples::option_text;

std::vector<qkv::examples::Args::Option> train_options() {
  const Config d;
  const TrainOptions t;
  std::vector<qkv::examples::Args::Option> o = {
      {"train", d.train_file, "training file (.conllu: CoNLL-U; otherwise two-column CoNLL)"},
      {"dev", d.dev_file, "development file"},
      {"test", d.test_file, "test file"},
      {"cache", kDefaultBrownCache, "--corpus brown: the directory it is fetched into and read from"}};
  for (const auto& option : qkv::examples::options_of(d)) o.push_back(option);
  for (auto option : qkv::examples::run_options("runs/tagger")) {
    if (option.name == "run") option.help += "; runs/brown for --corpus brown";
    o.push_back(option);
  }
  o.insert(o.end(), {{"threads", "0", "threads (0: QKV_NUM_THREADS or all cores); under mpirun, per rank"},
                     qkv::examples::kReferenceOption,
                     {"profile", "false", "train: profile the first epoch (op table, RUN/profile.csv)"},
                     {"example", t.example, "the sentence whose attention is drawn"}});
  return o;
}

std::string real_text_note() {
  const qkv::io::Json real = real_text_defaults().to_json(), builtin = Config{}.to_json();
  std::string note;
  for (const auto& [key, value] : real.as_object()) {
    if (*builtin.find(key) == value) continue;
    note += " --" + qkv::examples::option_for<Config>(key) + " " +
            (value.is_string() ? value.as_string() : qkv::io::to_json(value));
  }
  return "with --corpus brown or --train/--dev/--test files, the defaults for real text:" + note + "\n";
}

Config config_from(const qkv::examples::Args& a) {
  // The data first: it decides which defaults the other options start from.
  Config data;
  data.corpus = a.str("corpus");
  data.train_file = a.str("train");
  Config c = reads_real_text(data) ? real_text_defaults() : Config{};
  qkv::examples::read_options(a, c);
  auto absolute = [](const std::string& p) {
    return p.empty() ? p : std::filesystem::absolute(p).lexically_normal().string();
  };
  for (const char* file : {"train", "dev", "test"})
    if (a.given(file) && a.str(file).empty())
      throw qkv::ValueError(std::string("option --") + file + " is empty; expected a file");
  if (a.given("sentences") && reads_real_text(data))
    throw qkv::ValueError(
        "option --sentences is for the built-in corpus, not --corpus brown or --train files");
  c.train_file = absolute(a.str("train"));
  c.dev_file = absolute(a.str("dev"));
  c.test_file = absolute(a.str("test"));
  c.corpus = a.str("corpus");
  if (c.corpus == "brown")
    c.corpus_cache = absolute(cache_option(a));
  else if (a.given("cache"))
    throw qkv::ValueError("option --cache is for --corpus brown");
  c.validate();
  return c;
}

std::string cache_option(const qkv::examples::Args& a) {
  if (a.str("cache").empty()) throw qkv::ValueError("option --cache is empty; expected a directory");
  return a.str("cache");
}

std::string run_option(const qkv::examples::Args& a) { return qkv::examples::directory_option(a, "run"); }

std::string run_dir_from(const qkv::examples::Args& a) {
  // A Brown run has a directory of its own, so that it never replaces the built-in corpus's run.
  return !a.given("run") && a.str("corpus") == "brown" ? "runs/brown" : run_option(a);
}

TrainOptions train_options_from(const qkv::examples::Args& a) {
  TrainOptions options;
  static_cast<qkv::examples::RunOptions&>(options) = qkv::examples::run_options_from(a);
  if (!a.given("example") && reads_real_text(config_from(a))) options.example = kRealTextExample;
  options.run_dir = run_dir_from(a);
  options.profile = a.flag("profile") && options.ranks.root();
  if (a.given("example")) options.example = a.str("example");
  return options;
}

}  // namespace tagger
