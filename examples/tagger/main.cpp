// tagger: a tiny Transformer encoder that tags parts of speech, end to end. Its commands are the
// table in main() (`tagger --help`). Without data files or --corpus brown (examples/tagger/brown.h),
// train uses the built-in corpus (data/builtin_corpus.h).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "data/tokenize.h"
#include "examples/common/program.h"
#include "bench/tagger_bench.h"
#include "examples/tagger/brown.h"
#include "examples/tagger/options.h"
#include "examples/common/ranks.h"
#include "examples/tagger/train.h"
#include "nn/attention_interface.h"
#include "nn/position_scheme.h"
#include "tensor/error.h"
#include "tensor/precision.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace {

using qkv::examples::Args;
using namespace tagger;

// Bounds of bench's step counts: far above a useful measurement, low enough to end.
constexpr int64_t kMaxBenchSteps = 100'000, kMaxBenchWarmup = 10'000;

int cmd_train(const Args& a) {
  if (a.flag("resume")) qkv::examples::check_resume_options(a, {"epochs", "profile", "example"});
  qkv::examples::start_command(a, "tagger");
  const Config config = config_from(a);
  TrainOptions options = train_options_from(a);
  if (!a.flag("resume")) {
    qkv::examples::use_matmul_precision(config.matmul);
    const Data data = load_data(config);
    qkv::examples::announce_training("tagger", options);
    train(config, data, options);
    return 0;
  }
  // The run's own config and data; only --epochs may change, to extend the run, never to shorten it.
  SavedRun saved = load_saved_run(options.run_dir, "last.safetensors");
  // The best checkpoint is what the run ends on: a damaged one is refused now, not after training.
  load_saved_run(options.run_dir, "best.safetensors");
  if (!a.given("example") && reads_real_text(saved.config)) options.example = kRealTextExample;
  if (a.given("epochs")) saved.config.epochs = config.epochs;  // train refuses fewer than the run's
  qkv::examples::use_matmul_precision(saved.config.matmul, /*saved_run=*/true);
  const Data data = load_data(saved.config);
  qkv::examples::announce_training("tagger", options);
  resume(saved, data, options);
  return 0;
}

// What eval --test knows of the run's training sentences, which alone decide which words are
// ambiguous or unseen: the built-in corpus is regenerated; a --train file is read if it is still
// there, reads and still holds the run's words (its vocabulary rebuilt from it matches words.txt).
// Otherwise (a file moved away or changed, the Brown Corpus, which eval never fetches) none, and
// `why_not` says why: the model and the vocabularies in the run directory are all eval needs to score.
std::vector<TaggedSentence> training_sentences_at_hand(const Run& run, std::string& why_not) {
  const Config& config = run.config;
  const std::string file =
      "they are defined by the run's training file " + config.train_file + " (its --train), ";
  if (config.corpus == "brown") {
    why_not =
        "they are defined by the run's training data, the Brown Corpus, which eval --test does not read";
    return {};
  }
  if (config.train_file.empty()) return load_data(config).train;
  if (!std::filesystem::exists(config.train_file)) {
    why_not = file + "which is gone";
    return {};
  }
  Data data;
  try {
    data.train = read_tagged(config.train_file);
  } catch (const qkv::Error& e) {
    why_not = file + "which no longer reads (" + e.what() + ")";
    return {};
  }
  if (build_vocabs(data, config).words.tokens() != run.vocabs.words.tokens()) {
    why_not = file + "which has changed since the run was trained (its words are not words.txt's)";
    return {};
  }
  return data.train;
}

