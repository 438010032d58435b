#include "examples/tagger/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/profiler.h"
#include "data/batching.h"
#include "data/conll.h"
#include "examples/common/progress.h"
#include "examples/tagger/figures.h"
#include "io/checkpoint.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace tagger {

namespace fs = std::filesystem;
using qkv::data::Vocab;
using qkv::io::Json;

namespace {

struct Encoded {
  std::vector<std::vector<int64_t>> words, tags;
};

Encoded encode(const Vocabs& vocabs, const std::vector<TaggedSentence>& sentences) {
  Encoded out;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const TaggedSentence& s = sentences[i];
    for (const std::string& tag : s.tags) {
      if (vocabs.tags.contains(tag)) continue;
      std::string known;
      for (const std::string& t : vocabs.tags.tokens()) known += (known.empty() ? "" : " ") + t;
      throw qkv::ValueError("tagger: sentence " + std::to_string(i + 1) + " has the tag \"" + tag +
                            "\", which the model was not trained with (it knows " + known + ")");
    }
    out.words.push_back(vocabs.words.encode(s.words));
    out.tags.push_back(vocabs.tags.encode(s.tags));
  }
  return out;
}

// A tagger checkpoint's own metadata: the config it was trained with, the epoch history and the
// best dev accuracy. FormatError for a checkpoint that lacks them (another program's).
Json checkpoint_state(const fs::path& path, const qkv::io::Checkpoint& ckpt) {
  Json state;
  try {
    state = qkv::io::parse_json(ckpt.config);
  } catch (const std::exception& e) {
    throw qkv::FormatError("tagger: " + path.string() +
                           " is not a tagger checkpoint: its config is not JSON (" + e.what() + ")");
  }
  for (const char* key : {"config", "history", "best_dev_acc"}) {
    if (!state.is_object() || state.find(key) == nullptr) {
      throw qkv::FormatError("tagger: " + path.string() + " is not a tagger checkpoint: no \"" + key +
                             "\" in its config");
    }
  }
  return state;
}

// Every sentence must fit the positional encoding; say which one does not before any work starts.
void check_lengths(const char* split, const std::vector<TaggedSentence>& sentences) {
  for (size_t i = 0; i < sentences.size(); ++i) {
    const size_t n = sentences[i].words.size();
    if (n > static_cast<size_t>(kMaxSentenceLength)) {
      throw qkv::ValueError(std::string("tagger: ") + split + " sentence " + std::to_string(i + 1) + " has " +
                            std::to_string(n) + " tokens; the tagger takes at most " +
                            std::to_string(kMaxSentenceLength));
    }
  }
}

struct BatchTensors {
  IndexTensor ids, targets, valid_lens;
  int64_t tokens = 0;  // real tokens
};

BatchTensors to_tensors(const qkv::data::Batch& b) {
  BatchTensors t;
  t.ids = IndexTensor(b.inputs, {b.batch_size, b.max_len});
  if (!b.targets.empty()) t.targets = IndexTensor(b.targets, {b.batch_size, b.max_len});
  t.valid_lens = IndexTensor(b.valid_lens);
  for (int64_t n : b.valid_lens) t.tokens += n;
  return t;
}

// Correct argmax predictions among the real tokens of a batch.
int64_t count_correct(const Tensor& logits, const BatchTensors& batch) {
  const IndexTensor pred = logits.detach().argmax(-1);  // (B, T)
  const int64_t B = batch.ids.size(0), T = batch.ids.size(1);
  int64_t correct = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < batch.valid_lens[b]; ++t) correct += pred[b * T + t] == batch.targets[b * T + t];
  }
  return correct;
}

Json history_json(const std::vector<EpochMetrics>& history) {
  Json::Array rows;
  for (const EpochMetrics& m : history) {
    rows.push_back(Json(Json::Array{Json(m.epoch), Json(m.train_loss), Json(m.train_acc), Json(m.dev_loss),
                                    Json(m.dev_acc), Json(m.lr), Json(m.tokens_per_s), Json(m.seconds)}));
  }
  return Json(std::move(rows));
}

