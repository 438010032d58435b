// The seq2seq example: its date data, d2l's BLEU, the Bahdanau-attention model's masking and
// decoding, a short training run, and checkpoints.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "autograd/grad_mode.h"
#include "child_process.h"
#include "examples/seq2seq/bleu.h"
#include "examples/seq2seq/dates.h"
#include "examples/seq2seq/model.h"
#include "examples/common/config.h"
#include "examples/seq2seq/training.h"
#include "model_io/checkpoint.h"
#include "optim/adam.h"
#include "tensor/error.h"
#include "tensor/random.h"
#include "tensor/threads.h"

using namespace seq2seq;
using qkv::data::Date;
using qkv::data::format_date;
using qkv::data::generate_data;
using qkv::data::generate_pairs;
using qkv::data::iso_date;
using qkv::data::kNumFormats;
using qkv::data::valid_date;
using qkv::data::weekday;

namespace {

const std::unique_ptr<Task> kDatesTask = make_task("dates");

std::vector<Pair> as_pairs(const std::vector<DatePair>& dates) {
  std::vector<Pair> out;
  for (const DatePair& d : dates) out.push_back({d.source, {d.target}});
  return out;
}

std::vector<Example> encode_dates(const std::vector<DatePair>& dates) { return encode_pairs(as_pairs(dates), *kDatesTask); }

// The longest output the dates' decoding allows.
const int64_t kMaxOutputLen = kDatesTask->max_output_len(0);

ModelConfig small_config() {
  return {.source_vocab = source_vocab().size(),
          .target_vocab = target_vocab().size(),
          .embed_size = 16,
          .num_hiddens = 32,
          .num_layers = 2,
          .dropout = 0.0f};
}

// Runs the enclosed code on one thread and restores the count. Results do not depend on it; the
// model's products are so small (B 32, H 32) that a second thread buys nothing, and under ctest -j
// on a busy machine a team of two waits at every one of the thousands of barriers of a run.
struct OneThread {
  int saved = qkv::get_num_threads();
  OneThread() { qkv::set_num_threads(1); }
  ~OneThread() { qkv::set_num_threads(saved); }
};

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("qkv_test_" + std::to_string(getpid()) + "_" + name);
}

}  // namespace

// ---- data ---------------------------------------------------------------------------------------

TEST_CASE("seq2seq generate_pairs is a function of the seed") {
  const auto a = generate_pairs(300, 5), b = generate_pairs(300, 5), c = generate_pairs(300, 6);
  CHECK(a == b);
  CHECK(a != c);
  // A longer run starts with the shorter one, and the splits are that stream cut in order.
  const auto longer = generate_pairs(400, 5);
  CHECK(std::vector<DatePair>(longer.begin(), longer.begin() + 300) == a);
  const DateData data = generate_data(5, {.train = 200, .dev = 50, .test = 50});
  CHECK(data.train == std::vector<DatePair>(a.begin(), a.begin() + 200));
  CHECK(data.dev == std::vector<DatePair>(a.begin() + 200, a.begin() + 250));
  CHECK(data.test == std::vector<DatePair>(a.begin() + 250, a.end()));
}

TEST_CASE("seq2seq default data has distinct sources and covers every format and both centuries") {
  const DateData data = generate_data(0);
  CHECK(data.train.size() == 8000);
  CHECK(data.dev.size() == 500);
  CHECK(data.test.size() == 1000);
  std::set<std::string> sources;
  int64_t longest = 0, slashes = 0, weekdays = 0, spelled_years = 0, before_2000 = 0;
  for (const auto* split : {&data.train, &data.dev, &data.test})
    for (const DatePair& p : *split) {
      sources.insert(p.source);
      longest = std::max<int64_t>(longest, static_cast<int64_t>(p.source.size()));
      REQUIRE(p.target.size() == 10);
      const Date d{std::stoi(p.target.substr(0, 4)), std::stoi(p.target.substr(5, 2)),
                   std::stoi(p.target.substr(8, 2))};
      CHECK(valid_date(d));
      CHECK(iso_date(d) == p.target);
      slashes += p.source.find('/') != std::string::npos;
      weekdays += p.source.find("day,") != std::string::npos;
      spelled_years += p.source.find("nineteen ") != std::string::npos ||
                       p.source.find("twenty ") != std::string::npos ||
                       p.source.find("two thousand") != std::string::npos;
      before_2000 += p.target < "2000";
    }
  CHECK(sources.size() == 9500);  // no source in two splits, none twice in one
  CHECK(longest <= kMaxSourceChars);
  CHECK(slashes > 9500 / 16);  // each of the 8 formats about 1/8 of the pairs
  CHECK(weekdays > 9500 / 16);
  CHECK(spelled_years > 9500 / 8);
  CHECK(before_2000 > 9500 / 3);
  CHECK(before_2000 < 9500 * 2 / 3);
}

