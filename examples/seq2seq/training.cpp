#include "examples/seq2seq/training.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <sstream>

#include "dist/sampler.h"
#include "examples/seq2seq/bleu.h"
#include "model_io/checkpoint.h"
#include "io/tensor_record.h"
#include "nn/functional/loss.h"
#include "optim/clip.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace seq2seq {

std::vector<Example> encode_pairs(const std::vector<DatePair>& pairs, const qkv::data::Vocab& src_vocab,
                                  const qkv::data::Vocab& tgt_vocab) {
  std::vector<Example> examples;
  examples.reserve(pairs.size());
  for (const DatePair& p : pairs)
    examples.push_back({encode_source(src_vocab, p.source), encode_target(tgt_vocab, p.target)});
  return examples;
}

namespace {

constexpr int64_t kPoolBatches = 32;

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
  return {src.ids, src.valid_lens, pad_batch(inputs, pad_id).ids, tgt.ids, tgt.valid_lens};
}

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

std::vector<Batch> make_batches(const std::vector<Example>& examples, int64_t batch_size, uint64_t seed,
                                int64_t pad_id, int64_t bos_id, int rank, int ranks) {
  std::vector<int64_t> lengths;
  for (const Example& e : examples) lengths.push_back(static_cast<int64_t>(e.source.size()));
  qkv::Generator rng(seed);
  std::vector<Batch> batches;
  for (const auto& rows : length_batches(lengths, batch_size, &rng)) {
    std::vector<size_t> mine;
    int64_t tokens = 0;
    for (size_t k : rows) tokens += static_cast<int64_t>(examples[k].target.size());
    for (int64_t k : qkv::dist::shard(static_cast<int64_t>(rows.size()), rank, ranks))
      mine.push_back(rows[static_cast<size_t>(k)]);
    Batch b = mine.empty() ? Batch{} : collate(examples, mine, pad_id, bos_id);
    b.global_tokens = tokens;
    batches.push_back(std::move(b));
  }
  return batches;
}

float train_step(Seq2Seq& model, qkv::optim::Optimizer& optimizer, const Batch& batch, double clip_norm) {
  const Tensor logits = model.forward(batch.source, batch.source_valid_lens, batch.dec_input);
  // The mean over real target tokens; d2l's MaskedSoftmaxCELoss averages per sequence over the
  // padded length instead (nn/functional/loss.h has the difference).
  const Tensor loss =
      qkv::nn::functional::sequence_cross_entropy(logits, batch.target, batch.target_valid_lens);
  optimizer.zero_grad();
  loss.backward();
  qkv::optim::clip_grad_norm_(model.parameters(), clip_norm);
  optimizer.step();
  return loss.item();
}

Evaluation evaluate(Seq2Seq& model, const std::vector<DatePair>& pairs, int64_t batch_size) {
  const qkv::data::Vocab src_vocab = source_vocab(), tgt_vocab = target_vocab();
  std::vector<std::vector<int64_t>> sources;
  std::vector<int64_t> lengths;
  for (const DatePair& p : pairs) {
    sources.push_back(encode_source(src_vocab, p.source));
    lengths.push_back(static_cast<int64_t>(sources.back().size()));
  }
  Evaluation ev;
  ev.translations.resize(pairs.size());
  ev.predictions.resize(pairs.size());
  for (const auto& rows : length_batches(lengths, batch_size, nullptr)) {
    std::vector<std::vector<int64_t>> batch;
    for (const size_t i : rows) batch.push_back(sources[i]);
    std::vector<Translation> out = greedy_decode(model, batch, tgt_vocab.id(kBos), tgt_vocab.id(kEos),
                                                 tgt_vocab.pad_id(), kMaxOutputLen);
    for (size_t j = 0; j < rows.size(); ++j) ev.translations[rows[j]] = std::move(out[j]);
  }
  ev.score.count = static_cast<int64_t>(pairs.size());
  int64_t exact = 0;
  double bleu_sum = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    ev.predictions[i] = decode_ids(tgt_vocab, ev.translations[i].ids);
    exact += ev.predictions[i] == pairs[i].target;
    bleu_sum += bleu_chars(ev.predictions[i], pairs[i].target, 2);
  }
  if (!pairs.empty()) {
    ev.score.exact_match = static_cast<double>(exact) / static_cast<double>(pairs.size());
    ev.score.bleu = bleu_sum / static_cast<double>(pairs.size());
  }
  return ev;
}

std::string config_text(const ModelConfig& c) {
  std::ostringstream out;
  out << "model=seq2seq-bahdanau\n"
      << "source_alphabet=" << kSourceAlphabet << "\n"
      << "target_alphabet=" << kTargetAlphabet << "\n"
      << "source_vocab=" << c.source_vocab << "\n"
      << "target_vocab=" << c.target_vocab << "\n"
      << "embed_size=" << c.embed_size << "\n"
      << "num_hiddens=" << c.num_hiddens << "\n"
      << "num_layers=" << c.num_layers << "\n"
      << "dropout=" << c.dropout << "\n";
  return out.str();
}

