#include "examples/lm/train.h"

#include <algorithm>
#include <optional>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numbers>
#include <sstream>

#include "autograd/grad_mode.h"
#include "examples/common/memory.h"
#include "examples/common/progress.h"
#include "examples/common/ranks.h"
#include "examples/common/timing.h"
#include "model_io/checkpoint.h"
#include "io/file.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
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

const qkv::examples::RunLayout kRunLayout{.program = "lm",
                                          .files = {"baselines.json"},
                                          .budget_key = "steps",
                                          .read_config = qkv::examples::config_reader<Config>()};

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
  if ((model.positions == "sinusoidal" || model.positions.ends_with("-fourier")) && model.d_model % 2 != 0)
    throw qkv::ValueError("positions (--positions) " + model.positions + " needs an even d_model (--d-model); it is " +
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
  check_name("matmul", matmul, {"auto", "highest", "medium"});  // auto: resolved before a run begins
}

double training_bytes_estimate(const Config& c, int64_t V) {
  const ModelConfig& m = c.model;
  const double d = static_cast<double>(m.d_model), f = static_cast<double>(m.ffn_hidden);
  const double L = static_cast<double>(m.layers), H = static_cast<double>(m.heads), T = static_cast<double>(m.context);
  const double parameters = static_cast<double>(V) * d + T * d + L * (4 * d * d + 2 * d * f + 10 * d + f);
  // With recomputation one block's activations are alive at a time, beside every block's input.
  const double kept_blocks = m.recompute ? 1.0 : L;
  const double per_token = kept_blocks * (16 * d + 3 * f + 2 * H * T) + (m.recompute ? L * d : 0.0) +
                           3.0 * static_cast<double>(V);
  return 4.0 * (4 * parameters + static_cast<double>(c.batch) * T * per_token);
}

