#include "examples/tagger/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>

#include "autograd/debug/profiler.h"
#include "data/batching.h"
#include "dist/data_parallel.h"
#include "dist/same_start.h"
#include "dist/sampler.h"
#include "examples/common/memory.h"
#include "examples/common/progress.h"
#include "examples/common/ranks.h"
#include "examples/tagger/figures.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "io/json.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace tagger {

namespace fs = std::filesystem;

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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

// One call of train() or resume(): the data encoded, the model, its optimizer and learning-rate
// schedule, and the epochs so far. run() trains epoch by epoch, then tests the best checkpoint.
class Trainer {
 public:
  Trainer(Config config, Vocabs vocabs, const Data& data, const TrainOptions& options);
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Continues from `saved`: weights, optimizer, generator, step and epoch history.
  void restore(const SavedRun& saved);
  TrainResult run();

 private:
  std::shared_ptr<TaggerModel> seeded_model() const;
  EpochTotals train_steps(int64_t epoch, const std::vector<qkv::data::Batch>& batches,
                          qkv::examples::Progress* progress, std::vector<double>& step_losses);
  EpochTotals train_steps_distributed(int64_t epoch, const std::vector<qkv::data::Batch>& batches,
                                      qkv::examples::Progress* progress, std::vector<double>& step_losses);
  void clip_and_step(double loss, int64_t epoch, size_t batch, size_t batches, EpochTotals& totals,
                     std::vector<double>& step_losses);
  bool is_root() const { return group_ == nullptr || group_->rank() == 0; }
  [[noreturn]] void diverged(const std::string& what, double value, int64_t epoch, size_t batch,
                             size_t batches) const;
  void run_epoch(int64_t epoch, bool profile, std::vector<double>& step_losses);
  bool record(const EpochMetrics& m);
  void save_checkpoint(const fs::path& path) const;
  void print_summary() const;
  void print_test_table(const TrainResult& result) const;
  void draw_figures(const Evaluation& test) const;

  const Config config_;
  const Vocabs vocabs_;
  const Data& data_;
  const TrainOptions& options_;
  const fs::path dir_;
  const TagLexicon lexicon_;
  const Encoded train_set_;
  const int64_t total_steps_;
  qkv::dist::ProcessGroup* const group_;  // the ranks training together; null in one process
  std::shared_ptr<TaggerModel> model_;
  std::unique_ptr<qkv::dist::DataParallel> parallel_;  // with group_
  qkv::optim::AdamW optimizer_;
  qkv::optim::WarmupLR schedule_;
  int64_t step_ = 0;
  std::vector<EpochMetrics> history_;
  bool started_ = false;  // the run directory holds this run: a resumed one, or a first epoch saved
  double best_dev_ = -1;
  double train_seconds_ = 0;  // of training steps, this call
  int64_t train_tokens_ = 0;
};

// make_batches fills every batch but at most one (data/batching.h), whatever the order.
int64_t steps_per_epoch(const Encoded& train_set, int64_t batch_size) {
  return (static_cast<int64_t>(train_set.words.size()) + batch_size - 1) / batch_size;
}

Trainer::Trainer(Config config, Vocabs vocabs, const Data& data, const TrainOptions& options)
    : config_(std::move(config)),
      vocabs_(std::move(vocabs)),
      data_(data),
      options_(options),
      dir_(options.run_dir),
      lexicon_(data.train),
      train_set_(encode(vocabs_, data.train)),
      total_steps_(steps_per_epoch(train_set_, config_.batch_size) * config_.epochs),
      group_(options.group != nullptr && options.group->size() > 1 ? options.group : nullptr),
      model_(seeded_model()),
      optimizer_(model_->parameters(), {.lr = config_.lr, .weight_decay = config_.weight_decay}),
      schedule_(optimizer_, warmup_for(config_, total_steps_, options.verbose), total_steps_) {
  if (group_ != nullptr)  // every rank starts from rank 0's weights
    parallel_ = std::make_unique<qkv::dist::DataParallel>(
        *model_, *group_, qkv::dist::ReducerOptions{.fixed_order = options.fixed_order_reduction});
}

