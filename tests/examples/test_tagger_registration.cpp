// The tagger takes its encoder's parts by registry name: a position scheme and an attention
// mechanism written here, outside the library, and registered by name reach `tagger train` (its
// options' help, the model, the saved config) with no edit of the tagger; the built-in mechanisms
// (performer) train; a mechanism is refused, naming both options, with a position scheme or window
// it does not take; and a config saved before the attention keys still loads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "examples/tagger/figures.h"
#include "examples/tagger/options.h"
#include "examples/tagger/train.h"
#include "model_io/checkpoint.h"
#include "io/json.h"
#include "io/scratch_dir.h"
#include "nn/attention_interface.h"
#include "nn/functional/basic.h"
#include "nn/position_scheme.h"
#include "optim/adam.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tagger_testing.h"

namespace fs = std::filesystem;
namespace nn = qkv::nn;
using namespace tagger;
using qkv::IndexTensor;
using qkv::Tensor;

namespace {

// A fixed penalty on the scores growing with the distance between query and key, the same for
// every head: -|j - i| / 2. Order comes only from it, as it does for ALiBi with one slope.
class DistancePenalty : public nn::PositionScheme {
 public:
  Tensor offset_bias(const IndexTensor& offsets) override {
    std::vector<float> bias;
    for (const int64_t o : offsets.values()) bias.push_back(-0.5f * static_cast<float>(std::abs(o)));
    return qkv::tensor(std::move(bias), {1, offsets.numel()});
  }
};

// Softmax attention written op by op on ProjectedAttention's heads: scores, the scheme's bias by
// offset, the padded keys filled with a large negative score, softmax, the values.
class PlainSoftmaxAttention : public nn::ProjectedAttention {
 public:
  explicit PlainSoftmaxAttention(const nn::AttentionSetup& setup)
      : ProjectedAttention(setup, "PlainSoftmaxAttention") {}

  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) override {
    const Heads h = project(queries, keys, values, valid_lens, mask, bias, /*takes_mask_bias=*/false);
    const int64_t B = queries.size(0), Q = queries.size(1), K = keys.size(1);
    Tensor scores = h.q.matmul(h.k.transpose(-2, -1)) * (1.0f / std::sqrt(static_cast<float>(h.q.size(-1))));
    if (const Tensor p = nn::position_scores_bias(positions.get(), num_heads, Q, K, 0, *this); p.defined())
      scores = scores + p;
    if (valid_lens.defined())  // (B) → (B, 1, 1, K): 1 at the keys past a sequence's length
      scores = scores.masked_fill(qkv::sequence_mask(valid_lens, K).eq(0.0f).reshape({B, 1, 1, K}), -1e6f);
    const Tensor weights = scores.softmax(-1);
    attention_weights = weights.detach();
    return output(nn::functional::dropout(weights, dropout, is_training()).matmul(h.v));
  }

  // No window, causal or mask restriction: the tagger refuses --window with it.
  nn::AttentionSupport supports() const override { return {.offset_bias = true, .transform_qk = true}; }
};

constexpr const char* kScheme = "distance_penalty";
constexpr const char* kMechanism = "plain_softmax";

// Takes `name` out of `registry` when the test ends, however it ends: other tests in this process
// iterate the registries and would train a part they do not know.
template <class Factory>
class Unregister {
 public:
  Unregister(nn::Registry<Factory>& registry, std::string name)
      : registry_(registry), name_(std::move(name)) {}
  Unregister(const Unregister&) = delete;
  Unregister& operator=(const Unregister&) = delete;
  ~Unregister() {
    if (registry_.contains(name_)) registry_.remove(name_);
  }

 private:
  nn::Registry<Factory>& registry_;
  std::string name_;
};

nn::PositionFactory distance_penalty() {
  return [](const nn::PositionSizes&) { return std::make_shared<DistancePenalty>(); };
}

nn::AttentionFactory plain_softmax() {
  return [](const nn::AttentionSetup& s) { return std::make_shared<PlainSoftmaxAttention>(s); };
}