TEST_CASE("seq2seq format_date spells one date in every format") {
  const Date d{2026, 11, 23};  // a monday
  CHECK(weekday(d) == 0);
  CHECK(format_date(d, 0) == "twenty-third of november 2026");
  CHECK(format_date(d, 1) == "the twenty-third of november, twenty twenty-six");
  CHECK(format_date(d, 1, 1) == "the twenty-third of november, two thousand and twenty-six");
  CHECK(format_date(d, 1, 2) == "the twenty-third of november, two thousand twenty-six");
  CHECK(format_date(d, 2) == "november twenty-third, 2026");
  CHECK(format_date(d, 3) == "november 23, 2026");
  CHECK(format_date(d, 4) == "23 nov 2026");
  CHECK(format_date(d, 5) == "monday, november 23, 2026");
  CHECK(format_date(d, 6) == "11/23/2026");
  CHECK(format_date(d, 7) == "november twenty-third twenty twenty-six");
  CHECK(format_date({1905, 3, 1}, 7) == "march first nineteen oh five");
  CHECK(format_date({1900, 1, 30}, 7) == "january thirtieth nineteen hundred");
  CHECK(format_date({2000, 2, 29}, 7) == "february twenty-ninth two thousand");
  CHECK(format_date({2006, 7, 12}, 7, 0) == "july twelfth two thousand and six");
  CHECK(format_date({2006, 7, 12}, 7, 1) == "july twelfth two thousand six");
  CHECK(format_date({1969, 7, 20}, 5) == "sunday, july 20, 1969");
  CHECK(iso_date({1905, 3, 1}) == "1905-03-01");
  CHECK_THROWS_AS(format_date({2023, 2, 29}, 0), qkv::ValueError);  // not a leap year
  CHECK_THROWS_AS(format_date({2024, 4, 31}, 0), qkv::ValueError);
  CHECK_THROWS_AS(format_date(d, kNumFormats), qkv::ValueError);
}

TEST_CASE("seq2seq encode_source rejects bad input with the reason") {
  const qkv::data::Vocab v = source_vocab();
  CHECK(v.size() == 4 + 40);
  CHECK(v.token(3) == kEos);
  CHECK(encode_source(v, "May 1, 2020") == encode_source(v, "may 1, 2020"));
  CHECK(encode_source(v, "ab").size() == 3);
  CHECK(encode_source(v, "ab").back() == v.id(kEos));
  CHECK_THROWS_WITH_AS(encode_source(v, ""), "encode_source: the text is empty", qkv::ValueError);
  CHECK_THROWS_AS(encode_source(v, std::string(kMaxSourceChars + 1, 'a')), qkv::ValueError);
  CHECK_NOTHROW(encode_source(v, std::string(kMaxSourceChars, 'a')));
  try {
    encode_source(v, "may 1st!");
    FAIL("no error");
  } catch (const qkv::ValueError& e) {
    CHECK(std::string(e.what()).find("'!' at position 7") != std::string::npos);
  }
  CHECK_THROWS_AS(encode_source(v,
                                "1 d\xc3\xa9"
                                "cembre 2020"),
                  qkv::ValueError);
  const qkv::data::Vocab t = target_vocab();
  CHECK_THROWS_AS(encode_target(t, "2020/01/01"), qkv::ValueError);
  // Decoding stops at the first <eos> and drops other reserved tokens.
  std::vector<int64_t> ids = encode_target(t, "2020-01-01");
  ids.insert(ids.begin(), t.id(kBos));
  ids.push_back(t.id("7"));
  CHECK(decode_ids(t, ids) == "2020-01-01");
}

// ---- BLEU ---------------------------------------------------------------------------------------