std::shared_ptr<TaggerModel> Trainer::seeded_model() const {
  qkv::manual_seed(config_.seed);
  std::shared_ptr<TaggerModel> model = make_model(config_, vocabs_.words.size(), vocabs_.tags.size());
  std::vector<int64_t> counts(static_cast<size_t>(vocabs_.words.size()), 0);
  for (const auto& sentence : train_set_.words) {
    for (int64_t id : sentence) ++counts[static_cast<size_t>(id)];
  }
  model->tokens->set_word_counts(counts, vocabs_.words.pad_id(), vocabs_.words.unk_id());
  return model;
}

void Trainer::restore(const SavedRun& saved) {
  step_ = qkv::io::load_checkpoint(saved.checkpoint_path, *model_, optimizer_).step;
  if (group_ != nullptr) qkv::dist::check_same_state(*model_, *group_, "after loading " + saved.checkpoint_path);
  if (options_.verbose && saved.world_size != (group_ ? group_->size() : 1))
    std::cout << "note: the run was trained on " << saved.world_size << " rank(s) and continues on "
              << (group_ ? group_->size() : 1)
              << ": the same global batches, but the ranks' sums are added in another order, so the "
                 "continuation is not bit for bit the one the run would have had\n";
  started_ = true;
  history_ = saved.history;
  best_dev_ = saved.best_dev_acc;
  schedule_.set_last_step(step_);
  if (options_.verbose) {
    std::cout << "resuming " << dir_.string() << " after epoch " << history_.size() << " (step " << step_
              << ")\n";
  }
}

void Trainer::print_summary() const {
  std::cout << "data: " << data_.description << "\n";
  print_stats(std::cout, corpus_stats(data_.train));
  std::cout << "vocabulary: " << vocabs_.words.size() << " words (min_freq " << config_.min_freq << "), "
            << vocabs_.tags.size() << " tags\n";
  std::cout << "model: " << model_->num_parameters() << " parameters, " << qkv::io::to_json(config_.to_json())
            << "\n";
}

// The training loop: forward, masked cross-entropy, backward, clipping, an AdamW step and the
// schedule's, batch after batch. A non-finite loss or gradient norm stops it before the step that
// would write NaN into every weight (clipping cannot save a NaN: it scales the gradients by it).
EpochTotals Trainer::train_steps(int64_t epoch, const std::vector<qkv::data::Batch>& batches,
                                 qkv::examples::Progress* progress, std::vector<double>& step_losses) {
  EpochTotals totals;
  for (size_t i = 0; i < batches.size(); ++i) {
    const BatchTensors b = to_tensors(batches[i], data_.train, model_->reads_chars());
    const Tensor logits = model_->forward(b.input);
    const Tensor loss = qkv::nn::functional::sequence_cross_entropy(logits, b.targets, b.input.valid_lens);
    const double l = loss.item();
    if (!std::isfinite(l)) diverged("the loss", l, epoch, i, batches.size());
    optimizer_.zero_grad();
    loss.backward();
    clip_and_step(l, epoch, i, batches.size(), totals, step_losses);
    totals.loss_sum += l * b.tokens;
    totals.tokens += b.tokens;
    totals.correct += count_correct(logits, b);
    if (progress) show_progress(*progress, static_cast<int64_t>(i) + 1, totals);
  }
  return totals;
}

// The end of a step in either loop, once the gradients are whole: clipping, a stop on a norm that
// is not finite, the optimizer's and the schedule's steps, and the step's loss kept.
void Trainer::clip_and_step(double loss, int64_t epoch, size_t batch, size_t batches, EpochTotals& totals,
                            std::vector<double>& step_losses) {
  const double norm = qkv::optim::clip_grad_norm_(model_->parameters(), config_.clip);
  if (!std::isfinite(norm)) diverged("the gradient norm", norm, epoch, batch, batches);
  optimizer_.step();
  totals.lr = optimizer_.lr();
  schedule_.step();
  ++step_;
  step_losses.push_back(loss);
}

