#include "examples/lm/train.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numbers>
#include <sstream>

#include "autograd/grad_mode.h"
#include "dist/data_parallel.h"
#include "dist/same_start.h"
#include "dist/sampler.h"
#include "examples/common/config_fields.h"
#include "examples/common/progress.h"
#include "examples/common/run_directory.h"
#include "examples/common/ranks.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace lm {
namespace fs = std::filesystem;
using qkv::IndexTensor;
using qkv::Tensor;
using qkv::io::Json;
using qkv::examples::check_int;
using qkv::examples::check_name;
using qkv::examples::check_number;

namespace {

// Every field of the Config under its config.json key, for writing and strict reading.
template <class C, class F>
void for_each_field(C& c, F&& f) {
  f("text", c.text);
  f("cache", c.cache);
  f("context", c.model.context);
  f("d_model", c.model.d_model);
  f("heads", c.model.heads);
  f("layers", c.model.layers);
  f("ffn_hidden", c.model.ffn_hidden);
  f("positions", c.model.positions);
  f("ffn", c.model.ffn);
  f("dropout", c.model.dropout);
  f("steps", c.steps);
  f("batch", c.batch);
  f("warmup", c.warmup);
  f("eval_every", c.eval_every);
  f("seed", c.seed);
  f("lr", c.lr);
  f("weight_decay", c.weight_decay);
  f("clip", c.clip);
  f("chars", c.chars);
}

// The files a training writes atomically in its run directory.
const std::vector<std::string> kRunFiles = {"config.json", "baselines.json", "metrics.csv", "last.safetensors",
                                            "best.safetensors"};

}  // namespace

void Config::validate() const {
  // Above 2048 a window's attention weights, (H, T, T) per block, no longer fit a small machine.
  check_int("context", model.context, 2, 2048);
  check_int("d_model", model.d_model, 1, 4096);
  check_int("heads", model.heads, 1, model.d_model);
  if (model.d_model % model.heads != 0)
    throw qkv::ValueError("d_model (--d-model) " + std::to_string(model.d_model) + " is not a multiple of heads (--heads) " +
                          std::to_string(model.heads));
  if (model.positions == "rotary" && (model.d_model / model.heads) % 2 != 0)
    throw qkv::ValueError("positions (--positions) rotary needs an even head width; d_model / heads is " +
                          std::to_string(model.d_model / model.heads));
  if (model.positions == "sinusoidal" && model.d_model % 2 != 0)
    throw qkv::ValueError("positions (--positions) sinusoidal needs an even d_model (--d-model); it is " +
                          std::to_string(model.d_model));
  check_int("layers", model.layers, 1, 64);
  check_int("ffn_hidden", model.ffn_hidden, 1, 65536);
  check_name("positions", model.positions, qkv::nn::position_scheme_names());
  check_name("ffn", model.ffn, qkv::nn::feed_forward_names());
  check_number("dropout", model.dropout, 0.0, 0.9);
  check_int("steps", steps, 1, 100'000'000);
  check_int("batch", batch, 1, 4096);
  check_int("warmup", warmup, 0, steps - 1);
  check_int("eval_every", eval_every, 1, 100'000'000);
  check_int("seed", seed, 0, std::numeric_limits<int64_t>::max());
  check_number("lr", lr, 0.0, 10.0, /*open_lo=*/true);
  check_number("weight_decay", weight_decay, 0.0, 10.0);
  check_number("clip", clip, 0.0, 1e6);
}

Json Config::to_json() const { return qkv::examples::fields_to_json(*this, [](auto& c, auto&& f) { for_each_field(c, f); }); }

Config Config::from_json(const Json& json, const std::string& source) {
  Config c;
  qkv::examples::fields_from_json(json, source, "an lm", c, [](auto& c, auto&& f) { for_each_field(c, f); });
  try {
    c.validate();
  } catch (const qkv::ValueError& e) {
    throw qkv::ValueError(source + ": " + e.what());
  }
  return c;
}