int cmd_eval(const Args& a) {
  qkv::examples::start_command(a, "tagger", /*announce=*/true);
  Run run = load_run(run_option(a));
  std::vector<TaggedSentence> train, test;
  std::string no_lexicon;
  if (a.given("test")) {  // another file instead of the run's test split: the run's data is not needed
    test = read_tagged(a.str("test"));
    train = training_sentences_at_hand(run, no_lexicon);
  } else {
    Data data;
    try {
      data = load_data(run.config);
    } catch (const qkv::Error& e) {
      throw qkv::ValueError(
          std::string("eval reads the run's data for its test split and its training words (") + e.what() +
          "); --test FILE scores a file with the run directory alone");
    }
    train = std::move(data.train);
    test = std::move(data.test);
  }
  // Without the training sentences the test sentences' own lexicon stands in, and the two figures
  // only the training data decides are dropped rather than reported wrong.
  const TagLexicon lexicon(no_lexicon.empty() ? train : test);
  Evaluation e = evaluate(*run.model, run.vocabs, lexicon, test, 64);
  if (!no_lexicon.empty()) e.score.ambiguous = e.score.unseen = {};
  print_evaluation(std::cout, e, run.vocabs.tags, no_lexicon);
  return 0;
}

// Tags one line's words and prints them on one line, "word/TAG", with "(unk)" on words the run's
// vocabulary lacks; a line with no word prints as an empty line. Counts words and unknown ones.
// `where` names the line in an error: "argument 2", "stdin line 3".
void tag_line(Run& run, const std::vector<std::string>& words, const std::string& where, int64_t& total,
              int64_t& unknown) {
  if (words.size() > static_cast<size_t>(kMaxSentenceLength))
    throw qkv::ValueError("tagger predict: " + where + " has " + std::to_string(words.size()) +
                          " words; the tagger takes at most " + std::to_string(kMaxSentenceLength));
  if (!words.empty()) {
    const std::vector<std::string> tags = predict(run, {words})[0];
    for (size_t j = 0; j < words.size(); ++j) {
      const bool unk = run.vocabs.word_id(words[j]) == run.vocabs.words.unk_id();
      std::cout << (j ? " " : "") << words[j] << '/' << tags[j] << (unk ? "(unk)" : "");
      unknown += unk ? 1 : 0;
    }
    total += static_cast<int64_t>(words.size());
  }
  std::cout << std::endl;  // flushed: a program reading the answers line by line gets each at once
}

int cmd_predict(const Args& a) {
  qkv::examples::start_command(a, "tagger", /*announce=*/true, /*positional=*/true);
  Run run = load_run(run_option(a));
  const qkv::data::TokenizerStyle style = tokenizer_style_for(run.config);
  int64_t lines = 0, total = 0, unknown = 0;
  // Each line is tagged as it comes, so that an endless stdin streams in bounded memory, and output
  // line N answers input line N (a blank line answers a blank line).
  for (const std::string& s : a.positional())
    tag_line(run, qkv::data::tokenize(s, style), "argument " + std::to_string(++lines), total, unknown);
  if (a.positional().empty()) {
    for (std::string line; qkv::examples::read_line(std::cin, line, lines);)
      tag_line(run, qkv::data::tokenize(line, style), "stdin line " + std::to_string(lines), total, unknown);
  }
  if (lines == 0) throw qkv::ValueError("tagger predict: no sentence given (arguments or stdin)");
  if (unknown > 0) {
    std::cerr << "tagger predict: " << unknown << " of " << total
              << " words are not in the run's vocabulary, marked (unk): "
              << (run.config.corpus == "builtin" && run.config.train_file.empty()
                      ? "the built-in corpus is lowercase, with punctuation spaced apart (\"the dog runs .\")"
                      : "they are tagged from their context" +
                            std::string(run.model->reads_chars() ? " and their characters" : ""))
              << "\n";
  }
  return 0;
}

struct Variant {
  std::string name, dir;
  Config config;
};

// "full" or "±w", after the mechanism when it is not dense: "performer full". The second field of
// a row's label, under the table's "(positions, attention)".
std::string attention_label(const Config& c) {
  const std::string window = c.window < 0 ? "full" : "±" + std::to_string(c.window);
  return c.attention == "dense" ? window : c.attention + " " + window;
}

// "sinusoidal_full", "sinusoidal_w1", "sinusoidal_performer_full": a row's directory under ablate/.
std::string variant_dir(const Config& c) {
  return c.positions + "_" + (c.attention == "dense" ? "" : c.attention + "_") +
         (c.window < 0 ? "full" : "w" + std::to_string(c.window));
}