TEST_CASE("seq2seq bleu equals values computed by hand") {
  // Identical: no brevity penalty, every precision 1.
  CHECK(bleu_chars("2021-03-03", "2021-03-03", 2) == doctest::Approx(1.0));
  // "2021-03-30" against "2021-03-03", k = 2. Same length: penalty exp(min(0, 1 - 10/10)) = 1.
  // Unigrams: both hold 2×'2', 3×'0', 1×'1', 2×'-', 2×'3', so p1 = 10/10.
  // Bigrams of the reference: 20 02 21 1- -0 03 3- -0 03; of the prediction: 20 02 21 1- -0 03 3- -3 30,
  // of which the first 7 are matched and -3, 30 are not: p2 = 7/9.
  // BLEU = 1^(1/2) · (7/9)^(1/4) = 0.939104.
  CHECK(bleu_chars("2021-03-30", "2021-03-03", 2) == doctest::Approx(0.9391044157537525));
  // "abcd" against "abce": p1 = 3/4 (a, b, c), p2 = 2/3 (ab, bc of ab bc cd):
  // (3/4)^(1/2) · (2/3)^(1/4) = 0.866025 · 0.903602 = 0.782542.
  CHECK(bleu_chars("abcd", "abce", 2) == doctest::Approx(0.7825422900366436));
  // Clipping: "aaaa" against "ab" matches 'a' once, p1 = 1/4; a longer prediction is not
  // penalized, exp(min(0, 1 - 2/4)) = 1: BLEU = (1/4)^(1/2) = 0.5 for k = 1, and 0 for k = 2 (no
  // bigram aa in the reference).
  CHECK(bleu_chars("aaaa", "ab", 1) == doctest::Approx(0.5));
  CHECK(bleu_chars("aaaa", "ab", 2) == 0.0);
  // Brevity: "ab" against "abcd" has p1 = p2 = 1 and penalty exp(1 - 4/2) = e^-1.
  CHECK(bleu_chars("ab", "abcd", 2) == doctest::Approx(std::exp(-1.0)));
  // Tokens are what the caller passes: the words of d2l's example "va !" against "va !".
  CHECK(bleu({"va", "!"}, {"va", "!"}, 2) == doctest::Approx(1.0));
  // Where d2l divides by zero: no n-gram in the prediction scores 0.
  CHECK(bleu_chars("", "abc", 2) == 0.0);
  CHECK(bleu_chars("a", "abc", 2) == 0.0);
  CHECK_THROWS_AS(bleu_chars("a", "a", 0), qkv::ValueError);
}

// ---- model --------------------------------------------------------------------------------------

TEST_CASE("seq2seq batches pair teacher-forced inputs with padded targets") {
  const auto pairs = generate_pairs(100, 3);
  const auto examples = encode_dates(pairs);
  const qkv::data::Vocab t = target_vocab();
  const auto batches = make_batches(examples, 16, 1, t.pad_id(), t.id(kBos));
  CHECK(batches.size() == 7);  // 6 of 16 and one of 4
  int64_t rows = 0;
  for (const Batch& b : batches) {
    const int64_t B = b.source.size(0), S = b.target.size(1);
    rows += B;
    CHECK(b.dec_input.shape() == b.target.shape());
    for (int64_t i = 0; i < B; ++i) {
      CHECK(b.dec_input.at({i, 0}) == t.id(kBos));
      CHECK(b.target.at({i, b.target_valid_lens[i] - 1}) == t.id(kEos));
      for (int64_t s = 1; s < b.target_valid_lens[i]; ++s)
        CHECK(b.dec_input.at({i, s}) == b.target.at({i, s - 1}));
      for (int64_t s = b.target_valid_lens[i]; s < S; ++s) CHECK(b.target.at({i, s}) == t.pad_id());
    }
  }
  CHECK(rows == 100);
}

