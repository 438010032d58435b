#include "examples/long_range/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "autograd/grad_mode.h"
#include "nn/functional/loss.h"
#include "nn/performer.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "examples/common/memory.h"
#include "examples/common/program.h"
#include "examples/common/timing.h"
#include "tensor/error.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace long_range {

namespace {

// The generators' keys: the test set's is a constant, the training batches' a function of --seed
// that never equals it for a seed a user types (below 2^62).
constexpr uint64_t kTestKey = 0xF00D5EEDCAFE1234ULL;
uint64_t training_key(uint64_t seed) { return (seed << 1) | 1U; }

int64_t count_correct(const Tensor& logits, const Batch& batch) {
  const IndexTensor predicted = logits.detach().argmax(-1);  // (B, T)
  const int64_t B = batch.ids.size(0), T = batch.ids.size(1);
  int64_t correct = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < batch.valid_lens[b]; ++t) correct += predicted[b * T + t] == batch.tags[b * T + t];
  return correct;
}

// The training steps whose forward ran on Performer's current random features, or -1 when the
// model has no Performer or never drew them again. Performer draws them afresh every redraw_every
// training forwards (nn/performer.h; Choromanski et al. 2021 redraw periodically): a model adapted
// to one draw scores far lower on the next until training adapts it again, so a run that ends just
// after a redraw is tested on features it has barely trained with.
int64_t steps_on_current_draw(const TaggerModel& model, int64_t steps) {
  for (size_t i = 0; i < model.encoder->blocks->size(); ++i) {
    const auto block = model.encoder->blocks->at<qkv::nn::TransformerEncoderBlock>(i);
    const auto performer = std::dynamic_pointer_cast<qkv::nn::Performer>(block->attention);
    if (performer && performer->redraw_every > 0 && steps >= performer->redraw_every)
      return steps % performer->redraw_every + 1;
  }
  return -1;
}

}  // namespace

int64_t reach(const ModelOptions& model) { return model.layers * model.window; }

void Config::validate() const { check_options(*this); }

const qkv::examples::RunLayout kRunLayout{.program = "long_range",
                                          .fresh_replaces_run = true,
                                          .budget_key = "steps",
                                          .read_config = qkv::examples::config_reader<Config>()};

void check_options(const Config& o) {
  check_task(o.task);
  check_model(o.model, o.task);
  if (o.steps < 1 || o.steps > 1000000)
    throw qkv::ValueError("--steps " + std::to_string(o.steps) + " is outside 1 .. 1000000");
  if (o.batch < 1 || o.batch > 1024) throw qkv::ValueError("--batch " + std::to_string(o.batch) + " is outside 1 .. 1024");
  if (!(o.lr > 0 && o.lr <= 1)) throw qkv::ValueError("--lr " + std::to_string(o.lr) + " is outside (0, 1]");
  if (o.test_sequences < 1 || o.test_sequences > 100000)
    throw qkv::ValueError("--test " + std::to_string(o.test_sequences) + " is outside 1 .. 100000");
  qkv::examples::check_name("matmul", o.matmul, {"highest", "medium"});
}

double training_bytes_estimate(const Config& c) {
  const double L = static_cast<double>(c.task.length), d = static_cast<double>(c.model.d_model);
  const double H = static_cast<double>(c.model.heads), layers = static_cast<double>(c.model.layers);
  // The keys each query's weights cover: all for dense attention, fewer for the others.
  double keys = L;
  if (c.model.attention == "window") keys = std::min(L, 2.0 * static_cast<double>(c.model.window) + 1);
  if (c.model.attention == "performer" || c.model.attention == "linformer")
    keys = c.model.features > 0 ? static_cast<double>(c.model.features) : 256;
  const double test_set = static_cast<double>(c.test_sequences) * L * 3 * 8;  // tokens, tags, needles: int64
  const double step = 4.0 * 2 * static_cast<double>(c.batch) * L * layers * (24 * d + 2 * H * keys);
  return test_set + step;
}

std::vector<Sequence> test_set(const TaskOptions& task, int64_t count) { return generate(task, count, kTestKey); }

