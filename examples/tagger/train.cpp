#include "examples/tagger/train.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>

#include "autograd/debug/profiler.h"
#include "data/batching.h"
#include "dist/process_group.h"
#include "dist/reducer.h"
#include "examples/common/memory.h"
#include "examples/common/progress.h"
#include "examples/common/timing.h"
#include "examples/tagger/figures.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "io/json.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/scheduler.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace tagger {

namespace fs = std::filesystem;
using qkv::examples::seconds_since;

namespace {

// Correct argmax predictions among the real tokens of a batch.
int64_t count_correct(const Tensor& logits, const BatchTensors& batch) {
  const IndexTensor pred = logits.detach().argmax(-1);  // (B, T)
  const int64_t B = batch.input.ids.size(0), T = batch.input.ids.size(1);
  int64_t correct = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < batch.input.valid_lens[b]; ++t)
      correct += pred[b * T + t] == batch.targets[b * T + t];
  }
  return correct;
}

constexpr int64_t kEvalBatchSize = 64;

// A small corpus or budget may have fewer steps than the configured warmup: warm up for a tenth.
int64_t warmup_for(const Config& config, int64_t total_steps, bool verbose) {
  const int64_t warmup = config.warmup_steps < total_steps ? config.warmup_steps : total_steps / 10;
  if (warmup != config.warmup_steps && verbose) {
    std::cout << "note: " << total_steps << " steps in all, not more than --warmup " << config.warmup_steps
              << ": warming up for " << warmup << " steps\n";
  }
  return warmup;
}

// The sums over an epoch's training steps.
struct EpochTotals {
  double loss_sum = 0;  // per-token loss summed over real tokens
  double lr = 0;        // the learning rate of the last step
  int64_t tokens = 0, correct = 0;
};

void show_progress(qkv::examples::Progress& progress, int64_t steps_done, const EpochTotals& t) {
  const double secs = progress.elapsed_seconds();
  char stats[160];
  std::snprintf(stats, sizeof stats, "loss %.4f  acc %s  %.0f tok/s", t.loss_sum / t.tokens,
                percent(static_cast<double>(t.correct) / t.tokens).c_str(), secs > 0 ? t.tokens / secs : 0.0);
  progress.update(steps_done, stats);
}

std::string epoch_line(const EpochMetrics& m, bool improved) {
  char line[200];
  std::snprintf(line, sizeof line, "train loss %.4f acc %s | dev loss %.4f acc %s%s | %.0f tok/s, %.1f s",
                m.train_loss, percent(m.train_acc).c_str(), m.dev_loss, percent(m.dev_acc).c_str(),
                improved ? " (best)" : "", m.tokens_per_s, m.seconds);
  return line;
}

// Every sentence of every split must fit the positional encoding.
void check_all_lengths(const Data& data) {
  check_lengths("training", data.train);
  check_lengths("dev", data.dev);
  check_lengths("test", data.test);
}

// words.txt and tags.txt are read back whole (io::read_text_file): a run whose vocabulary file would
// be over its bound could be trained but never loaded.
void check_vocab_files(const Vocabs& vocabs) {
  for (const auto& [file, vocab] : {std::pair{"words.txt", &vocabs.words}, {"tags.txt", &vocabs.tags}}) {
    uint64_t bytes = 0;
    size_t longest = 0;
    for (const std::string& token : vocab->tokens()) {
      bytes += token.size() + 1;
      longest = std::max(longest, token.size());
    }
    if (bytes > qkv::io::kMaxTextFileBytes) {
      throw qkv::ValueError("tagger: " + std::string(file) + " would be " + std::to_string(bytes) +
                            " bytes, over the " + std::to_string(qkv::io::kMaxTextFileBytes) +
                            " a run's files may hold (its longest entry has " + std::to_string(longest) +
                            " bytes): check the training data");
    }
  }
}

// Refuses a model and batch size that would not fit in the machine's memory, before they are
// allocated: Linux grants a large allocation and takes the pages only when written, so without this
// the process would grow until the kernel killed it.
void check_memory(const Config& config, const Vocabs& vocabs, const Data& data) {
  int64_t longest = 0;
  for (const TaggedSentence& s : data.train)
    longest = std::max(longest, static_cast<int64_t>(s.words.size()));
  qkv::examples::check_fits("tagger", training_bytes_estimate(config, vocabs.words.size(), vocabs.tags.size(), longest),
                            "d_model " + std::to_string(config.d_model) + ", ffn_width " +
                                std::to_string(config.ffn_width) + ", " + std::to_string(config.layers) +
                                " layers, batches of " + std::to_string(config.batch_size) + " sentences of up to " +
                                std::to_string(longest) + " tokens",
                            "--d-model, --ffn-width, --layers or --batch-size");
}