TEST_CASE(
    "seq2seq attention weights of each step sum to one over valid source tokens and are zero past them") {
  qkv::manual_seed(1);
  Seq2Seq model(small_config());
  model.eval();
  const std::vector<int64_t> lens = {2, 5, 7};
  std::vector<std::vector<int64_t>> sources;
  for (const int64_t n : lens) sources.emplace_back(n, 10);
  const PaddedBatch src = pad_batch(sources, 0);
  const IndexTensor dec_input({2, 5, 6, 7, 2, 5, 6, 7, 2, 5, 6, 7}, {3, 4});
  const Tensor logits = model.forward(src.ids, src.valid_lens, dec_input);
  CHECK(logits.shape() == qkv::Shape{3, 4, small_config().target_vocab});
  REQUIRE(model.decoder->attention_weights.size() == 4);
  for (const Tensor& w : model.decoder->attention_weights) {
    REQUIRE(w.shape() == qkv::Shape{3, 1, 7});
    for (int64_t b = 0; b < 3; ++b) {
      float sum = 0;
      for (int64_t k = 0; k < 7; ++k) {
        const float a = w.at({b, 0, k});
        if (k < lens[b]) {
          CHECK(a > 0.0f);
          sum += a;
        } else {
          CHECK(a == 0.0f);
        }
      }
      CHECK(sum == doctest::Approx(1.0f).epsilon(1e-5));
    }
  }
}

TEST_CASE("seq2seq decoding stops at eos and at the maximum length, greedy and with a beam, for both models") {
  for (const std::string kind : {"gru", "transformer"}) {
    CAPTURE(kind);
    qkv::manual_seed(2);
    ModelConfig c = small_config();
    c.kind = kind;
    const std::unique_ptr<Translator> model = make_translator(c);
    const qkv::data::Vocab s = source_vocab(), t = target_vocab();
    const std::vector<std::vector<int64_t>> sources = {encode_source(s, "may 1, 2020"),
                                                       encode_source(s, "11/23/2026")};
    // The output layer then always predicts `token`.
    qkv::nn::Linear& dense = kind == "gru" ? *dynamic_cast<Seq2Seq&>(*model).decoder->dense
                                           : *dynamic_cast<TransformerSeq2Seq&>(*model).transformer->decoder->dense;
    auto force = [&](const std::string& token) {
      qkv::NoGradGuard no_grad;
      dense.weight.zero_();
      dense.bias.zero_();
      dense.bias.data()[t.id(token)] = 10.0f;
    };
    DecodeOptions o = decode_options(*kDatesTask, 0);
    o.max_len = 12;
    force(kEos);
    for (const auto& n_best : translate(*model, sources, o)) CHECK(n_best[0].ids == std::vector<int64_t>{t.id(kEos)});
    force("7");
    for (const int64_t beam : {1, 3}) {
      o.beam = beam;
      const auto out = translate(*model, sources, o);
      for (size_t i = 0; i < out.size(); ++i) CHECK(out[i][0].ids == std::vector<int64_t>(12, t.id("7")));
    }
    // The attention with which the output was made: a row per output step, over the valid source.
    for (const AttentionMap& map : attention_of(*model, sources[1], std::vector<int64_t>(12, t.id("7")), t.id(kBos)))
      CHECK(map.weights.shape() == qkv::Shape{12, static_cast<int64_t>(sources[1].size())});
    CHECK(model->is_training());  // decoding ran in eval mode and restored the mode
    o.max_len = 0;
    CHECK_THROWS_AS(translate(*model, sources, o), qkv::ValueError);
    CHECK_THROWS_AS(translate(*model, {}, decode_options(*kDatesTask, 0)), qkv::ValueError);
  }
}

TEST_CASE("seq2seq beam search of width 1 gives greedy search's outputs, and a wider beam ranks its n-best") {
  // (A wider beam need not beat greedy: the greedy prefix can be pruned for prefixes that end
  // worse. tests/nn/test_decoding.cpp checks that a wide enough beam finds the exact best.)
  for (const std::string kind : {"gru", "transformer"}) {
    CAPTURE(kind);
    qkv::manual_seed(4);
    ModelConfig c = small_config();
    c.kind = kind;
    const std::unique_ptr<Translator> model = make_translator(c);
    const qkv::data::Vocab s = source_vocab();
    std::vector<std::vector<int64_t>> sources;
    for (const DatePair& p : generate_pairs(12, 5)) sources.push_back(encode_source(s, p.source));
    model->eval();  // as translate runs it
    const auto greedy = translate(*model, sources, decode_options(*kDatesTask, 0, 1));
    const auto beam1 = qkv::nn::beam_search(model->start_decoding(pad_batch(sources, 0), kMaxOutputLen), 12,
                                            {.bos = decode_options(*kDatesTask, 0).bos, .eos = decode_options(*kDatesTask, 0).eos,
                                             .max_len = kMaxOutputLen, .beam_size = 1});
    const auto beam4 = translate(*model, sources, decode_options(*kDatesTask, 0, 4, 0, 4));
    for (size_t i = 0; i < sources.size(); ++i) {
      CHECK(beam1[i][0].ids == greedy[i][0].ids);
      REQUIRE(beam4[i].size() == 4);
      for (size_t j = 1; j < beam4[i].size(); ++j) {
        CHECK(beam4[i][j].score <= beam4[i][j - 1].score);
        CHECK(beam4[i][j].ids != beam4[i][j - 1].ids);
      }
    }
  }
}

