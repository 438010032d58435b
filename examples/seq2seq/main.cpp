// seq2seq: encoder-decoders — d2l's GRU with Bahdanau attention, and the Transformer — on two
// tasks: dates written in words into ISO 8601, and words into their pronunciations from the CMU
// Pronouncing Dictionary (examples/seq2seq/task.h, model.h). Its commands are the table in main()
// (`seq2seq --help`).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "examples/common/program.h"
#include "examples/common/timing.h"
#include "examples/seq2seq/dates.h"
#include "examples/seq2seq/figures.h"
#include "examples/seq2seq/model.h"
#include "examples/seq2seq/training.h"
#include "qkv.h"
#include "tensor/reference_mode.h"

namespace {

using namespace seq2seq;
using qkv::examples::Args;

// Bounds of the counts data and bench take: far above any use, low enough to end.
constexpr int64_t kMaxBenchSteps = 100'000, kMaxBenchWarmup = 10'000;

int cmd_train(const Args& a) {
  qkv::examples::start_command(a, "seq2seq");
  TrainOptions o;
  static_cast<qkv::examples::RunOptions&>(o) = qkv::examples::run_options_from(a);
  if (a.given("out")) {  // --out, the older name of --run
    if (a.given("run")) throw qkv::ValueError("option --out is the older name of --run; give one of the two");
    o.run_dir = qkv::examples::directory_option(a, "out");
  }
  o.heatmaps = a.integer_in("heatmaps", 0, 1000);
  o.target = a.number_in("target", 0, 1);
  o.cache = a.str("cache");
  const Config config = qkv::examples::train_config<Config>(a, o, "epochs", {"heatmaps", "out", "time-limit", "target", "cache"}, [&] {
    // The shipped defaults of the task and model, then every option given.
    Config c = Config::preset(a.str("task"), a.str("model"));
    qkv::examples::read_options(a, c);
    c.validate();
    return c;
  });
  if (a.given("time-limit")) o.time_limit = a.number_in("time-limit", 0, 1e9);  // else the run's task's
  qkv::examples::announce_training("seq2seq", o);
  train(config, o);
  return 0;
}

int cmd_predict(const Args& args) {
  qkv::examples::start_command(args, "seq2seq", /*announce=*/true, /*positional=*/true);
  if (args.given("heatmap") && args.str("heatmap").empty())
    throw qkv::ValueError("option --heatmap is empty; expected a .png file");
  if (args.given("checkpoint") && args.str("checkpoint").empty())
    throw qkv::ValueError("option --checkpoint is empty; expected a file");
  // The model as training ended (last.safetensors): the one whose test scores train printed.
  const std::filesystem::path run = qkv::examples::directory_option(args, "run");
  if (!args.given("checkpoint") && !std::filesystem::exists(run / "last.safetensors"))
    throw qkv::ValueError(run.string() + " (--run) holds no seq2seq run (no last.safetensors)");
  const std::string checkpoint = args.given("checkpoint") ? args.str("checkpoint") : (run / "last.safetensors").string();
  const LoadedModel loaded = load_model(checkpoint);
  Translator& model = *loaded.model;
  const std::unique_ptr<Task> task = make_task(loaded.config.task);
  const int64_t beam = args.integer_in("beam", 1, 64), n_best = args.integer_in("n-best", 1, 64);
  const double length_penalty = args.number_in("length-penalty", 0, 10);
  if (n_best > beam)
    throw qkv::ValueError("option --n-best is " + std::to_string(n_best) + "; expected at most --beam (" +
                          std::to_string(beam) + ")");
  // Each text is translated as it comes, so that an endless stdin streams in bounded memory, and
  // output line N answers input line N (a blank line answers a blank line); with --n-best above 1,
  // the alternatives follow on lines of their own, each with its score.
  int64_t lines = 0;
  bool drawn = args.str("heatmap").empty();
  // `where` names the text in an error: "argument 2", "stdin line 3".
  const auto translate_text = [&](const std::string& text, const std::string& where) {
    if (!text.empty()) {
      std::vector<int64_t> source;
      try {
        source = task->encode_source(text);
      } catch (const qkv::Error& e) {
        throw qkv::ValueError(where + ": " + e.what());
      }
      const auto size = static_cast<int64_t>(source.size());
      const std::vector<qkv::nn::Hypothesis> best =
          translate(model, {source}, decode_options(*task, size, beam, length_penalty, n_best))[0];
      std::printf("%s => %s", text.c_str(), task->decode_target(best[0].ids).c_str());
      if (n_best > 1) std::printf("  (score %.4f)", best[0].score);
      for (size_t i = 1; i < best.size(); ++i)
        std::printf("\n  %zu. %s  (score %.4f)", i + 1, task->decode_target(best[i].ids).c_str(), best[i].score);
      if (!drawn) write_heatmap(model, *task, text, best[0].ids, args.str("heatmap"));
      drawn = true;
    }
    std::printf("\n");
    std::fflush(stdout);  // a program reading the answers line by line gets each at once
    ++lines;
  };
  for (const std::string& text : args.positional()) translate_text(text, "argument " + std::to_string(lines + 1));
  int64_t line_number = 0;
  for (std::string line; args.positional().empty() && qkv::examples::read_line(std::cin, line, line_number);)
    translate_text(line, "stdin line " + std::to_string(line_number));
  if (lines == 0) throw qkv::ValueError("no text given (arguments or stdin)");
  if (!drawn) std::fprintf(stderr, "seq2seq predict: every text was blank, so no --heatmap was drawn\n");
  return 0;
}

int cmd_data(const Args& args) {
  qkv::examples::start_command(args, "seq2seq");
  const int64_t count = args.integer_in("count", 1, kMaxPairs);
  const auto seed = static_cast<uint64_t>(args.integer_in("seed", 0, INT64_MAX));
  const std::unique_ptr<Task> task = make_task(args.str("task"));
  const TaskData data = task->load(seed, count, 1, 1, args.str("cache"));
  for (size_t i = 0; i < std::min<size_t>(static_cast<size_t>(count), data.train.size()); ++i) {
    const Pair& p = data.train[i];
    std::printf("%-52s => %s", p.source.c_str(), p.targets[0].c_str());
    for (size_t j = 1; j < p.targets.size(); ++j) std::printf("  |  %s", p.targets[j].c_str());
    std::printf("\n");
  }
  return 0;
}

// The test pairs of a run decoded at each --beams width, timed, then the error by source length at
// the run's own beam and the two figures (examples/seq2seq/figures.h), in RUN/figures.
int cmd_figures(const Args& args) {
  qkv::examples::start_command(args, "seq2seq");
  const std::filesystem::path run = qkv::examples::directory_option(args, "run");
  if (!std::filesystem::exists(run / "last.safetensors"))
    throw qkv::ValueError(run.string() + " (--run) holds no seq2seq run (no last.safetensors)");
  std::vector<int64_t> beams;
  for (const std::string& b : qkv::examples::split_list("beams", args.str("beams"))) {
    const int64_t width = std::atoll(b.c_str());
    if (width < 1 || width > 64 || std::to_string(width) != b)
      throw qkv::ValueError("option --beams: '" + b + "' is not a beam width; expected integers 1 .. 64");
    beams.push_back(width);
  }
  const LoadedModel loaded = load_model(run / "last.safetensors");
  const Config& c = loaded.config;
  const std::unique_ptr<Task> task = make_task(c.task);
  const std::vector<Pair> test =
      task->load(static_cast<uint64_t>(c.seed), c.train_size, c.dev_size, c.test_size, args.str("cache")).test;
  if (std::find(beams.begin(), beams.end(), c.beam) == beams.end()) beams.push_back(c.beam);
  std::sort(beams.begin(), beams.end());
  const std::vector<BeamPoint> sweep = beam_sweep(*loaded.model, *task, test, beams, c.length_penalty);
  for (const BeamPoint& p : sweep)
    std::printf("beam %2lld: %s  (%.1f s)\n", static_cast<long long>(p.beam),
                task->describe(p.predictions, test).c_str(), p.seconds);
  const auto own = std::find_if(sweep.begin(), sweep.end(), [&](const BeamPoint& p) { return p.beam == c.beam; });
  std::filesystem::create_directories(run / "figures");
  for (const auto& path : write_figures(error_by_length(*task, own->predictions, test), sweep, c.task, run / "figures"))
    std::printf("figure: %s\n", path.c_str());
  return 0;
}

// Two configs. `gru`, that of the PyTorch anchor (bench/torch_anchor.py, bench_gru): vocabulary
// 200, embedding 32, hidden 32, 2 layers, batch 64, 10 source and target steps, source valid
// lengths in [3, 10], Adam lr 5e-3, clipping at norm 1, dropout 0.1; the loss is the plain
// cross-entropy over all B·T targets, the decoder reading the targets themselves, as in the anchor.
// `g2p`: the Transformer of the cmudict preset (`train --task cmudict --model transformer`) on its
// vocabularies, batch 128 of 10 source and target steps, source valid lengths in [3, 10]. The
// median of --steps steps after --warmup warm-up steps, in the anchor's output format.
int cmd_bench(const Args& args) {
  qkv::examples::start_command(args, "seq2seq");
  const bool reference = qkv::reference_mode();
  const int64_t warmup = args.integer_in("warmup", 0, kMaxBenchWarmup);
  const int64_t steps = args.integer_in("steps", 1, kMaxBenchSteps);
  const std::string config = args.str("config");
  qkv::examples::check_name("config", config, {"gru", "g2p"});
  const bool g2p = config == "g2p";
  const int64_t B = g2p ? 128 : 64, T = 10;
  qkv::manual_seed(0);
  ModelConfig m{.source_vocab = 200, .target_vocab = 200, .embed_size = 32, .num_hiddens = 32, .num_layers = 2,
                .dropout = 0.1f};
  if (g2p) m = Config::preset("cmudict", "transformer").model;
  const std::unique_ptr<Translator> model = make_translator(m);
  const int64_t V_src = m.source_vocab, V = m.target_vocab;
  qkv::optim::Adam optimizer(model->parameters(), {.lr = g2p ? 1e-3 : 5e-3});
  const IndexTensor src = qkv::randint(0, V_src, {B, T}), tgt = qkv::randint(0, V, {B, T});
  const IndexTensor valid_lens = qkv::randint(3, T + 1, {B});
  qkv::examples::TrainStep train_step(*model, optimizer, {.clip = 1.0});
  const auto step = [&] {
    train_step(B, 0, [&](const qkv::examples::Rows&) {
      const Tensor logits = model->forward(src, valid_lens, tgt);
      return qkv::examples::Share{qkv::nn::functional::cross_entropy(logits.reshape({B * T, V}), tgt.reshape({B * T})),
                                  B * T};
    });
  };
  const qkv::examples::StepTimes t = qkv::examples::time_steps(step, warmup, steps);
  std::printf("config=%s threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mib=%.0f %s mode=%s\n",
              config.c_str(), qkv::get_num_threads(), t.wall * 1e3, static_cast<double>(B * T) / t.wall, t.peak_rss_mib,
              qkv::examples::flop_figures(t).c_str(), reference ? "reference" : "fast");
  if (args.flag("profile")) qkv::examples::time_steps(step, 0, 0, steps);
  return 0;
}

std::vector<Args::Option> train_options() {
  std::vector<Args::Option> o = qkv::examples::options_of(Config{});
  for (const Args::Option& more : qkv::examples::run_options("runs/seq2seq")) o.push_back(more);
  o.insert(o.end(), {{"time-limit", "", "seconds of training at most, checked after every epoch (default: 300 for dates, 900 for cmudict)"},
                     {"target", "1", "stop once the dev exact match reaches this"},
                     {"cache", "cache/cmudict", "where the cmudict task's dictionary is fetched to, or copied by hand"},
                     {"out", "", "the older name of --run"},
                     {"heatmaps", "4", "attention heatmaps to write (test examples) to RUN/figures"},
                     qkv::examples::kThreadsOption,
                     qkv::examples::kReferenceOption});
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::examples::run_program(
      argc, argv,
      {"seq2seq", "encoder-decoders (d2l's GRU with Bahdanau attention, the Transformer) on dates and pronunciations",
       {qkv::examples::Command{"train", "train a --model on a --task, report its test scores, write attention heatmaps",
                               train_options(), cmd_train}
            .on_ranks(),
        qkv::examples::Command{"predict", "translate each TEXT, or each line of stdin when none is given, with a trained run",
         {qkv::examples::run_option("runs/seq2seq"),
          {"checkpoint", "", "a checkpoint file instead of the run's last.safetensors (the model train tested)"},
          {"heatmap", "", "write the attention of the first text to this PNG"},
          {"beam", "1", "beam size (1: greedy search)"},
          {"n-best", "1", "outputs to print per text, best first, with their scores (at most --beam)"},
          {"length-penalty", "0", "the beam's length penalty alpha: log p / ((5 + |y|) / 6)^alpha"},
          qkv::examples::kThreadsOption,
          qkv::examples::kReferenceOption},
         cmd_predict}.with_arguments("[TEXT...]"),
        {"data", "print training pairs of a task: generated dates, or the dictionary's words",
         {{"task", "dates", "dates or cmudict"},
          {"seed", "0", "seed (dates)"},
          {"count", "20", "pairs to print"},
          {"cache", "cache/cmudict", "where the cmudict task's dictionary is fetched to"}},
         cmd_data},
        {"figures", "decode a run's test pairs at several beam widths, timed; draw error by length and by beam",
         {qkv::examples::run_option("runs/seq2seq"),
          {"beams", "1,2,4,8", "the beam widths, and the run's own"},
          {"cache", "cache/cmudict", "where the cmudict task's dictionary is fetched to"},
          qkv::examples::kThreadsOption,
          qkv::examples::kReferenceOption},
         cmd_figures},
        {"bench", "time a training step: bench/torch_anchor.py's `gru` config, or `g2p`, the cmudict Transformer",
         {{"config", "gru", "gru or g2p"},
          {"steps", "30", "timed steps"},
          {"warmup", "5", "untimed steps first"},
          {"profile", "false", "then print the op profile of --steps more steps (autograd/debug/profiler.h)"},
          qkv::examples::kThreadsOption,
          qkv::examples::kReferenceOption},
         cmd_bench}}});
}