Data load_data(const Config& config, const std::string& chars) {
  Data d;
  d.text = config.text.empty() ? load_moby_dick(config.cache) : load_text_file(config.text);
  if (chars.empty()) {
    d.vocab = CharVocab(d.text.train);
  } else {
    const Piece saved = decode_utf8(chars, "the run's characters");
    d.vocab = CharVocab::from_chars(std::vector<char32_t>(saved.begin(), saved.end()));
  }
  d.train = d.vocab.encode(d.text.train);
  d.validation = d.vocab.encode(d.text.validation);
  d.test = d.vocab.encode(d.text.test);
  d.start_id = d.vocab.id(U'\n');
  size_t longest = 0;
  for (const auto& piece : d.train) longest = std::max(longest, piece.size());
  if (static_cast<int64_t>(longest) < config.model.context)
    throw qkv::ValueError(d.text.source + ": the longest piece of its training part has " + std::to_string(longest) +
                          " characters, shorter than one context window (--context " +
                          std::to_string(config.model.context) + "); give a longer text or a smaller --context");
  return d;
}

Json BaselineBits::to_json() const {
  Json::Object o{{"unigram", Json(unigram)}, {"ngram_order", Json(int64_t{ngram_order})}, {"ngram", Json(ngram)}};
  o.emplace_back("bzip2", bzip2 ? Json(*bzip2) : Json());
  o.emplace_back("xz", xz ? Json(*xz) : Json());
  return Json(std::move(o));
}

BaselineBits compute_baselines(const Data& d) {
  BaselineBits b;
  b.unigram = unigram_bits(d.train, d.test, d.vocab.size());
  // Orders up to 8, as far as an n-gram of ids fits the 64-bit key the counts use.
  int bits = 1;
  while ((int64_t{1} << bits) < d.vocab.size()) ++bits;
  const NgramChoice choice = best_kneser_ney_order(d.train, d.validation, d.vocab.size(), std::min(8, 64 / bits));
  b.ngram_order = choice.order;
  b.ngram = KneserNey(d.train, d.vocab.size(), choice.order).bits(d.test);
  std::string train_text, test_text;
  int64_t test_chars = 0;
  for (const Piece& p : d.text.train) train_text += encode_utf8(p);
  for (const Piece& p : d.text.test) {
    test_text += encode_utf8(p);
    test_chars += static_cast<int64_t>(p.size());
  }
  b.bzip2 = compressor_bits({"bzip2", "-9", "-c"}, train_text, test_text, test_chars);
  b.xz = compressor_bits({"xz", "-9e", "-c"}, train_text, test_text, test_chars);
  return b;
}

namespace {

// The windows that score a piece read after start_id: x = [start_id] + piece, inputs x[a, a + n),
// targets x[a + 1, a + n], of which those from index `from` on are scored (each target once).
struct Window {
  size_t piece;
  int64_t start, length, from;
};

std::vector<Window> windows(const Ids& pieces, int64_t context, int64_t stride) {
  std::vector<Window> out;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const int64_t L = static_cast<int64_t>(pieces[p].size());  // targets x[1 .. L]
    int64_t scored = 0;                                        // targets x[1 .. scored] done
    for (int64_t a = 0; scored < L; a += stride) {
      const int64_t start = std::min(a, std::max<int64_t>(L - context, 0));
      const int64_t length = std::min(context, L - start);
      out.push_back({p, start, length, scored - start});
      scored = start + length;
    }
  }
  return out;
}

double log2e() { return 1.0 / std::numbers::ln2; }

// Windows of the context that evaluate_bits runs at once: 16 at a context of 256, fewer above, so
// that the attention weights each block keeps in evaluation, (windows, H, T, T), stay near 16 MiB
// per head.
int64_t windows_at_once(int64_t T) { return std::clamp<int64_t>(16 * 256 * 256 / (T * T), 1, 16); }

}  // namespace