TEST_CASE("seq2seq a short training run brings the loss below 1.0") {
  // 400 steps of batch 32 on 1000 pairs with a small model (E 16, H 32): the loss starts at
  // ln(15) = 2.7 (uniform over the target vocabulary) and falls below 1.0 — the model has learned
  // the output's shape and much of the copying. (Measured: 0.64 for the
  // mean of the last epoch, the 13th.)
  const OneThread one_thread;
  qkv::manual_seed(0);
  Seq2Seq model(small_config());
  qkv::optim::Adam optimizer(model.parameters(), {.lr = 5e-3});
  qkv::examples::TrainStep step(model, optimizer, {.clip = 1.0});
  const auto examples = encode_dates(generate_pairs(1000, 7));
  const qkv::data::Vocab t = target_vocab();
  double first = 0, last_epoch = 0;
  int64_t k = 0;
  for (uint64_t epoch = 0; k < 400; ++epoch) {
    const auto batches = make_batches(examples, 32, epoch, t.pad_id(), t.id(kBos));
    double sum = 0;
    for (const Batch& b : batches) {
      const double loss = train_step(step, model, b, examples, k).loss;
      if (k++ == 0) first = loss;
      sum += loss;
    }
    last_epoch = sum / static_cast<double>(batches.size());
  }
  INFO("first loss " << first << ", mean loss of the last epoch " << last_epoch);
  CHECK(first > 2.4);
  CHECK(last_epoch < 1.0);
}

namespace {

// A checkpoint's config text for a model of `m`, as a run's checkpoint holds it, with `key` of its
// config set to `value` when given.
std::string checkpoint_text(const ModelConfig& m, const std::string& key = "", int64_t value = 0) {
  Config c;
  c.model = m;
  qkv::io::Json json = qkv::examples::to_json(c);
  for (auto& [k, v] : json.as_object())
    if (k == key) v = qkv::io::Json(value);
  return qkv::examples::RunState{json, qkv::io::Json(qkv::io::Json::Array{}), 0, {}}.text();
}

}  // namespace

TEST_CASE("seq2seq a checkpoint gives back the same translations") {
  const OneThread one_thread;
  qkv::manual_seed(3);
  Seq2Seq model(small_config());
  qkv::optim::Adam optimizer(model.parameters(), {.lr = 5e-3});
  qkv::examples::TrainStep step(model, optimizer, {.clip = 1.0});
  const qkv::data::Vocab t = target_vocab();
  const auto examples = encode_dates(generate_pairs(64, 9));
  for (const Batch& b : make_batches(examples, 32, 0, t.pad_id(), t.id(kBos))) train_step(step, model, b, examples, 0);
  const auto pairs = generate_pairs(20, 11);
  const Evaluation before = evaluate(model, *kDatesTask, as_pairs(pairs));

  const std::filesystem::path path = temp_path("seq2seq.safetensors");
  qkv::io::save_checkpoint(path, model, optimizer, 2, checkpoint_text(model.config));
  const std::unique_ptr<Translator> loaded = load_model(path).model;
  CHECK(loaded->config.num_hiddens == 32);
  CHECK(loaded->config.embed_size == 16);
  const Evaluation after = evaluate(*loaded, *kDatesTask, as_pairs(pairs));
  CHECK(after.predictions == before.predictions);
  CHECK(after.outputs == before.outputs);

  // A file that is not a checkpoint, and a checkpoint of another model, are refused.
  const std::filesystem::path junk = temp_path("junk.safetensors");
  std::ofstream(junk) << "not a checkpoint";
  CHECK_THROWS_AS(load_model(junk), qkv::FormatError);
  CHECK_THROWS_AS(load_model(temp_path("missing.safetensors")), qkv::Error);
  qkv::io::save_checkpoint(path, model, optimizer, 2, "model=tagger\n");
  CHECK_THROWS_WITH_AS(load_model(path), doctest::Contains("is not a seq2seq checkpoint"), qkv::ValueError);
  std::filesystem::remove(path);
  std::filesystem::remove(junk);
}

