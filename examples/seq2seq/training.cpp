#include "examples/seq2seq/training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "dist/process_group.h"
#include "examples/common/progress.h"
#include "examples/common/timing.h"
#include "examples/seq2seq/bleu.h"
#include "io/file.h"
#include "model_io/checkpoint.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/scheduler.h"
#include "plot/plot.h"
#include "tensor/error.h"
#include "tensor/random.h"
#include "tensor/threads.h"

namespace seq2seq {

using qkv::examples::check_int;
using qkv::examples::check_name;
using qkv::examples::check_number;

Config::Config() { adopt_task(); }

void Config::adopt_task() {
  const std::unique_ptr<Task> t = make_task(task);
  model.source_vocab = t->source_vocab().size();
  model.target_vocab = t->target_vocab().size();
  source_alphabet = t->alphabet_text(t->source_alphabet());
  target_alphabet = t->alphabet_text(t->target_alphabet());
}

Config Config::preset(const std::string& task, const std::string& kind) {
  check_name("task", task, kTasks);
  check_name("model", kind, kModels);
  Config c;
  c.task = task;
  c.model.kind = kind;
  if (kind == "transformer") {  // dropout measured to hold it back on both tasks (docs/seq2seq.md)
    c.model.num_hiddens = 64, c.model.num_heads = 4, c.model.ffn_num_hiddens = 128, c.model.dropout = 0;
    c.lr = 0.003, c.warmup = 300, c.schedule = "cosine", c.epochs = 60;
  }
  // The dictionary in 15 minutes is a handful of epochs, too few to need dropout (measured slower to
  // fall); a high rate, warmed up and decayed to 0 by a cosine. The Transformer's beam gains from
  // label smoothing (docs/seq2seq.md).
  if (task == "cmudict") {
    c.batch = 64, c.epochs = 10, c.beam = 4, c.length_penalty = 0.6, c.model.dropout = 0;
    c.schedule = "cosine", c.warmup = 500, c.lr = 0.003;
    if (kind == "transformer")
      c.model.num_hiddens = 128, c.model.ffn_num_hiddens = 512, c.model.num_layers = 3, c.label_smoothing = 0.1;
    // The GRU's epoch takes longer (its decoder is a loop over the target): 8 fit in the 15 minutes.
    if (kind == "gru") c.model.num_hiddens = 256, c.model.embed_size = 64, c.lr = 0.002, c.epochs = 8;
  }
  c.adopt_task();
  return c;
}

void Config::validate() const {
  check_int("seed", seed, 0, std::numeric_limits<int64_t>::max());
  check_int("train_size", train_size, 1, kMaxPairs);
  check_int("dev_size", dev_size, 1, kMaxPairs);
  check_int("test_size", test_size, 1, kMaxPairs);
  check_int("embed", model.embed_size, 1, kMaxEmbedSize);
  check_int("hidden", model.num_hiddens, 1, kMaxHiddens);
  check_int("layers", model.num_layers, 1, kMaxLayers);
  check_number("dropout", model.dropout, 0, 0.99);
  check_int("batch", batch, 1, 65'536);
  check_int("epochs", epochs, 1, 100'000);
  check_number("lr", lr, 1e-12, 1e3);
  check_number("clip", clip, 1e-6, 1e30);
  check_name("model", model.kind, kModels);
  check_int("heads", model.num_heads, 1, kMaxHiddens);
  check_int("ffn", model.ffn_num_hiddens, 1, kMaxHiddens);
  if (model.kind == "transformer" && model.num_hiddens % model.num_heads != 0)
    throw qkv::ValueError("hidden (--hidden) is " + std::to_string(model.num_hiddens) +
                          "; the Transformer needs a multiple of heads (--heads), " + std::to_string(model.num_heads));
  check_name("schedule", schedule, {"constant", "cosine"});
  check_int("warmup", warmup, 0, 10'000'000);
  check_number("label_smoothing", label_smoothing, 0, 0.5);
  check_int("beam", beam, 1, 64);
  check_number("length_penalty", length_penalty, 0, 10);
  check_name("task", task, kTasks);
  Config mine;
  mine.task = task;
  mine.adopt_task();
  if (model.source_vocab != mine.model.source_vocab || model.target_vocab != mine.model.target_vocab ||
      source_alphabet != mine.source_alphabet || target_alphabet != mine.target_alphabet)
    throw qkv::ValueError("the alphabets and vocabularies must be those of the task " + task + ", of " +
                          std::to_string(mine.model.source_vocab) + " and " + std::to_string(mine.model.target_vocab) +
                          " ids");
}

const qkv::examples::RunLayout kRunLayout{.program = "seq2seq",
                                          .fresh_replaces_run = true,
                                          .budget_key = "epochs",
                                          .read_config = qkv::examples::config_reader<Config>(
                                              // runs saved before --model: the GRU, greedy decoding
                                              qkv::examples::MissingKeys::keep_defaults)};

std::vector<Example> encode_pairs(const std::vector<Pair>& pairs, const Task& task) {
  std::vector<Example> examples;
  examples.reserve(pairs.size());
  for (const Pair& p : pairs) {
    const std::vector<int64_t> source = task.encode_source(p.source);
    for (const std::string& target : p.targets) examples.push_back({source, task.encode_target(target)});
  }
  return examples;
}

namespace {

constexpr int64_t kPoolBatches = 32;

// Indices of `lengths` in batches of similar length: shuffled (when rng is given), cut in pools,
// each pool sorted by length and cut into batches.
std::vector<std::vector<size_t>> length_batches(const std::vector<int64_t>& lengths, int64_t batch_size,
                                                qkv::Generator* rng) {
  if (batch_size < 1)
    throw qkv::ValueError("make_batches: batch_size must be >= 1, got " + std::to_string(batch_size));
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  if (rng) qkv::shuffle(order, *rng);
  const size_t pool = static_cast<size_t>(batch_size * kPoolBatches);
  std::vector<std::vector<size_t>> batches;
  for (size_t start = 0; start < order.size(); start += pool) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(start);
    const auto last = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + pool));
    std::stable_sort(first, last, [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
    for (auto it = first; it < last; it += std::min<std::ptrdiff_t>(batch_size, last - it))
      batches.emplace_back(it, it + std::min<std::ptrdiff_t>(batch_size, last - it));
  }
  if (rng) qkv::shuffle(batches, *rng);
  return batches;
}

}  // namespace

Batch collate(const std::vector<Example>& examples, const std::vector<size_t>& rows, int64_t pad_id,
              int64_t bos_id) {
  std::vector<std::vector<int64_t>> sources, targets, inputs;
  for (const size_t i : rows) {
    sources.push_back(examples[i].source);
    targets.push_back(examples[i].target);
    // Teacher forcing (d2l's train_seq2seq): the decoder reads <bos> and the target shifted right.
    std::vector<int64_t> in{bos_id};
    in.insert(in.end(), examples[i].target.begin(), examples[i].target.end() - 1);
    inputs.push_back(std::move(in));
  }
  const PaddedBatch src = pad_batch(sources, pad_id), tgt = pad_batch(targets, pad_id);
  return {src.ids, src.valid_lens, pad_batch(inputs, pad_id).ids, tgt.ids, tgt.valid_lens, rows};
}

std::vector<Batch> make_batches(const std::vector<Example>& examples, int64_t batch_size, uint64_t seed,
                                int64_t pad_id, int64_t bos_id) {
  std::vector<int64_t> lengths;
  for (const Example& e : examples) lengths.push_back(static_cast<int64_t>(e.source.size()));
  qkv::Generator rng(seed);
  std::vector<Batch> batches;
  for (const auto& rows : length_batches(lengths, batch_size, &rng)) batches.push_back(collate(examples, rows, pad_id, bos_id));
  return batches;
}

qkv::examples::StepResult train_step(qkv::examples::TrainStep& step, Translator& model, const Batch& batch,
                                     const std::vector<Example>& examples, int64_t k, float label_smoothing) {
  return step(batch.source.size(0), k, [&](const qkv::examples::Rows& rows) {
    std::vector<size_t> mine;
    for (int64_t r : rows.rows) mine.push_back(batch.examples[static_cast<size_t>(r)]);
    const Batch b = rows.whole ? batch : collate(examples, mine, kPadId, kBosId);
    const Tensor logits = model.forward(b.source, b.source_valid_lens, b.dec_input);
    // The mean over real target tokens; d2l's MaskedSoftmaxCELoss averages per sequence over the
    // padded length instead (nn/functional/loss.h has the difference).
    int64_t tokens = 0;
    for (int64_t i = 0; i < b.target_valid_lens.numel(); ++i) tokens += b.target_valid_lens[i];
    return qkv::examples::Share{
        qkv::nn::functional::sequence_cross_entropy(logits, b.target, b.target_valid_lens, label_smoothing), tokens};
  });
}

DecodeOptions decode_options(const Task& task, int64_t source_len, int64_t beam, double length_penalty,
                             int64_t n_best) {
  return {.bos = kBosId, .eos = kEosId, .pad = kPadId, .max_len = task.max_output_len(source_len), .beam = beam,
          .n_best = n_best, .length_penalty = length_penalty};
}

Evaluation evaluate(Translator& model, const Task& task, const std::vector<Pair>& pairs, int64_t beam,
                    double length_penalty, int64_t batch_size) {
  std::vector<std::vector<int64_t>> sources;
  std::vector<int64_t> lengths;
  for (const Pair& p : pairs) {
    sources.push_back(task.encode_source(p.source));
    lengths.push_back(static_cast<int64_t>(sources.back().size()));
  }
  Evaluation ev;
  ev.outputs.resize(pairs.size());
  for (const auto& rows : length_batches(lengths, batch_size, nullptr)) {
    std::vector<std::vector<int64_t>> batch;
    int64_t longest = 0;
    for (const size_t i : rows) batch.push_back(sources[i]), longest = std::max(longest, lengths[i]);
    auto out = translate(model, batch, decode_options(task, longest, beam, length_penalty));
    for (size_t j = 0; j < rows.size(); ++j) ev.outputs[rows[j]] = std::move(out[j][0].ids);
  }
  for (const std::vector<int64_t>& ids : ev.outputs) ev.predictions.push_back(task.decode_target(ids));
  ev.score = task.score(ev.predictions, pairs);
  return ev;
}

// Attention heatmaps of one translation: a row per output symbol (decoder step), a column per
// source symbol, as d2l's show_heatmaps of dec_attention_weight_seq; one panel per map.
void write_heatmap(Translator& model, const Task& task, const std::string& source, const std::vector<int64_t>& output,
                   const std::string& path) {
  const qkv::data::Vocab src_vocab = task.source_vocab(), tgt_vocab = task.target_vocab();
  const std::vector<int64_t> src_ids = task.encode_source(source);
  const std::vector<AttentionMap> maps = attention_of(model, src_ids, output, kBosId);
  auto label = [](const std::string& token) { return token == " " ? std::string("_") : token; };
  std::vector<qkv::plot::Image> panels;
  for (const AttentionMap& map : maps) {
    qkv::plot::HeatmapSpec spec;
    spec.rows = static_cast<int>(output.size());
    spec.cols = static_cast<int>(src_ids.size());
    const Tensor w = map.weights.contiguous();
    spec.values.assign(w.data(), w.data() + w.numel());
    for (const int64_t id : src_ids) spec.col_labels.push_back(label(src_vocab.token(id)));
    for (const int64_t id : output) spec.row_labels.push_back(tgt_vocab.token(id));
    spec.title = maps.size() == 1 ? "\"" + source + "\" -> " + task.decode_target(output) : map.name;
    spec.x_label = "source (keys)";
    spec.y_label = "decoder steps (queries)";
    spec.value_min = 0.0f;
    spec.value_max = 1.0f;
    spec.cell_size = 14;
    panels.push_back(qkv::plot::draw_heatmap(spec));
  }
  // The Transformer's heads side by side, a row per layer.
  const int columns = model.config.kind == "transformer" ? static_cast<int>(model.config.num_heads) : 1;
  qkv::plot::tile(panels, columns).write_png(path);
}

namespace {

// The test scores, and the first translations beside what they should be.
void print_test(const Task& task, const Evaluation& test, const std::vector<Pair>& pairs, int64_t step,
                double training_seconds, qkv::examples::Clock::time_point start) {
  std::printf("test: %s  (%lld pairs)  after %lld steps, %.1f s of training, %.1f s in all\n",
              task.describe(test.predictions, pairs).c_str(), static_cast<long long>(test.score.count),
              static_cast<long long>(step), training_seconds, qkv::examples::seconds_since(start));
  for (size_t i = 0; i < std::min<size_t>(8, pairs.size()); ++i) {
    const auto& targets = pairs[i].targets;
    const bool right = std::find(targets.begin(), targets.end(), test.predictions[i]) != targets.end();
    std::printf("  %-52s => %-10s %s\n", pairs[i].source.c_str(), test.predictions[i].c_str(),
                right ? "ok" : ("(want " + targets[0] + (targets.size() > 1 ? ", or another" : "") + ")").c_str());
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

// The sizes the config gives must be those of the tensors the checkpoint holds: the layers their
// names count, the widths their shapes show. Checked before a model is built, so that a config
// edited to 10^8 layers is refused at once rather than built, and only then found not to fit.
void check_config_fits_tensors(const ModelConfig& c, const qkv::nn::StateDict& state, const std::string& where) {
  const bool gru = c.kind == "gru";
  // A tensor each layer of the encoder has, named by its index, and the tensors whose shapes hold the sizes.
  const auto layer_tensor = [&](int64_t i) {
    return gru ? "encoder.rnn.weight_ih_l" + std::to_string(i)
               : "transformer.encoder.blocks." + std::to_string(i) + ".attention.W_q.weight";
  };
  int64_t layers = 0;
  while (state.count(layer_tensor(layers))) ++layers;
  if (layers != c.num_layers)
    throw qkv::FormatError(where + ": its config says layers=" + std::to_string(c.num_layers) + " but its tensors hold " +
                           std::to_string(layers) + " encoder layers (" + layer_tensor(0) + ", ...)");
  const int64_t H = c.num_hiddens;
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected =
      gru ? std::vector<std::pair<std::string, std::vector<int64_t>>>{
                {"encoder.embedding.weight", {c.source_vocab, c.embed_size}},
                {"decoder.embedding.weight", {c.target_vocab, c.embed_size}},
                {"encoder.rnn.weight_hh_l0", {3 * H, H}}}
          : std::vector<std::pair<std::string, std::vector<int64_t>>>{
                {"transformer.encoder.embedding.weight", {c.source_vocab, H}},
                {"transformer.decoder.embedding.weight", {c.target_vocab, H}},
                {"transformer.decoder.blocks.0.ffn.dense1.weight", {c.ffn_num_hiddens, H}}};
  for (const auto& [name, shape] : expected) {
    const auto it = state.find(name);
    if (it == state.end())
      throw qkv::FormatError(where + ": no tensor '" + name + "' (its config says model=" + c.kind + ")");
    if (it->second.shape() != shape)
      throw qkv::FormatError(where + ": its config (embed=" + std::to_string(c.embed_size) + ", hidden=" +
                             std::to_string(H) + ", ffn=" + std::to_string(c.ffn_num_hiddens) + ") makes '" + name +
                             "' " + shape_text(shape) + " but the tensor is " + shape_text(it->second.shape()));
  }
}

// One pass over the training examples in batches drawn with seed + epoch, with a progress line
// (rank 0's); returns the mean loss, and counts the steps in k.
double train_epoch(Translator& model, qkv::examples::TrainStep& step, qkv::optim::LRScheduler& schedule,
                   const std::vector<Example>& examples, int64_t epoch, const Config& c, int64_t& k, bool shown) {
  model.train();
  const std::vector<Batch> batches = make_batches(examples, c.batch, static_cast<uint64_t>(c.seed + epoch), kPadId, kBosId);
  auto progress = qkv::examples::Progress::shown_if(shown, "epoch " + std::to_string(epoch), static_cast<int64_t>(batches.size()));
  double loss_sum = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const qkv::examples::StepResult r =
        train_step(step, model, batches[i], examples, k++, static_cast<float>(c.label_smoothing));
    schedule.step();
    if (!r.finite())
      throw qkv::Error("seq2seq train: epoch " + std::to_string(epoch) + ", step " + std::to_string(i + 1) +
                       ": the loss or gradient is not finite; lower --lr. The run keeps its checkpoints of the last epoch");
    loss_sum += r.loss;
    char stats[64];
    std::snprintf(stats, sizeof stats, "loss %.4f", loss_sum / static_cast<double>(i + 1));
    progress.update(static_cast<int64_t>(i + 1), stats);
  }
  return loss_sum / static_cast<double>(batches.size());
}

using State = qkv::examples::TrainingState<Config, EpochRow>;

// Linear warm-up over c.warmup steps, then the base rate, or a cosine to 0 at the last epoch's end.
qkv::optim::LambdaLR make_schedule(qkv::optim::Optimizer& optimizer, const Config& c, int64_t examples) {
  const int64_t total = c.epochs * static_cast<int64_t>(length_batches(std::vector<int64_t>(examples, 0), c.batch, nullptr).size());
  const int64_t warmup = c.warmup;
  const bool cosine = c.schedule == "cosine";
  return qkv::optim::LambdaLR(optimizer, [=](int64_t step) {
    if (step < warmup) return static_cast<double>(step + 1) / static_cast<double>(warmup);
    if (!cosine) return 1.0;
    const double q = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(std::max<int64_t>(1, total - warmup)));
    return 0.5 * (1.0 + std::cos(3.141592653589793 * q));
  });
}

// The task of a run, its pairs, and the training pairs as ids.
struct Data {
  std::unique_ptr<Task> task;
  TaskData pairs;
  std::vector<Example> examples;
};

Data load_data(const Config& c, const TrainOptions& o) {
  Data d{make_task(c.task), {}, {}};
  d.pairs = d.task->load(static_cast<uint64_t>(c.seed), c.train_size, c.dev_size, c.test_size, o.cache);
  d.examples = encode_pairs(d.pairs.train, *d.task);
  if (o.verbose)
    std::printf("seq2seq: %s, %zu train (%zu examples) / %zu dev / %zu test pairs\n", d.pairs.about.c_str(),
                d.pairs.train.size(), d.examples.size(), d.pairs.dev.size(), d.pairs.test.size());
  return d;
}

// After an epoch: rank 0 scores the dev pairs, writes the row and the checkpoints, prints the line,
// and decides whether to stop (the dev exact match reached the target, or the time ran out), which
// every rank follows.
bool evaluate_and_save(State& state, qkv::examples::RunDirectory& run, Translator& model,
                       const qkv::optim::Optimizer& optimizer, const Data& data, EpochRow row, const TrainOptions& o) {
  // Greedy on the dev pairs, to choose the model; the test pairs get the config's beam.
  const Metrics score = run.writer() ? evaluate(model, *data.task, data.pairs.dev).score : Metrics{};
  row.dev_exact = score.exact, row.dev_error_rate = score.error_rate, row.dev_bleu = score.bleu;
  state.record(run, model, optimizer, row.step, row, row.dev_exact, row.dev_exact >= state.best);
  const bool reached = row.dev_exact >= o.target;
  const double limit = time_limit_of(o, state.config);
  const bool out_of_time = !reached && row.seconds >= limit && row.epoch < state.config.epochs;
  int64_t stop[1] = {reached || out_of_time ? 1 : 0};
  if (o.ranks.many()) o.ranks.group->broadcast(std::span<int64_t>(stop), 0);
  if (!run.writer()) return stop[0] != 0;
  std::printf("epoch %3lld  step %6lld  loss %.4f  dev exact %.4f  error rate %.4f  bleu %.4f  train time %s\n",
              static_cast<long long>(row.epoch), static_cast<long long>(row.step), row.loss, row.dev_exact,
              row.dev_error_rate, row.dev_bleu, qkv::examples::format_duration(row.seconds).c_str());
  if (reached) std::printf("stopped: the dev exact match reached --target %g\n", o.target);
  if (out_of_time)
    std::printf("stopped: %s of training reached --time-limit %g s\n", qkv::examples::format_duration(row.seconds).c_str(),
                limit);
  std::fflush(stdout);
  return stop[0] != 0;
}

// The end of a training: the test scores of the model as it ends, and the heatmaps (rank 0).
Evaluation finish(const qkv::examples::RunDirectory& run, Translator& model, const Data& data, const Config& c,
                  int64_t step, double seconds, qkv::examples::Clock::time_point start, const TrainOptions& o) {
  if (!run.writer()) return {};
  const std::vector<Pair>& test_pairs = data.pairs.test;
  const Evaluation test = evaluate(model, *data.task, test_pairs, c.beam, c.length_penalty);
  print_test(*data.task, test, test_pairs, step, seconds, start);
  std::printf("checkpoint: %s\n", (run.dir() / "last.safetensors").c_str());
  const int64_t heatmaps = o.figures ? std::min<int64_t>(o.heatmaps, static_cast<int64_t>(test_pairs.size())) : 0;
  if (heatmaps > 0) std::filesystem::create_directories(run.dir() / "figures");
  for (int64_t i = 0; i < heatmaps; ++i) {
    const std::string path = (run.dir() / "figures" / ("attention_" + std::to_string(i) + ".png")).string();
    write_heatmap(model, *data.task, test_pairs[i].source, test.outputs[i], path);
    std::printf("heatmap: %s\n", path.c_str());
  }
  return test;
}

}  // namespace

double time_limit_of(const TrainOptions& o, const Config& c) {
  return o.time_limit >= 0 ? o.time_limit : c.task == "cmudict" ? 900 : 300;
}

namespace {

// A run saved before --task and --model has a history of five columns, which the six of today's
// rows would misread (an older checkpoint's rows with their timing have six too): refused by name.
void refuse_resuming_older_run(const TrainOptions& o) {
  const std::filesystem::path config = std::filesystem::path(o.run_dir) / "config.json";
  if (!o.resume || !std::filesystem::exists(config)) return;
  const qkv::io::Json json = qkv::examples::parse_json_of(qkv::io::read_text_file(config, "seq2seq"), config.string());
  if (json.is_object() && !json.find("task"))
    throw qkv::ValueError(o.run_dir + " (--run) holds a seq2seq run of an earlier qkv, saved before --task and "
                          "--model: its history has no dev error rate to continue; train again in another --run "
                          "(nothing was changed)");
}

}  // namespace

Evaluation train(Config config, const TrainOptions& o) {
  refuse_resuming_older_run(o);
  qkv::examples::RunDirectory run(o.run_dir, kRunLayout, o.resume, o.ranks.group);  // refusals: nothing written
  State state = qkv::examples::start_or_resume<Config, EpochRow>(run, config, -1.0);
  const auto start = qkv::examples::Clock::now();
  qkv::manual_seed(static_cast<uint64_t>(state.config.seed));
  const Data data = load_data(state.config, o);
  const std::unique_ptr<Translator> owned = make_translator(state.config.model);
  Translator& model = *owned;
  qkv::optim::Adam optimizer(model.parameters(), {.lr = state.config.lr});
  run.open();
  if (o.verbose) std::printf("%lld parameters\n%s", static_cast<long long>(model.num_parameters()), model.summary().c_str());
  qkv::optim::LambdaLR schedule = make_schedule(optimizer, state.config, static_cast<int64_t>(data.examples.size()));
  qkv::examples::TrainStep step(model, optimizer, {o.ranks, static_cast<uint64_t>(state.config.seed), state.config.clip});
  int64_t k = state.load(model, optimizer, o.ranks);
  schedule.set_last_step(k);
  double seconds = state.seconds();
  for (int64_t epoch = static_cast<int64_t>(state.history.rows.size()) + 1, ran = 0;
       epoch <= state.config.epochs && ran != o.stop_after; ++epoch, ++ran) {
    const auto t0 = qkv::examples::Clock::now();
    const double loss = train_epoch(model, step, schedule, data.examples, epoch, state.config, k, o.progress);
    seconds += qkv::examples::seconds_since(t0);
    if (evaluate_and_save(state, run, model, optimizer, data, {epoch, k, loss, 0, 0, 0, seconds}, o)) break;
  }
  return finish(run, model, data, state.config, k, seconds, start, o);
}

LoadedModel load_model(const std::filesystem::path& path) {
  const qkv::io::Checkpoint ckpt = qkv::io::read_checkpoint(path);
  const std::string where = "seq2seq checkpoint '" + path.string() + "'";
  if (ckpt.config.starts_with("model=seq2seq-bahdanau\n"))
    throw qkv::ValueError(where + " was written by an earlier qkv, whose checkpoints kept their config as key=value "
                          "lines: train the model again (seq2seq train)");
  const qkv::examples::RunState state = qkv::examples::RunState::parse(ckpt.config, path, kRunLayout);
  // Checkpoints saved before --task and --model: dates, the GRU, greedy decoding.
  const Config config =
      qkv::examples::from_json<Config>(state.config, where, "a seq2seq", qkv::examples::MissingKeys::keep_defaults);
  check_config_fits_tensors(config.model, ckpt.model, where);
  LoadedModel loaded{make_translator(config.model), config};
  loaded.model->load_state_dict(ckpt.model);
  return loaded;
}

}  // namespace seq2seq