Evaluation evaluate(TaggerModel& model, const std::vector<Sequence>& set, int64_t batch) {
  const qkv::NoGradGuard no_grad;
  model.eval();
  double loss_sum = 0;
  int64_t tokens = 0, correct = 0;
  for (size_t first = 0; first < set.size(); first += static_cast<size_t>(batch)) {
    const Batch b = make_batch(set, first, std::min(static_cast<size_t>(batch), set.size() - first));
    const Tensor logits = model.forward(b.ids, b.valid_lens);
    loss_sum += qkv::nn::functional::sequence_cross_entropy(logits, b.tags, b.valid_lens).item() * b.tokens;
    correct += count_correct(logits, b);
    tokens += b.tokens;
  }
  model.train();
  return {static_cast<double>(correct) / static_cast<double>(tokens), loss_sum / static_cast<double>(tokens)};
}

namespace {

// A row of metrics.csv, and of each checkpoint's history: the training loss and accuracy of the
// steps since the last one (fresh batches the model has never seen: there is no validation set).
inline constexpr const char* kColumns[] = {"step", "train_loss", "train_accuracy", "lr", "seconds"};
using LogRow = qkv::examples::MetricsRow<kColumns>;

using State = qkv::examples::TrainingState<Config, LogRow>;

// The sums of the steps since the last row.
struct Window {
  double loss = 0;
  int64_t tokens = 0, correct = 0;
};

// Everything that can refuse a training: the options, and a test set and a step that must fit in
// the memory available (a test set of 100,000 sequences of 4,096 tokens alone takes 9.2 GiB).
void check_training(const Config& c) {
  check_options(c);
  qkv::examples::check_fits("long_range train", training_bytes_estimate(c),
                            std::to_string(c.test_sequences) + " test sequences and batches of " +
                                std::to_string(c.batch) + " of " + std::to_string(c.task.length) + " tokens, d_model " +
                                std::to_string(c.model.d_model) + ", " + std::to_string(c.model.layers) + " layers",
                            "--test, --batch, --length, --d-model or --layers");
}

// A result that knows the model's size, after the line that describes the run.
TrainResult describe(const Config& o, int64_t parameters, bool verbose) {
  if (verbose)
    std::printf("%s attention, length %lld (sequences of %lld .. %lld tokens), %lld keys, %lld values; %lld "
                "parameters; %lld steps of %lld sequences\n",
                o.model.attention.c_str(), static_cast<long long>(o.task.length), static_cast<long long>(shortest(o.task)),
                static_cast<long long>(o.task.length), static_cast<long long>(o.task.keys),
                static_cast<long long>(o.task.values), static_cast<long long>(parameters), static_cast<long long>(o.steps),
                static_cast<long long>(o.batch));
  TrainResult r;
  r.parameters = parameters;
  r.config = o;
  return r;
}

// A training batch of fresh sequences.
Batch draw_batch(const Config& c, qkv::Generator& data) {
  std::vector<Sequence> sequences;
  for (int64_t b = 0; b < c.batch; ++b) sequences.push_back(draw_sequence(c.task, data));
  return make_batch(sequences, 0, sequences.size());
}

// A row after step k: printed, kept, and saved with the checkpoints (the best: the lowest training
// loss, over fresh batches the model has never seen). The data generator's state goes with them,
// so that a resumed run draws the batches an uninterrupted one would have.
void log_and_save(State& state, qkv::examples::RunDirectory& run, TaggerModel& model,
                  const qkv::optim::Optimizer& optimizer, const qkv::Generator& data, int64_t k, Window& w,
                  double seconds, bool verbose) {
  const LogRow row{k, w.loss / static_cast<double>(w.tokens), static_cast<double>(w.correct) / static_cast<double>(w.tokens),
                   optimizer.lr(), seconds};
  w = {};
  if (verbose) {
    std::printf("step %6lld/%lld  loss %.4f  train acc %5.1f%%  %.1f s\n", static_cast<long long>(k),
                static_cast<long long>(state.config.steps), row.loss, 100.0 * row.score, seconds);
    std::fflush(stdout);
  }
  const qkv::GeneratorState g = data.state();
  state.record(run, model, optimizer, k, row, row.loss, row.loss < state.best,
               {{"data_generator", qkv::io::Json(qkv::io::Json::Array{qkv::io::Json(static_cast<int64_t>(g.seed)),
                                                                      qkv::io::Json(static_cast<int64_t>(g.offset))})}});
}

// The training batches' generator: a function of the seed, or where the resumed checkpoint left it.
qkv::Generator data_generator(const State& state) {
  qkv::Generator data(training_key(state.config.seed));
  const qkv::io::Json* saved = state.last ? state.last->state.extra("data_generator") : nullptr;
  if (saved && saved->is_array() && saved->as_array().size() == 2)
    data.set_state({static_cast<uint64_t>(saved->as_array()[0].as_int()), static_cast<uint64_t>(saved->as_array()[1].as_int())});
  return data;
}

// The end of a training: Performer's note, the speed, and the model as it ends on the test set.
TrainResult finish(TrainResult r, const State& state, TaggerModel& model, int64_t steps_run,
                   bool verbose) {
  r.steps_on_current_draw = steps_on_current_draw(model, steps_run);  // Performer counts this call's forwards
  if (verbose && r.steps_on_current_draw >= 0 && r.steps_on_current_draw <= kRecentDraw)
    std::printf("note: Performer drew its random features again for the last %lld step(s) of training; a model "
                "adapted to the earlier draw scores lower on a new one until it adapts again, so the test "
                "accuracy below understates what this budget can reach (a budget not just past a multiple of "
                "1000 steps avoids it)\n",
                static_cast<long long>(r.steps_on_current_draw));
  r.ms_per_step = 1e3 * r.train_seconds / static_cast<double>(std::max<int64_t>(steps_run, 1));
  const size_t tail = std::max<size_t>(1, r.losses.size() / 10);
  for (size_t i = r.losses.size() - std::min(tail, r.losses.size()); i < r.losses.size(); ++i)
    r.final_loss += r.losses[i] / static_cast<double>(tail);
  const std::vector<Sequence> test = test_set(state.config.task, state.config.test_sequences);
  const Evaluation e = evaluate(model, test, state.config.batch);
  r.test_accuracy = e.accuracy, r.test_loss = e.loss;
  r.stats = task_stats(state.config.task, test, reach(state.config.model));
  return r;
}

}  // namespace