TEST_CASE("seq2seq a Transformer's checkpoint gives back the same translations, with a beam") {
  const OneThread one_thread;
  qkv::manual_seed(5);
  ModelConfig c = small_config();
  c.kind = "transformer";
  c.ffn_num_hiddens = 48;
  const std::unique_ptr<Translator> model = make_translator(c);
  qkv::optim::Adam optimizer(model->parameters(), {.lr = 1e-3});
  qkv::examples::TrainStep step(*model, optimizer, {.clip = 1.0});
  const qkv::data::Vocab t = target_vocab();
  const auto examples = encode_dates(generate_pairs(64, 9));
  for (const Batch& b : make_batches(examples, 32, 0, t.pad_id(), t.id(kBos))) train_step(step, *model, b, examples, 0);
  const auto pairs = generate_pairs(20, 11);
  const Evaluation before = evaluate(*model, *kDatesTask, as_pairs(pairs), 3, 0.6);
  const std::filesystem::path path = temp_path("seq2seq_transformer.safetensors");
  qkv::io::save_checkpoint(path, *model, optimizer, 2, checkpoint_text(model->config));
  const std::unique_ptr<Translator> loaded = load_model(path).model;
  CHECK(loaded->config.kind == "transformer");
  CHECK(loaded->config.ffn_num_hiddens == 48);
  CHECK(evaluate(*loaded, *kDatesTask, as_pairs(pairs), 3, 0.6).outputs == before.outputs);
  std::filesystem::remove(path);
}

TEST_CASE("seq2seq refuses a checkpoint of an earlier qkv by name: its config was key=value lines") {
  Seq2Seq model(small_config());
  qkv::optim::Adam optimizer(model.parameters(), {.lr = 5e-3});
  const std::filesystem::path path = temp_path("old.safetensors");
  qkv::io::save_checkpoint(path, model, optimizer, 2,
                           "model=seq2seq-bahdanau\nsource_alphabet=x\nembed_size=16\nnum_hiddens=32\n");
  CHECK_THROWS_WITH_AS(load_model(path),
                       ("seq2seq checkpoint '" + path.string() +
                        "' was written by an earlier qkv, whose checkpoints kept their config as key=value lines: "
                        "train the model again (seq2seq train)")
                           .c_str(),
                       qkv::ValueError);
  std::filesystem::remove(path);
}

namespace {

// A checkpoint of an untrained small model whose config has `key` set to `value`.
std::filesystem::path edited_checkpoint(const std::string& name, const std::string& key, int64_t value) {
  Seq2Seq model(small_config());
  qkv::optim::Adam optimizer(model.parameters(), {.lr = 5e-3});
  const std::filesystem::path path = temp_path(name);
  qkv::io::save_checkpoint(path, model, optimizer, 0, checkpoint_text(model.config, key, value));
  return path;
}

}  // namespace

TEST_CASE("seq2seq predict refuses a checkpoint whose config asks for 10^8 layers or 10^9 hidden units") {
  // Before: 10^8 layers hung while the model was built, 10^9 hidden units threw std::bad_alloc.
  const auto layers = edited_checkpoint("layers.safetensors", "layers", 100000000);
  const qkv::testing::ChildResult r = qkv::testing::run_program(
      qkv::testing::kSeq2SeqProgram, {"predict", "--checkpoint", layers.string(), "one"});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "seq2seq checkpoint '" + layers.string() +
                        "': layers (--layers) is 100000000; expected 1 .. 16\n");
  const auto hidden = edited_checkpoint("hidden.safetensors", "hidden", 1000000000);
  CHECK_THROWS_WITH_AS(load_model(hidden), doctest::Contains("hidden (--hidden) is 1000000000; expected 1 .. 4096"),
                       qkv::ValueError);
  std::filesystem::remove(layers);
  std::filesystem::remove(hidden);
}