// The words of `sentences`, all told.
int64_t count_tokens(const std::vector<TaggedSentence>& sentences) {
  int64_t n = 0;
  for (const TaggedSentence& s : sentences) n += static_cast<int64_t>(s.words.size());
  return n;
}

// Everything that can refuse a training, checked before anything is written: every sentence fits,
// the config is JSON (a file name that is not UTF-8 cannot be written), what the figures need, the
// memory the model takes, and the vocabulary files.
void check_before_training(const Config& config, const Vocabs& vocabs, const Data& data, const TrainOptions& o) {
  config.validate();
  check_all_lengths(data);
  config.to_json();
  if (o.figures) check_figures(config, vocabs, o.example, count_tokens(data.test));
  check_memory(config, vocabs, data);
  check_vocab_files(vocabs);
}

// make_batches fills every batch but at most one (data/batching.h), whatever the order.
int64_t steps_per_epoch(const Encoded& train_set, int64_t batch_size) {
  return (static_cast<int64_t>(train_set.words.size()) + batch_size - 1) / batch_size;
}

// The model of `config`, from its seed, with the training words' counts (for word dropout).
std::shared_ptr<TaggerModel> seeded_model(const Config& config, const Vocabs& vocabs, const Encoded& train_set) {
  qkv::manual_seed(config.seed);
  std::shared_ptr<TaggerModel> model;
  try {
    model = make_model(config, vocabs.words.size(), vocabs.tags.size());
  } catch (const std::bad_alloc&) {
    throw qkv::ValueError("tagger: a model of d_model " + std::to_string(config.d_model) + ", ffn_width " +
                          std::to_string(config.ffn_width) + " and " + std::to_string(config.layers) +
                          " layers does not fit in memory");
  }
  std::vector<int64_t> counts(static_cast<size_t>(vocabs.words.size()), 0);
  for (const auto& sentence : train_set.words)
    for (int64_t id : sentence) ++counts[static_cast<size_t>(id)];
  model->tokens->set_word_counts(counts, vocabs.words.pad_id(), vocabs.words.unk_id());
  return model;
}

void print_summary(const Data& data, const Config& config, const Vocabs& vocabs, const TaggerModel& model) {
  std::cout << "data: " << data.description << "\n";
  print_stats(std::cout, corpus_stats(data.train));
  std::cout << "vocabulary: " << vocabs.words.size() << " words (min_freq " << config.min_freq << "), "
            << vocabs.tags.size() << " tags\n";
  std::cout << "model: " << model.num_parameters() << " parameters, " << qkv::io::to_json(config.to_json()) << "\n";
}

// What the epochs of one training share.
struct Training {
  const Config& config;
  const Data& data;
  const Vocabs& vocabs;
  const TrainOptions& o;
  qkv::examples::RunDirectory& run;
  TaggerModel& model;
  qkv::optim::Optimizer& optimizer;
  qkv::optim::LRScheduler& schedule;
  qkv::examples::TrainStep& step;
  const Encoded& train_set;
  const TagLexicon lexicon;
  int64_t k = 0;  // optimizer steps taken, of the whole run
  double train_seconds = 0;  // of this call's training steps
  int64_t train_tokens = 0;
};

using State = qkv::examples::TrainingState<Config, EpochMetrics>;

// Takes up the run where its last checkpoint left it (nothing for a fresh run): the weights, the
// optimizer's state and the step, the schedule set to it; and says so, with a note when the ranks
// are not the ones it was trained on.
void take_up(Training& t, const State& state) {
  t.k = state.load(t.model, t.optimizer, t.o.ranks);
  t.schedule.set_last_step(t.k);
  const int64_t ranks = t.o.ranks.many() ? t.o.ranks.group->size() : 1;
  if (!state.last) return;
  const qkv::io::Json* saved = state.last->state.extra("world_size");
  const int64_t saved_ranks = saved ? saved->as_int() : 1;
  if (t.o.verbose && saved_ranks != ranks)
    std::cout << "note: the run was trained on " << saved_ranks << " rank(s) and continues on " << ranks
              << ": the same global batches, but the ranks' sums are added in another order, so the "
                 "continuation is not bit for bit the one the run would have had\n";
  if (t.o.verbose)
    std::cout << "resuming " << t.run.dir().string() << " after epoch " << state.history.rows.size() << " (step "
              << t.k << ")\n";
}