std::vector<EpochMetrics> history_from_json(const Json& json) {
  std::vector<EpochMetrics> history;
  for (const Json& row : json.as_array()) {
    const Json::Array& r = row.as_array();
    if (r.size() != 8)
      throw qkv::FormatError("tagger: a checkpoint's epoch history row has " + std::to_string(r.size()) +
                             " values, expected 8");
    history.push_back({r[0].as_int(), r[1].as_double(), r[2].as_double(), r[3].as_double(), r[4].as_double(),
                       r[5].as_double(), r[6].as_double(), r[7].as_double()});
  }
  return history;
}

void write_metrics_csv(const fs::path& path, const std::vector<EpochMetrics>& history) {
  std::ostringstream out;
  out << "epoch,train_loss,train_acc,dev_loss,dev_acc,lr,tokens_per_s,seconds\n" << std::setprecision(6);
  for (const EpochMetrics& m : history) {
    out << m.epoch << ',' << m.train_loss << ',' << m.train_acc << ',' << m.dev_loss << ',' << m.dev_acc
        << ',' << m.lr << ',' << m.tokens_per_s << ',' << m.seconds << '\n';
  }
  qkv::io::write_text_file(path, out.str(), "tagger");
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw qkv::ValueError("tagger: cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Vocabs load_vocabs(const fs::path& dir) {
  return Vocabs{Vocab::load((dir / "words.txt").string()), Vocab::load((dir / "tags.txt").string())};
}

constexpr int kNameColumns = 32;

// `text` padded with spaces to `columns` characters: counted as characters, not bytes, since
// "±" is two bytes of UTF-8 and one column.
std::string pad(const std::string& text, int columns) {
  int used = 0;
  for (unsigned char ch : text) used += (ch & 0xC0) != 0x80;
  return text + std::string(static_cast<size_t>(std::max(0, columns - used)), ' ');
}

}  // namespace

void print_score_header(std::ostream& out, const std::string& first_column, const std::string& extra) {
  out << "  " << pad(first_column, kNameColumns) << std::right << std::setw(9) << "overall" << std::setw(11)
      << "ambiguous" << std::setw(11) << "repeated" << extra << "\n";
}

