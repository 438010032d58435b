// seq2seq: d2l's GRU encoder-decoder with Bahdanau attention, translating dates written in words
// into ISO 8601 one character at a time (examples/seq2seq/dates.h, model.h).
//
//   seq2seq train   [options]            train, report test exact match and BLEU, write heatmaps
//   seq2seq predict --checkpoint F TEXT  translate TEXT (or each line of stdin)
//   seq2seq data    [--count N]          print generated pairs
//   seq2seq bench                        time a training step on bench/torch_anchor.py's `gru` config
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "autograd/debug/profiler.h"
#include "examples/common/args.h"
#include "examples/common/progress.h"
#include "examples/common/ranks.h"
#include "examples/seq2seq/bleu.h"
#include "examples/seq2seq/dates.h"
#include "examples/seq2seq/model.h"
#include "examples/seq2seq/training.h"
#include "dist/data_parallel.h"
#include "plot/plot.h"
#include "qkv.h"

namespace {

using namespace seq2seq;
using qkv::examples::Args;
using qkv::examples::format_duration;
using qkv::examples::make_output_directory;
using qkv::examples::Progress;

using Clock = std::chrono::steady_clock;

// Bounds of the counts data and bench take: far above any use, low enough to end.
constexpr int64_t kMaxPairs = 1'000'000, kMaxBenchSteps = 100'000, kMaxBenchWarmup = 10'000;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Attention heatmap of one translation: a row per output character (decoder step), a column per
// source character, as d2l's show_heatmaps of dec_attention_weight_seq.
void write_heatmap(const std::string& source, const Translation& t, const std::string& path) {
  const qkv::data::Vocab src_vocab = source_vocab(), tgt_vocab = target_vocab();
  qkv::plot::HeatmapSpec spec;
  const std::vector<int64_t> src_ids = encode_source(src_vocab, source);
  spec.rows = static_cast<int>(t.ids.size());
  spec.cols = static_cast<int>(src_ids.size());
  for (const auto& row : t.attention) spec.values.insert(spec.values.end(), row.begin(), row.end());
  auto label = [](const std::string& token) { return token == " " ? std::string("_") : token; };
  for (const int64_t id : src_ids) spec.col_labels.push_back(label(src_vocab.token(id)));
  for (const int64_t id : t.ids) spec.row_labels.push_back(tgt_vocab.token(id));
  spec.title = "\"" + source + "\" -> " + decode_ids(tgt_vocab, t.ids);
  spec.x_label = "source characters (keys)";
  spec.y_label = "decoder steps (queries)";
  spec.value_min = 0.0f;
  spec.value_max = 1.0f;
  spec.cell_size = 14;
  qkv::plot::draw_heatmap(spec).write_png(path);
}

// The options of `seq2seq train`, with their defaults.
Args train_args(int argc, char** argv) {
  return Args(argc, argv,
              {{"seed", "0", "seed of the data, the initialization and the batch order"},
               {"train-size", "8000", "training pairs"},
               {"dev-size", "500", "development pairs, scored after every epoch"},
               {"test-size", "1000", "test pairs, scored at the end"},
               {"embed", "32", "embedding width E"},
               {"hidden", "64", "GRU and attention width H"},
               {"layers", "2", "GRU layers L of the encoder and of the decoder"},
               {"dropout", "0.1", "dropout between GRU layers and on the attention weights"},
               {"batch", "64", "batch size"},
               {"lr", "0.005", "Adam learning rate"},
               {"clip", "1", "gradient clipping: max joint norm"},
               {"epochs", "40", "epochs at most"},
               {"time-limit", "300", "seconds of training at most (checked after every epoch)"},
               {"target", "1.0", "stop once the dev exact match reaches this"},
               {"heatmaps", "4", "attention heatmaps to write (test examples)"},
               {"out", "runs/seq2seq", "directory for the checkpoint and the heatmaps"},
               {"reduce", "library", "under mpirun: add the ranks' gradients in the MPI library's order (library) or in rank order (fixed)"},
               qkv::examples::kReferenceOption},
              "usage: seq2seq train [options]");
}

// How training runs: the seed of the data and of each epoch's batches, the batch size, the clipping
// norm, and when it stops (epochs, seconds of training, dev exact match).
struct Schedule {
  uint64_t seed = 0;
  int64_t epochs = 0, batch_size = 0;
  double time_limit = 0, clip = 0, target = 0;
};

// Where training stands: optimizer steps taken, and seconds spent in them (dev evaluations
// excluded).
struct TrainingState {
  int64_t step = 0;
  double training_seconds = 0;
};

// One step on several ranks (docs/distributed.md): this rank's rows of the global batch, its loss
// scaled by its share of the batch's target tokens, the gradients summed over the ranks, then the
// clipping and the step every rank takes alike. Dropout draws each rank's own stream, keyed by the
// seed, the rank and the step. Returns the batch's mean loss over all ranks.
double train_step_ranks(Seq2Seq& model, qkv::optim::Optimizer& optimizer, const Batch& batch, const Schedule& schedule,
                        int64_t step, qkv::dist::DataParallel& dp) {
  const int rank = dp.group().rank();
  qkv::default_generator().set_state(qkv::examples::keyed_stream(schedule.seed, 1 + static_cast<uint64_t>(rank), step));
  dp.zero_grad();
  double share[1] = {0};
  if (!batch.empty()) {
    const Tensor logits = model.forward(batch.source, batch.source_valid_lens, batch.dec_input);
    const Tensor loss = qkv::nn::functional::sequence_cross_entropy(logits, batch.target, batch.target_valid_lens);
    int64_t tokens = 0;
    for (int64_t i = 0; i < batch.target_valid_lens.numel(); ++i) tokens += batch.target_valid_lens[i];
    const double weight = static_cast<double>(tokens) / static_cast<double>(batch.global_tokens);
    share[0] = loss.item() * weight;
    (loss * static_cast<float>(weight)).backward();
  }
  dp.sum_gradients(!batch.empty());
  dp.group().all_reduce_sum(std::span<double>(share));
  qkv::optim::clip_grad_norm_(model.parameters(), schedule.clip);
  optimizer.step();
  return share[0];
}

// One pass over the training examples in batches drawn with seed + epoch, with a progress line
// (rank 0's); returns the mean loss. With `dp`, this rank's share of each batch.
double train_epoch(Seq2Seq& model, qkv::optim::Optimizer& optimizer, const std::vector<Example>& examples,
                   int64_t epoch, const Schedule& schedule, TrainingState& state, qkv::dist::DataParallel* dp) {
  const qkv::data::Vocab tgt_vocab = target_vocab();
  model.train();
  const std::vector<Batch> batches =
      make_batches(examples, schedule.batch_size, schedule.seed + static_cast<uint64_t>(epoch), tgt_vocab.pad_id(),
                   tgt_vocab.id(kBos), dp ? dp->group().rank() : 0, dp ? dp->group().size() : 1);
  std::optional<Progress> progress;
  if (!dp || dp->group().rank() == 0) progress.emplace("epoch " + std::to_string(epoch), static_cast<int64_t>(batches.size()));
  double loss_sum = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    loss_sum += dp ? train_step_ranks(model, optimizer, batches[i], schedule, state.step, *dp)
                   : train_step(model, optimizer, batches[i], schedule.clip);
    ++state.step;
    if (!progress) continue;
    char stats[64];
    std::snprintf(stats, sizeof stats, "loss %.4f", loss_sum / static_cast<double>(i + 1));
    progress->update(static_cast<int64_t>(i + 1), stats);
  }
  return loss_sum / static_cast<double>(batches.size());
}