Data load_data(const Config& config, const RunText& run) {
  Data d;
  const bool trained = !run.chars.empty();
  d.text = config.text.empty() ? load_moby_dick(config.cache)
                               : load_text_file(config.text, trained ? "the run's text (config.json \"text\")" : "lm --text");
  if (!run.digest.empty() && run.digest != d.text.digest)
    throw qkv::ValueError(d.text.source + " has changed since the run was trained on it (digest " + d.text.digest +
                          ", the run's " + run.digest +
                          "): the run's vocabulary and baselines are the old text's. Put the text back, or train "
                          "a new run on it");
  if (!trained) {
    d.vocab = CharVocab(d.text.train);
  } else {
    const Piece saved = decode_utf8(run.chars, "the run's characters");
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
  // A compressor's rate, or the reason there is none.
  for (const auto& [key, c] : {std::pair{"bzip2", &bzip2}, {"xz", &xz}})
    o.emplace_back(key, c->bits ? Json(*c->bits) : Json(c->none));
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

double evaluate_bits(CharGPT& model, const Ids& pieces, int32_t start_id, Scoring scoring,
                     std::vector<double>* by_position) {
  const int64_t T = model.config.context;
  if (by_position && scoring != Scoring::NonOverlapping)
    throw qkv::ValueError("evaluate_bits: bits by position are those of non-overlapping windows");
  const bool was_training = model.is_training();
  model.eval();
  qkv::NoGradGuard no_grad;
  double total = 0;
  int64_t count = 0;
  const bool positions = by_position != nullptr;
  std::vector<double> sum(static_cast<size_t>(T)), n(static_cast<size_t>(T));
  const std::vector<Window> all =
      windows(pieces, T, scoring == Scoring::Sliding ? std::max<int64_t>(T / 8, 1) : T);
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

std::unique_ptr<qkv::optim::AdamW> make_optimizer(CharGPT& model, const Config& c) {
  qkv::optim::ParamGroup decay, no_decay{.weight_decay = 0.0};
  // Nor on learned Fourier frequencies (nn/fourier_features.h): decay would pull them toward 0,
  // which random ones, a buffer, never are.
  for (const auto& [name, p] : model.named_parameters())
    (p.dim() >= 2 && !name.ends_with(".frequencies") ? decay : no_decay).params.push_back(p);
  return std::make_unique<qkv::optim::AdamW>(std::vector<qkv::optim::ParamGroup>{decay, no_decay},
                                             qkv::optim::AdamWOptions{.lr = c.lr, .betas = {0.9, 0.99},
                                                                      .weight_decay = c.weight_decay});
}

void print_baselines(std::ostream& out, const BaselineBits& b) {
  const auto row = [&](const std::string& name, const CompressorBits& c) {
    out << "  " << std::left << std::setw(kLabelWidth) << name << std::right;
    if (c.bits) out << std::fixed << std::setprecision(3) << *c.bits << "\n";
    else out << c.none << "\n";
  };
  row("unigram", {b.unigram, ""});
  row("Kneser-Ney " + std::to_string(b.ngram_order) + "-gram (best on val.)", {b.ngram, ""});
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
  // A rate; a reason for none (null: not installed, as earlier files say); an earlier qkv's rate
  // of zero or less bits is none.
  const auto compressor = [&](const char* key) -> CompressorBits {
    const Json* v = json.is_object() ? json.find(key) : nullptr;
    if (v && v->is_string()) return {std::nullopt, v->as_string()};
    const std::optional<double> bits = number(key);
    if (!bits) return {std::nullopt, "not installed"};
    if (*bits <= 0) return {std::nullopt, "no rate (an earlier qkv measured zero or less bits, the rate of nothing)"};
    return {bits, ""};
  };
  BaselineBits b;
  b.unigram = number("unigram").value_or(0);
  b.ngram_order = static_cast<int>(number("ngram_order").value_or(0));
  b.ngram = number("ngram").value_or(0);
  b.bzip2 = compressor("bzip2");
  b.xz = compressor("xz");
  return b;
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
  // (B, T) inputs and targets for step k. In one process they are drawn with the default
  // generator; on several ranks from a stream keyed by (seed, k), the same on every rank, so that
  // all build the same global batch.
  std::pair<IndexTensor, IndexTensor> draw(int64_t B, int64_t k, const qkv::examples::Ranks& ranks, int64_t seed) const {
    qkv::Generator keyed;
    keyed.set_state(qkv::examples::keyed_stream(static_cast<uint64_t>(seed), 0, k));
    qkv::Generator& g = ranks.many() ? keyed : qkv::default_generator();
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

// Rows `rows` of ids laid out as (B, T), with the shape `shape`.
IndexTensor select_rows(const IndexTensor& ids, const std::vector<int64_t>& rows, int64_t T, qkv::Shape shape) {
  std::vector<int64_t> out;
  for (int64_t b : rows)
    for (int64_t t = 0; t < T; ++t) out.push_back(ids[b * T + t]);
  return IndexTensor(out, std::move(shape));
}

// The config with the data's vocabulary, and the absolute paths of --text and a fresh run's
// --cache (eval and --resume may run from another directory; a resumed run keeps its config).
Config with_vocabulary(Config config, const Data& data, bool fresh) {
  if (!config.text.empty()) config.text = fs::absolute(config.text).lexically_normal().string();
  if (fresh) config.cache = fs::absolute(config.cache).lexically_normal().string();
  config.chars = encode_utf8(Piece(data.vocab.chars().begin(), data.vocab.chars().end()));
  config.model.vocab_size = data.vocab.size();
  return config;
}

// A fresh run's baselines, computed and written to baselines.json (printed when verbose); a resumed
// run's, read from there; none (ngram_order 0) without options.baselines.
BaselineBits baselines(const qkv::examples::RunDirectory& run, const Data& data, const TrainOptions& o) {
  if (!run.writer()) return {};
  const fs::path file = run.dir() / "baselines.json";
  if (run.resume() && fs::exists(file))
    return BaselineBits::from_json(qkv::examples::parse_json_of(qkv::io::read_text_file(file, "lm"), file.string()), file.string());
  if (!o.baselines) return {};
  const bool verbose = o.verbose;
  const BaselineBits b = compute_baselines(data);
  if (verbose) {
    std::cout << "baselines on test, bits per character:\n";
    print_baselines(std::cout, b);
  }
  run.write_text("baselines.json", qkv::io::to_json(b.to_json()) + "\n");
  return b;
}

// Refuses a config whose step would not fit in the memory available, before anything is written:
// Linux grants a large allocation and takes the pages only when written, so the process would grow
// until the kernel killed it, or fail a minute in, after the baselines.
void check_memory(const Config& c) {
  qkv::examples::check_fits("lm train", training_bytes_estimate(c, c.model.vocab_size),
                            "batches of " + std::to_string(c.batch) + " windows of " + std::to_string(c.model.context) +
                                " characters, d_model " + std::to_string(c.model.d_model) + ", " +
                                std::to_string(c.model.layers) + " layers of " + std::to_string(c.model.heads) +
                                " heads, ffn_hidden " + std::to_string(c.model.ffn_hidden),
                            "--batch, --context, --d-model, --layers or --ffn-hidden");
}

void describe(const Data& data, const Config& config, const TrainOptions& o) {
  if (o.verbose)
    std::cout << "lm: " << (config.text.empty() ? "Moby-Dick" : config.text) << ", " << data.vocab.size() - 1
              << " characters; train " << data.text.train.size() << " pieces, validation " << data.text.validation.size()
              << ", test " << data.text.test.size() << "\n";
}

[[noreturn]] void diverged(int64_t k, const qkv::examples::StepResult& r) {
  throw qkv::Error("lm train: step " + std::to_string(k + 1) + " has a loss or gradient that is not finite (" +
                   std::to_string(r.loss) + "); lower --lr. The run keeps its checkpoints of the last evaluation, if any");
}

// What the loop keeps between evaluations: the training loss of the steps since the last one, the
// time of the steps alone (for their speed) and of the whole call (for metrics.csv's seconds).
struct Meter {
  double loss_sum = 0;
  int64_t count = 0, steps = 0;
  qkv::examples::Stopwatch steps_time;
  qkv::examples::Clock::time_point started = qkv::examples::Clock::now();
  double train_bits() const { return loss_sum / static_cast<double>(std::max<int64_t>(count, 1)) / std::numbers::ln2; }
};

using State = qkv::examples::TrainingState<Config, Evaluation>;

// The digest a run's checkpoint keeps of its --text file (none for Moby-Dick and earlier runs).
std::string text_digest(const qkv::examples::RunState& state) {
  const Json* digest = state.extra("text_digest");
  return digest && digest->is_string() ? digest->as_string() : "";
}

// What a resumed run knows of its text; nothing for a fresh one.
RunText run_text(const State& state) {
  if (!state.last) return {};
  return {state.config.chars, text_digest(state.last->state)};
}

// An evaluation after step k: the validation bits (rank 0's), a row of the history, the checkpoints
// and metrics.csv; the training loss starts again.
void evaluate_and_save(State& state, qkv::examples::RunDirectory& run, CharGPT& model,
                       const qkv::optim::Optimizer& optimizer, const Data& data, int64_t k, Meter& meter,
                       double seconds_before, bool verbose) {
  const Evaluation e{k, meter.train_bits(), run.writer() ? evaluate_bits(model, data.validation, data.start_id) : 0,
                     optimizer.lr(), seconds_before + qkv::examples::seconds_since(meter.started)};
  meter.loss_sum = 0, meter.count = 0;
  qkv::io::Json::Object extras;  // the --text file's digest, which eval and --resume check the file against
  if (!data.text.digest.empty()) extras.emplace_back("text_digest", Json(data.text.digest));
  state.record(run, model, optimizer, k, e, e.score, e.score <= state.best, std::move(extras));
  if (verbose)
    std::cout << "step " << k << "/" << state.config.steps << ": train " << std::fixed << std::setprecision(3) << e.loss
              << ", validation " << e.score << " bits/char" << std::endl;
}

// The end of a training: its speed, and the best checkpoint on test beside the baselines (rank 0).
TrainResult finish(TrainResult result, const qkv::examples::RunDirectory& run, const Data& data, const Config& config,
                   const Meter& meter, double best, const TrainOptions& o) {
  result.tokens_per_second = static_cast<double>(meter.steps * config.batch * config.model.context) /
                             std::max(meter.steps_time.seconds(), 1e-9);
  result.training_seconds = meter.steps_time.seconds();
  if (o.verbose) std::cout << "training steps: " << std::fixed << std::setprecision(0) << result.tokens_per_second << " characters/s\n";
  if (!run.writer()) return result;
  result.best_validation_bits = best;
  const std::shared_ptr<CharGPT> best_model = load_run(run.dir(), "best").model;
  result.test_bits = evaluate_bits(*best_model, data.test, data.start_id);
  result.test_bits_sliding = evaluate_bits(*best_model, data.test, data.start_id, Scoring::Sliding);
  if (o.verbose) {
    std::cout << "test bits per character:\n  " << std::left << std::setw(kLabelWidth)
              << "this model, non-overlapping windows" << std::right << std::fixed << std::setprecision(3)
              << result.test_bits << "\n  " << std::left << std::setw(kLabelWidth) << "this model, sliding window"
              << std::right << result.test_bits_sliding << "\n";
    if (result.baselines.ngram_order > 0) print_baselines(std::cout, result.baselines);
  }
  return result;
}

}  // namespace

qkv::examples::StepResult train_step(qkv::examples::TrainStep& step, CharGPT& model, int64_t k, const IndexTensor& inputs,
                                     const IndexTensor& targets) {
  const int64_t B = inputs.size(0), T = inputs.size(1);
  return step(B, k, [&](const qkv::examples::Rows& rows) {
    const int64_t n = static_cast<int64_t>(rows.rows.size());
    const Tensor logits = model.forward(rows.whole ? inputs : select_rows(inputs, rows.rows, T, {n, T}));
    const IndexTensor y = rows.whole ? targets : select_rows(targets, rows.rows, T, {n * T});
    return qkv::examples::Share{qkv::nn::functional::cross_entropy(logits.view({-1, logits.size(2)}), y), n * T};
  });
}

TrainResult train(Config config, const TrainOptions& o) {
  config.matmul = qkv::examples::resolved_matmul(config.matmul);  // the run keeps what its products are
  qkv::examples::RunDirectory run(o.run_dir, kRunLayout, o.resume, o.ranks.group);  // refusals: nothing written
  State state = qkv::examples::start_or_resume<Config, Evaluation>(run, config, std::numeric_limits<double>::infinity());
  qkv::examples::use_matmul_precision(state.config.matmul, /*saved_run=*/state.last.has_value());
  const Data data = load_data(state.config, run_text(state));
  state.config = with_vocabulary(state.config, data, !state.last);
  check_memory(state.config);
  if (!state.last) qkv::manual_seed(static_cast<uint64_t>(state.config.seed));
  CharGPT model(state.config.model);
  auto optimizer = make_optimizer(model, state.config);
  qkv::optim::WarmupLR schedule(*optimizer, state.config.warmup, state.config.steps);  // reads the base lr before a checkpoint
  run.open();
  describe(data, state.config, o);
  TrainResult result{.baselines = baselines(run, data, o)};
  qkv::examples::TrainStep step(model, *optimizer, {o.ranks, static_cast<uint64_t>(state.config.seed), state.config.clip});
  int64_t k = state.load(model, *optimizer, o.ranks);
  schedule.set_last_step(k);
  const Batches batches(data, state.config.model.context);
  auto progress = qkv::examples::Progress::shown_if(o.progress, "lm train", state.config.steps - k);
  Meter meter;
  const double seconds_before = state.seconds();
  model.train();
  for (int64_t evaluations = 0; k < state.config.steps && evaluations != o.stop_after;) {
    meter.steps_time.start();
    const auto [inputs, targets] = batches.draw(state.config.batch, k, o.ranks, state.config.seed);
    const qkv::examples::StepResult r = train_step(step, model, k, inputs, targets);
    if (!r.finite()) diverged(k, r);
    schedule.step();
    ++k, ++meter.steps, ++meter.count, meter.loss_sum += r.loss;
    meter.steps_time.stop();
    progress.update(meter.steps, "loss " + std::to_string(r.loss / std::numbers::ln2).substr(0, 5) + " bits/char");
    if (k % state.config.eval_every != 0 && k != state.config.steps) continue;
    evaluate_and_save(state, run, model, *optimizer, data, k, meter, seconds_before, o.verbose);
    ++evaluations;
  }
  progress.finish("trained to step " + std::to_string(k));
  return finish(result, run, data, state.config, meter, state.best, o);
}

Run load_run(const fs::path& dir, const std::string& which) {
  const qkv::examples::SavedRun saved = qkv::examples::load_saved_run(dir, kRunLayout, which);
  Run run;
  run.config = qkv::examples::config_of<Config>(saved, kRunLayout);
  run.text_digest = text_digest(saved.state);
  run.history = qkv::examples::History<Evaluation>::from_json(saved.state.history, saved.file.string()).rows;
  const Piece chars = decode_utf8(run.config.chars, (dir / "config.json").string() + " chars");
  run.vocab = CharVocab::from_chars(std::vector<char32_t>(chars.begin(), chars.end()));
  run.config.model.vocab_size = run.vocab.size();
  run.model = std::make_shared<CharGPT>(run.config.model);
  run.model->load_state_dict(saved.checkpoint.model);
  run.model->eval();
  return run;
}

}  // namespace lm
