// Every shipped model, one training step in each mode: the fused ops with the pool, and the
// reference mode's composed ops, plain allocation and OpenMP loops (tensor/reference_mode.h). The
// same seed gives the same initialization and the same dropout draws in both, so the loss and
// every parameter's gradient must agree to float32 rounding:
//   loss: relative difference ≤ 1e-6;
//   each gradient: largest element difference ≤ 1e-4 of the gradient's largest element
// (measured: below 5e-7 on every parameter of these models in the Release build; up to 2e-5 in the
// sanitizer build, whose code rounds differently, on the seq2seq attention's tiny W_q gradient).
// The models: the tagger's Transformer at its defaults (tiny), the real-text model (characters,
// relative positions, word dropout), the tagger's bidirectional GRU with characters, the
// seq2seq GRU encoder-decoder with additive attention and its encoder-decoder Transformer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench/tagger_bench.h"
#include "child_process.h"
#include "examples/seq2seq/model.h"
#include "io/scratch_dir.h"
#include "nn/functional/loss.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

using namespace qkv;

namespace {

struct Step {
  float loss = 0;
  std::map<std::string, Tensor> grads;  // by parameter name
};

// The loss and gradients of one step of the model `build` makes (after seeding), in one mode.
Step one_step(bool reference, const std::function<std::pair<std::shared_ptr<nn::Module>, Tensor>()>& build) {
  const ReferenceModeGuard mode(reference);
  manual_seed(7);
  const auto [model, loss] = build();
  loss.backward();
  Step s;
  s.loss = loss.item();
  for (const auto& [name, p] : model->named_parameters())
    if (p.grad().defined()) s.grads[name] = p.grad().detach().clone();
  return s;
}

void check_agree(const std::function<std::pair<std::shared_ptr<nn::Module>, Tensor>()>& build) {
  const Step fast = one_step(false, build), plain = one_step(true, build);
  CHECK(std::fabs(plain.loss - fast.loss) <= 1e-6f * std::fabs(fast.loss));
  REQUIRE(plain.grads.size() == fast.grads.size());
  REQUIRE(!fast.grads.empty());
  for (const auto& [name, g] : fast.grads) {
    CAPTURE(name);
    REQUIRE(plain.grads.count(name));
    const Tensor& r = plain.grads.at(name);
    REQUIRE(r.shape() == g.shape());
    const float scale = g.abs().max().item(), diff = (r - g).abs().max().item();
    CHECK(diff <= 1e-4f * scale + 1e-12f);
  }
}

// The tagger's model of `config` on a bench batch (random words, and characters when it reads
// them), trained one step with the masked cross-entropy.
std::function<std::pair<std::shared_ptr<nn::Module>, Tensor>()> tagger_step(tagger::Config config) {
  return [config] {
    tagger::BenchConfig c{"test", config, 300, 12, 6, 11, 5, 0.6};
    const tagger::BenchBatch batch = tagger::make_bench_batch(c);
    const auto model = tagger::make_model(c.model, c.V, c.C);
    if (c.model.word_dropout > 0) {
      std::vector<int64_t> counts(static_cast<size_t>(c.V));
      for (int64_t id = 0; id < c.V; ++id) counts[static_cast<size_t>(id)] = 1 + id % 7;
      model->tokens->set_word_counts(counts, 0, 1);
    }
    model->train();
    const Tensor loss =
        nn::functional::sequence_cross_entropy(model->forward(batch.input), batch.targets, batch.input.valid_lens);
    return std::pair<std::shared_ptr<nn::Module>, Tensor>{model, loss};
  };
}

}  // namespace

TEST_CASE("the tagger's Transformer gives the same loss and gradients in the reference mode and the fast one") {
  check_agree(tagger_step(tagger::Config{}));
}

TEST_CASE("the real-text tagger with characters gives the same loss and gradients in both modes") {
  tagger::Config config = tagger::real_text_defaults();
  config.d_model = 64, config.ffn_width = 96, config.char_filters = 24, config.char_dim = 16;
  check_agree(tagger_step(config));
}

TEST_CASE("the tagger's encoder parts give the same loss and gradients in both modes") {
  // A window (the band ops), rotary embeddings (heads the fused path cannot pack), ALiBi with
  // pre-norm and SwiGLU.
  for (const auto& [positions, window, norm, ffn] :
       {std::tuple{"sinusoidal", 2, "post", "relu"}, std::tuple{"rotary", -1, "post", "gelu"},
        std::tuple{"alibi", -1, "pre", "swiglu"}}) {
    CAPTURE(positions);
    tagger::Config config;
    config.positions = positions, config.window = window, config.norm = norm, config.ffn = ffn;
    check_agree(tagger_step(config));
  }
}