TrainResult train(const TrainOptions& o) {
  qkv::examples::RunDirectory run(o.run_dir, kRunLayout, o.resume, o.ranks.group);  // refusals: nothing written
  State state = qkv::examples::start_or_resume<Config, LogRow>(run, static_cast<const Config&>(o), std::numeric_limits<double>::infinity());
  check_training(state.config);
  qkv::examples::use_matmul_precision(state.config.matmul, /*saved_run=*/state.last.has_value());
  qkv::manual_seed(state.config.seed);  // the initialization and Performer's features
  TaggerModel model(state.config.model, state.config.task);
  qkv::optim::AdamW optimizer(model.parameters(), {.lr = state.config.lr, .weight_decay = state.config.weight_decay});
  qkv::optim::WarmupLR schedule(optimizer, std::min<int64_t>(100, state.config.steps / 10), state.config.steps);
  run.open();
  TrainResult r = describe(state.config, model.num_parameters(), o.verbose);
  qkv::examples::TrainStep step(model, optimizer, {.seed = state.config.seed, .clip = 1.0});
  int64_t k = state.load(model, optimizer);
  schedule.set_last_step(k);
  qkv::Generator data = data_generator(state);
  const int64_t log_every = o.log_every > 0 ? o.log_every : std::max<int64_t>(1, state.config.steps / 10), first = k;
  const double seconds_before = state.seconds();
  qkv::examples::Stopwatch clock;
  Window w;
  model.train();
  for (int64_t logged = 0; k < state.config.steps && logged != o.stop_after;) {
    clock.start();
    const Batch batch = draw_batch(state.config, data);
    const auto result = step(state.config.batch, k, [&](const qkv::examples::Rows&) {
      const Tensor logits = model.forward(batch.ids, batch.valid_lens);
      w.correct += count_correct(logits, batch);
      return qkv::examples::Share{qkv::nn::functional::sequence_cross_entropy(logits, batch.tags, batch.valid_lens), batch.tokens};
    });
    if (!result.finite())
      throw qkv::Error("training diverged at step " + std::to_string(k + 1) + ": the loss is " + std::to_string(result.loss) +
                       "; lower --lr (now " + std::to_string(state.config.lr) + ")");
    schedule.step();
    ++k, r.losses.push_back(result.loss), w.loss += result.loss * static_cast<double>(batch.tokens), w.tokens += batch.tokens;
    clock.stop();
    if (k % log_every != 0 && k != state.config.steps) continue;
    log_and_save(state, run, model, optimizer, data, k, w, seconds_before + clock.seconds(), o.verbose);
    ++logged;
  }
  r.train_seconds = clock.seconds();
  return finish(std::move(r), state, model, k - first, o.verbose);
}