// The names of --ablate-attention and --ablate-positions, and each mechanism with the base's
// --attention-features, checked before any combination is looked at: a refusal names the option.
void check_ablation_lists(const Config& base, const Args& a) {
  const auto known = [](const std::vector<std::string>& names) { return qkv::examples::join(names); };
  for (const std::string& positions : qkv::examples::split_list("ablate-positions", a.str("ablate-positions")))
    if (!qkv::nn::position_schemes().contains(positions))
      throw qkv::ValueError("option --ablate-positions lists '" + positions + "'; expected schemes of " +
                            known(qkv::nn::position_scheme_names()));
  for (const std::string& attention : qkv::examples::split_list("ablate-attention", a.str("ablate-attention"))) {
    if (!qkv::nn::attentions().contains(attention))
      throw qkv::ValueError("option --ablate-attention lists '" + attention + "'; expected mechanisms of " +
                            known(qkv::nn::attention_mechanism_names()));
    Config c = base;  // no scheme, no window: what is left to refuse is the mechanism with its features
    c.model = "transformer";
    c.attention = attention;
    c.attention_features = attention_reads_features(attention) ? base.attention_features : 0;
    c.positions = "none";
    c.window = -1;
    if (const std::string why = attention_refusal(c); !why.empty())
      throw qkv::ValueError("option --ablate-attention: " + why);
  }
}

// Every mechanism of --ablate-attention with every position scheme of --ablate-positions and every
// window of --ablate-windows. A combination the mechanism does not take (performer with ALiBi, or
// with a window) is left out with a note, so that the default lists still serve a mechanism that
// takes only some of them; a mechanism that takes none of them is refused, naming the options.
std::vector<Variant> transformer_variants(const Config& base, const Args& a) {
  std::vector<Variant> variants;
  check_ablation_lists(base, a);
  for (const std::string& attention : qkv::examples::split_list("ablate-attention", a.str("ablate-attention"))) {
    std::string refused;  // the first combination this mechanism does not take, and why
    size_t taken = 0;
    for (const std::string& positions : qkv::examples::split_list("ablate-positions", a.str("ablate-positions"))) {
      for (const std::string& w : qkv::examples::split_list("ablate-windows", a.str("ablate-windows"))) {
        Config c = base;
        c.model = "transformer";  // the GRU row comes last, whatever --model says
        c.attention = attention;
        c.attention_features = attention_reads_features(attention) ? base.attention_features : 0;
        c.positions = positions;
        c.window = qkv::examples::parse_integer("ablate-windows", w);
        if (const std::string why = attention_refusal(c); !why.empty()) {
          std::cout << "ablate: leaving out " << positions << ", " << attention_label(c) << ": " << why
                    << "\n";
          if (refused.empty()) refused = why;
          continue;
        }
        c.validate();
        ++taken;
        const std::string dir = variant_dir(c);
        const bool seen =
            std::any_of(variants.begin(), variants.end(), [&](const Variant& v) { return v.dir == dir; });
        if (!seen) variants.push_back({positions + ", " + attention_label(c), dir, c});
      }
    }
    if (taken == 0)
      throw qkv::ValueError("option --ablate-attention: " + attention +
                            " takes none of the --ablate-positions with the --ablate-windows (" + refused +
                            ")");
  }
  return variants;
}

// The Transformer rows (transformer_variants), then (when the base reads characters) the base
// without them, then a bidirectional GRU reading what the base reads: the same data, seed and
// budget for each.
std::vector<Variant> ablation_variants(const Config& base, const Args& a) {
  std::vector<Variant> variants = transformer_variants(base, a);
  if (base.char_filters > 0) {
    Config words_only = base;
    words_only.model = "transformer";
    words_only.char_filters = 0;
    words_only.validate();
    const std::string mechanism = base.attention == "dense" ? "" : "_" + base.attention;
    variants.push_back({base.positions + ", " + attention_label(base) + ", no characters",
                        base.positions + mechanism + "_no_chars", words_only});
  }
  Config gru = base;
  gru.model = "gru";
  variants.push_back(
      {base.char_filters > 0 ? "bidirectional GRU, characters" : "bidirectional GRU", "bigru", gru});
  return variants;
}