// Training has diverged: nothing of this epoch is saved, so the run directory keeps the checkpoints
// and metrics of the last finished epoch.
[[noreturn]] void diverged(const Training& t, const qkv::examples::StepResult& r, int64_t epoch, size_t batch,
                           size_t batches, size_t epochs_saved) {
  const bool loss = !std::isfinite(r.loss);
  const double value = loss ? r.loss : r.grad_norm;
  std::ostringstream message;
  message << "training diverged in epoch " << epoch + 1 << " at step " << batch + 1 << " of " << batches
          << " (step " << t.k + 1 << " of the run): " << (loss ? "the loss" : "the gradient norm") << " is "
          << (std::isnan(value) ? "nan" : std::to_string(value)) << ". Lower --lr (now " << t.config.lr
          << ") or --clip (now " << t.config.clip << "). ";
  if (epochs_saved == 0 && !t.run.resume())
    message << "No epoch has finished: " << t.run.dir().string() << " is left as it was.";
  else
    message << "Nothing of this epoch was saved: " << t.run.dir().string() << " holds the run as of epoch "
            << epochs_saved << ".";
  throw qkv::Error(message.str());
}

// One epoch's training steps: forward, masked cross-entropy, backward, clipping, an AdamW step and
// the schedule's, batch after batch (on several ranks, each its stride of every batch's rows). A
// non-finite loss or gradient norm stops it before the step that would write NaN into every weight.
EpochTotals train_epoch(Training& t, int64_t epoch, size_t epochs_saved, qkv::examples::Progress& progress,
                        std::vector<double>& step_losses) {
  const auto batches = qkv::data::make_batches(t.train_set.words, t.train_set.tags,
                                               {.batch_size = t.config.batch_size,
                                                .seed = t.config.seed + static_cast<uint64_t>(epoch),
                                                .pad_id = t.vocabs.words.pad_id()});
  EpochTotals totals;
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto r = t.step(batches[i].batch_size, t.k, [&](const qkv::examples::Rows& rows) {
      const BatchTensors b = to_tensors(rows.whole ? batches[i] : qkv::data::select_rows(batches[i], rows.rows),
                                        t.data.train, t.model.reads_chars());
      const Tensor logits = t.model.forward(b.input);
      const Tensor loss = qkv::nn::functional::sequence_cross_entropy(logits, b.targets, b.input.valid_lens);
      totals.loss_sum += loss.item() * b.tokens;
      totals.tokens += b.tokens;
      totals.correct += count_correct(logits, b);
      return qkv::examples::Share{loss, b.tokens};
    });
    if (!r.finite()) diverged(t, r, epoch, i, batches.size(), epochs_saved);
    totals.lr = t.optimizer.lr();
    t.schedule.step();
    ++t.k;
    step_losses.push_back(r.loss);
    show_progress(progress, static_cast<int64_t>(i) + 1, totals);
  }
  double sums[3] = {totals.loss_sum, static_cast<double>(totals.tokens), static_cast<double>(totals.correct)};
  t.step.sum(sums);  // the epoch's totals over every rank's rows
  totals.loss_sum = sums[0], totals.tokens = static_cast<int64_t>(sums[1]), totals.correct = static_cast<int64_t>(sums[2]);
  return totals;
}