double evaluate_bits(CharGPT& model, const Ids& pieces, int32_t start_id, std::vector<double>* by_position) {
  const int64_t T = model.config.context;
  const bool was_training = model.is_training();
  model.eval();
  qkv::NoGradGuard no_grad;
  double total = 0;
  int64_t count = 0;
  const bool positions = by_position != nullptr;
  std::vector<double> sum(static_cast<size_t>(T)), n(static_cast<size_t>(T));
  const std::vector<Window> all = windows(pieces, T, positions ? T : T / 2);
  // Windows of one length run together, up to windows_at_once(T) at a time.
  for (size_t first = 0, last = 0; first < all.size(); first = last) {
    while (last < all.size() && static_cast<int64_t>(last - first) < windows_at_once(T) &&
           all[last].length == all[first].length)
      ++last;
    const int64_t B = static_cast<int64_t>(last - first), length = all[first].length;
    std::vector<int64_t> inputs, targets;
    for (size_t k = first; k < last; ++k) {
      const std::vector<int32_t>& piece = pieces[all[k].piece];
      for (int64_t x = all[k].start; x < all[k].start + length; ++x) {  // x indexes [start_id] + piece
        inputs.push_back(x == 0 ? start_id : piece[static_cast<size_t>(x - 1)]);
        targets.push_back(piece[static_cast<size_t>(x)]);
      }
    }
    const Tensor logits = model.forward(IndexTensor(inputs, {B, length})).view({B * length, -1});
    const Tensor nats = qkv::nn::functional::cross_entropy(logits, IndexTensor(targets),
                                                          {.reduction = qkv::nn::functional::Reduction::None})
                            .contiguous();
    for (size_t k = first; k < last; ++k) {
      const float* row = nats.data() + static_cast<int64_t>(k - first) * length;
      for (int64_t i = std::max<int64_t>(all[k].from, 0); i < length; ++i) {
        total += row[i];
        ++count;
        if (positions && length == T) {
          sum[static_cast<size_t>(i)] += row[i] * log2e();
          n[static_cast<size_t>(i)] += 1;
        }
      }
    }
  }
  if (positions) {
    by_position->assign(static_cast<size_t>(T), 0.0);
    for (int64_t i = 0; i < T; ++i) (*by_position)[i] = n[i] > 0 ? sum[i] / n[i] : 0.0;
  }
  model.train(was_training);
  return count > 0 ? total / static_cast<double>(count) * log2e() : 0.0;
}

namespace {

// Windows of context + 1 characters drawn uniformly over every start in the training pieces, each
// piece read after start_id: inputs x[a, a + T), targets x[a + 1, a + T] of x = [start_id] + piece.
class Batches {
 public:
  Batches(const Data& d, int64_t T) : d_(d), T_(T) {
    for (size_t p = 0; p < d.train.size(); ++p) {
      const int64_t starts = static_cast<int64_t>(d.train[p].size()) + 1 - T;  // a in [0, L + 1 − T)
      if (starts > 0) {
        total_ += starts;
        ends_.push_back(total_);
        pieces_.push_back(p);
      }
    }
  }
  // (B, T) inputs and targets, drawn with `g` (the default generator in one process).
  std::pair<IndexTensor, IndexTensor> draw(int64_t B, qkv::Generator& g = qkv::default_generator()) const {
    std::vector<int64_t> inputs(static_cast<size_t>(B * T_)), targets(inputs.size());
    for (int64_t b = 0; b < B; ++b) {
      const int64_t k = static_cast<int64_t>(g.next_below(static_cast<uint64_t>(total_)));
      const size_t i = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), k) - ends_.begin());
      const std::vector<int32_t>& piece = d_.train[pieces_[i]];
      const int64_t a = k - (i == 0 ? 0 : ends_[i - 1]);
      for (int64_t t = 0; t < T_; ++t) {
        const int64_t x = a + t;
        inputs[b * T_ + t] = x == 0 ? d_.start_id : piece[static_cast<size_t>(x - 1)];
        targets[b * T_ + t] = piece[static_cast<size_t>(x)];
      }
    }
    return {IndexTensor(inputs, {B, T_}), IndexTensor(targets, {B * T_})};
  }

 private:
  const Data& d_;
  int64_t T_, total_ = 0;
  std::vector<int64_t> ends_;  // cumulative starts
  std::vector<size_t> pieces_;
};

// What a checkpoint's config text holds: the config, the evaluations so far, the best validation.
std::string checkpoint_text(const Config& c, const std::vector<Evaluation>& history, double best) {
  Json::Array rows;
  for (const Evaluation& e : history)
    rows.push_back(Json(Json::Array{Json(e.step), Json(e.train_bits), Json(e.validation_bits), Json(e.lr),
                                    Json(e.seconds)}));
  return qkv::io::to_json(Json(Json::Object{{"config", c.to_json()}, {"history", Json(rows)}, {"best", Json(best)}}));
}