// The same loop on several ranks (docs/distributed.md): every rank builds the same global batches,
// takes its stride of each one's rows, and scales its loss by its share of the batch's real
// tokens, so that the summed gradient is the gradient of the mean over the whole batch; the
// gradient norm, computed after the sum, is the same on every rank, and so is the decision to stop.
EpochTotals Trainer::train_steps_distributed(int64_t epoch, const std::vector<qkv::data::Batch>& batches,
                                             qkv::examples::Progress* progress, std::vector<double>& step_losses) {
  EpochTotals totals;
  for (size_t i = 0; i < batches.size(); ++i) {
    const qkv::data::Batch& global = batches[i];
    const std::vector<int64_t> rows = qkv::dist::shard(global.batch_size, group_->rank(), group_->size());
    int64_t global_tokens = 0;
    for (int64_t n : global.valid_lens) global_tokens += n;
    qkv::default_generator().set_state(
        qkv::examples::keyed_stream(config_.seed, 1 + static_cast<uint64_t>(group_->rank()), step_));
    parallel_->zero_grad();
    double share[1] = {0};  // this rank's part of the batch's mean loss
    if (!rows.empty()) {
      const BatchTensors b = to_tensors(qkv::data::select_rows(global, rows), data_.train, model_->reads_chars());
      const Tensor logits = model_->forward(b.input);
      const Tensor loss = qkv::nn::functional::sequence_cross_entropy(logits, b.targets, b.input.valid_lens);
      const double weight = static_cast<double>(b.tokens) / static_cast<double>(global_tokens);
      const double mine = loss.item();
      share[0] = mine * weight;
      (loss * static_cast<float>(weight)).backward();
      totals.loss_sum += mine * b.tokens;
      totals.tokens += b.tokens;
      totals.correct += count_correct(logits, b);
    }
    parallel_->sum_gradients(!rows.empty());
    group_->all_reduce_sum(std::span<double>(share));  // the batch's mean loss, the same on every rank
    const double l = share[0];
    if (!std::isfinite(l)) diverged("the loss", l, epoch, i, batches.size());
    clip_and_step(l, epoch, i, batches.size(), totals, step_losses);
    if (progress) show_progress(*progress, static_cast<int64_t>(i) + 1, totals);
  }
  // The epoch's sums over every rank, for its metrics.
  double sums[3] = {totals.loss_sum, static_cast<double>(totals.tokens), static_cast<double>(totals.correct)};
  group_->all_reduce_sum(std::span<double>(sums));
  totals.loss_sum = sums[0];
  totals.tokens = static_cast<int64_t>(sums[1]);
  totals.correct = static_cast<int64_t>(sums[2]);
  return totals;
}

// Training has diverged: nothing of this epoch is saved, so the run directory keeps the checkpoints
// and metrics of the last finished epoch.
void Trainer::diverged(const std::string& what, double value, int64_t epoch, size_t batch,
                       size_t batches) const {
  std::ostringstream message;
  message << "training diverged in epoch " << epoch + 1 << " at step " << batch + 1 << " of " << batches
          << " (step " << step_ + 1 << " of the run): " << what << " is "
          << (std::isnan(value) ? "nan" : std::to_string(value)) << ". Lower --lr (now " << config_.lr
          << ") or --clip (now " << config_.clip << "). ";
  if (!started_)
    message << "No epoch has finished: " << dir_.string() << " is left as it was.";
  else
    message << "Nothing of this epoch was saved: " << dir_.string() << " holds the run as of epoch "
            << history_.size() << ".";
  throw qkv::Error(message.str());
}