// One epoch: the training steps over the shuffled training set (profiled when asked), then the dev
// set (rank 0 evaluates and sends the others its figures, so that every rank keeps the same
// history), the metrics and the checkpoints.
void run_epoch(Training& t, State& state, int64_t epoch, bool profile,
               std::vector<double>& step_losses) {
  std::cout.flush();  // the progress bar goes to stderr: keep the two streams in order
  const auto t0 = qkv::examples::Clock::now();
  t.model.train();
  auto progress = qkv::examples::Progress::shown_if(t.o.progress, "epoch " + std::to_string(epoch + 1) + "/" +
                                                                     std::to_string(t.config.epochs),
                                                    steps_per_epoch(t.train_set, t.config.batch_size));
  std::optional<qkv::Profiler> profiler;
  if (profile) profiler.emplace();
  const EpochTotals totals = train_epoch(t, epoch, state.history.rows.size(), progress, step_losses);
  if (profiler) profiler->stop();
  const double train_secs = seconds_since(t0);
  t.train_seconds += train_secs, t.train_tokens += totals.tokens;
  const bool root = t.o.ranks.root();
  const Evaluation dev = root ? evaluate(t.model, t.vocabs, t.lexicon, t.data.dev, kEvalBatchSize) : Evaluation{};
  double dev_metrics[2] = {dev.loss, root ? dev.score.overall.value() : 0};
  if (t.o.ranks.many()) t.o.ranks.group->broadcast(std::span<double>(dev_metrics), 0);
  const EpochMetrics m{epoch + 1, totals.loss_sum / totals.tokens, static_cast<double>(totals.correct) / totals.tokens,
                       dev_metrics[0], dev_metrics[1], totals.lr, totals.tokens / train_secs, seconds_since(t0)};
  const bool improved = m.dev_acc > state.best;
  if (profiler) t.run.write_text("profile.csv", profiler->csv());
  state.record(t.run, t.model, t.optimizer, t.k, m, m.dev_acc, improved,
               checkpoint_extras(t.vocabs, t.o.ranks.many() ? t.o.ranks.group->size() : 1));
  progress.finish(epoch_line(m, improved));
  if (profiler && t.o.verbose)
    std::cout << "profile of epoch " << epoch + 1 << "'s training steps (evaluation excluded), also in "
              << (t.run.dir() / "profile.csv").string() << ":\n"
              << profiler->report();
}

void print_test_table(const Training& t, const TrainResult& result) {
  const Evaluation& test = result.test;
  auto t0 = std::chrono::steady_clock::now();
  const TagLexicon lexicon(t.data.train);  // the majority tagger's training: counting
  const TaggingScore majority = score_tags(lexicon, t.data.test, majority_tags(lexicon, t.data.test));
  const double majority_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const TaggingScore window = score_tags(t.lexicon, t.data.test, context_window_tags(t.data.train, t.data.test));
  const double window_seconds = seconds_since(t0);
  std::cout << "\ntest accuracy (" << t.data.test.size() << " sentences, " << test.score.overall.total
            << " tokens; " << test.score.ambiguous.total << " ambiguous, " << test.score.repeated.total
            << " in tag-changing repeats, " << test.score.unseen.total
            << " tokens of words unseen in training):\n";
  print_score_header(std::cout, "tagger");
  print_score_row(std::cout, "majority tag (unigram)", majority);
  print_score_row(std::cout, "word window (prev, word, next)", window);
  print_score_row(std::cout, t.config.model + " (best dev " + percent(result.best_dev_acc) + ")", test.score);
  double seconds = 0;
  for (const EpochMetrics& m : result.history) seconds += m.seconds;
  std::printf(
      "time: %s %lld epochs in %.0f s (training and dev evaluation), tags %.0f tokens/s; "
      "majority tag and word window count and tag in %.1f s and %.1f s\n",
      t.config.model.c_str(), static_cast<long long>(result.history.size()), seconds, result.test_tokens_per_s,
      majority_seconds, window_seconds);
}

void draw_figures(const Training& t, const Evaluation& test, const std::vector<EpochMetrics>& history) {
  TaggerModel& model = t.model;
  const fs::path fig = t.run.dir() / "figures";
  fs::create_directories(fig);
  std::vector<std::string> written;
  written.push_back(draw_curves(history, fig));
  std::string skipped;  // why no attention figure was drawn, if none was
  for (const std::string& f : draw_attention(model, t.vocabs, split_words(t.o.example), fig, &skipped))
    written.push_back(f);
  if (!skipped.empty() && t.o.verbose) std::cout << "note: " << skipped << "\n";
  if (const Tensor P = model.positional_table(); P.defined())
    written.push_back(draw_positional_encoding(P, 64, fig));
  // The offsets of keys up to 16 words either side of the query.
  constexpr int64_t kMaxOffset = 16;
  std::vector<int64_t> offsets;
  for (int64_t o = -kMaxOffset; o <= kMaxOffset; ++o) offsets.push_back(o);
  if (const Tensor bias = model.position_bias(qkv::IndexTensor(offsets)); bias.defined())
    written.push_back(draw_position_bias(bias, kMaxOffset, t.config.positions, fig));
  written.push_back(draw_confusion(test.confusion, t.vocabs.tags, fig));
  // A figure this run did not draw now (an older version's name, a layer the run no longer has)
  // would be read as this run's: the run's own figures/ keeps only this drawing's PNGs.
  for (const auto& entry : fs::directory_iterator(fig)) {
    const bool drawn = std::find(written.begin(), written.end(), entry.path().string()) != written.end();
    if (!drawn && entry.is_regular_file() && entry.path().extension() == ".png") fs::remove(entry.path());
  }
  if (t.o.verbose) {
    std::cout << "\nwrote " << written.size() << " figures to " << fig.string() << "/:";
    for (const std::string& f : written) std::cout << " " << fs::path(f).filename().string();
    std::cout << "\n";
  }
}