TEST_CASE("the tagger's BiGRU with characters gives the same loss and gradients in both modes") {
  tagger::Config config = tagger::real_text_defaults();
  config.model = "gru";
  config.d_model = 48, config.char_filters = 16, config.char_dim = 16;
  check_agree(tagger_step(config));
}

TEST_CASE("the seq2seq GRU encoder-decoder with attention gives the same loss and gradients in both modes") {
  check_agree([] {
    const int64_t V = 30, B = 5, T = 7;
    auto model = std::make_shared<seq2seq::Seq2Seq>(seq2seq::ModelConfig{
        .source_vocab = V, .target_vocab = V, .embed_size = 8, .num_hiddens = 16, .num_layers = 2, .dropout = 0.1f});
    model->train();
    const IndexTensor src = randint(0, V, {B, T}), tgt = randint(0, V, {B, T}), lens = randint(2, T + 1, {B});
    const Tensor logits = model->forward(src, lens, tgt);
    const Tensor loss = nn::functional::sequence_cross_entropy(logits, tgt, lens);
    return std::pair<std::shared_ptr<nn::Module>, Tensor>{model, loss};
  });
}

TEST_CASE("the seq2seq encoder-decoder Transformer gives the same loss and gradients in both modes") {
  check_agree([] {
    const int64_t V = 30, B = 5, T = 7;
    auto model = std::make_shared<seq2seq::TransformerSeq2Seq>(seq2seq::ModelConfig{.kind = "transformer",
                                                                                    .source_vocab = V,
                                                                                    .target_vocab = V,
                                                                                    .num_hiddens = 16,
                                                                                    .num_layers = 2,
                                                                                    .num_heads = 2,
                                                                                    .ffn_num_hiddens = 24,
                                                                                    .dropout = 0.1f});
    model->train();
    const IndexTensor src = randint(0, V, {B, T}), tgt = randint(0, V, {B, T}), lens = randint(2, T + 1, {B});
    const Tensor logits = model->forward(src, lens, tgt);
    const Tensor loss = nn::functional::sequence_cross_entropy(logits, tgt, lens);
    return std::pair<std::shared_ptr<nn::Module>, Tensor>{model, loss};
  });
}

TEST_CASE("a model step in the reference mode gives the same bits with 1 and 2 threads") {
  const auto step = tagger_step(tagger::Config{});
  const int saved = get_num_threads();
  set_num_threads(1);
  const Step one = one_step(true, step);
  set_num_threads(2);
  const Step two = one_step(true, step);
  set_num_threads(saved);
  CHECK(one.loss == two.loss);
  for (const auto& [name, g] : one.grads) {
    CAPTURE(name);
    CHECK(g.to_vector() == two.grads.at(name).to_vector());
  }
}

namespace {

// The tagger's test accuracy in % from the line "  transformer (best dev 97.52%)      97.54% ...".
double transformer_accuracy(const std::string& output) {
  const size_t line = output.find("  transformer (best dev ");
  REQUIRE(line != std::string::npos);
  const size_t close = output.find(')', line);
  return std::stod(output.substr(close + 1));
}

}  // namespace

// Two whole trainings: seconds in the Release build, ten minutes under the sanitizers, whose memory
// checks of the reference mode the model steps above already make; skipped there.
#ifdef QKV_TESTS_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST_CASE("a 2-epoch tagger run on the built-in corpus ends within 0.2 point of test accuracy in either mode" *
          doctest::skip(kSanitized)) {
  const testing::ScratchDir dir;
  const std::vector<std::string> args = {"train", "--epochs", "2", "--no-figures"};
  auto with_run = [&](const std::string& name) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--run", (dir.path() / name).string()});
    return a;
  };
  const testing::ChildResult fast = testing::run_program(testing::kTaggerProgram, with_run("fast"));
  // The reference mode for the whole process, from the environment (tensor/reference_mode.h).
  const testing::ChildResult plain =
      testing::run_program(testing::kTaggerProgram, with_run("reference"), {"QKV_REFERENCE=1"});
  REQUIRE(fast.exit_code == 0);
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.output.find("reference mode") != std::string::npos);
  CHECK(fast.output.find("reference mode") == std::string::npos);
  const double a = transformer_accuracy(fast.output), b = transformer_accuracy(plain.output);
  MESSAGE("test accuracy: fast " << a << " %, reference " << b << " %");
  CHECK(a > 95.0);
  CHECK(std::fabs(a - b) <= 0.2);
}