void print_score_row(std::ostream& out, const std::string& name, const TaggingScore& s,
                     const std::string& extra) {
  out << "  " << pad(name, kNameColumns) << std::right << std::setw(9) << percent(s.overall.value())
      << std::setw(11) << percent(s.ambiguous.value()) << std::setw(11) << percent(s.repeated.value())
      << extra << "\n";
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::vector<TaggedSentence> read_tagged(const std::string& path) {
  const bool conllu = path.size() >= 7 && path.compare(path.size() - 7, 7, ".conllu") == 0;
  auto sentences = conllu ? qkv::data::read_conllu(path) : qkv::data::read_conll(path);
  if (sentences.empty()) throw qkv::ValueError("tagger: " + path + " holds no sentences");
  return sentences;
}

Data load_data(const Config& config) {
  const std::string &train_path = config.train_file, &dev_path = config.dev_file,
                    &test_path = config.test_file;
  Data data;
  if (train_path.empty() && dev_path.empty() && test_path.empty()) {
    Corpus corpus =
        generate_corpus(config.seed, {config.train_sentences, config.dev_sentences, config.test_sentences});
    data.train = std::move(corpus.train);
    data.dev = std::move(corpus.dev);
    data.test = std::move(corpus.test);
    data.description = "built-in corpus, seed " + std::to_string(config.seed);
    return data;
  }
  if (train_path.empty() || dev_path.empty() || test_path.empty()) {
    throw qkv::ValueError(
        "tagger: give all three of --train, --dev and --test, or none for the built-in corpus");
  }
  data.train = read_tagged(train_path);
  data.dev = read_tagged(dev_path);
  data.test = read_tagged(test_path);
  data.description = train_path + ", " + dev_path + ", " + test_path;
  return data;
}

Vocabs build_vocabs(const Data& data, int64_t min_freq) {
  std::map<std::string, int64_t> words, tags;
  for (const TaggedSentence& s : data.train) {
    for (const std::string& w : s.words) ++words[w];
  }
  for (const auto* split : {&data.train, &data.dev, &data.test}) {
    for (const TaggedSentence& s : *split) {
      for (const std::string& t : s.tags) ++tags[t];
    }
  }
  return Vocabs{Vocab(words, min_freq), Vocab(tags, 1, {})};
}

Evaluation evaluate(TaggerModel& model, const Vocabs& vocabs, const TagLexicon& lexicon,
                    const std::vector<TaggedSentence>& sentences, int64_t batch_size) {
  const bool was_training = model.is_training();
  check_lengths("evaluated", sentences);
  const Encoded enc = encode(vocabs, sentences);
  model.eval();
  qkv::NoGradGuard no_grad;
  const int64_t C = vocabs.tags.size();
  Evaluation result;
  result.predicted.resize(sentences.size());
  result.confusion.assign(C, std::vector<int64_t>(C, 0));
  double loss_sum = 0;
  int64_t tokens = 0;
  const auto batches = qkv::data::make_batches(
      enc.words, enc.tags, {.batch_size = batch_size, .shuffle = false, .pad_id = vocabs.words.pad_id()});
  for (const qkv::data::Batch& b : batches) {
    const BatchTensors t = to_tensors(b);
    const Tensor logits = model.forward(t.ids, t.valid_lens);
    loss_sum +=
        qkv::nn::functional::sequence_cross_entropy(logits, t.targets, t.valid_lens).item() * t.tokens;
    tokens += t.tokens;
    const IndexTensor pred = logits.argmax(-1);
    for (int64_t i = 0; i < b.batch_size; ++i) {
      const int64_t s = b.indices[i];
      for (int64_t j = 0; j < b.valid_lens[i]; ++j) {
        const int64_t p = pred[i * b.max_len + j];
        ++result.confusion[enc.tags[s][j]][p];
        result.predicted[s].push_back(vocabs.tags.token(p));
      }
    }
  }
  result.loss = loss_sum / std::max<int64_t>(tokens, 1);
  result.score = score_tags(lexicon, sentences, result.predicted);
  model.train(was_training);
  return result;
}

namespace {

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

  // A fresh run: nothing of an old run in the directory may be mistaken for this one's.
  void start_run_directory() const;
  // Continues from `saved`: weights, optimizer, generator, step and epoch history.
  void restore(const SavedRun& saved);
  TrainResult run();

 private:
  std::shared_ptr<TaggerModel> seeded_model() const;
  EpochTotals train_steps(const std::vector<qkv::data::Batch>& batches, qkv::examples::Progress* progress,
                          std::vector<double>& step_losses);
  void run_epoch(int64_t epoch, bool profile, std::vector<double>& step_losses);
  bool record(const EpochMetrics& m);
  void save_state(const fs::path& path) const;
  void print_summary() const;
  void print_test_table(const Evaluation& test) const;
  void draw_figures(const Evaluation& test) const;

  const Config config_;
  const Vocabs vocabs_;
  const Data& data_;
  const TrainOptions& options_;
  const fs::path dir_;
  const TagLexicon lexicon_;
  const Encoded train_set_;
  const int64_t total_steps_;
  std::shared_ptr<TaggerModel> model_;
  qkv::optim::AdamW optimizer_;
  qkv::optim::WarmupLR schedule_;
  int64_t step_ = 0;
  std::vector<EpochMetrics> history_;
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
      model_(seeded_model()),
      optimizer_(model_->parameters(), {.lr = config_.lr, .weight_decay = config_.weight_decay}),
      schedule_(optimizer_, warmup_for(config_, total_steps_, options.verbose), total_steps_) {}

std::shared_ptr<TaggerModel> Trainer::seeded_model() const {
  qkv::manual_seed(config_.seed);
  return make_model(config_, vocabs_.words.size(), vocabs_.tags.size());
}

void Trainer::start_run_directory() const {
  fs::create_directories(dir_);
  for (const char* stale : {"best.safetensors", "last.safetensors", "metrics.csv", "profile.csv"})
    fs::remove(dir_ / stale);
  fs::remove_all(dir_ / "figures");
  qkv::io::write_text_file(dir_ / "config.json", qkv::io::to_json(config_.to_json()) + "\n", "tagger");
  vocabs_.words.save((dir_ / "words.txt").string());
  vocabs_.tags.save((dir_ / "tags.txt").string());
}

void Trainer::restore(const SavedRun& saved) {
  step_ = qkv::io::load_checkpoint(saved.checkpoint_path, *model_, optimizer_).step;
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
// schedule's, batch after batch.
EpochTotals Trainer::train_steps(const std::vector<qkv::data::Batch>& batches,
                                 qkv::examples::Progress* progress, std::vector<double>& step_losses) {
  EpochTotals totals;
  for (size_t i = 0; i < batches.size(); ++i) {
    const BatchTensors b = to_tensors(batches[i]);
    const Tensor logits = model_->forward(b.ids, b.valid_lens);
    const Tensor loss = qkv::nn::functional::sequence_cross_entropy(logits, b.targets, b.valid_lens);
    optimizer_.zero_grad();
    loss.backward();
    qkv::optim::clip_grad_norm_(model_->parameters(), config_.clip);
    optimizer_.step();
    totals.lr = optimizer_.lr();
    schedule_.step();
    ++step_;
    const double l = loss.item();
    step_losses.push_back(l);
    totals.loss_sum += l * b.tokens;
    totals.tokens += b.tokens;
    totals.correct += count_correct(logits, b);
    if (progress) show_progress(*progress, static_cast<int64_t>(i) + 1, totals);
  }
  return totals;
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
  const EpochTotals totals = train_steps(batches, progress ? &*progress : nullptr, step_losses);
  if (profiler) profiler->stop();
  const double train_secs = seconds_since(t0);
  train_seconds_ += train_secs;
  train_tokens_ += totals.tokens;
  const Evaluation dev = evaluate(*model_, vocabs_, lexicon_, data_.dev, kEvalBatchSize);
  const EpochMetrics m{.epoch = epoch + 1,
                       .train_loss = totals.loss_sum / totals.tokens,
                       .train_acc = static_cast<double>(totals.correct) / totals.tokens,
                       .dev_loss = dev.loss,
                       .dev_acc = dev.score.overall.value(),
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
  // Each file is written atomically, best first: a crash between the two leaves a last checkpoint
  // from before this epoch, and resuming redoes it.
  if (improved) save_state(dir_ / "best.safetensors");
  save_state(dir_ / "last.safetensors");
  write_metrics_csv(dir_ / "metrics.csv", history_);
  return improved;
}

void Trainer::save_state(const fs::path& path) const {
  Json::Object state{
      {"config", config_.to_json()}, {"history", history_json(history_)}, {"best_dev_acc", Json(best_dev_)}};
  qkv::io::save_checkpoint(path, *model_, optimizer_, step_, qkv::io::to_json(Json(std::move(state))));
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
  result.train_tokens_per_s = train_seconds_ > 0 ? train_tokens_ / train_seconds_ : 0;
  if (static_cast<int64_t>(history_.size()) < config_.epochs) return result;  // stopped early: resume later

  // The best checkpoint, on test.
  model_->load_state_dict(qkv::io::read_checkpoint(dir_ / "best.safetensors").model);
  result.test = evaluate(*model_, vocabs_, lexicon_, data_.test, kEvalBatchSize);
  if (options_.verbose) print_test_table(result.test);
  if (options_.figures) draw_figures(result.test);
  if (options_.verbose) std::cout << "checkpoint: " << (dir_ / "best.safetensors").string() << "\n";
  return result;
}

void Trainer::print_test_table(const Evaluation& test) const {
  const TaggingScore majority = score_tags(lexicon_, data_.test, majority_tags(lexicon_, data_.test));
  const TaggingScore window = score_tags(lexicon_, data_.test, context_window_tags(data_.train, data_.test));
  std::cout << "\ntest accuracy (" << data_.test.size() << " sentences, " << test.score.overall.total
            << " tokens; " << test.score.ambiguous.total << " ambiguous, " << test.score.repeated.total
            << " in tag-changing repeats):\n";
  print_score_header(std::cout, "tagger");
  print_score_row(std::cout, "majority tag (unigram)", majority);
  print_score_row(std::cout, "word window (prev, word, next)", window);
  print_score_row(std::cout, config_.model + " (best dev " + percent(best_dev_) + ")", test.score);
}

void Trainer::draw_figures(const Evaluation& test) const {
  const fs::path fig = dir_ / "figures";
  fs::create_directories(fig);
  std::vector<std::string> written;
  written.push_back(draw_curves(history_, fig));
  for (const std::string& f : draw_attention(*model_, vocabs_, split_words(options_.example), fig))
    written.push_back(f);
  if (const Tensor P = model_->positional_table(); P.defined())
    written.push_back(draw_positional_encoding(P, 64, fig));
  written.push_back(draw_confusion(test.confusion, vocabs_.tags, fig));
  if (options_.verbose) {
    std::cout << "\nwrote " << written.size() << " figures to " << fig.string() << "/:";
    for (const std::string& f : written) std::cout << " " << fs::path(f).filename().string();
    std::cout << "\n";
  }
}

// Every sentence of every split must fit the positional encoding.
void check_lengths(const Data& data) {
  check_lengths("training", data.train);
  check_lengths("dev", data.dev);
  check_lengths("test", data.test);
}

}  // namespace

TrainResult train(Config config, const Data& data, const TrainOptions& options) {
  // Everything that can be refused is checked before the run directory is touched.
  config.validate();
  check_lengths(data);
  Vocabs vocabs = build_vocabs(data, config.min_freq);
  Trainer trainer(std::move(config), std::move(vocabs), data, options);
  trainer.start_run_directory();
  return trainer.run();
}

TrainResult resume(SavedRun saved, const Data& data, const TrainOptions& options) {
  check_lengths(data);
  Trainer trainer(saved.config, saved.vocabs, data, options);
  trainer.restore(saved);
  return trainer.run();
}

SavedRun load_saved_run(const std::string& run_dir, const std::string& checkpoint) {
  const fs::path dir = run_dir, config_path = dir / "config.json", checkpoint_path = dir / checkpoint;
  if (!fs::exists(config_path)) {
    throw qkv::ValueError("tagger: " + config_path.string() + " not found: is " + dir.string() +
                          " a run directory?");
  }
  const Config first = Config::from_json(qkv::io::parse_json(read_text(config_path)));
  if (!fs::exists(checkpoint_path)) {
    throw qkv::ValueError("tagger: " + checkpoint_path.string() +
                          " not found: the run has not finished an epoch");
  }
  qkv::io::Checkpoint ckpt = qkv::io::read_checkpoint(checkpoint_path);
  const Json state = checkpoint_state(checkpoint_path, ckpt);
  Config config = Config::from_json(*state.find("config"));
  // config.json holds the run's first config; --epochs may have extended the run since, nothing else.
  Config expected = first;
  expected.epochs = config.epochs;
  if (qkv::io::to_json(expected.to_json()) != qkv::io::to_json(config.to_json())) {
    throw qkv::ValueError("tagger: " + checkpoint_path.string() + " was trained with another config than " +
                          config_path.string() + ": " + qkv::io::to_json(config.to_json()));
  }
  return SavedRun{checkpoint_path.string(),
                  std::move(ckpt),
                  std::move(config),
                  load_vocabs(dir),
                  history_from_json(*state.find("history")),
                  state.find("best_dev_acc")->as_double()};
}

Run load_run(const std::string& run_dir) {
  SavedRun saved = load_saved_run(run_dir, "best.safetensors");
  std::shared_ptr<TaggerModel> model =
      make_model(saved.config, saved.vocabs.words.size(), saved.vocabs.tags.size());
  model->load_state_dict(saved.checkpoint.model);
  model->eval();
  return Run{std::move(saved.config), std::move(saved.vocabs), std::move(model)};
}

std::vector<std::vector<std::string>> predict(Run& run,
                                              const std::vector<std::vector<std::string>>& sentences) {
  qkv::NoGradGuard no_grad;
  run.model->eval();
  std::vector<std::vector<int64_t>> ids;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const auto& s = sentences[i];
    if (s.empty()) throw qkv::ValueError("tagger predict: sentence " + std::to_string(i + 1) + " is empty");
    if (s.size() > static_cast<size_t>(kMaxSentenceLength)) {
      throw qkv::ValueError("tagger predict: sentence " + std::to_string(i + 1) + " has " +
                            std::to_string(s.size()) + " tokens; the tagger takes at most " +
                            std::to_string(kMaxSentenceLength));
    }
    ids.push_back(run.vocabs.words.encode(s));
  }
  std::vector<std::vector<std::string>> out(sentences.size());
  const auto batches = qkv::data::make_batches(
      ids, {}, {.batch_size = 64, .shuffle = false, .pad_id = run.vocabs.words.pad_id()});
  for (const qkv::data::Batch& b : batches) {
    const BatchTensors t = to_tensors(b);
    const IndexTensor pred = run.model->forward(t.ids, t.valid_lens).argmax(-1);
    for (int64_t i = 0; i < b.batch_size; ++i) {
      for (int64_t j = 0; j < b.valid_lens[i]; ++j)
        out[b.indices[i]].push_back(run.vocabs.tags.token(pred[i * b.max_len + j]));
    }
  }
  return out;
}

void print_evaluation(std::ostream& out, const Evaluation& e, const Vocab& tags) {
  const int64_t C = tags.size();
  out << "accuracy " << percent(e.score.overall.value()) << " of " << e.score.overall.total
      << " tokens; ambiguous " << percent(e.score.ambiguous.value()) << " of " << e.score.ambiguous.total
      << "; tag-changing repeats " << percent(e.score.repeated.value()) << " of " << e.score.repeated.total
      << "; loss " << e.loss << "\n\n";
  out << "per tag (gold):\n";
  for (int64_t g = 0; g < C; ++g) {
    int64_t total = 0;
    for (int64_t p = 0; p < C; ++p) total += e.confusion[g][p];
    if (total == 0) continue;
    out << "  " << std::left << std::setw(6) << tags.token(g) << std::right << std::setw(9)
        << percent(static_cast<double>(e.confusion[g][g]) / total) << "  of " << total << "\n";
  }
  out << "\nconfusion matrix (rows gold, columns predicted):\n      ";
  for (int64_t p = 0; p < C; ++p) out << std::setw(6) << tags.token(p).substr(0, 5);
  out << "\n";
  for (int64_t g = 0; g < C; ++g) {
    out << std::left << std::setw(6) << tags.token(g).substr(0, 5) << std::right;
    for (int64_t p = 0; p < C; ++p) out << std::setw(6) << e.confusion[g][p];
    out << "\n";
  }
}

}  // namespace tagger
