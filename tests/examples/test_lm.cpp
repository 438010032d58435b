// examples/lm: the character-level GPT's generation with and without the key/value cache, the text
// and its splits, and the character vocabulary.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "examples/lm/model.h"
#include "examples/lm/text.h"
#include "examples/lm/train.h"
#include "nn/functional/loss.h"
#include "tensor/factories.h"
#include "tensor/error.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"
#include "graph_testing.h"
#include "thread_testing.h"

using namespace lm;

namespace {

std::shared_ptr<CharGPT> tiny_gpt(const std::string& positions, int64_t context) {
  qkv::manual_seed(11);
  auto model = std::make_shared<CharGPT>(ModelConfig{.vocab_size = 23, .context = context, .d_model = 32,
                                                     .heads = 4, .layers = 2, .ffn_hidden = 64,
                                                     .positions = positions, .ffn = "swiglu", .dropout = 0.1f});
  // Away from the initial N(0, 0.02²) embedding, so that the logits differ enough for sampling to
  // wander over the whole vocabulary.
  qkv::manual_seed(12);
  qkv::NoGradGuard no_grad;
  model->embedding->weight.copy_(qkv::randn(model->embedding->weight.shape()) * 0.3f);
  return model;
}

struct Sampled {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // every step's, one after another
};

Sampled sample(CharGPT& model, bool cache, double temperature = 1.0, int64_t tokens = 1000) {
  std::vector<std::vector<float>> steps;
  Sampled run;
  run.ids = generate(model, {1, 2, 3}, {.tokens = tokens, .temperature = temperature, .seed = 5, .cache = cache},
                     {}, &steps);
  for (const auto& s : steps) run.logits.insert(run.logits.end(), s.begin(), s.end());
  return run;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("1000 sampled characters: the logits with and without the cache have the same bits at every step") {
  // A context of 96 makes the window fill and be cut to its last 48 characters many times on the way.
  for (const std::string positions : {"learned", "rotary"}) {
    CAPTURE(positions);
    const auto model = tiny_gpt(positions, 96);
    const Sampled cached = sample(*model, true), plain = sample(*model, false);
    REQUIRE(cached.logits.size() == size_t{1000 * 23});
    CHECK(same_bits(cached.logits, plain.logits));
    CHECK(cached.ids == plain.ids);
    // Sampling wandered: most of the vocabulary appears.
    std::vector<bool> seen(23);
    for (const int32_t id : cached.ids) seen[static_cast<size_t>(id)] = true;
    CHECK(std::count(seen.begin(), seen.end(), true) >= 12);
  }
}

TEST_CASE("cached sampling gives the same bits with 1 and 2 threads, and reproduces with its seed") {
  const auto model = tiny_gpt("rotary", 96);
  qkv::testing::check_bitwise_identical_with_1_and_2_threads([&] { return sample(*model, true, 1.0, 300).logits; });
  CHECK(sample(*model, true, 0.8, 200).ids == sample(*model, true, 0.8, 200).ids);
  CHECK(sample(*model, true, 0.8, 200).ids != sample(*model, true, 1.5, 200).ids);
}

TEST_CASE("in the reference mode the cache agrees to float32 rounding, and greedy text is the same") {
  // The reference mode's softmax sums a row with the compiler's SIMD reduction, whose order depends
  // on the row's length: the whole-prefix forward sums each causal row over all T keys (the hidden
  // ones adding 0), a cached step over the keys so far, so the last bits may differ. The fast
  // kernels sum in lanes fixed by position, and agree to the bit (above).
  const auto model = tiny_gpt("learned", 64);
  qkv::ReferenceModeGuard plain;
  const Sampled cached = sample(*model, true, 0.0, 150), recomputed = sample(*model, false, 0.0, 150);
  CHECK(cached.ids == recomputed.ids);
  REQUIRE(cached.logits.size() == recomputed.logits.size());
  float largest = 0;
  for (size_t i = 0; i < cached.logits.size(); ++i)
    largest = std::max(largest, std::abs(cached.logits[i] - recomputed.logits[i]));
  CHECK(largest <= 2e-5f);
  for (size_t t = 0; t < cached.ids.size(); ++t) {
    const float* row = cached.logits.data() + t * 23;
    CHECK(cached.ids[t] == std::max_element(row, row + 23) - row);
  }
}

TEST_CASE("sample_id: greedy, top-k and temperature") {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.9f};
  qkv::Generator gen(1);
  CHECK(sample_id(logits.data(), 4, {.temperature = 0.0}, gen) == 1);
  // top_k 1 is greedy whatever the temperature; top_k 2 never picks outside {1, 3}.
  CHECK(sample_id(logits.data(), 4, {.temperature = 5.0, .top_k = 1}, gen) == 1);
  int counts[4] = {0, 0, 0, 0};
  for (int i = 0; i < 2000; ++i) ++counts[sample_id(logits.data(), 4, {.temperature = 1.0, .top_k = 2}, gen)];
  CHECK(counts[0] == 0);
  CHECK(counts[2] == 0);
  // p(1) / p(3) = e^0.1 = 1.105: of 2000 draws about 1050 and 950.
  CHECK(counts[1] == doctest::Approx(2000 * 1.105 / 2.105).epsilon(0.08));
}

TEST_CASE("sample_id never draws id 0, the unknown symbol, however likely the model finds it") {
  const std::vector<float> logits = {9.0f, 1.0f, 0.5f, 0.0f};
  qkv::Generator gen(2);
  CHECK(sample_id(logits.data(), 4, {.temperature = 0.0}, gen) == 1);
  CHECK(sample_id(logits.data(), 4, {.temperature = 1.0, .top_k = 1}, gen) == 1);
  int counts[4] = {0, 0, 0, 0};
  for (int i = 0; i < 2000; ++i) ++counts[sample_id(logits.data(), 4, {.temperature = 1.0}, gen)];
  CHECK(counts[0] == 0);
  CHECK(counts[1] + counts[2] + counts[3] == 2000);
  CHECK(counts[3] > 200);  // e^0 / (e^1 + e^0.5 + e^0) = 0.19 of the draws
  CHECK_THROWS_AS(sample_id(logits.data(), 1, {}, gen), qkv::ValueError);
}

TEST_CASE("Moby-Dick's chapters split by the rule: every 20th to test, the next to validation") {
  Piece book;
  for (int n = 1; n <= 135; ++n) book += U"CHAPTER " + decode_utf8(std::to_string(n), "n") + U". Title.\n\nText of it.\n";
  const std::vector<Piece> chapters = split_chapters(book);
  REQUIRE(chapters.size() == 135);
  CHECK(chapters[0] == U"CHAPTER 1. Title.\n\nText of it.\n");
  const Splits s = split_pieces("book", chapters);
  CHECK(s.test.size() == 7);
  CHECK(s.validation.size() == 7);
  CHECK(s.train.size() == 121);
  CHECK(s.test[1].starts_with(U"CHAPTER 21."));
  CHECK(s.validation[1].starts_with(U"CHAPTER 22."));
  CHECK_THROWS_WITH_AS(split_chapters(book.substr(0, book.find(U"CHAPTER 135."))),
                       "Moby-Dick: 134 chapters; expected 135", qkv::ValueError);
}

TEST_CASE("UTF-8 is decoded to code points, and a malformed byte is named with its line") {
  CHECK(decode_utf8("a\xE2\x80\x94\xC3\xA9", "t") == U"a\u2014\u00E9");
  CHECK(encode_utf8(U"a\u2014\u00E9\U0001F600") == "a\xE2\x80\x94\xC3\xA9\xF0\x9F\x98\x80");
  CHECK_THROWS_WITH_AS(decode_utf8("ok\nfine\nbad \xC3(", "f.txt"), "f.txt: not UTF-8 at line 3, byte 13; the text must be UTF-8",
                       qkv::ValueError);
  CHECK_THROWS_AS(decode_utf8("\xC0\xAF", "overlong"), qkv::ValueError);
  CHECK_THROWS_AS(decode_utf8("\xED\xA0\x80", "surrogate"), qkv::ValueError);
}

TEST_CASE("the character vocabulary: the training part's characters after the unknown symbol") {
  const CharVocab v({U"hello", U"world"});
  CHECK(v.size() == 8);  // d e h l o r w, and the unknown symbol
  CHECK(v.id(U'd') == 1);
  CHECK(v.id(U'w') == 7);
  CHECK(v.id(U'z') == 0);
  CHECK(v.encode(U"hez") == std::vector<int32_t>{3, 2, 0});
  CHECK(v.character(0) == U'\uFFFD');
  CHECK(describe_char(U'\n') == "'\\n'");
  CHECK(describe_char(U'\u2014') == "U+2014");
  CHECK(CharVocab::from_chars(v.chars()).chars() == v.chars());
  CHECK_THROWS_AS(CharVocab::from_chars({U'b', U'a'}), qkv::ValueError);
}

TEST_CASE("evaluate_bits scores each character of a piece once, read after the start symbol") {
  const auto model = tiny_gpt("learned", 16);
  const std::vector<int32_t> piece = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13};  // shorter than the context
  model->eval();
  // One window: inputs [start, piece[0..8]], targets piece[0..9]; the mean of their bits.
  const qkv::Tensor logits =
      model->forward(qkv::IndexTensor({2, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 10})).view({10, 23});
  const qkv::Tensor nats = qkv::nn::functional::cross_entropy(logits, qkv::IndexTensor({4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
  CHECK(evaluate_bits(*model, {piece}, 2) == doctest::Approx(nats.item() / std::log(2.0)).epsilon(1e-6));
  // A piece of 40 characters is read in windows of 16 side by side (the last one moved back to end
  // with the piece): every character scored once, so by_position averages 2 windows at each
  // position.
  std::vector<int32_t> longer;
  for (int i = 0; i < 40; ++i) longer.push_back(1 + (i * 7) % 22);
  std::vector<double> by_position;
  const double bits = evaluate_bits(*model, {longer, piece}, 2, Scoring::NonOverlapping, &by_position);
  CHECK(by_position.size() == 16);
  CHECK(std::isfinite(bits));
  CHECK(bits > 0);
  CHECK_THROWS_AS(evaluate_bits(*model, {longer}, 2, Scoring::Sliding, &by_position), qkv::ValueError);
}

// The bits of each target of x = [start] + piece (x[t + 1] read after x[a .. t]) when a window
// starting at x[a] scores it, computed one window per target: what the two protocols must add up.
double bits_read_from(lm::CharGPT& model, const std::vector<int32_t>& piece, int32_t start, int64_t t, int64_t a) {
  std::vector<int64_t> inputs;
  for (int64_t x = a; x <= t; ++x) inputs.push_back(x == 0 ? start : piece[static_cast<size_t>(x - 1)]);
  const int64_t n = static_cast<int64_t>(inputs.size());
  const qkv::Tensor logits = model.forward(qkv::IndexTensor(inputs, {1, n})).view({n, -1}).narrow(0, n - 1, 1);
  return qkv::nn::functional::cross_entropy(logits, qkv::IndexTensor({piece[static_cast<size_t>(t)]})).item() /
         std::log(2.0);
}

TEST_CASE("evaluate_bits reads side by side windows, or a window sliding by an eighth of the context") {
  const auto model = tiny_gpt("learned", 16);
  model->eval();
  std::vector<int32_t> piece;
  for (int i = 0; i < 40; ++i) piece.push_back(1 + (i * 5) % 22);
  // Non-overlapping: windows at 0 and 16, and the last moved back to 24 (x[24 .. 39]), scoring the
  // targets 32 .. 39 only. Sliding: a window of 16 advancing by 2; target t is read after all of
  // x[0 .. t] up to t = 15, then in the window that scores it, after 15 or 16 characters.
  double side_by_side = 0, sliding = 0;
  for (int64_t t = 0; t < 40; ++t) {
    side_by_side += bits_read_from(*model, piece, 2, t, t < 32 ? t / 16 * 16 : 24);
    const int64_t end = t < 16 ? 16 : (t - 16) / 2 * 2 + 18;  // the first window that holds target t
    sliding += bits_read_from(*model, piece, 2, t, end - 16);
  }
  CHECK(evaluate_bits(*model, {piece}, 2) == doctest::Approx(side_by_side / 40).epsilon(1e-5));
  CHECK(evaluate_bits(*model, {piece}, 2, Scoring::Sliding) == doctest::Approx(sliding / 40).epsilon(1e-5));
  CHECK(evaluate_bits(*model, {piece}, 2, Scoring::Sliding) != evaluate_bits(*model, {piece}, 2));
}

TEST_CASE("--recompute: the blocks' activations recomputed in backward give the same gradients to the bit") {
  // With dropout, so that the recomputation must draw the same masks again.
  const auto gradients = [](bool recompute) {
    qkv::manual_seed(11);
    CharGPT model(ModelConfig{.vocab_size = 23, .context = 16, .d_model = 32, .heads = 4, .layers = 3,
                              .ffn_hidden = 64, .positions = "rotary", .dropout = 0.1f, .recompute = recompute});
    std::vector<int64_t> ids(2 * 17);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % 23);
    const qkv::IndexTensor in(std::vector<int64_t>(ids.begin(), ids.begin() + 32), {2, 16});
    const qkv::IndexTensor out(std::vector<int64_t>(ids.begin() + 2, ids.end()), {32});
    qkv::manual_seed(5);
    return qkv::testing::gradients_after(model.parameters(), [&] {
      qkv::nn::functional::cross_entropy(model.forward(in).reshape({32, 23}), out).backward();
    });
  };
  CHECK(gradients(false) == gradients(true));
}

TEST_CASE("with_context: the same weights read longer windows, and the first T positions as before; a learned table refuses") {
  const std::vector<int64_t> ids = {3, 7, 1, 9, 22, 4, 4, 15, 2, 8, 13, 5};
  for (const std::string positions :
       {"sinusoidal", "rotary", "alibi", "relative", "none", "learned-fourier", "random-fourier"}) {
    CAPTURE(positions);
    const std::shared_ptr<CharGPT> model = tiny_gpt(positions, 12);
    model->eval();
    const std::shared_ptr<CharGPT> longer = with_context(*model, 48);
    CHECK(longer->config.context == 48);
    CHECK_FALSE(longer->is_training());
    qkv::NoGradGuard no_grad;
    const qkv::Tensor short_logits = model->forward(qkv::IndexTensor(ids, {1, 12}));
    const qkv::Tensor long_logits = longer->forward(qkv::IndexTensor(ids, {1, 12}));
    CHECK((short_logits - long_logits).abs().max().item() == 0.0f);
    std::vector<int64_t> many;
    for (int i = 0; i < 48; ++i) many.push_back(1 + (i * 5) % 22);
    CHECK(longer->forward(qkv::IndexTensor(many, {1, 48})).shape() == qkv::Shape{1, 48, 23});
    CHECK_THROWS_AS(model->forward(qkv::IndexTensor(many, {1, 48})), qkv::ShapeError);
  }
  const std::shared_ptr<CharGPT> learned = tiny_gpt("learned", 12);
  CHECK_THROWS_WITH_AS(with_context(*learned, 48),
                       "a context of 48 needs encoder.positions.encoding.weight of shape (48,32); the model's is "
                       "(12,32), one row per position it was trained at",
                       qkv::ValueError);
  CHECK_THROWS_AS(with_context(*learned, 6), qkv::ValueError);  // shorter too: the table's shape is the context's
}