// One epoch: the training steps over the shuffled training set, then the dev set, the metrics and
// the checkpoints.
void Trainer::run_epoch(int64_t epoch, bool profile, std::vector<double>& step_losses) {
  std::cout.flush();  // the progress bar goes to stderr: keep the two streams in order
  const auto t0 = std::chrono::steady_clock::now();
  model_->train();
  const auto batches = qkv::data::make_batches(train_set_.words, train_set_.tags,
                                               {.batch_size = config_.batch_size,
                                                .seed = config_.seed + static_cast<uint64_t>(epoch),
                                                .pad_id = vocabs_.words.pad_id()});
  std::optional<qkv::examples::Progress> progress;
  if (options_.progress) {
    progress.emplace("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(config_.epochs),
                     static_cast<int64_t>(batches.size()));
  }
  std::optional<qkv::Profiler> profiler;
  if (profile) profiler.emplace();
  qkv::examples::Progress* bar = progress ? &*progress : nullptr;
  const EpochTotals totals = group_ ? train_steps_distributed(epoch, batches, bar, step_losses)
                                    : train_steps(epoch, batches, bar, step_losses);
  if (profiler) profiler->stop();
  const double train_secs = seconds_since(t0);
  train_seconds_ += train_secs;
  train_tokens_ += totals.tokens;
  // Rank 0 alone evaluates (and sends the others its dev metrics), keeps the run directory and
  // draws; the others wait at the barrier in record() until the epoch's files are written.
  const Evaluation dev = is_root() ? evaluate(*model_, vocabs_, lexicon_, data_.dev, kEvalBatchSize) : Evaluation{};
  double dev_metrics[2] = {dev.loss, is_root() ? dev.score.overall.value() : 0};
  if (group_) group_->broadcast(std::span<double>(dev_metrics), 0);  // every rank keeps the same history
  const EpochMetrics m{.epoch = epoch + 1,
                       .train_loss = totals.loss_sum / totals.tokens,
                       .train_acc = static_cast<double>(totals.correct) / totals.tokens,
                       .dev_loss = dev_metrics[0],
                       .dev_acc = dev_metrics[1],
                       .lr = totals.lr,
                       .tokens_per_s = totals.tokens / train_secs,
                       .seconds = seconds_since(t0)};
  const bool improved = record(m);
  if (progress) progress->finish(epoch_line(m, improved));
  if (profiler) {
    profiler->write_csv((dir_ / "profile.csv").string());
    if (options_.verbose)
      std::cout << "profile of epoch " << epoch + 1 << "'s training steps (evaluation excluded), also in "
                << (dir_ / "profile.csv").string() << ":\n"
                << profiler->report();
  }
}

// Adds the epoch to the history and writes the checkpoints and metrics.csv; true when the dev
// accuracy is the best so far.
bool Trainer::record(const EpochMetrics& m) {
  history_.push_back(m);
  const bool improved = m.dev_acc > best_dev_;
  if (improved) best_dev_ = m.dev_acc;
  if (!is_root()) {
    group_->barrier();  // rank 0 has written the epoch
    started_ = true;
    return improved;
  }
  // A fresh run replaces an old one in its directory only now, with its first epoch saved whole
  // beside it (run_dir.h): a run that fails or is stopped before leaves the old one as it was.
  const fs::path where = started_ ? dir_ : new_run_staging(dir_);
  if (!started_) write_run_start(where, config_, vocabs_);
  // Each file is written atomically, best first: a crash between the two leaves a last checkpoint
  // from before this epoch, and resuming redoes it.
  if (improved) save_checkpoint(where / "best.safetensors");
  save_checkpoint(where / "last.safetensors");
  write_metrics_csv(where / "metrics.csv", history_);
  if (!started_) commit_new_run(dir_);
  started_ = true;
  if (group_) group_->barrier();
  return improved;
}

void Trainer::save_checkpoint(const fs::path& path) const {
  save_run_checkpoint(path, *model_, optimizer_, step_, config_, vocabs_, history_, best_dev_,
                      group_ ? group_->size() : 1);
}