// Epochs until the dev exact match reaches the target, the epochs run out or the time limit has
// passed (checked after each epoch), printing a line per epoch.
// On several ranks, rank 0 evaluates and decides, and the others follow its decision.
TrainingState train_until_done(Seq2Seq& model, qkv::optim::Optimizer& optimizer,
                               const std::vector<Example>& examples, const std::vector<DatePair>& dev_pairs,
                               const Schedule& schedule, qkv::dist::DataParallel* dp) {
  TrainingState state;
  for (int64_t epoch = 1; epoch <= schedule.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    const double loss = train_epoch(model, optimizer, examples, epoch, schedule, state, dp);
    state.training_seconds += seconds_since(epoch_start);
    if (dp && dp->group().rank() != 0) {
      int64_t stop[1] = {0};
      dp->group().broadcast(std::span<int64_t>(stop), 0);
      if (stop[0] != 0) break;
      continue;
    }
    const Score dev = evaluate(model, dev_pairs).score;
    std::printf("epoch %3lld  step %6lld  loss %.4f  dev exact %.4f  bleu %.4f  train time %s\n",
                static_cast<long long>(epoch), static_cast<long long>(state.step), loss, dev.exact_match,
                dev.bleu, format_duration(state.training_seconds).c_str());
    std::fflush(stdout);
    const bool reached = dev.exact_match >= schedule.target;
    const bool out_of_time = !reached && state.training_seconds >= schedule.time_limit && epoch < schedule.epochs;
    if (dp) {
      int64_t stop[1] = {reached || out_of_time ? 1 : 0};
      dp->group().broadcast(std::span<int64_t>(stop), 0);
    }
    if (reached) {
      std::printf("stopped: the dev exact match reached --target %g\n", schedule.target);
      break;
    }
    if (out_of_time) {
      std::printf("stopped: %s of training reached --time-limit %g s\n",
                  format_duration(state.training_seconds).c_str(), schedule.time_limit);
      break;
    }
  }
  return state;
}