// Small and quick (a quarter of a second): one narrow block, 1000 built-in sentences, 5 epochs.
Config small_config() {
  Config c = testing::small_config();
  c.epochs = 5;
  c.train_sentences = 1000;
  c.test_sentences = 200;
  return c;
}

using testing::quiet;

// The share of the test tokens the majority tagger (each word's most frequent training tag) gets
// right: what a model must clearly beat to have learned from context.
double majority_accuracy(const Data& data) {
  const TagLexicon lexicon(data.train);
  return score_tags(lexicon, data.test, majority_tags(lexicon, data.test)).overall.value();
}

// The share of the test tokens that carry the most frequent tag: tagging every token with it.
double most_frequent_tag_share(const Data& data) {
  std::map<std::string, int64_t> counts;
  int64_t tokens = 0, most = 0;
  for (const TaggedSentence& s : data.test) {
    for (const std::string& tag : s.tags) most = std::max(most, ++counts[tag]);
    tokens += static_cast<int64_t>(s.tags.size());
  }
  return static_cast<double>(most) / static_cast<double>(tokens);
}

// `tagger train` parsed from `argv` (without the command).
qkv::examples::Args train_args(const std::vector<std::string>& argv) {
  std::vector<std::string> words = argv;  // Args reads char*; these outlive the call
  std::vector<char*> raw;
  for (std::string& s : words) raw.push_back(s.data());
  return qkv::examples::Args(static_cast<int>(raw.size()), raw.data(), train_options(),
                             "usage: tagger train");
}

}  // namespace