TrainResult Trainer::run() {
  if (options_.verbose) print_summary();
  TrainResult result;
  int64_t epochs_run = 0;
  for (int64_t epoch = static_cast<int64_t>(history_.size()); epoch < config_.epochs; ++epoch) {
    if (options_.stop_after >= 1 && epochs_run == options_.stop_after) break;
    run_epoch(epoch, options_.profile && epochs_run == 0, result.step_losses);
    ++epochs_run;
  }
  result.history = history_;
  result.best_dev_acc = best_dev_;
  if (const auto* r = parallel_ ? parallel_->reducer() : nullptr; r && options_.verbose && r->finished_steps() > 0)
    std::printf("data parallel: %d ranks; the gradient sum kept rank 0 waiting %.2f ms per step after backward "
                "(the rest of it ran during backward)\n",
                group_->size(), 1e3 * r->exposed_seconds() / static_cast<double>(r->finished_steps()));
  result.train_tokens_per_s = train_seconds_ > 0 ? train_tokens_ / train_seconds_ : 0;
  if (static_cast<int64_t>(history_.size()) < config_.epochs) return result;  // stopped early: resume later
  if (!is_root()) return result;  // rank 0 tests and draws

  // The best checkpoint, on test.
  model_->load_state_dict(qkv::io::read_checkpoint(dir_ / "best.safetensors").model);
  const auto t0 = std::chrono::steady_clock::now();
  result.test = evaluate(*model_, vocabs_, lexicon_, data_.test, kEvalBatchSize);
  result.test_tokens_per_s = result.test.score.overall.total / seconds_since(t0);
  if (options_.verbose) print_test_table(result);
  if (options_.figures) draw_figures(result.test);
  if (options_.verbose) std::cout << "checkpoint: " << (dir_ / "best.safetensors").string() << "\n";
  return result;
}

void Trainer::print_test_table(const TrainResult& result) const {
  const Evaluation& test = result.test;
  auto t0 = std::chrono::steady_clock::now();
  const TagLexicon lexicon(data_.train);  // the majority tagger's training: counting
  const TaggingScore majority = score_tags(lexicon, data_.test, majority_tags(lexicon, data_.test));
  const double majority_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const TaggingScore window = score_tags(lexicon_, data_.test, context_window_tags(data_.train, data_.test));
  const double window_seconds = seconds_since(t0);
  std::cout << "\ntest accuracy (" << data_.test.size() << " sentences, " << test.score.overall.total
            << " tokens; " << test.score.ambiguous.total << " ambiguous, " << test.score.repeated.total
            << " in tag-changing repeats, " << test.score.unseen.total
            << " tokens of words unseen in training):\n";
  print_score_header(std::cout, "tagger");
  print_score_row(std::cout, "majority tag (unigram)", majority);
  print_score_row(std::cout, "word window (prev, word, next)", window);
  print_score_row(std::cout, config_.model + " (best dev " + percent(best_dev_) + ")", test.score);
  double seconds = 0;
  for (const EpochMetrics& m : history_) seconds += m.seconds;
  std::printf(
      "time: %s %lld epochs in %.0f s (training and dev evaluation), tags %.0f tokens/s; "
      "majority tag and word window count and tag in %.1f s and %.1f s\n",
      config_.model.c_str(), static_cast<long long>(history_.size()), seconds, result.test_tokens_per_s,
      majority_seconds, window_seconds);
}