int cmd_ablate(const Args& a) {
  qkv::examples::start_command(a, "tagger", /*announce=*/true);
  const Config base = config_from(a);
  qkv::examples::use_matmul_precision(base.matmul);
  const std::vector<Variant> variants = ablation_variants(base, a);  // all validated before training
  const Data data = load_data(base);
  const TagLexicon lexicon(data.train);
  const TaggingScore majority = score_tags(lexicon, data.test, majority_tags(lexicon, data.test));
  std::vector<std::pair<std::string, TrainResult>> results;
  for (const Variant& v : variants) {
    TrainOptions options;
    options.run_dir = (std::filesystem::path(run_dir_from(a)) / "ablate" / v.dir).string();
    options.verbose = false;
    options.progress = false;
    options.figures = false;
    std::cout << "ablate: training " << v.name << " (" << v.config.epochs << " epochs) in " << options.run_dir
              << std::endl;
    results.emplace_back(v.name, train(v.config, data, options));
    std::cout << "ablate: " << v.name << ": test accuracy " << std::fixed << std::setprecision(2)
              << 100 * results.back().second.test.score.overall.value() << "%\n";
  }
  std::cout << "\nsame data, seed and budget (" << base.epochs << " epochs, " << base.ffn << " FFN, "
            << base.norm << "-norm); test accuracy:\n";
  char tps[32];
  std::snprintf(tps, sizeof tps, "%10s", "tok/s");
  print_score_header(std::cout, "model (positions, attention)", tps);
  std::snprintf(tps, sizeof tps, "%10s", "-");
  print_score_row(std::cout, "majority tag (unigram)", majority, tps);
  for (const auto& [name, r] : results) {
    std::snprintf(tps, sizeof tps, "%10.0f", r.train_tokens_per_s);
    print_score_row(std::cout, name, r.test.score, tps);
  }
  std::cout
      << "ambiguous: tokens of words seen with several tags in training; repeated: tokens of a word that\n"
         "occurs again in its sentence with another tag (\"i saw a saw\").\n";
  return 0;
}

// What `data` writes: never over an earlier call's files.
const std::vector<std::string> kDataFiles = {"train.conllu", "dev.conllu", "test.conllu"};

// The Brown Corpus's three splits as CoNLL-U files (FORM, universal UPOS, Brown XPOS), and their sizes.
int write_brown_data(const Args& a) {
  if (a.given("seed") || a.given("sentences"))
    throw qkv::ValueError("--seed and --sentences are for the built-in corpus");
  const std::string cache = cache_option(a);
  qkv::examples::prepare_out(a, "out", kDataFiles);
  qkv::data::BrownCorpus brown = load_brown(cache);
  const Corpus corpus{std::move(brown.train), std::move(brown.dev), std::move(brown.test)};
  write_corpus(corpus, a.str("out"));
  std::cout << "wrote " << a.str("out") << "/train.conllu, dev.conllu, test.conllu from the Brown Corpus ("
            << brown.documents << " documents)\n";
  for (const auto& [name, split] :
       {std::pair{"train", &corpus.train}, {"dev", &corpus.dev}, {"test", &corpus.test}}) {
    int64_t tokens = 0;
    for (const TaggedSentence& s : *split) tokens += static_cast<int64_t>(s.words.size());
    std::cout << "  " << name << ": " << split->size() << " sentences, " << tokens << " tokens\n";
  }
  return 0;
}

int cmd_data(const Args& a) {
  qkv::examples::start_command(a, "tagger");
  if (a.str("corpus") == "brown") return write_brown_data(a);
  if (a.str("corpus") != "builtin")
    throw qkv::ValueError("option --corpus must be builtin or brown, not '" + a.str("corpus") + "'");
  if (a.given("cache")) throw qkv::ValueError("option --cache is for --corpus brown");
  Config c;
  c.seed = static_cast<uint64_t>(a.integer_in("seed", 0, std::numeric_limits<int64_t>::max()));
  c.train_sentences = a.integer("sentences");
  c.validate();
  qkv::examples::prepare_out(a, "out", kDataFiles);
  const Corpus corpus = generate_corpus(c.seed, {c.train_sentences, c.dev_sentences, c.test_sentences});
  write_corpus(corpus, a.str("out"));
  std::cout << "wrote " << a.str("out") << "/train.conllu, dev.conllu, test.conllu\n";
  print_stats(std::cout, corpus_stats(corpus.train));
  return 0;
}