ModelConfig parse_config(const std::string& text) {
  const std::string where = "seq2seq checkpoint config";
  auto fail = [&](const std::string& what) -> void { throw qkv::FormatError(where + ": " + what); };
  // Exactly the keys config_text writes, each once, one "key=value" per line ending in '\n'.
  const std::vector<std::string> keys = {"model",       "source_alphabet", "target_alphabet",
                                         "source_vocab", "target_vocab",    "embed_size",
                                         "num_hiddens", "num_layers",      "dropout"};
  std::map<std::string, std::pair<std::string, int64_t>> kv;  // key → value, line
  int64_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    const std::string at = "line " + std::to_string(++line_number) + ": ";
    if (!line.empty() && line.back() == '\r')
      fail(at + "ends in a carriage return (CRLF line endings); the config's lines end in '\\n' alone");
    const size_t eq = line.find('=');
    if (eq == std::string::npos) fail(at + "expected key=value, got " + qkv::io::in_quotes(line));
    const std::string key = line.substr(0, eq);
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      fail(at + "unknown key " + qkv::io::in_quotes(key) + " (is this a seq2seq checkpoint?)");
    if (auto it = kv.find(key); it != kv.end())
      fail(at + "key '" + key + "' is given twice (first on line " + std::to_string(it->second.second) + ")");
    kv.emplace(key, std::pair{line.substr(eq + 1), line_number});
  }
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = kv.find(key);
    if (it == kv.end()) fail("no '" + key + "' (is this a seq2seq checkpoint?)");
    return it->second.first;
  };
  // Decimal digits alone: no sign, no space, no other base.
  auto integer = [&](const std::string& key) {
    const std::string& s = get(key);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || s[0] == '-' || ec != std::errc() || end != s.data() + s.size() || v < 1)
      fail("'" + key + "' must be a positive integer, got " + qkv::io::in_quotes(s));
    return v;
  };
  if (get("model") != "seq2seq-bahdanau") fail("model " + qkv::io::in_quotes(get("model")) + " is not seq2seq-bahdanau");
  if (get("source_alphabet") != kSourceAlphabet || get("target_alphabet") != kTargetAlphabet)
    fail("the checkpoint's alphabets differ from this program's");
  ModelConfig c;
  c.source_vocab = integer("source_vocab");
  c.target_vocab = integer("target_vocab");
  c.embed_size = integer("embed_size");
  c.num_hiddens = integer("num_hiddens");
  c.num_layers = integer("num_layers");
  // Decimal notation as config_text writes it (from_chars takes no '+', no space, no hexadecimal).
  const std::string& d = get("dropout");
  const auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), c.dropout, std::chars_format::general);
  if (d.empty() || ec != std::errc() || end != d.data() + d.size())
    fail("'dropout' must be a number in decimal notation, got " + qkv::io::in_quotes(d));
  return c;
}

void check_model_config(const ModelConfig& c, const std::string& where) {
  auto fail = [&](const std::string& what) { throw qkv::ValueError(where + ": " + what); };
  auto in_range = [&](const char* name, int64_t value, int64_t limit) {
    if (value < 1 || value > limit)
      fail(std::string(name) + " must be from 1 to " + std::to_string(limit) + ", not " +
           std::to_string(value));
  };
  in_range("embed_size (--embed)", c.embed_size, kMaxEmbedSize);
  in_range("num_hiddens (--hidden)", c.num_hiddens, kMaxHiddens);
  in_range("num_layers (--layers)", c.num_layers, kMaxLayers);
  if (!(c.dropout >= 0 && c.dropout < 1))
    fail("dropout (--dropout) must be in [0, 1), not " + std::to_string(c.dropout));
  const int64_t source = source_vocab().size(), target = target_vocab().size();
  if (c.source_vocab != source || c.target_vocab != target)
    fail("the vocabularies must have this program's sizes, " + std::to_string(source) + " and " +
         std::to_string(target) + ", not " + std::to_string(c.source_vocab) + " and " +
         std::to_string(c.target_vocab));
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

// The sizes the config gives must be those of the tensors the checkpoint holds: the layers their
// names count, the widths their shapes show. Checked before a model is built, so that a config
// edited to 10^8 layers is refused at once rather than built, and only then found not to fit.
void check_config_fits_tensors(const ModelConfig& c, const qkv::nn::StateDict& state,
                               const std::string& where) {
  int64_t layers = 0;
  while (state.count("encoder.rnn.weight_ih_l" + std::to_string(layers))) ++layers;
  if (layers != c.num_layers)
    throw qkv::FormatError(where + ": its config says num_layers=" + std::to_string(c.num_layers) +
                           " but its tensors hold " + std::to_string(layers) +
                           " encoder GRU layers (encoder.rnn.weight_ih_l0, _l1, ...)");
  const std::pair<const char*, std::vector<int64_t>> expected[] = {
      {"encoder.embedding.weight", {c.source_vocab, c.embed_size}},
      {"decoder.embedding.weight", {c.target_vocab, c.embed_size}},
      {"encoder.rnn.weight_hh_l0", {3 * c.num_hiddens, c.num_hiddens}}};
  for (const auto& [name, shape] : expected) {
    const auto it = state.find(name);
    if (it == state.end()) throw qkv::FormatError(where + ": no tensor '" + std::string(name) + "'");
    if (it->second.shape() != shape)
      throw qkv::FormatError(where + ": its config (embed_size=" + std::to_string(c.embed_size) +
                             ", num_hiddens=" + std::to_string(c.num_hiddens) + ") makes '" + name + "' " +
                             shape_text(shape) + " but the tensor is " + shape_text(it->second.shape()));
  }
}

}  // namespace

std::unique_ptr<Seq2Seq> load_model(const std::filesystem::path& path) {
  const qkv::io::Checkpoint ckpt = qkv::io::read_checkpoint(path);
  const std::string where = "seq2seq checkpoint '" + path.string() + "'";
  const ModelConfig config = parse_config(ckpt.config);
  check_model_config(config, where);
  check_config_fits_tensors(config, ckpt.model, where);
  auto model = std::make_unique<Seq2Seq>(config);
  model->load_state_dict(ckpt.model);
  return model;
}

}  // namespace seq2seq