TEST_CASE("seq2seq load_model checks the config's sizes against the checkpoint's tensors before building") {
  const auto layers = edited_checkpoint("layers3.safetensors", "layers", 3);
  CHECK_THROWS_WITH_AS(load_model(layers),
                       ("seq2seq checkpoint '" + layers.string() +
                        "': its config says layers=3 but its tensors hold 2 encoder layers "
                        "(encoder.rnn.weight_ih_l0, ...)")
                           .c_str(),
                       qkv::FormatError);
  const auto hidden = edited_checkpoint("hidden64.safetensors", "hidden", 64);
  CHECK_THROWS_WITH_AS(load_model(hidden),
                       doctest::Contains("its config (embed=16, hidden=64, ffn=256) makes "
                                         "'encoder.rnn.weight_hh_l0' (192, 64) but the tensor is (96, 32)"),
                       qkv::FormatError);
  const auto embed = edited_checkpoint("embed8.safetensors", "embed", 8);
  CHECK_THROWS_WITH_AS(load_model(embed), doctest::Contains("makes 'encoder.embedding.weight' ("),
                       qkv::FormatError);
  for (const auto& p : {layers, hidden, embed}) std::filesystem::remove(p);
}

TEST_CASE("seq2seq train refuses sizes out of range before it does any work") {
  const qkv::testing::ChildResult r =
      qkv::testing::run_program(qkv::testing::kSeq2SeqProgram,
                                {"train", "--layers", "100000000", "--run", temp_path("never").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.errors == "seq2seq: layers (--layers) is 100000000; expected 1 .. 16\n");
  CHECK(r.output.empty());
  CHECK_FALSE(std::filesystem::exists(temp_path("never")));
}

TEST_CASE("seq2seq refuses an unknown task or model, a bad beam list and more n-best than beam, naming the option") {
  const auto refused = [](const std::vector<std::string>& args, const std::string& error) {
    CAPTURE(error);
    const qkv::testing::ChildResult r = qkv::testing::run_program(qkv::testing::kSeq2SeqProgram, args);
    CHECK(r.exit_code == 1);
    CHECK(r.errors == error);
    CHECK(r.output.empty());
  };
  const std::string never = temp_path("never").string();
  refused({"train", "--task", "french", "--run", never}, "seq2seq: task (--task) is 'french'; expected one of dates, cmudict\n");
  refused({"train", "--model", "lstm", "--run", never}, "seq2seq: model (--model) is 'lstm'; expected one of gru, transformer\n");
  refused({"train", "--model", "transformer", "--hidden", "30", "--heads", "4", "--run", never},
          "seq2seq: hidden (--hidden) is 30; the Transformer needs a multiple of heads (--heads), 4\n");
  refused({"train", "--schedule", "linear", "--run", never},
          "seq2seq: schedule (--schedule) is 'linear'; expected one of constant, cosine\n");
  CHECK_FALSE(std::filesystem::exists(never));
  refused({"figures", "--run", never}, "seq2seq: " + never + " (--run) holds no seq2seq run (no last.safetensors)\n");
}

TEST_CASE("the seq2seq checkpoint config is strict: each key once, none unknown, each of its kind") {
  const std::string good = checkpoint_text(small_config());
  const std::filesystem::path path = temp_path("strict.safetensors");
  auto refused = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), to);
    Seq2Seq model(small_config());
    qkv::optim::Adam optimizer(model.parameters(), {.lr = 5e-3});
    qkv::io::save_checkpoint(path, model, optimizer, 0, text);
    std::string message;
    try {
      load_model(path);
    } catch (const qkv::Error& e) {
      message = e.what();
    }
    return message;
  };
  CHECK(refused("\"seed\":", "\"colour\": 1, \"seed\":").find("unknown key 'colour' (is this a seq2seq run?)") !=
        std::string::npos);
  CHECK(refused("\"seed\":", "\"epochs\": 3, \"seed\":").find("duplicate key 'epochs'") != std::string::npos);
  CHECK(refused("\"hidden\":", "\"hidden\": \"32\", \"x\":").find("key 'hidden': expected an integer") !=
        std::string::npos);
  CHECK(refused("\"dropout\":", "\"dropout\": true, \"y\":").find("key 'dropout': expected a number") !=
        std::string::npos);
  std::filesystem::remove(path);
}