// The end of a training that ran its epochs: the best checkpoint on test, the table, the figures.
TrainResult finish(Training& t, TrainResult result) {
  if (const auto* r = t.step.reducer(); r && t.o.verbose && r->finished_steps() > 0)
    std::printf("data parallel: %d ranks; the gradient sum kept rank 0 waiting %.2f ms per step after backward "
                "(the rest of it ran during backward)\n",
                t.o.ranks.group->size(), 1e3 * r->exposed_seconds() / static_cast<double>(r->finished_steps()));
  result.train_tokens_per_s = t.train_seconds > 0 ? t.train_tokens / t.train_seconds : 0;
  if (static_cast<int64_t>(result.history.size()) < t.config.epochs || !t.o.ranks.root()) return result;
  t.model.load_state_dict(qkv::io::read_checkpoint(t.run.dir() / "best.safetensors").model);
  const auto t0 = qkv::examples::Clock::now();
  result.test = evaluate(t.model, t.vocabs, t.lexicon, t.data.test, kEvalBatchSize);
  result.test_tokens_per_s = result.test.score.overall.total / seconds_since(t0);
  if (t.o.verbose) print_test_table(t, result);
  if (t.o.figures) draw_figures(t, result.test, result.history);
  if (t.o.verbose) std::cout << "checkpoint: " << (t.run.dir() / "best.safetensors").string() << "\n";
  return result;
}

void write_vocabularies(const qkv::examples::RunDirectory& run, const Vocabs& vocabs) {
  if (!run.writer()) return;
  vocabs.words.save(run.path("words.txt").string());
  vocabs.tags.save(run.path("tags.txt").string());
}

}  // namespace

TrainResult train(Config config, const Data& data, const TrainOptions& o) {
  qkv::examples::RunDirectory run(o.run_dir, kRunLayout, o.resume, o.ranks.group);  // refusals: nothing written
  State state = qkv::examples::start_or_resume<Config, EpochMetrics>(run, config, -1.0, qkv::examples::MissingKeys::keep_defaults);
  const Vocabs vocabs = state.last ? load_saved_run(o.run_dir, "last.safetensors").vocabs : build_vocabs(data, state.config);
  check_before_training(state.config, vocabs, data, o);
  const Encoded train_set = encode(vocabs, data.train);
  const std::shared_ptr<TaggerModel> model = seeded_model(state.config, vocabs, train_set);
  qkv::optim::AdamW optimizer(model->parameters(), {.lr = state.config.lr, .weight_decay = state.config.weight_decay});
  const int64_t steps = steps_per_epoch(train_set, state.config.batch_size) * state.config.epochs;
  qkv::optim::WarmupLR schedule(optimizer, warmup_for(state.config, steps, o.verbose), steps);
  run.open();
  if (!state.last) write_vocabularies(run, vocabs);
  if (o.verbose) print_summary(data, state.config, vocabs, *model);
  qkv::examples::TrainStep step(*model, optimizer, {o.ranks, state.config.seed, state.config.clip});
  Training t{state.config, data, vocabs, o, run, *model, optimizer, schedule, step, train_set, TagLexicon(data.train)};
  take_up(t, state);
  TrainResult result;
  for (int64_t epoch = static_cast<int64_t>(state.history.rows.size()), ran = 0;
       epoch < state.config.epochs && ran != o.stop_after; ++epoch, ++ran)
    run_epoch(t, state, epoch, o.profile && ran == 0, result.step_losses);
  result.history = state.history.rows;
  result.best_dev_acc = state.best;
  return finish(t, std::move(result));
}

TrainResult resume(const SavedRun& saved, const Data& data, TrainOptions options) {
  options.resume = true;
  return train(saved.config, data, options);
}

}  // namespace tagger
