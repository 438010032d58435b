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

#include "examples/common/progress.h"
#include "examples/tagger/figures.h"
#include "data/batching.h"
#include "io/checkpoint.h"
#include "data/conll.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "tensor/error.h"
#include "autograd/grad_mode.h"
#include "autograd/debug/profiler.h"
#include "tensor/random.h"

namespace tagger {

namespace fs = std::filesystem;
using qkv::io::Json;
using qkv::data::Vocab;

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
    throw qkv::FormatError("tagger: " + path.string() + " is not a tagger checkpoint: its config is not JSON (" + e.what() + ")");
  }
  for (const char* key : {"config", "history", "best_dev_acc"}) {
    if (!state.is_object() || state.find(key) == nullptr) {
      throw qkv::FormatError("tagger: " + path.string() + " is not a tagger checkpoint: no \"" + key + "\" in its config");
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
                            std::to_string(n) + " tokens; the tagger takes at most " + std::to_string(kMaxSentenceLength));
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
    if (r.size() != 8) throw qkv::FormatError("tagger: a checkpoint's epoch history row has " + std::to_string(r.size()) + " values, expected 8");
    history.push_back({r[0].as_int(), r[1].as_double(), r[2].as_double(), r[3].as_double(), r[4].as_double(),
                       r[5].as_double(), r[6].as_double(), r[7].as_double()});
  }
  return history;
}

void write_text(const fs::path& path, const std::string& text);

void write_metrics_csv(const fs::path& path, const std::vector<EpochMetrics>& history) {
  std::ostringstream out;
  out << "epoch,train_loss,train_acc,dev_loss,dev_acc,lr,tokens_per_s,seconds\n" << std::setprecision(6);
  for (const EpochMetrics& m : history) {
    out << m.epoch << ',' << m.train_loss << ',' << m.train_acc << ',' << m.dev_loss << ',' << m.dev_acc << ','
        << m.lr << ',' << m.tokens_per_s << ',' << m.seconds << '\n';
  }
  write_text(path, out.str());
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}


void write_text(const fs::path& path, const std::string& text) {
  qkv::io::AtomicFileWriter writer("tagger", path);
  writer.write(std::as_bytes(std::span(text.data(), text.size())));
  writer.commit();
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

}  // namespace

Config load_run_config(const std::string& run_dir) {
  const fs::path dir = run_dir;
  const fs::path path = dir / "config.json";
  if (!fs::exists(path)) throw qkv::ValueError("tagger: " + path.string() + " not found: is " + dir.string() + " a run directory?");
  return Config::from_json(qkv::io::parse_json(read_text(path)));
}