void write_metrics(const fs::path& dir, const std::vector<Evaluation>& history) {
  std::ostringstream csv;
  csv << "step,train_bits_per_char,validation_bits_per_char,lr,seconds\n" << std::setprecision(6);
  for (const Evaluation& e : history)
    csv << e.step << ',' << e.train_bits << ',' << e.validation_bits << ',' << e.lr << ',' << e.seconds << '\n';
  qkv::io::write_text_file(dir / "metrics.csv", csv.str(), "lm");
}

// The evaluations and best validation bits a checkpoint's config text holds (checkpoint_text).
void read_history(const std::string& config_text, const fs::path& file, std::vector<Evaluation>& history,
                  double& best) {
  const Json text = qkv::examples::parse_json_of(config_text, file.string() + " (its config text)");
  const Json* rows = text.is_object() ? text.find("history") : nullptr;
  const Json* best_json = text.is_object() ? text.find("best") : nullptr;
  if (!rows || !rows->is_array() || !best_json || (!best_json->is_double() && !best_json->is_int()))
    throw qkv::ValueError(file.string() + " is not an lm checkpoint: its config text has no history and best");
  for (const Json& row : rows->as_array()) {
    if (!row.is_array() || row.as_array().size() != 5)
      throw qkv::ValueError(file.string() + ": a history row is not [step, train, validation, lr, seconds]");
    const Json::Array& r = row.as_array();
    history.push_back({r[0].as_int(), r[1].as_double(), r[2].as_double(), r[3].as_double(), r[4].as_double()});
  }
  best = best_json->as_double();
}

// The run in `dir` that --resume continues: its config, with `steps` (0: the run's own) if that
// extends it, and its evaluations and best validation bits from the last checkpoint. A run stopped
// before its first checkpoint has none: it starts again from step 0 with its config.
Config read_resumed_run(const fs::path& dir, int64_t steps, std::vector<Evaluation>& history, double& best,
                        bool& has_checkpoint) {
  has_checkpoint = fs::exists(dir / "last.safetensors");
  Config config = has_checkpoint ? load_run(dir, "last").config : read_run_config(dir);
  if (steps == 0) steps = config.steps;
  if (steps < config.steps)
    throw qkv::ValueError("lm train --resume --steps " + std::to_string(steps) + " is below the run's " +
                          std::to_string(config.steps) + ": a run can be extended, not shortened");
  config.steps = steps;
  if (has_checkpoint)
    read_history(qkv::io::read_checkpoint(dir / "last.safetensors").config, dir / "last.safetensors", history, best);
  return config;
}

}  // namespace

std::unique_ptr<qkv::optim::AdamW> make_optimizer(CharGPT& model, const Config& c) {
  qkv::optim::ParamGroup decay, no_decay{.weight_decay = 0.0};
  for (const Tensor& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).params.push_back(p);
  return std::make_unique<qkv::optim::AdamW>(std::vector<qkv::optim::ParamGroup>{decay, no_decay},
                                             qkv::optim::AdamWOptions{.lr = c.lr, .betas = {0.9, 0.99},
                                                                      .weight_decay = c.weight_decay});
}

StepResult train_step(CharGPT& model, qkv::optim::Optimizer& optimizer, const IndexTensor& inputs,
                      const IndexTensor& targets, double clip) {
  const Tensor logits = model.forward(inputs);
  const Tensor loss = qkv::nn::functional::cross_entropy(logits.view({-1, logits.size(2)}), targets);
  optimizer.zero_grad();
  loss.backward();
  StepResult r;
  r.grad_norm = qkv::optim::clip_grad_norm_(model.parameters(), clip > 0 ? clip : std::numeric_limits<double>::infinity());
  r.loss = loss.item();
  if (std::isfinite(r.loss) && std::isfinite(r.grad_norm)) optimizer.step();
  return r;
}

void print_baselines(std::ostream& out, const BaselineBits& b) {
  const auto row = [&](const std::string& name, std::optional<double> bits) {
    out << "  " << std::left << std::setw(34) << name << std::right;
    if (bits) out << std::fixed << std::setprecision(3) << *bits << "\n";
    else out << "not installed\n";
  };
  row("unigram", b.unigram);
  row("Kneser-Ney " + std::to_string(b.ngram_order) + "-gram (best on val.)", b.ngram);
  row("bzip2 -9", b.bzip2);
  row("xz -9e", b.xz);
}