// The test scores, and the first translations beside what they should be.
void print_test(const Evaluation& test, const std::vector<DatePair>& pairs, const TrainingState& state,
                Clock::time_point start) {
  std::printf(
      "test: exact match %.4f  BLEU %.4f  (%lld pairs)  after %lld steps, %.1f s of training, %.1f s in "
      "all\n",
      test.score.exact_match, test.score.bleu, static_cast<long long>(test.score.count),
      static_cast<long long>(state.step), state.training_seconds, seconds_since(start));
  for (size_t i = 0; i < std::min<size_t>(8, pairs.size()); ++i)
    std::printf("  %-52s => %-10s %s  bleu %.3f\n", pairs[i].source.c_str(), test.predictions[i].c_str(),
                test.predictions[i] == pairs[i].target ? "ok" : ("(want " + pairs[i].target + ")").c_str(),
                bleu_chars(test.predictions[i], pairs[i].target, 2));
}

// OUT/model.safetensors, and the attention heatmaps of the first `heatmaps` test pairs.
void write_outputs(const std::filesystem::path& out, const Seq2Seq& model,
                   const qkv::optim::Optimizer& optimizer, int64_t step,
                   const std::vector<DatePair>& test_pairs, const Evaluation& test, int64_t heatmaps) {
  std::filesystem::create_directories(out);
  qkv::io::save_checkpoint(out / "model.safetensors", model, optimizer, step, config_text(model.config));
  std::printf("checkpoint: %s\n", (out / "model.safetensors").c_str());
  for (int64_t i = 0; i < std::min<int64_t>(heatmaps, static_cast<int64_t>(test_pairs.size())); ++i) {
    const std::string path = (out / ("attention_" + std::to_string(i) + ".png")).string();
    write_heatmap(test_pairs[i].source, test.translations[i], path);
    std::printf("heatmap: %s\n", path.c_str());
  }
}