TEST_CASE("tagger trains with a position scheme and an attention mechanism registered outside the library") {
  REQUIRE(nn::register_position_scheme(kScheme, distance_penalty()));
  const Unregister<nn::PositionFactory> scheme_registered(nn::position_schemes(), kScheme);
  REQUIRE(nn::register_attention(kMechanism, plain_softmax()));
  const Unregister<nn::AttentionFactory> mechanism_registered(nn::attentions(), kMechanism);

  // The names reach the options' help, and the options build a config of them.
  const std::string help = train_args({}).help();
  CHECK(help.find(kScheme) != std::string::npos);
  CHECK(help.find(kMechanism) != std::string::npos);
  const Config from_options = config_from(train_args({"--positions", kScheme, "--attention", kMechanism}));
  CHECK(from_options.positions == kScheme);
  CHECK(from_options.attention == kMechanism);
  // The mechanism supports no window, and the tagger says so before anything is built.
  CHECK_THROWS_WITH_AS(
      config_from(train_args({"--attention", kMechanism, "--window", "2"})),
      doctest::Contains("attention (--attention) 'plain_softmax' does not take window (--window) 2"),
      qkv::ValueError);

  Config c = small_config();
  c.positions = kScheme;
  c.attention = kMechanism;
  qkv::testing::ScratchDir dir;
  const Data data = load_data(c);
  const TrainResult r = train(c, data, quiet(dir.path()));
  // The loss starts near ln(17) = 2.83 and falls. The test accuracy is far above tagging every
  // token with the most frequent tag, and above the majority tagger's, which knows each word's most
  // frequent tag and beats it only by reading the context (measured: most frequent tag 0.18,
  // majority tagger 0.907, this model 0.937; the built-in schemes with dense attention score
  // 0.91 to 0.92 at this budget).
  REQUIRE(r.history.size() == 5);
  CHECK(r.step_losses.front() > 2.0);
  CHECK(r.history.back().train_loss < 0.2 * r.history.front().train_loss);
  const double accuracy = r.test.score.overall.value();
  CHECK(accuracy > most_frequent_tag_share(data) + 0.5);
  CHECK(accuracy > majority_accuracy(data) + 0.02);

  // The saved config names both parts, and the run loads back into the same model.
  const qkv::io::Json saved = qkv::io::parse_json(qkv::testing::read_file(dir.path() / "config.json"));
  CHECK(saved.find("positions")->as_string() == kScheme);
  CHECK(saved.find("attention")->as_string() == kMechanism);
  Run run = load_run(dir.path().string());
  std::vector<std::vector<std::string>> test_words;
  for (const TaggedSentence& s : data.test) test_words.push_back(s.words);
  CHECK(predict(run, test_words) == r.test.predicted);

  // A name is registered once: a second registration is refused, naming it.
  CHECK_THROWS_WITH_AS(nn::register_position_scheme(kScheme, distance_penalty()),
                       doctest::Contains("scheme 'distance_penalty' is already registered"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(nn::register_attention(kMechanism, plain_softmax()),
                       doctest::Contains("mechanism 'plain_softmax' is already registered"), qkv::ValueError);
}

TEST_CASE("a tagger test undoes its registration when it ends") {
  {
    REQUIRE(nn::register_attention(kMechanism, plain_softmax()));
    const Unregister<nn::AttentionFactory> registered(nn::attentions(), kMechanism);
    CHECK(nn::attentions().contains(kMechanism));
  }
  CHECK_FALSE(nn::attentions().contains(kMechanism));
  CHECK_FALSE(nn::position_schemes().contains(kScheme));
  Config c;
  c.attention = kMechanism;
  CHECK_THROWS_WITH_AS(c.validate(),
                       doctest::Contains("attention (--attention) is 'plain_softmax'; expected one of dense"),
                       qkv::ValueError);
}

TEST_CASE("tagger trains with performer attention and draws no attention figure for it") {
  Config c = small_config();
  c.attention = "performer";
  c.epochs = 2;
  qkv::testing::ScratchDir dir;
  TrainOptions options = quiet(dir.path());
  options.figures = true;
  const Data data = load_data(c);
  const TrainResult r = train(c, data, options);
  REQUIRE(r.history.size() == 2);
  for (const double loss : r.step_losses) REQUIRE(std::isfinite(loss));
  CHECK(r.history.back().train_loss < r.history.front().train_loss);
  CHECK(r.test.score.overall.value() > 0.5);  // tagging every token NOUN scores about 18%
  // Performer never forms the (T, T) weights: the run draws its other figures and no blank grid.
  CHECK(fs::exists(dir.path() / "figures" / "loss_accuracy.png"));
  CHECK(fs::exists(dir.path() / "figures" / "confusion.png"));
  CHECK_FALSE(fs::exists(dir.path() / "figures" / "attention_layer1.png"));
  Run run = load_run(dir.path().string());
  CHECK(run.config.attention == "performer");
  std::string skipped;
  const qkv::testing::ScratchDir figures;
  CHECK(draw_attention(*run.model, run.vocabs, {"the", "dog", "runs"}, figures.path().string(), &skipped)
            .empty());
  CHECK(skipped == "no attention figure: attention Performer forms no (T, T) weights");
  CHECK(fs::is_empty(figures.path()));
}

TEST_CASE("tagger refuses an attention mechanism with a position scheme or window it does not take") {
  Config c = small_config();
  c.attention = "performer";
  c.positions = "alibi";
  CHECK_THROWS_WITH_AS(
      c.validate(),
      "tagger config: attention (--attention) 'performer' does not take positions (--positions) "
      "'alibi': TransformerEncoder: attention Performer does not support position scheme ALiBi (a "
      "score bias by offset); it takes valid lengths, positions on the input, positions on q and k",
      qkv::ValueError);
  c.attention = "linformer";
  c.positions = "sinusoidal";
  c.window = 3;
  CHECK_THROWS_WITH_AS(
      c.validate(),
      doctest::Contains("attention (--attention) 'linformer' does not take window (--window) 3: "
                        "TransformerEncoder: attention Linformer does not support attend=window=3"),
      qkv::ValueError);
  c.window = -1;
  c.attention_features = 2000;  // Linformer projects to at most the longest sentence, 1024
  CHECK_THROWS_WITH_AS(
      c.validate(),
      doctest::Contains("attention (--attention) 'linformer' cannot be built with "
                        "attention_features (--attention-features) 2000: Linformer: features"),
      qkv::ValueError);
  c.attention_features = -1;
  CHECK_THROWS_WITH_AS(c.validate(),
                       "tagger config: attention_features (--attention-features) is -1; expected 0 to 8192",
                       qkv::ValueError);
  c.attention = "dense";  // exact: a features size would be ignored, so it is refused
  c.attention_features = 16;
  CHECK_THROWS_WITH_AS(c.validate(),
                       doctest::Contains("attention (--attention) 'dense' does not take attention_features "
                                         "(--attention-features) 16: TransformerEncoder: attention "
                                         "MultiHeadAttention does not support features 16"),
                       qkv::ValueError);
  c.attention = "softmax";
  c.attention_features = 0;
  CHECK_THROWS_WITH_AS(
      c.validate(),
      "tagger config: attention (--attention) is 'softmax'; expected one of dense, linformer, "
      "performer, talking_heads",
      qkv::ValueError);
  // The GRU has no attention: what it would take is not asked.
  c = small_config();
  c.model = "gru";
  c.attention = "performer";
  c.positions = "alibi";
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("tagger's check of the attention leaves the generator as it was") {
  // Checking builds a throwaway attention, whose initial weights are drawn: the draws a run makes
  // after validating its config must not depend on it.
  Config c = small_config();
  c.attention = "linformer";
  const qkv::GeneratorState before = qkv::default_generator().state();
  c.validate();
  const qkv::GeneratorState after = qkv::default_generator().state();
  CHECK(after.seed == before.seed);
  CHECK(after.offset == before.offset);
}

TEST_CASE("tagger loads a config and a run saved before the attention keys as dense attention") {
  qkv::testing::ScratchDir dir;
  Config c = small_config();
  c.epochs = 1;
  train(c, load_data(c), quiet(dir.path()));
  Run before = load_run(dir.path().string());
  const std::vector<std::vector<std::string>> sentence = {{"they", "saw", "the", "saw"}};
  const auto tags = predict(before, sentence);

  // config.json and both checkpoints' configs written again as the tagger wrote them before it
  // took an attention by name: without "attention" and "attention_features".
  auto without_attention = [](const qkv::io::Json& config) {
    qkv::io::Json::Object old;
    for (const auto& [key, value] : config.as_object())
      if (key != "attention" && key != "attention_features") old.emplace_back(key, value);
    REQUIRE(old.size() == config.as_object().size() - 2);
    return qkv::io::Json(std::move(old));
  };
  const fs::path config_json = dir.path() / "config.json";
  const qkv::io::Json old_config =
      without_attention(qkv::io::parse_json(qkv::testing::read_file(config_json)));
  qkv::testing::write_file(config_json, qkv::io::to_json(old_config) + "\n");
  for (const char* file : {"best.safetensors", "last.safetensors"}) {
    const qkv::io::Checkpoint ckpt = qkv::io::read_checkpoint(dir.path() / file);
    const qkv::io::Json config = qkv::io::parse_json(ckpt.config);
    qkv::io::Json::Object state;
    for (const auto& [key, value] : config.as_object())
      state.emplace_back(key, key == "config" ? without_attention(value) : value);
    qkv::optim::AdamW optimizer(before.model->parameters(), {});
    qkv::io::save_checkpoint(dir.path() / file, *before.model, optimizer, ckpt.step,
                             qkv::io::to_json(qkv::io::Json(std::move(state))));
  }
  CHECK(qkv::testing::read_file(config_json).find("attention") == std::string::npos);

  const Config read = Config::from_json(old_config);
  CHECK(read.attention == "dense");
  CHECK(read.attention_features == 0);
  Run reloaded = load_run(dir.path().string());
  CHECK(reloaded.config.attention == "dense");
  CHECK(predict(reloaded, sentence) == tags);
  const SavedRun saved = load_saved_run(dir.path().string(), "last.safetensors");
  CHECK(saved.config.attention == "dense");
}