BaselineBits BaselineBits::from_json(const Json& json, const std::string& source) {
  const auto number = [&](const char* key) -> std::optional<double> {
    const Json* v = json.is_object() ? json.find(key) : nullptr;
    if (!v) throw qkv::ValueError(source + ": no '" + key + "'");
    if (v->is_null()) return std::nullopt;
    if (!v->is_int() && !v->is_double()) throw qkv::ValueError(source + ": '" + key + "' is not a number");
    return v->as_double();
  };
  BaselineBits b;
  b.unigram = number("unigram").value_or(0);
  b.ngram_order = static_cast<int>(number("ngram_order").value_or(0));
  b.ngram = number("ngram").value_or(0);
  b.bzip2 = number("bzip2");
  b.xz = number("xz");
  return b;
}

namespace {

// The run's first files: the config (a fresh run) and the baselines, printed too when verbose.
void write_run_start(const fs::path& dir, const Config& config, const Data& data, const TrainOptions& o,
                     TrainResult& result) {
  result.baselines = compute_baselines(data);
  if (o.verbose) {
    std::cout << "baselines on test, bits per character:\n";
    print_baselines(std::cout, result.baselines);
  }
  if (!o.resume) qkv::io::write_text_file(dir / "config.json", qkv::io::to_json(config.to_json()) + "\n", "lm train");
  qkv::io::write_text_file(dir / "baselines.json", qkv::io::to_json(result.baselines.to_json()) + "\n", "lm train");
}

StepResult draw_and_step(CharGPT& model, qkv::optim::Optimizer& optimizer, const Batches& batches, const Config& c) {
  const auto [inputs, targets] = batches.draw(c.batch);
  return train_step(model, optimizer, inputs, targets, c.clip);
}

// Data-parallel training (docs/distributed.md): the ranks, and the reducer that sums their
// gradients (none in the reference mode, which reduces the plain way after backward).
struct Ranks {
  qkv::dist::ProcessGroup* group = nullptr;  // null in one process
  std::unique_ptr<qkv::dist::DataParallel> parallel;
  bool root() const { return group == nullptr || group->rank() == 0; }
};

Ranks join(CharGPT& model, const TrainOptions& o) {
  Ranks r;
  if (o.group == nullptr || o.group->size() < 2) return r;
  r.group = o.group;
  r.parallel = std::make_unique<qkv::dist::DataParallel>(
      model, *r.group, qkv::dist::ReducerOptions{.fixed_order = o.fixed_order_reduction});
  return r;
}

// One step on several ranks: the global batch of B windows, this rank's stride of them, its loss
// scaled by its share of the batch (every window has T targets), the gradients summed over the
// ranks and clipped there, so that every rank clips the same norm and takes the same step.
StepResult train_step_ranks(CharGPT& model, qkv::optim::Optimizer& optimizer, const Batches& batches,
                            const Config& c, int64_t step, Ranks& r) {
  qkv::Generator data_rng;
  data_rng.set_state(qkv::examples::keyed_stream(static_cast<uint64_t>(c.seed), 0, step));  // the same on every rank
  const auto [inputs, targets] = batches.draw(c.batch, data_rng);
  const std::vector<int64_t> rows = qkv::dist::shard(c.batch, r.group->rank(), r.group->size());
  qkv::default_generator().set_state(
      qkv::examples::keyed_stream(static_cast<uint64_t>(c.seed), 1 + static_cast<uint64_t>(r.group->rank()), step));
  r.parallel->zero_grad();
  StepResult out;
  if (!rows.empty()) {
    const int64_t T = c.model.context;
    std::vector<int64_t> x, y;
    for (int64_t b : rows)
      for (int64_t t = 0; t < T; ++t) {
        x.push_back(inputs[b * T + t]);
        y.push_back(targets[b * T + t]);
      }
    const int64_t n = static_cast<int64_t>(rows.size());
    const Tensor logits = model.forward(IndexTensor(x, {n, T}));
    const Tensor loss = qkv::nn::functional::cross_entropy(logits.view({-1, logits.size(2)}), IndexTensor(y, {n * T}));
    out.loss = loss.item() * static_cast<double>(n) / static_cast<double>(c.batch);  // this rank's share
    (loss * static_cast<float>(static_cast<double>(n) / static_cast<double>(c.batch))).backward();
  }
  r.parallel->sum_gradients(!rows.empty());
  double share[1] = {out.loss};  // the batch's mean loss, for the progress line and the metrics
  r.group->all_reduce_sum(std::span<double>(share));
  out.loss = share[0];
  out.grad_norm = qkv::optim::clip_grad_norm_(model.parameters(), c.clip > 0 ? c.clip : std::numeric_limits<double>::infinity());
  if (std::isfinite(out.loss) && std::isfinite(out.grad_norm)) optimizer.step();
  return out;
}

}  // namespace