void Trainer::draw_figures(const Evaluation& test) const {
  const fs::path fig = dir_ / "figures";
  fs::create_directories(fig);
  std::vector<std::string> written;
  written.push_back(draw_curves(history_, fig));
  std::string skipped;  // why no attention figure was drawn, if none was
  for (const std::string& f : draw_attention(*model_, vocabs_, split_words(options_.example), fig, &skipped))
    written.push_back(f);
  if (!skipped.empty() && options_.verbose) std::cout << "note: " << skipped << "\n";
  if (const Tensor P = model_->positional_table(); P.defined())
    written.push_back(draw_positional_encoding(P, 64, fig));
  // The offsets of keys up to 16 words either side of the query.
  constexpr int64_t kMaxOffset = 16;
  std::vector<int64_t> offsets;
  for (int64_t o = -kMaxOffset; o <= kMaxOffset; ++o) offsets.push_back(o);
  if (const Tensor bias = model_->position_bias(qkv::IndexTensor(offsets)); bias.defined())
    written.push_back(draw_position_bias(bias, kMaxOffset, config_.positions, fig));
  written.push_back(draw_confusion(test.confusion, vocabs_.tags, fig));
  // A figure this run did not draw now (an older version's name, a layer the run no longer has)
  // would be read as this run's: the run's own figures/ keeps only this drawing's PNGs.
  for (const auto& entry : fs::directory_iterator(fig)) {
    const bool drawn = std::find(written.begin(), written.end(), entry.path().string()) != written.end();
    if (!drawn && entry.is_regular_file() && entry.path().extension() == ".png") fs::remove(entry.path());
  }
  if (options_.verbose) {
    std::cout << "\nwrote " << written.size() << " figures to " << fig.string() << "/:";
    for (const std::string& f : written) std::cout << " " << fs::path(f).filename().string();
    std::cout << "\n";
  }
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
  const int64_t available = qkv::examples::available_memory_bytes();
  int64_t longest = 0;
  for (const TaggedSentence& s : data.train)
    longest = std::max(longest, static_cast<int64_t>(s.words.size()));
  const double needed = training_bytes_estimate(config, vocabs.words.size(), vocabs.tags.size(), longest);
  if (available > 0 && needed > static_cast<double>(available)) {
    throw qkv::ValueError(
        "tagger: training this model would take about " + qkv::examples::format_bytes(needed) + " (d_model " +
        std::to_string(config.d_model) + ", ffn_width " + std::to_string(config.ffn_width) + ", " +
        std::to_string(config.layers) + " layers, batches of " + std::to_string(config.batch_size) +
        " sentences of up to " + std::to_string(longest) + " tokens), more than the " +
        qkv::examples::format_bytes(static_cast<double>(available)) +
        " this machine has available: lower --d-model, --ffn-width, --layers or --batch-size");
  }
}

// The words of `sentences`, all told.
int64_t count_tokens(const std::vector<TaggedSentence>& sentences) {
  int64_t n = 0;
  for (const TaggedSentence& s : sentences) n += static_cast<int64_t>(s.words.size());
  return n;
}

}  // namespace

TrainResult train(Config config, const Data& data, const TrainOptions& options) {
  // Everything that can be refused is refused before the run directory is touched: the config, the
  // data, the config as JSON (a file name that is not UTF-8 cannot be written), what the figures
  // need, and the model, which the trainer builds.
  config.validate();
  check_all_lengths(data);
  config.to_json();
  const Vocabs vocabs = build_vocabs(data, config);
  if (options.figures) check_figures(config, vocabs, options.example, count_tokens(data.test));
  check_memory(config, vocabs, data);
  check_vocab_files(vocabs);
  std::optional<Trainer> trainer;
  try {
    trainer.emplace(config, vocabs, data, options);
  } catch (const std::bad_alloc&) {
    throw qkv::ValueError("tagger: a model of d_model " + std::to_string(config.d_model) + ", ffn_width " +
                          std::to_string(config.ffn_width) + " and " + std::to_string(config.layers) +
                          " layers does not fit in memory");
  }
  // Held until the run ends, by rank 0 alone, which alone writes there.
  const bool root = options.group == nullptr || options.group->rank() == 0;
  std::optional<qkv::io::DirectoryLock> lock;
  if (root) lock.emplace(prepare_run_directory(options.run_dir));
  return trainer->run();
}

TrainResult resume(SavedRun saved, const Data& data, const TrainOptions& options) {
  check_all_lengths(data);
  if (options.figures) check_figures(saved.config, saved.vocabs, options.example, count_tokens(data.test));
  const bool root = options.group == nullptr || options.group->rank() == 0;
  std::optional<qkv::io::DirectoryLock> lock;
  if (root) lock.emplace(prepare_run_directory(options.run_dir));
  Trainer trainer(saved.config, saved.vocabs, data, options);
  trainer.restore(saved);
  return trainer.run();
}

}  // namespace tagger