int cmd_bench(const Args& a) {
  qkv::examples::start_command(a, "tagger");
  qkv::examples::use_matmul_precision(a.str("matmul"));
  const BenchConfig config = bench_config(a.str("config"));
  const BenchResult r =
      run_bench(config, a.integer_in("steps", 1, kMaxBenchSteps), a.integer_in("warmup", 0, kMaxBenchWarmup));
  std::cout << format_bench(config, r) << "\n";
  return 0;
}

std::vector<Args::Option> ablate_options() {
  // Each variant is trained afresh and draws no figures: the options of a single run's resuming,
  // profiling and figures would be ignored, so ablate does not take them.
  std::vector<Args::Option> spec = train_options();
  std::erase_if(spec, [](const Args::Option& o) {
    return o.name == "resume" || o.name == "profile" || o.name == "example" || o.name == "no-figures" ||
           o.name == "reduce";
  });
  spec.push_back({"ablate-positions", qkv::examples::join(qkv::nn::position_scheme_names(), ","),
                  "ablate: the position schemes to compare, comma-separated"});
  spec.push_back({"ablate-windows", "-1,1", "ablate: the windows to compare (-1: full attention)"});
  spec.push_back({"ablate-attention", "dense",
                  "ablate: the attention mechanisms to compare, comma-separated (of " +
                      qkv::examples::join(qkv::nn::attention_mechanism_names()) +
                      "); combinations a mechanism does not take are left out"});
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Args::Option> run_only = {qkv::examples::run_option("runs/tagger"),
                                              qkv::examples::kThreadsOption, qkv::examples::kReferenceOption};
  std::vector<Args::Option> eval = run_only;
  eval.push_back({"test", "", "a test file (.conllu or two-column CoNLL) instead of the run's test split"});
  return qkv::examples::run_program(
      argc, argv,
      {"tagger", "a tiny Transformer encoder that tags parts of speech",
       {qkv::examples::Command{"train", "train on the built-in corpus (or --corpus brown, or --train/--dev/--test files), evaluate, draw figures",
         train_options(), cmd_train}.on_ranks().with_note(real_text_note()),
        {"eval", "accuracy overall and per tag, and the confusion matrix, of a trained run", eval, cmd_eval},
        qkv::examples::Command{"predict", "tag the sentences given as arguments, or one per line on stdin, cut into words as the run's corpus cuts them",
         run_only, cmd_predict}.with_arguments("[SENTENCE...]"),
        qkv::examples::Command{"ablate", "train every position scheme with and without a window (and each --ablate-attention mechanism), and a BiGRU, with one budget; one table",
         ablate_options(), cmd_ablate}.with_note(real_text_note()),
        {"bench", "time training steps of a reference config on synthetic data, count their FLOPs against the FMA peak (--config tiny|small|base|brown)",
         {{"config", "tiny", "tiny, small, base or brown (the model --corpus brown trains): the configs bench/torch_anchor.py times in PyTorch"},
          {"steps", std::to_string(kBenchSteps), "timed steps"},
          {"warmup", std::to_string(kBenchWarmup), "untimed steps first"},
          qkv::examples::kThreadsOption,
          {"matmul", "highest", qkv::examples::kMatmulHelp},
          qkv::examples::kReferenceOption},
         cmd_bench},
        {"data", "write the built-in corpus (or --corpus brown) as CoNLL-U files (--out DIR)",
         {{"out", "data", "directory for train.conllu, dev.conllu and test.conllu"},
          {"seed", std::to_string(Config{}.seed), "the corpus seed"},
          {"sentences", std::to_string(Config{}.train_sentences), "training sentences"},
          {"corpus", Config{}.corpus, "builtin, or brown: the Brown Corpus with universal tags, split by document"},
          {"cache", kDefaultBrownCache, "--corpus brown: the directory it is fetched into and read from"}},
         cmd_data}}});
}