TrainResult train(Config config, const TrainOptions& o) {
  const fs::path dir = o.run_dir;
  if (dir.empty()) throw qkv::ValueError("lm train: --run is empty; expected a directory");
  // Everything that can be refused is checked before the run directory is touched.
  std::vector<Evaluation> history;
  double best = std::numeric_limits<double>::infinity();
  bool has_checkpoint = false;
  if (o.resume) {
    if (!fs::is_directory(dir))
      throw qkv::ValueError("lm train --resume: " + dir.string() + " (--run) is not a directory holding an lm run");
    config = read_resumed_run(dir, config.steps, history, best, has_checkpoint);
  } else if (!config.text.empty()) {
    config.text = fs::absolute(config.text).lexically_normal().string();  // eval and --resume may run elsewhere
  }
  const Data data = load_data(config, config.chars);
  config.chars = encode_utf8(Piece(data.vocab.chars().begin(), data.vocab.chars().end()));
  config.model.vocab_size = data.vocab.size();
  if (!has_checkpoint) qkv::manual_seed(static_cast<uint64_t>(config.seed));
  CharGPT model(config.model);
  auto optimizer = make_optimizer(model, config);
  Ranks ranks = join(model, o);
  std::optional<qkv::io::DirectoryLock> lock;  // rank 0 alone writes the run directory
  if (ranks.root()) lock.emplace(qkv::examples::prepare_run_directory(dir, o.resume, "lm", kRunFiles));
  TrainResult result;
  if (o.verbose)
    std::cout << "lm: " << (config.text.empty() ? "Moby-Dick" : config.text) << ", " << data.vocab.size() - 1
              << " characters; train " << data.text.train.size() << " pieces, validation "
              << data.text.validation.size() << ", test " << data.text.test.size() << "\n";
  if (ranks.root()) write_run_start(dir, config, data, o, result);
  // The schedule reads the base learning rate before a checkpoint replaces it with its last step's.
  qkv::optim::WarmupLR schedule(*optimizer, config.warmup, config.steps);
  int64_t step = 0;
  if (has_checkpoint) step = qkv::io::load_checkpoint(dir / "last.safetensors", model, *optimizer).step;
  if (ranks.group && has_checkpoint) qkv::dist::check_same_state(model, *ranks.group, "after loading the last checkpoint");
  schedule.set_last_step(step);
  const Batches batches(data, config.model.context);
  std::optional<qkv::examples::Progress> progress;
  if (o.progress) progress.emplace("lm train", config.steps - step);
  const auto started = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  const int64_t first = step;
  const double seconds_before = history.empty() ? 0.0 : history.back().seconds;  // a resumed run's
  double loss_sum = 0, step_seconds = 0;  // the training steps' own time, evaluations excluded
  int64_t loss_count = 0, evaluations = 0;
  model.train();
  while (step < config.steps) {
    const double t0 = seconds();
    const auto [value, norm] = ranks.group ? train_step_ranks(model, *optimizer, batches, config, step, ranks)
                                           : draw_and_step(model, *optimizer, batches, config);
    step_seconds += seconds() - t0;
    if (!std::isfinite(value) || !std::isfinite(norm))
      throw qkv::Error("lm train: step " + std::to_string(step + 1) + " has a loss or gradient that is not finite (" +
                       std::to_string(value) + "); lower --lr. The run keeps its checkpoints of the last evaluation, if any");
    schedule.step();
    ++step;
    loss_sum += value;
    ++loss_count;
    if (progress) progress->update(step - first, "loss " + std::to_string(value * log2e()).substr(0, 5) + " bits/char");
    if (step % config.eval_every != 0 && step != config.steps) continue;
    if (!ranks.root()) {  // rank 0 evaluates and writes; the others wait for the files at the barrier
      ranks.group->barrier();
      if (++evaluations == o.stop_after) break;
      continue;
    }
    const Evaluation e{step, loss_sum / loss_count * log2e(), evaluate_bits(model, data.validation, data.start_id),
                       optimizer->lr(), seconds_before + seconds()};
    loss_sum = 0;
    loss_count = 0;
    history.push_back(e);
    best = std::min(best, e.validation_bits);
    const std::string text = checkpoint_text(config, history, best);
    if (o.resume && evaluations == 0)  // a resumed run's config now says the new --steps (before any checkpoint does)
      qkv::io::write_text_file(dir / "config.json", qkv::io::to_json(config.to_json()) + "\n", "lm train");
    if (e.validation_bits == best) qkv::io::save_checkpoint(dir / "best.safetensors", model, *optimizer, step, text);
    qkv::io::save_checkpoint(dir / "last.safetensors", model, *optimizer, step, text);
    write_metrics(dir, history);
    if (ranks.group) ranks.group->barrier();
    if (o.verbose)
      std::cout << "step " << step << "/" << config.steps << ": train " << std::fixed << std::setprecision(3)
                << e.train_bits << ", validation " << e.validation_bits << " bits/char" << std::endl;
    if (++evaluations == o.stop_after) break;
  }
  result.tokens_per_second = static_cast<double>((step - first) * config.batch * config.model.context) /
                             std::max(step_seconds, 1e-9);
  if (progress) progress->finish("trained to step " + std::to_string(step));
  if (o.verbose) std::cout << "training steps: " << std::fixed << std::setprecision(0) << result.tokens_per_second << " characters/s\n";
  if (!ranks.root()) return result;  // rank 0 tests
  result.best_validation_bits = best;
  const Run run = load_run(dir, "best");
  result.test_bits = evaluate_bits(*run.model, data.test, data.start_id);
  if (o.verbose) {
    std::cout << "test bits per character:\n  " << std::left << std::setw(34) << "this model" << std::right
              << std::fixed << std::setprecision(3) << result.test_bits << "\n";
    print_baselines(std::cout, result.baselines);
  }
  return result;
}

