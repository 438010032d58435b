#include "examples/tagger/model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "autograd/grad_mode.h"
#include "examples/tagger/dataset.h"
#include "io/json.h"
#include "nn/attention_interface.h"
#include "nn/ffn.h"
#include "nn/functional/basic.h"
#include "nn/init.h"
#include "nn/position_scheme.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

namespace tagger {

using qkv::io::Json;

void check_config_fits_tensors(const Config& config, const qkv::nn::StateDict& state,
                               const std::string& where) {
  auto fail = [&](const std::string& what) { throw qkv::FormatError(where + ": " + what); };
  const auto head = state.find("head.weight");  // (tags, d_model) in both models
  if (head == state.end() || head->second.dim() != 2) fail("no tensor 'head.weight' of two dimensions");
  if (head->second.size(1) != config.d_model)
    fail("its config says d_model=" + std::to_string(config.d_model) + " but 'head.weight' has " +
         std::to_string(head->second.size(1)) + " columns");
  if (config.model != "transformer") return;  // the GRU tagger has one layer whatever the config says
  int64_t layers = 0;
  while (state.lower_bound("encoder.blocks." + std::to_string(layers) + ".") !=
         state.lower_bound("encoder.blocks." + std::to_string(layers) + "/"))  // '/' follows '.'
    ++layers;
  if (layers != config.layers)
    fail("its config says layers=" + std::to_string(config.layers) + " but its tensors hold " +
         std::to_string(layers) + " Transformer blocks (encoder.blocks.0, encoder.blocks.1, ...)");
}

namespace {

// "warmup_steps (--warmup)": a config key and the option that sets it, for messages about either.
std::string key_and_option(const std::string& key) { return qkv::examples::key_and_option<Config>(key); }

[[noreturn]] void refuse(const std::string& what) { throw qkv::ValueError("tagger config: " + what); }

// An integer in [lo, hi]. The upper limits are far above any model this tagger trains, and low
// enough that no product of sizes overflows.
void check_range(const std::string& key, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    refuse(key_and_option(key) + " is " + std::to_string(value) + "; expected " + std::to_string(lo) +
           " to " + std::to_string(hi));
  }
}

// A number for which `ok` holds (false for NaN, by how the callers compare), else `expected`.
void check_number(const std::string& key, double value, bool ok, const std::string& expected) {
  if (ok) return;
  std::ostringstream shown;
  shown << value;
  refuse(key_and_option(key) + " is " + shown.str() + "; expected " + expected);
}

void check_one_of(const std::string& key, const std::string& value, const std::vector<std::string>& names,
                  const std::string& hint = "") {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  if (std::find(names.begin(), names.end(), value) == names.end())
    refuse(key_and_option(key) + " is '" + value + "'; expected one of " + list + hint);
}

}  // namespace