namespace {

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

void print_score_row(std::ostream& out, const std::string& name, const TaggingScore& s, const std::string& extra) {
  out << "  " << pad(name, kNameColumns) << std::right << std::setw(9) << percent(s.overall.value()) << std::setw(11)
      << percent(s.ambiguous.value()) << std::setw(11) << percent(s.repeated.value()) << extra << "\n";
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
  const std::string &train_path = config.train_file, &dev_path = config.dev_file, &test_path = config.test_file;
  Data data;
  if (train_path.empty() && dev_path.empty() && test_path.empty()) {
    Corpus corpus = generate_corpus(config.seed, {config.train_sentences, config.dev_sentences, config.test_sentences});
    data.train = std::move(corpus.train);
    data.dev = std::move(corpus.dev);
    data.test = std::move(corpus.test);
    data.description = "built-in corpus, seed " + std::to_string(config.seed);
    return data;
  }
  if (train_path.empty() || dev_path.empty() || test_path.empty()) {
    throw qkv::ValueError("tagger: give all three of --train, --dev and --test, or none for the built-in corpus");
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
  const auto batches = qkv::data::make_batches(enc.words, enc.tags,
                                             {.batch_size = batch_size, .shuffle = false, .pad_id = vocabs.words.pad_id()});
  for (const qkv::data::Batch& b : batches) {
    const BatchTensors t = to_tensors(b);
    const Tensor logits = model.forward(t.ids, t.valid_lens);
    loss_sum += qkv::nn::functional::sequence_cross_entropy(logits, t.targets, t.valid_lens).item() * t.tokens;
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

TrainResult train(Config config, const Data& data, const TrainOptions& options) {
  const fs::path dir = options.run_dir;
  std::ostream& log = std::cout;
  const bool verbose = options.verbose;
  std::vector<EpochMetrics> history;
  double best_dev = -1;
  int64_t start_epoch = 0;
  fs::path last = dir / "last.safetensors", best = dir / "best.safetensors";

  // Everything that can be refused is checked before the run directory is touched.
  Json resume_state;
  if (options.resume) {
    if (!fs::exists(last)) throw qkv::ValueError("tagger: cannot resume: " + last.string() + " not found");
    // The config the last checkpoint was saved with: config.json holds the run's first one, and
    // --epochs may have extended the run since.
    resume_state = checkpoint_state(last, qkv::io::read_checkpoint(last));
    const int64_t epochs = config.epochs;
    config = Config::from_json(*resume_state.find("config"));
    config.epochs = std::max(config.epochs, epochs);  // --epochs may extend a run, never shorten it
  } else {
    config.validate();
  }
  check_lengths("training", data.train);
  check_lengths("dev", data.dev);
  check_lengths("test", data.test);
  const Vocabs vocabs = options.resume ? load_vocabs(dir) : build_vocabs(data, config.min_freq);
  const TagLexicon lexicon(data.train);
  const Encoded train_set = encode(vocabs, data.train);
  // make_batches fills every batch but at most one (data/batching.h), whatever the order.
  const int64_t n_train = static_cast<int64_t>(train_set.words.size());
  const int64_t steps_per_epoch = (n_train + config.batch_size - 1) / config.batch_size;
  const int64_t total_steps = steps_per_epoch * config.epochs;
  // A small corpus or budget may have fewer steps than the default warmup: warm up for a tenth.
  const int64_t warmup = config.warmup_steps < total_steps ? config.warmup_steps : total_steps / 10;
  if (warmup != config.warmup_steps && verbose) {
    log << "note: " << total_steps << " steps in all, not more than --warmup " << config.warmup_steps
        << ": warming up for " << warmup << " steps\n";
  }
  if (!options.resume) {
    fs::create_directories(dir);
    // A fresh run in an old run directory: nothing of the old run may be mistaken for this one's.
    for (const char* stale : {"best.safetensors", "last.safetensors", "metrics.csv", "profile.csv"}) fs::remove(dir / stale);
    fs::remove_all(dir / "figures");
    write_text(dir / "config.json", qkv::io::to_json(config.to_json()) + "\n");
    vocabs.words.save((dir / "words.txt").string());
    vocabs.tags.save((dir / "tags.txt").string());
  }

  qkv::manual_seed(config.seed);
  std::shared_ptr<TaggerModel> model = make_model(config, vocabs.words.size(), vocabs.tags.size());
  qkv::optim::AdamW optimizer(model->parameters(), {.lr = config.lr, .weight_decay = config.weight_decay});
  qkv::optim::WarmupLR schedule(optimizer, warmup, total_steps);
  int64_t step = 0;

  if (options.resume) {
    const qkv::io::Checkpoint ckpt = qkv::io::load_checkpoint(last, *model, optimizer);
    history = history_from_json(*resume_state.find("history"));
    best_dev = resume_state.find("best_dev_acc")->as_double();
    step = ckpt.step;
    start_epoch = static_cast<int64_t>(history.size());
    schedule.set_last_step(step);
    if (verbose) log << "resuming " << dir.string() << " after epoch " << start_epoch << " (step " << step << ")\n";
  }

  if (verbose) {
    log << "data: " << data.description << "\n";
    print_stats(log, corpus_stats(data.train));
    log << "vocabulary: " << vocabs.words.size() << " words (min_freq " << config.min_freq << "), "
        << vocabs.tags.size() << " tags\n";
    log << "model: " << model->num_parameters() << " parameters, " << qkv::io::to_json(config.to_json()) << "\n";
  }

  auto save_state = [&](const fs::path& path) {
    Json::Object state{{"config", config.to_json()}, {"history", history_json(history)}, {"best_dev_acc", Json(best_dev)}};
    qkv::io::save_checkpoint(path, *model, optimizer, step, qkv::io::to_json(Json(std::move(state))));
  };

  TrainResult result;
  int64_t epochs_run = 0;
  double train_seconds = 0;
  int64_t train_tokens = 0;
  for (int64_t epoch = start_epoch; epoch < config.epochs; ++epoch) {
    if (options.stop_after >= 1 && epochs_run == options.stop_after) break;
    log.flush();  // the progress bar goes to stderr: keep the two streams in order
    const auto t0 = std::chrono::steady_clock::now();
    model->train();
    const auto batches = qkv::data::make_batches(train_set.words, train_set.tags,
                                               {.batch_size = config.batch_size,
                                                .seed = config.seed + static_cast<uint64_t>(epoch),
                                                .pad_id = vocabs.words.pad_id()});
    std::optional<qkv::examples::Progress> progress;
    if (options.progress) {
      progress.emplace("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(config.epochs),
                       static_cast<int64_t>(batches.size()));
    }
    double loss_sum = 0, lr = 0;
    int64_t tokens = 0, correct = 0;
    std::optional<qkv::Profiler> profiler;  // the training steps of this call's first epoch
    if (options.profile && epochs_run == 0) profiler.emplace();
    for (size_t i = 0; i < batches.size(); ++i) {
      const BatchTensors b = to_tensors(batches[i]);
      const Tensor logits = model->forward(b.ids, b.valid_lens);
      const Tensor loss = qkv::nn::functional::sequence_cross_entropy(logits, b.targets, b.valid_lens);
      optimizer.zero_grad();
      loss.backward();
      qkv::optim::clip_grad_norm_(model->parameters(), config.clip);
      optimizer.step();
      lr = optimizer.lr();
      schedule.step();
      ++step;
      const double l = loss.item();
      result.step_losses.push_back(l);
      loss_sum += l * b.tokens;
      tokens += b.tokens;
      correct += count_correct(logits, b);
      if (progress) {
        const double secs = progress->elapsed_seconds();
        char stats[160];
        std::snprintf(stats, sizeof stats, "loss %.4f  acc %s  %.0f tok/s", loss_sum / tokens,
                      percent(static_cast<double>(correct) / tokens).c_str(), secs > 0 ? tokens / secs : 0.0);
        progress->update(static_cast<int64_t>(i) + 1, stats);
      }
    }
    if (profiler) profiler->stop();
    const double train_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    train_seconds += train_secs;
    train_tokens += tokens;
    const Evaluation dev = evaluate(*model, vocabs, lexicon, data.dev, 64);
    EpochMetrics m;
    m.epoch = epoch + 1;
    m.train_loss = loss_sum / tokens;
    m.train_acc = static_cast<double>(correct) / tokens;
    m.dev_loss = dev.loss;
    m.dev_acc = dev.score.overall.value();
    m.lr = lr;
    m.tokens_per_s = tokens / train_secs;
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    history.push_back(m);
    const bool improved = m.dev_acc > best_dev;
    if (improved) best_dev = m.dev_acc;
    // Each file is written atomically, best first: a crash between the two leaves a last checkpoint
    // from before this epoch, and resuming redoes it.
    if (improved) save_state(best);
    save_state(last);
    write_metrics_csv(dir / "metrics.csv", history);
    if (progress) {
      char line[200];
      std::snprintf(line, sizeof line, "train loss %.4f acc %s | dev loss %.4f acc %s%s | %.0f tok/s, %.1f s",
                    m.train_loss, percent(m.train_acc).c_str(), m.dev_loss, percent(m.dev_acc).c_str(),
                    improved ? " (best)" : "", m.tokens_per_s, m.seconds);
      progress->finish(line);
    }
    if (profiler) {
      profiler->write_csv((dir / "profile.csv").string());
      if (verbose)
        log << "profile of epoch " << epoch + 1 << "'s training steps (evaluation excluded), also in "
            << (dir / "profile.csv").string() << ":\n" << profiler->report();
    }
    ++epochs_run;
  }

  result.history = history;
  result.best_dev_acc = best_dev;
  result.train_tokens_per_s = train_seconds > 0 ? train_tokens / train_seconds : 0;
  if (static_cast<int64_t>(history.size()) < config.epochs) return result;  // stopped early: resume later

  // The best checkpoint, on test.
  model->load_state_dict(qkv::io::read_checkpoint(best).model);
  result.test = evaluate(*model, vocabs, lexicon, data.test, 64);
  if (verbose) {
    const TaggingScore majority = score_tags(lexicon, data.test, majority_tags(lexicon, data.test));
    const TaggingScore window = score_tags(lexicon, data.test, context_window_tags(data.train, data.test));
    log << "\ntest accuracy (" << data.test.size() << " sentences, " << result.test.score.overall.total << " tokens; "
        << result.test.score.ambiguous.total << " ambiguous, " << result.test.score.repeated.total
        << " in tag-changing repeats):\n";
    print_score_header(log, "tagger");
    print_score_row(log, "majority tag (unigram)", majority);
    print_score_row(log, "word window (prev, word, next)", window);
    print_score_row(log, config.model + " (best dev " + percent(best_dev) + ")", result.test.score);
  }
  if (options.figures) {
    const fs::path fig = dir / "figures";
    fs::create_directories(fig);
    std::vector<std::string> written;
    written.push_back(draw_curves(history, fig));
    for (const std::string& f : draw_attention(*model, vocabs, split_words(options.example), fig)) written.push_back(f);
    if (const Tensor P = model->positional_table(); P.defined()) written.push_back(draw_positional_encoding(P, 64, fig));
    written.push_back(draw_confusion(result.test.confusion, vocabs.tags, fig));
    if (verbose) {
      log << "\nwrote " << written.size() << " figures to " << fig.string() << "/:";
      for (const std::string& f : written) log << " " << fs::path(f).filename().string();
      log << "\n";
    }
  }
  if (verbose) log << "checkpoint: " << best.string() << "\n";
  return result;
}

Run load_run(const std::string& run_dir) {
  const fs::path dir = run_dir;
  Config config = load_run_config(dir.string());
  Vocabs vocabs = load_vocabs(dir);
  const fs::path best = dir / "best.safetensors";
  if (!fs::exists(best)) throw qkv::ValueError("tagger: " + best.string() + " not found: the run has not finished an epoch");
  const qkv::io::Checkpoint ckpt = qkv::io::read_checkpoint(best);
  // The checkpoint says which config made it; config.json must agree (but for a longer budget).
  Config saved = Config::from_json(*checkpoint_state(best, ckpt).find("config"));
  saved.epochs = config.epochs;
  if (qkv::io::to_json(saved.to_json()) != qkv::io::to_json(config.to_json())) {
    throw qkv::ValueError("tagger: " + best.string() + " was trained with another config than " +
                          (dir / "config.json").string() + ": " + qkv::io::to_json(saved.to_json()));
  }
  std::shared_ptr<TaggerModel> model = make_model(config, vocabs.words.size(), vocabs.tags.size());
  model->load_state_dict(ckpt.model);
  model->eval();
  return Run{std::move(config), std::move(vocabs), std::move(model)};
}

std::vector<std::vector<std::string>> predict(Run& run, const std::vector<std::vector<std::string>>& sentences) {
  qkv::NoGradGuard no_grad;
  run.model->eval();
  std::vector<std::vector<int64_t>> ids;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const auto& s = sentences[i];
    if (s.empty()) throw qkv::ValueError("tagger predict: sentence " + std::to_string(i + 1) + " is empty");
    if (s.size() > static_cast<size_t>(kMaxSentenceLength)) {
      throw qkv::ValueError("tagger predict: sentence " + std::to_string(i + 1) + " has " + std::to_string(s.size()) +
                            " tokens; the tagger takes at most " + std::to_string(kMaxSentenceLength));
    }
    ids.push_back(run.vocabs.words.encode(s));
  }
  std::vector<std::vector<std::string>> out(sentences.size());
  const auto batches = qkv::data::make_batches(ids, {}, {.batch_size = 64, .shuffle = false, .pad_id = run.vocabs.words.pad_id()});
  for (const qkv::data::Batch& b : batches) {
    const BatchTensors t = to_tensors(b);
    const IndexTensor pred = run.model->forward(t.ids, t.valid_lens).argmax(-1);
    for (int64_t i = 0; i < b.batch_size; ++i) {
      for (int64_t j = 0; j < b.valid_lens[i]; ++j) out[b.indices[i]].push_back(run.vocabs.tags.token(pred[i * b.max_len + j]));
    }
  }
  return out;
}

void print_evaluation(std::ostream& out, const Evaluation& e, const Vocab& tags) {
  const int64_t C = tags.size();
  out << "accuracy " << percent(e.score.overall.value()) << " of " << e.score.overall.total << " tokens; ambiguous "
      << percent(e.score.ambiguous.value()) << " of " << e.score.ambiguous.total << "; tag-changing repeats "
      << percent(e.score.repeated.value()) << " of " << e.score.repeated.total << "; loss " << e.loss << "\n\n";
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