std::vector<Evaluation> read_evaluations(const fs::path& checkpoint_file) {
  std::vector<Evaluation> history;
  double best = 0;
  read_history(qkv::io::read_checkpoint(checkpoint_file).config, checkpoint_file, history, best);
  return history;
}

Config read_run_config(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  if (!fs::exists(path)) throw qkv::ValueError("lm: " + dir.string() + " (--run) holds no lm run (no config.json)");
  return Config::from_json(qkv::examples::parse_json_of(qkv::io::read_text_file(path, "lm"), path.string()), path.string());
}

Run load_run(const fs::path& dir, const std::string& which) {
  const fs::path config_path = dir / "config.json";
  Run run;
  run.config = read_run_config(dir);
  const Piece chars = decode_utf8(run.config.chars, config_path.string() + " chars");
  run.vocab = CharVocab::from_chars(std::vector<char32_t>(chars.begin(), chars.end()));
  run.config.model.vocab_size = run.vocab.size();
  const fs::path file = dir / (which + ".safetensors");
  const qkv::io::Checkpoint checkpoint = qkv::io::read_checkpoint(file);
  const Json text = qkv::examples::parse_json_of(checkpoint.config, file.string() + " is not an lm checkpoint: its config text");
  const Json* saved = text.is_object() ? text.find("config") : nullptr;
  if (!saved) throw qkv::ValueError("lm: " + file.string() + " is not an lm checkpoint (its config text has no lm config)");
  Config from_checkpoint = Config::from_json(*saved, file.string());
  from_checkpoint.steps = run.config.steps;  // --resume may have extended the run since
  if (qkv::io::to_json(from_checkpoint.to_json()) != qkv::io::to_json(run.config.to_json()))
    throw qkv::ValueError("lm: " + file.string() + " was saved with another config than " + config_path.string());
  run.model = std::make_shared<CharGPT>(run.config.model);
  run.model->load_state_dict(checkpoint.model);
  run.model->eval();
  return run;
}

}  // namespace lm