void Config::validate() const {
  check_one_of("model", model, {"transformer", "gru"});
  check_one_of("positions", positions, qkv::nn::position_scheme_names());
  check_one_of("norm", norm, {"post", "pre"});
  check_one_of("matmul", matmul, {"highest", "medium"});
  check_one_of("ffn", ffn, qkv::nn::feed_forward_names(), " (its hidden width is ffn_width, --ffn-width)");
  check_one_of("attention", attention, qkv::nn::attention_mechanism_names());
  check_range("attention_features", attention_features, 0, kMaxAttentionFeatures);  // 0: the default
  check_range("d_model", d_model, 2, 8192);
  if (d_model % 2 != 0)
    refuse(key_and_option("d_model") + " is " + std::to_string(d_model) + "; expected an even number");
  check_range("heads", heads, 1, d_model);
  if (d_model % heads != 0)
    refuse("d_model " + std::to_string(d_model) + " is not divisible by heads (--heads) " +
           std::to_string(heads));
  if (positions == "rotary" && (d_model / heads) % 2 != 0)
    refuse("rotary positions rotate pairs of features: d_model / heads must be even");
  check_range("ffn_width", ffn_width, 1, 65536);
  check_range("layers", layers, 1, 64);
  check_range("window", window, -1, kMaxSentenceLength - 1);  // -1: everywhere
  check_number("dropout", dropout, dropout >= 0 && dropout < 1, "a number from 0 up to, not including, 1");
  check_number("word_dropout", word_dropout, word_dropout >= 0 && word_dropout <= 1e6,
               "a number from 0 to 1e6");
  check_range("char_filters", char_filters, 0, d_model - 1);  // 0: no characters
  check_range("char_dim", char_dim, 1, 1024);
  check_range("char_kernel", char_kernel, 1, 15);
  if (char_kernel % 2 == 0)
    refuse(key_and_option("char_kernel") + " is " + std::to_string(char_kernel) + "; expected an odd number");
  check_range("epochs", epochs, 1, 100000);
  check_range("batch_size", batch_size, 1, 65536);
  check_number("lr", lr, lr > 0 && std::isfinite(lr), "a finite number above 0");
  check_number("weight_decay", weight_decay, weight_decay >= 0 && std::isfinite(weight_decay),
               "a finite number, 0 or above");
  check_number("clip", clip, clip > 0 && std::isfinite(clip), "a finite number above 0");
  check_range("warmup_steps", warmup_steps, 0, 1'000'000'000);
  check_range("min_freq", min_freq, 1, 1'000'000'000);
  check_range("train_sentences", train_sentences, 1, 10'000'000);
  check_range("dev_sentences", dev_sentences, 1, 10'000'000);
  check_range("test_sentences", test_sentences, 1, 10'000'000);
  check_one_of("corpus", corpus, {"builtin", "brown"});
  for (const auto& [key, path] : {std::pair<const char*, const std::string&>{"train_file", train_file},
                                  {"dev_file", dev_file},
                                  {"test_file", test_file},
                                  {"corpus_cache", corpus_cache}}) {
    if (!qkv::io::is_valid_utf8(path))
      refuse(key_and_option(key) + " is not UTF-8 text, which config.json must hold: rename '" + path + "'");
  }
  if (corpus == "brown" && !(train_file.empty() && dev_file.empty() && test_file.empty()))
    refuse("corpus brown and data files (--train, --dev, --test) exclude each other: give one or the other");
  if (corpus == "brown" && corpus_cache.empty())
    refuse("corpus brown needs corpus_cache, the directory it is in");
  // Last: the sizes it builds with have been checked above.
  if (const std::string why = attention_refusal(*this); !why.empty()) refuse(why);
}

std::string attention_refusal(const Config& c) {
  namespace nn = qkv::nn;
  if (c.model != "transformer" || !nn::position_schemes().contains(c.positions) ||
      !nn::attentions().contains(c.attention))
    return "";
  // Building draws initial weights from the default generator: it is put back as it was, so that
  // checking a config never changes what the run it describes draws.
  struct KeepGenerator {
    qkv::GeneratorState state = qkv::default_generator().state();
    ~KeepGenerator() { qkv::default_generator().set_state(state); }
  } keep;
  const std::string attention = key_and_option("attention") + " '" + c.attention + "'";
  nn::AttentionSetup setup;
  std::shared_ptr<nn::Attention> built;
  try {
    setup.positions = nn::position_scheme(c.positions)({c.d_model, c.heads, kMaxSentenceLength});
  } catch (const qkv::Error& e) {
    return key_and_option("positions") + " '" + c.positions + "' cannot be built: " + e.what();
  }
  // The encoder builds each block's attention from such a setup and refuses it with check_supported.
  // What a mechanism supports does not depend on its width, so the one built here is one head of 8
  // features (even, as rotary needs): a few kilobytes whatever d_model is, where the model's own
  // width could take gigabytes before check_memory has looked at it.
  setup.num_hiddens = 8;
  setup.num_heads = 1;
  setup.max_len = kMaxSentenceLength;
  setup.features = c.attention_features;
  try {
    built = nn::attention_mechanism(c.attention)(setup);
    if (!built) return attention + " gives no module: its registered factory returned null";
  } catch (const qkv::Error& e) {
    return attention + " cannot be built with " + key_and_option("attention_features") + " " +
           std::to_string(c.attention_features) + ": " + e.what();
  }
  // The features alone, then the scheme with full attention, then the window without a scheme, so
  // that the refusal names the one option the mechanism does not take.
  const std::shared_ptr<nn::PositionScheme> scheme = setup.positions;
  setup.positions = nullptr;
  try {
    nn::check_supported(*built, setup, "TransformerEncoder");
  } catch (const qkv::ValueError& e) {
    return attention + " does not take " + key_and_option("attention_features") + " " +
           std::to_string(c.attention_features) + ": " + e.what();
  }
  setup.positions = scheme;
  setup.features = 0;
  try {
    nn::check_supported(*built, setup, "TransformerEncoder");
  } catch (const qkv::ValueError& e) {
    return attention + " does not take " + key_and_option("positions") + " '" + c.positions +
           "': " + e.what();
  }
  setup.positions = nullptr;
  setup.attend =
      c.window >= 0 ? nn::AttentionRestriction::window(c.window) : nn::AttentionRestriction::full();
  try {
    nn::check_supported(*built, setup, "TransformerEncoder");
  } catch (const qkv::ValueError& e) {
    return attention + " does not take " + key_and_option("window") + " " + std::to_string(c.window) + ": " +
           e.what();
  }
  return "";
}

bool attention_reads_features(const std::string& name) {
  const qkv::GeneratorState state = qkv::default_generator().state();  // building draws weights
  const auto built = qkv::nn::attention_mechanism(name)({.num_hiddens = 8, .num_heads = 1, .max_len = 8});
  qkv::default_generator().set_state(state);
  return built && built->supports().features;
}

double training_bytes_estimate(const Config& c, int64_t vocab_size, int64_t num_tags, int64_t longest) {
  const double d = static_cast<double>(c.d_model), f = static_cast<double>(c.ffn_width);
  const double L = static_cast<double>(c.layers), H = static_cast<double>(c.heads);
  const double T = static_cast<double>(std::max<int64_t>(1, longest));
  const double chars = c.char_filters > 0 ? 1 : 0;
  const double input =
      static_cast<double>(vocab_size) * d +
      chars * (static_cast<double>(kNumCharIds) * c.char_dim + c.char_kernel * c.char_dim * c.char_filters);
  const double head = static_cast<double>(num_tags) * (d + 1);
  double body = 0, per_token = 0;  // parameters; activations of one token
  if (c.model == "gru") {
    body = 2 * 3 * (d * d / 2 + d * d / 4 + d);
    per_token = 12 * d;
  } else {
    body = L * (4 * d * d + 2 * d * f + 10 * d + f) + static_cast<double>(kMaxSentenceLength) * d;
    per_token = L * (16 * d + 3 * f + 3 * H * T);  // projections, norms, FFN, masks; H rows of weights
  }
  per_token += chars * (kMaxWordBytes + 2) * (c.char_dim + 2.0 * c.char_filters) + 4 * d + 3.0 * num_tags;
  const double parameters = input + body + head;
  const double tokens = static_cast<double>(c.batch_size) * T;
  return 4.0 * (4 * parameters + 2 * tokens * per_token);
}

Config real_text_defaults() {
  Config c;
  c.d_model = 128;
  c.ffn_width = 256;
  c.positions = "relative";
  c.char_dim = 48;
  c.char_filters = 96;
  c.word_dropout = 1;
  c.min_freq = 1;
  c.epochs = 5;
  return c;
}

bool reads_real_text(const Config& config) {
  return config.corpus != "builtin" || !config.train_file.empty();
}

TokenVectors::TokenVectors(const Config& config, int64_t vocab_size)
    : word_dropout(static_cast<float>(config.word_dropout)) {
  embedding = register_module(
      "embedding", std::make_shared<qkv::nn::Embedding>(vocab_size, config.d_model - config.char_filters));
  // d2l scales the embedding by √d so that it is not drowned by the positional encoding, whose
  // entries are sines of size ~1. With PyTorch's default N(0, 1) embedding that makes each token
  // vector √d times larger than the encoding instead, and the model finds positions hard to read.
  // N(0, 1/d) before the scaling gives both the same size (the Transformer paper's convention).
  qkv::nn::init::normal_(embedding->weight, 0.0f, 1.0f / std::sqrt(static_cast<float>(config.d_model)));
  if (config.char_filters > 0) {
    chars =
        register_module("chars", std::make_shared<qkv::nn::CharEncoder>(
                                     kNumCharIds, config.char_dim, config.char_filters, config.char_kernel));
  }
}

Tensor TokenVectors::forward(const ModelInput& input) const {
  const IndexTensor& ids = input.ids;
  const int64_t d = embedding->embedding_dim + (chars ? chars->filters : 0);
  Tensor X = embedding->forward(is_training() && word_dropout > 0 ? drop_words(ids) : ids) *
             std::sqrt(static_cast<float>(d));
  if (!chars) return X;
  const int64_t B = ids.size(0), T = ids.size(1), F = chars->filters;
  if (!input.chars.defined() || input.form_rows.numel() != B * T)
    throw qkv::ValueError("tagger: this model reads characters; its input has none");
  const Tensor forms = chars->forward(input.chars, input.char_lens);     // (U, F)
  const Tensor with_padding = qkv::cat({forms, qkv::zeros({1, F})}, 0);  // row U: padding tokens
  return qkv::cat({X, with_padding.index_select(0, input.form_rows).reshape({B, T, F})}, 2);
}

void TokenVectors::set_word_counts(const std::vector<int64_t>& counts, int64_t pad, int64_t unk) {
  pad_id = pad, unk_id = unk;
  drop_chance.assign(counts.size(), 0.0);
  for (size_t id = 0; id < counts.size(); ++id)
    drop_chance[id] = word_dropout / (word_dropout + static_cast<double>(counts[id]));
}

IndexTensor TokenVectors::drop_words(const IndexTensor& ids) const {
  if (drop_chance.empty()) throw qkv::StateError("tagger: word dropout needs set_word_counts first");
  std::vector<int64_t> dropped = ids.values();
  qkv::Generator& gen = qkv::default_generator();
  for (int64_t& id : dropped) {
    if (id != pad_id && id != unk_id && gen.next_chance(drop_chance.at(static_cast<size_t>(id)))) id = unk_id;
  }
  return IndexTensor(std::move(dropped), ids.shape());
}

Tensor TaggerModel::forward(const IndexTensor& ids, const IndexTensor& valid_lens) {
  ModelInput input;
  input.ids = ids;
  input.valid_lens = valid_lens;
  return forward(input);
}

TransformerTagger::TransformerTagger(const Config& config, int64_t vocab_size, int64_t num_tags) {
  tokens = register_module("tokens", std::make_shared<TokenVectors>(config, vocab_size));
  qkv::nn::TransformerEncoderOptions options;
  options.vocab_size = 0;  // the tagger embeds the words itself
  options.num_hiddens = config.d_model;
  options.ffn_num_hiddens = config.ffn_width;
  options.num_heads = config.heads;
  options.num_layers = config.layers;
  options.dropout = static_cast<float>(config.dropout);
  options.positions = qkv::nn::position_scheme(config.positions);
  options.attend = config.window >= 0 ? qkv::nn::AttentionRestriction::window(config.window)
                                      : qkv::nn::AttentionRestriction::full();
  options.ffn = qkv::nn::feed_forward(config.ffn);
  options.attention = qkv::nn::attention_mechanism(config.attention);
  options.attention_features = config.attention_features;
  options.norm = config.norm == "pre" ? qkv::nn::NormPlacement::Pre : qkv::nn::NormPlacement::Post;
  options.max_len = kMaxSentenceLength;
  encoder = register_module("encoder", std::make_shared<qkv::nn::TransformerEncoder>(options));
  head = register_module("head", std::make_shared<qkv::nn::Linear>(config.d_model, num_tags));
}

Tensor TransformerTagger::forward(const ModelInput& input) {
  if (input.ids.dim() == 2 && input.ids.size(1) > kMaxSentenceLength) {
    throw qkv::ValueError("tagger: a sentence of " + std::to_string(input.ids.size(1)) +
                          " tokens is longer than the " + std::to_string(kMaxSentenceLength) +
                          " the model's positional encoding covers");
  }
  return head->forward(encoder->forward(tokens->forward(input), input.valid_lens));
}

Tensor TransformerTagger::positional_table() const {
  // Only the absolute schemes add a table to the embeddings: the fixed one, or the learned one.
  if (const auto* s = dynamic_cast<const qkv::nn::SinusoidalPositions*>(encoder->positions.get()))
    return s->encoding->P;
  if (const auto* l = dynamic_cast<const qkv::nn::LearnedPositions*>(encoder->positions.get()))
    return l->encoding->weight.detach();
  return Tensor();
}

Tensor TransformerTagger::position_bias(const IndexTensor& offsets) const {
  if (!encoder->positions) return Tensor();
  qkv::NoGradGuard no_grad;
  const Tensor bias = encoder->positions->offset_bias(offsets);
  return bias.defined() ? bias.detach() : bias;
}

GRUTagger::GRUTagger(const Config& config, int64_t vocab_size, int64_t num_tags)
    : dropout(static_cast<float>(config.dropout)) {
  tokens = register_module("tokens", std::make_shared<TokenVectors>(config, vocab_size));
  qkv::nn::GRUOptions options;
  options.batch_first = true;
  forward_gru = register_module("forward_gru",
                                std::make_shared<qkv::nn::GRU>(config.d_model, config.d_model / 2, options));
  backward_gru = register_module("backward_gru",
                                 std::make_shared<qkv::nn::GRU>(config.d_model, config.d_model / 2, options));
  head = register_module("head", std::make_shared<qkv::nn::Linear>(config.d_model, num_tags));
}

Tensor GRUTagger::forward(const ModelInput& input) {
  namespace F = qkv::nn::functional;
  const IndexTensor &ids = input.ids, &valid_lens = input.valid_lens;
  if (ids.dim() != 2 || valid_lens.dim() != 1 || valid_lens.size(0) != ids.size(0)) {
    throw qkv::ShapeError("GRUTagger: expected ids (B, T) and valid_lens (B)");
  }
  const int64_t B = ids.size(0), T = ids.size(1);
  // Row b·T + t of the flattened batch goes to b·T + (len_b - 1 - t) for t < len_b; padding stays.
  // The permutation is its own inverse, so the same index puts the backward states back in place.
  std::vector<int64_t> reversed(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = valid_lens[b];
    if (len < 1 || len > T)
      throw qkv::ValueError("GRUTagger: valid length " + std::to_string(len) + " outside [1, T]");
    for (int64_t t = 0; t < T; ++t) reversed[b * T + t] = b * T + (t < len ? len - 1 - t : t);
  }
  const IndexTensor rev(std::move(reversed));
  const Tensor x = F::dropout(tokens->forward(input), dropout, is_training());  // (B, T, d)
  const int64_t d = x.size(2);
  const Tensor x_rev = x.reshape({B * T, d}).index_select(0, rev).reshape({B, T, d});
  const Tensor fwd = forward_gru->forward(x).output;           // (B, T, d/2)
  const Tensor bwd_rev = backward_gru->forward(x_rev).output;  // in reversed order
  const Tensor bwd = bwd_rev.reshape({B * T, d / 2}).index_select(0, rev).reshape({B, T, d / 2});
  const Tensor h = qkv::cat({fwd, bwd}, 2);  // (B, T, d): [forward state, backward state]
  return head->forward(F::dropout(h, dropout, is_training()));
}

std::shared_ptr<TaggerModel> make_model(const Config& config, int64_t vocab_size, int64_t num_tags) {
  config.validate();
  if (config.model == "gru") return std::make_shared<GRUTagger>(config, vocab_size, num_tags);
  return std::make_shared<TransformerTagger>(config, vocab_size, num_tags);
}

}  // namespace tagger