void check_compare(const CompareOptions& c) {
  if (c.lengths.empty()) throw qkv::ValueError("--lengths is empty; expected lengths such as 512,2048");
  if (c.mechanisms.empty()) throw qkv::ValueError("--mechanisms is empty; expected some of " + mechanism_list());
  if (std::set<int64_t>(c.lengths.begin(), c.lengths.end()).size() != c.lengths.size())
    throw qkv::ValueError("--lengths names a length twice");
  for (const std::string& m : c.mechanisms)
    if (std::find(mechanisms().begin(), mechanisms().end(), m) == mechanisms().end())
      throw qkv::ValueError("--mechanisms: '" + m + "' is unknown; expected some of " + mechanism_list());
  if (std::set<std::string>(c.mechanisms.begin(), c.mechanisms.end()).size() != c.mechanisms.size())
    throw qkv::ValueError("--mechanisms names a mechanism twice");
  if (c.steps.size() != c.lengths.size())
    throw qkv::ValueError("--steps gives " + std::to_string(c.steps.size()) + " counts for " +
                          std::to_string(c.lengths.size()) + " lengths; expected one count, or one per length");
  for (size_t i = 0; i < c.lengths.size(); ++i)
    for (const std::string& m : c.mechanisms) {
      TrainOptions o = c.base;
      o.task.length = c.lengths[i], o.steps = c.steps[i], o.model.attention = m;
      check_options(o);
    }
}

std::vector<CompareRow> compare(const CompareOptions& c) {
  check_compare(c);
  for (size_t i = 0; i < c.lengths.size(); ++i)  // every run's directory, before the first trains
    for (const std::string& m : c.mechanisms)
      qkv::examples::RunDirectory(std::filesystem::path(c.base.run_dir) / (m + "-" + std::to_string(c.lengths[i])),
                                  kRunLayout, false);
  std::vector<CompareRow> rows;
  for (size_t i = 0; i < c.lengths.size(); ++i)
    for (const std::string& m : c.mechanisms) {
      TrainOptions o = c.base;
      o.task.length = c.lengths[i], o.steps = c.steps[i], o.model.attention = m;
      if (o.verbose) std::printf("\n== %s at length %lld\n", m.c_str(), static_cast<long long>(c.lengths[i]));
      o.run_dir = (std::filesystem::path(c.base.run_dir) / (m + "-" + std::to_string(c.lengths[i]))).string();
      CompareRow row{m, c.lengths[i], c.steps[i], train(o)};
      if (o.verbose)
        std::printf("test accuracy %.1f%%, %.1f s of training, %.1f ms/step\n", 100 * row.result.test_accuracy,
                    row.result.train_seconds, row.result.ms_per_step);
      rows.push_back(std::move(row));
    }
  return rows;
}

namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string setup_line(const CompareOptions& c) {
  const TrainOptions& o = c.base;
  std::ostringstream s;
  s << "keyed needle retrieval, " << o.task.keys << " keys, " << o.task.values << " values; d_model " << o.model.d_model
    << ", " << o.model.heads << " heads, " << o.model.layers << " layers; batch " << o.batch << ", lr " << o.lr
    << ", seed " << o.seed << "; window ±" << o.model.window << "; features "
    << (o.model.features > 0 ? std::to_string(o.model.features) : std::string("default")) << "; test set "
    << o.test_sequences << " sequences; threads " << qkv::get_num_threads()
    << (qkv::reference_mode() ? "; reference mode" : "");
  return s.str();
}

}  // namespace

std::string compare_markdown(const CompareOptions& c, const std::vector<CompareRow>& rows) {
  std::ostringstream md;
  md << "# long_range compare\n\n" << setup_line(c) << ".\n\n";
  md << "| mechanism | length | steps | test accuracy | train seconds | ms/step |\n";
  md << "|---|---:|---:|---:|---:|---:|\n";
  for (const CompareRow& r : rows)
    md << "| " << r.mechanism << " | " << r.length << " | " << r.steps << " | " << fixed(r.result.test_accuracy, 3)
       << " | " << fixed(r.result.train_seconds, 1) << " | " << fixed(r.result.ms_per_step, 1) << " |\n";
  for (const CompareRow& r : rows)
    if (r.result.steps_on_current_draw >= 0 && r.result.steps_on_current_draw <= kRecentDraw)
      md << "\nNote: " << r.mechanism << " at length " << r.length << " drew its random features again for the last "
         << r.result.steps_on_current_draw
         << " step(s) of training, and is tested on features it has barely trained with.\n";
  md << "\nReferences on each length's test set (the same for every mechanism): chance is 1/" << c.base.task.values
     << " = " << fixed(1.0 / static_cast<double>(c.base.task.values), 3)
     << "; the window bound is the best accuracy a model whose tokens see ±"
     << reach(c.base.model) << " (" << c.base.model.layers << " layers of ±" << c.base.model.window
     << ") can expect.\n\n| length | majority tag | window bound | mean query-needle distance |\n"
     << "|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i].length == rows[i - 1].length) continue;
    TaskOptions task = c.base.task;
    task.length = rows[i].length;
    const TaskStats s = task_stats(task, test_set(task, c.base.test_sequences), reach(c.base.model));
    md << "| " << rows[i].length << " | " << fixed(s.majority, 3) << " | " << fixed(s.window_bound, 3) << " | "
       << fixed(s.mean_distance, 1) << " |\n";
  }
  return md.str();
}

qkv::io::Json compare_json(const CompareOptions& c, const std::vector<CompareRow>& rows) {
  using qkv::io::Json;
  const TrainOptions& o = c.base;
  Json::Array runs;
  for (const CompareRow& r : rows)
    runs.emplace_back(Json::Object{{"mechanism", Json(r.mechanism)},
                                   {"length", Json(r.length)},
                                   {"steps", Json(r.steps)},
                                   {"test_accuracy", Json(r.result.test_accuracy)},
                                   {"test_loss", Json(r.result.test_loss)},
                                   {"final_train_loss", Json(r.result.final_loss)},
                                   {"train_seconds", Json(r.result.train_seconds)},
                                   {"ms_per_step", Json(r.result.ms_per_step)},
                                   {"parameters", Json(r.result.parameters)}});
  const Json task(Json::Object{{"keys", Json(o.task.keys)}, {"values", Json(o.task.values)}});
  const Json model(Json::Object{{"d_model", Json(o.model.d_model)},
                                {"heads", Json(o.model.heads)},
                                {"layers", Json(o.model.layers)},
                                {"window", Json(o.model.window)},
                                {"features", Json(o.model.features)}});
  return Json(Json::Object{{"task", task},
                           {"model", model},
                           {"batch", Json(o.batch)},
                           {"lr", Json(o.lr)},
                           {"seed", Json(static_cast<int64_t>(o.seed))},
                           {"test_sequences", Json(o.test_sequences)},
                           {"threads", Json(static_cast<int64_t>(qkv::get_num_threads()))},
                           {"reference_mode", Json(qkv::reference_mode())},
                           {"runs", Json(std::move(runs))}});
}

}  // namespace long_range