int train(int argc, char** argv) {
  const Args args = train_args(argc, argv);
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  // Every option is range-checked, and the output directory made and checked, before any work: a
  // typo should not cost a training run.
  args.refuse_positional();
  const Schedule schedule{.seed = static_cast<uint64_t>(args.integer_in("seed", 0, INT64_MAX)),
                          .epochs = args.integer_in("epochs", 1, 100'000),
                          .batch_size = args.integer_in("batch", 1, 65'536),
                          .time_limit = args.number_in("time-limit", 0, 1e9),
                          .clip = args.number_in("clip", 1e-6, 1e30),
                          .target = args.number_in("target", 0, 1)};
  const DataSizes sizes{.train = args.integer_in("train-size", 1, kMaxPairs),
                        .dev = args.integer_in("dev-size", 1, kMaxPairs),
                        .test = args.integer_in("test-size", 1, kMaxPairs)};
  const ModelConfig shape{.embed_size = args.integer_in("embed", 1, 4096),
                          .num_hiddens = args.integer_in("hidden", 1, 4096),
                          .num_layers = args.integer_in("layers", 1, 16),
                          .dropout = static_cast<float>(args.number_in("dropout", 0, 0.99))};
  const double lr = args.number_in("lr", 1e-12, 1e3);
  const std::string reduce = args.str("reduce");
  if (reduce != "library" && reduce != "fixed")
    throw qkv::ValueError("option --reduce is '" + reduce + "'; expected library or fixed");
  const bool fixed_order = reduce == "fixed";
  const int64_t heatmaps = args.integer_in("heatmaps", 0, 1000);
  make_output_directory("out", args.str("out"));
  std::vector<std::string> outputs = {"model.safetensors"};
  for (int64_t i = 0; i < heatmaps; ++i) outputs.push_back("attention_" + std::to_string(i) + ".png");
  for (const std::string& name : outputs) {  // a directory in a file's place would fail after training
    const std::filesystem::path path = std::filesystem::path(args.str("out")) / name;
    if (std::filesystem::exists(path) && !std::filesystem::is_regular_file(path))
      throw qkv::ValueError("option --out: " + path.string() +
                            " is not a file, and training writes one there");
  }

  const bool reference = qkv::examples::use_reference_mode(args);
  qkv::manual_seed(schedule.seed);
  const DateData data = generate_data(schedule.seed, sizes);
  const qkv::data::Vocab src_vocab = source_vocab(), tgt_vocab = target_vocab();
  const std::vector<Example> train_examples = encode_pairs(data.train, src_vocab, tgt_vocab);

  ModelConfig config = shape;
  config.source_vocab = src_vocab.size();
  config.target_vocab = tgt_vocab.size();
  Seq2Seq model(config);
  qkv::optim::Adam optimizer(model.parameters(), {.lr = lr});
  // Under mpirun: every rank from rank 0's weights; rank 0 prints, evaluates and writes.
  qkv::dist::World& world = qkv::examples::world();
  std::optional<qkv::dist::DataParallel> dp;
  if (world.size() > 1) dp.emplace(model, world.group(), qkv::dist::ReducerOptions{.fixed_order = fixed_order});
  if (world.is_root()) {
    std::printf("seq2seq: %zu train / %zu dev / %zu test pairs, %lld parameters, %s%d thread(s)%s\n",
                data.train.size(), data.dev.size(), data.test.size(), static_cast<long long>(model.num_parameters()),
                world.size() > 1 ? (std::to_string(world.size()) + " ranks of ").c_str() : "", qkv::get_num_threads(),
                reference ? (std::string(", ") + qkv::examples::kReferenceModeNote).c_str() : "");
    std::printf("%s", model.summary().c_str());
  }

  const auto start = Clock::now();
  const TrainingState state = train_until_done(model, optimizer, train_examples, data.dev, schedule, dp ? &*dp : nullptr);
  if (!world.is_root()) return 0;
  const Evaluation test = evaluate(model, data.test);
  print_test(test, data.test, state, start);
  write_outputs(args.str("out"), model, optimizer, state.step, data.test, test, heatmaps);
  return 0;
}

int predict(int argc, char** argv) {
  const Args args(argc, argv,
                  {{"checkpoint", "runs/seq2seq/model.safetensors", "a checkpoint written by seq2seq train"},
                   {"heatmap", "", "write the attention of the first text to this PNG"},
                   qkv::examples::kReferenceOption},
                  "usage: seq2seq predict [--checkpoint FILE] [--heatmap FILE.png] [TEXT...]\n"
                  "translates each TEXT, or each line of stdin when none is given");
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  if (args.given("heatmap") && args.str("heatmap").empty())
    throw qkv::ValueError("option --heatmap is empty; expected a .png file");
  if (args.str("checkpoint").empty()) throw qkv::ValueError("option --checkpoint is empty; expected a file");
  if (qkv::examples::use_reference_mode(args)) std::fprintf(stderr, "seq2seq: %s\n", qkv::examples::kReferenceModeNote);
  const std::unique_ptr<Seq2Seq> model = load_model(args.str("checkpoint"));
  const qkv::data::Vocab src_vocab = source_vocab(), tgt_vocab = target_vocab();
  // Each text is translated as it comes, so that an endless stdin streams in bounded memory, and
  // output line N answers input line N (a blank line answers a blank line).
  int64_t lines = 0;
  bool drawn = args.str("heatmap").empty();
  // `where` names the text in an error: "argument 2", "stdin line 3".
  const auto translate = [&](const std::string& text, const std::string& where) {
    if (!text.empty()) {
      std::vector<int64_t> source;
      try {
        source = encode_source(src_vocab, text);
      } catch (const qkv::Error& e) {
        throw qkv::ValueError(where + ": " + e.what());
      }
      const std::vector<Translation> t = greedy_decode(*model, {source}, tgt_vocab.id(kBos), tgt_vocab.id(kEos),
                                                       tgt_vocab.pad_id(), kMaxOutputLen);
      std::printf("%s => %s", text.c_str(), decode_ids(tgt_vocab, t[0].ids).c_str());
      if (!drawn) write_heatmap(text, t[0], args.str("heatmap"));
      drawn = true;
    }
    std::printf("\n");
    std::fflush(stdout);  // a program reading the answers line by line gets each at once
    ++lines;
  };
  for (const std::string& text : args.positional()) translate(text, "argument " + std::to_string(lines + 1));
  int64_t line_number = 0;
  for (std::string line; args.positional().empty() && qkv::examples::read_line(std::cin, line, line_number);)
    translate(line, "stdin line " + std::to_string(line_number));
  if (lines == 0) throw qkv::ValueError("no text given (arguments or stdin)");
  if (!drawn) std::fprintf(stderr, "seq2seq predict: every text was blank, so no --heatmap was drawn\n");
  return 0;
}

int data(int argc, char** argv) {
  const Args args(argc, argv, {{"seed", "0", "seed"}, {"count", "20", "pairs to print"}},
                  "usage: seq2seq data [--seed S] [--count N]");
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  args.refuse_positional();
  const int64_t count = args.integer_in("count", 1, kMaxPairs);
  const auto seed = static_cast<uint64_t>(args.integer_in("seed", 0, INT64_MAX));
  for (const DatePair& p : generate_pairs(count, seed))
    std::printf("%-52s => %s\n", p.source.c_str(), p.target.c_str());
  return 0;
}

// The `gru` config of the PyTorch anchor (bench/torch_anchor.py, bench_gru): vocabulary 200,
// embedding 32, hidden 32, 2 layers, batch 64, 10 source and target steps, source valid lengths in
// [3, 10], Adam lr 5e-3, clipping at norm 1, dropout 0.1; the loss is the plain cross-entropy over
// all B·T targets, the decoder reading the targets themselves, as in the anchor. The median of 30
// steps after 5 warm-up steps, in the anchor's output format.
int bench(int argc, char** argv) {
  const Args args(
      argc, argv,
      {{"steps", "30", "timed steps"},
       {"warmup", "5", "untimed steps first"},
       {"profile", "false", "then print the op profile of --steps more steps (autograd/debug/profiler.h)"},
       qkv::examples::kReferenceOption},
      "usage: seq2seq bench [--steps N] [--warmup N] [--profile] [--reference]   (threads: QKV_NUM_THREADS)");
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  args.refuse_positional();
  const bool reference = qkv::examples::use_reference_mode(args);
  const int64_t warmup = args.integer_in("warmup", 0, kMaxBenchWarmup);
  const int64_t steps = args.integer_in("steps", 1, kMaxBenchSteps);
  constexpr int64_t V = 200, B = 64, T = 10;
  qkv::manual_seed(0);
  Seq2Seq model({.source_vocab = V,
                 .target_vocab = V,
                 .embed_size = 32,
                 .num_hiddens = 32,
                 .num_layers = 2,
                 .dropout = 0.1f});
  qkv::optim::Adam optimizer(model.parameters(), {.lr = 5e-3});
  const IndexTensor src = qkv::randint(0, V, {B, T}), tgt = qkv::randint(0, V, {B, T});
  const IndexTensor valid_lens = qkv::randint(3, T + 1, {B});
  auto step = [&] {
    const Tensor logits = model.forward(src, valid_lens, tgt);
    const Tensor loss = qkv::nn::functional::cross_entropy(logits.reshape({B * T, V}), tgt.reshape({B * T}));
    optimizer.zero_grad();
    loss.backward();
    qkv::optim::clip_grad_norm_(model.parameters(), 1.0);
    optimizer.step();
  };
  std::vector<double> times;
  for (int64_t i = 0; i < warmup + steps; ++i) {
    const auto t0 = Clock::now();
    step();
    if (i >= warmup) times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("config=gru threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mib=%.0f mode=%s\n",
              qkv::get_num_threads(), median * 1e3, static_cast<double>(B * T) / median,
              static_cast<double>(usage.ru_maxrss) / 1024.0, reference ? "reference" : "fast");
  if (args.flag("profile")) {
    // Over as many steps again: on a shared machine one step's profile is mostly where the
    // scheduler happened to preempt it.
    qkv::Profiler profiler;
    for (int64_t i = 0; i < steps; ++i) step();
    profiler.stop();
    std::printf("%s", profiler.report().c_str());
  }
  return 0;
}

const char* kUsage =
    "usage: seq2seq COMMAND [options]   (COMMAND --help for its options)\n"
    "  train     train on generated dates, report test exact match and BLEU, write heatmaps\n"
    "  predict   translate dates with a trained checkpoint\n"
    "  data      print generated (source, target) pairs\n"
    "  bench     time a training step on bench/torch_anchor.py's `gru` config\n";

}  // namespace

int main(int argc, char** argv) {
  if (!qkv::examples::start_world(argc, argv, "seq2seq")) return 1;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  try {
    qkv::examples::refuse_many_ranks("seq2seq", command);
    if (command == "train") return train(argc - 2, argv + 2);
    if (command == "predict") return predict(argc - 2, argv + 2);
    if (command == "data") return data(argc - 2, argv + 2);
    if (command == "bench") return bench(argc - 2, argv + 2);
    if (command == "-h" || command == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "seq2seq: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    return qkv::examples::fail("seq2seq " + command, e.what());
  }
}
