#include "examples/long_range/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "autograd/grad_mode.h"
#include "nn/functional/loss.h"
#include "nn/performer.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

void check_options(const TrainOptions& o) {
  check_task(o.task);
  check_model(o.model, o.task);
  if (o.steps < 1 || o.steps > 1000000)
    throw qkv::ValueError("--steps " + std::to_string(o.steps) + " is outside 1 .. 1000000");
  if (o.batch < 1 || o.batch > 1024) throw qkv::ValueError("--batch " + std::to_string(o.batch) + " is outside 1 .. 1024");
  if (!(o.lr > 0 && o.lr <= 1)) throw qkv::ValueError("--lr " + std::to_string(o.lr) + " is outside (0, 1]");
  if (o.test_sequences < 1 || o.test_sequences > 100000)
    throw qkv::ValueError("--test " + std::to_string(o.test_sequences) + " is outside 1 .. 100000");
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

TrainResult train(const TrainOptions& o) {
  check_options(o);
  qkv::manual_seed(o.seed);  // the initialization and Performer's features
  TaggerModel model(o.model, o.task);
  qkv::optim::AdamW optimizer(model.parameters(), {.lr = o.lr, .weight_decay = o.weight_decay});
  qkv::optim::WarmupLR schedule(optimizer, std::min<int64_t>(100, o.steps / 10), o.steps);
  qkv::Generator data(training_key(o.seed));
  const int64_t log_every = o.log_every > 0 ? o.log_every : std::max<int64_t>(1, o.steps / 10);
  TrainResult r;
  r.parameters = model.num_parameters();
  if (o.verbose)
    std::printf("%s attention, length %lld (sequences of %lld .. %lld tokens), %lld keys, %lld values; %lld "
                "parameters; %lld steps of %lld sequences\n",
                o.model.attention.c_str(), static_cast<long long>(o.task.length),
                static_cast<long long>(shortest(o.task)), static_cast<long long>(o.task.length),
                static_cast<long long>(o.task.keys), static_cast<long long>(o.task.values),
                static_cast<long long>(r.parameters), static_cast<long long>(o.steps), static_cast<long long>(o.batch));
  model.train();
  const auto t0 = std::chrono::steady_clock::now();
  int64_t window_tokens = 0, window_correct = 0;
  double window_loss = 0;
  for (int64_t step = 1; step <= o.steps; ++step) {
    std::vector<Sequence> sequences;
    for (int64_t b = 0; b < o.batch; ++b) sequences.push_back(draw_sequence(o.task, data));
    const Batch batch = make_batch(sequences, 0, sequences.size());
    const Tensor logits = model.forward(batch.ids, batch.valid_lens);
    const Tensor loss = qkv::nn::functional::sequence_cross_entropy(logits, batch.tags, batch.valid_lens);
    const double l = loss.item();
    if (!std::isfinite(l))
      throw qkv::Error("training diverged at step " + std::to_string(step) + ": the loss is " + std::to_string(l) +
                       "; lower --lr (now " + std::to_string(o.lr) + ")");
    optimizer.zero_grad();
    loss.backward();
    qkv::optim::clip_grad_norm_(model.parameters(), 1.0);
    optimizer.step();
    schedule.step();
    r.losses.push_back(l);
    window_loss += l * static_cast<double>(batch.tokens);
    window_tokens += batch.tokens;
    window_correct += count_correct(logits, batch);
    if (o.verbose && (step % log_every == 0 || step == o.steps)) {
      std::printf("step %6lld/%lld  loss %.4f  train acc %5.1f%%  %.1f s\n", static_cast<long long>(step),
                  static_cast<long long>(o.steps), window_loss / static_cast<double>(window_tokens),
                  100.0 * static_cast<double>(window_correct) / static_cast<double>(window_tokens), seconds_since(t0));
      std::fflush(stdout);
      window_loss = 0, window_tokens = 0, window_correct = 0;
    }
  }
  r.train_seconds = seconds_since(t0);
  r.steps_on_current_draw = steps_on_current_draw(model, o.steps);
  if (o.verbose && r.steps_on_current_draw >= 0 && r.steps_on_current_draw <= kRecentDraw)
    std::printf("note: Performer drew its random features again for the last %lld step(s) of training; a model "
                "adapted to the earlier draw scores lower on a new one until it adapts again, so the test "
                "accuracy below understates what this budget can reach (a budget not just past a multiple of "
                "1000 steps avoids it)\n",
                static_cast<long long>(r.steps_on_current_draw));
  r.ms_per_step = 1e3 * r.train_seconds / static_cast<double>(o.steps);
  const size_t tail = std::max<size_t>(1, r.losses.size() / 10);
  for (size_t i = r.losses.size() - tail; i < r.losses.size(); ++i) r.final_loss += r.losses[i] / static_cast<double>(tail);
  const std::vector<Sequence> test = test_set(o.task, o.test_sequences);
  const Evaluation e = evaluate(model, test, o.batch);
  r.test_accuracy = e.accuracy, r.test_loss = e.loss;
  r.stats = task_stats(o.task, test, reach(o.model));
  return r;
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
  std::vector<CompareRow> rows;
  for (size_t i = 0; i < c.lengths.size(); ++i)
    for (const std::string& m : c.mechanisms) {
      TrainOptions o = c.base;
      o.task.length = c.lengths[i], o.steps = c.steps[i], o.model.attention = m;
      if (o.verbose) std::printf("\n== %s at length %lld\n", m.c_str(), static_cast<long long>(c.lengths[i]));
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
