// The language model's baselines (examples/lm/baselines.h): the unigram and Kneser–Ney models
// checked against probabilities worked out by hand on tiny texts, and the compressor baseline.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>

#include "examples/lm/baselines.h"
#include "examples/lm/train.h"
#include "io/json.h"
#include "tensor/error.h"

using lm::Ids;
using lm::KneserNey;

namespace {

// The pattern 1 2 3 1 2 4 over and over, cut into pieces of `length`: after "1 2" comes 3 or 4,
// which only a context of three ids ("3 1 2" or "4 1 2") tells apart.
Ids repetitive(int pieces, int length, int offset) {
  const int32_t pattern[] = {1, 2, 3, 1, 2, 4};
  Ids text;
  for (int p = 0; p < pieces; ++p) {
    std::vector<int32_t>& piece = text.emplace_back();
    for (int i = 0; i < length; ++i) piece.push_back(pattern[(offset + p * 5 + i) % 6]);
  }
  return text;
}

double sum_over_next(const KneserNey& model, const std::vector<int32_t>& context, int64_t V) {
  double sum = 0;
  for (int32_t next = 0; next < V; ++next) sum += model.probability(context, next);
  return sum;
}

// Letters a..z drawn at random from `seed`.
std::string random_letters(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string text;
  for (size_t i = 0; i < n; ++i) text.push_back(static_cast<char>('a' + rng() % 26));
  return text;
}

}  // namespace

TEST_CASE("unigram_bits is add-one smoothing over all V ids") {
  // Counts 0, 3, 1 of ids 0, 1, 2 in 4 characters: p = (c + 1) / (4 + 3) = 1/7, 4/7, 2/7.
  const Ids train = {{1, 1, 1, 2}};
  // −(log2 4/7 + log2 2/7) / 2 = log2 7 − 3/2
  CHECK(lm::unigram_bits(train, {{1, 2}}, 3) == doctest::Approx(std::log2(7.0) - 1.5));
  CHECK(lm::unigram_bits(train, {{1}, {2}}, 3) == doctest::Approx(std::log2(7.0) - 1.5));
  CHECK(lm::unigram_bits(train, {{0}}, 3) == doctest::Approx(std::log2(7.0)));  // the unknown id
}

TEST_CASE("Kneser-Ney of order 1 is the unigram interpolated with the uniform distribution") {
  // Raw counts 2, 2, 1, 1 of ids 1..4 in N = 6 characters: n1 = 2, n2 = 2, so D = 2 / (2 + 4) = 1/3.
  // P(w) = max(c(w) − D, 0) / N + D · N1+(•) / N · 1/V with N1+(•) = 4 ids seen and V = 5:
  // the uniform part is (1/3)(4/6)(1/5) = 4/90, so P(1) = (5/3)/6 + 4/90 = 29/90,
  // P(3) = (2/3)/6 + 4/90 = 14/90 and P(0) = 4/90 (never seen).
  const KneserNey model({{1, 1, 2, 2, 3, 4}}, 5, 1);
  CHECK(model.order() == 1);
  CHECK(model.probability({}, 1) == doctest::Approx(29.0 / 90));
  CHECK(model.probability({}, 2) == doctest::Approx(29.0 / 90));
  CHECK(model.probability({}, 3) == doctest::Approx(14.0 / 90));
  CHECK(model.probability({2, 3}, 4) == doctest::Approx(14.0 / 90));  // order 1 reads no context
  CHECK(model.probability({}, 0) == doctest::Approx(4.0 / 90));
  CHECK(model.bits({{1, 0}}) == doctest::Approx(-(std::log2(29.0 / 90) + std::log2(4.0 / 90)) / 2));
}

TEST_CASE("Kneser-Ney of order 2 by hand") {
  // Train 1 2 1 2 1 3, V = 4.
  // Order 2, raw counts: c(12) = 2, c(21) = 2, c(13) = 1: n1 = 1, n2 = 2, D2 = 1 / (1 + 4) = 1/5.
  // Order 1, continuation counts N1+(•w): 1 follows 2 and starts the piece (2), 2 follows 1 (1),
  // 3 follows 1 (1): n1 = 2, n2 = 1, D1 = 1/2, total 4, 3 ids seen:
  //   P1(w) = max(N1+(•w) − 1/2, 0) / 4 + (1/2)(3/4)(1/4): P1(1) = 15/32, P1(2) = P1(3) = 7/32,
  //   P1(0) = 3/32.
  const KneserNey model({{1, 2, 1, 2, 1, 3}}, 4, 2);
  // After 1: c(1•) = 3 with 2 followers, so the lower order gets (1/5)(2/3) = 2/15 of P1.
  //   P(2 | 1) = (2 − 1/5)/3 + (2/15)(7/32) = 3/5 + 7/240 = 151/240
  CHECK(model.probability({1}, 2) == doctest::Approx(151.0 / 240));
  CHECK(model.probability({1}, 3) == doctest::Approx(71.0 / 240));      // (4/5)/3 + 7/240
  CHECK(model.probability({1}, 1) == doctest::Approx(15.0 / 240));      // (2/15)(15/32)
  CHECK(model.probability({1}, 0) == doctest::Approx(3.0 / 240));       // (2/15)(3/32)
  CHECK(model.probability({3, 1}, 2) == doctest::Approx(151.0 / 240));  // only the last id counts
  // After 2: c(2•) = 2, one follower. P(1 | 2) = (2 − 1/5)/2 + (1/5)(1/2)(15/32) = 303/320
  CHECK(model.probability({2}, 1) == doctest::Approx(303.0 / 320));
  // 3 is never followed by anything and 0 never seen: the continuation unigram alone.
  CHECK(model.probability({3}, 1) == doctest::Approx(15.0 / 32));
  CHECK(model.probability({0}, 2) == doctest::Approx(7.0 / 32));
  // At the start of a piece the context is empty: the model of order 1, with raw counts 3, 2, 1
  // (n1 = 1, n2 = 1, D = 1/3): P(1) = (3 − 1/3)/6 + (1/3)(3/6)(1/4) = 35/72.
  CHECK(model.probability({}, 1) == doctest::Approx(35.0 / 72));
  CHECK(model.bits({{1, 2}}) == doctest::Approx(-(std::log2(35.0 / 72) + std::log2(151.0 / 240)) / 2));
}

TEST_CASE("Kneser-Ney probabilities sum to 1 over the next id") {
  // Id 5 never occurs, id 0 is the unknown symbol.
  const Ids train = {{1, 2, 3, 1, 2, 4, 1, 3, 3, 2}, {2, 2, 1, 4}, {3}};
  const std::vector<std::vector<int32_t>> contexts = {{},     {1},       {4},          {2, 3},
                                                      {5},    {0, 0},    {4, 4, 4},    {1, 2, 3},
                                                      {3, 2}, {2, 1, 4}, {3, 2, 1, 2}, {1, 2, 4, 1, 3}};
  for (int order = 1; order <= 4; ++order) {
    const KneserNey model(train, 6, order);
    for (const std::vector<int32_t>& context : contexts) {
      CAPTURE(order);
      CAPTURE(context.size());
      CHECK(sum_over_next(model, context, 6) == doctest::Approx(1.0).epsilon(1e-12));
      for (int32_t next = 0; next < 6; ++next) CHECK(model.probability(context, next) > 0);
    }
  }
}

TEST_CASE("Kneser-Ney takes the longest order whose key fits 64 bits") {
  // 84 ids take 7 bits each: 9 ids fit (63 bits), 10 do not.
  std::vector<int32_t> counting;
  for (int i = 0; i < 30; ++i)
    counting.push_back(1 + i % 11 + (i % 11 == 10 ? 72 : 0));  // 1..10 83 1..10 83 ..
  const KneserNey nine({counting}, 84, 9);
  CHECK(sum_over_next(nine, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 84) == doctest::Approx(1.0));
  CHECK(nine.probability({2, 3, 4, 5, 6, 7, 8, 9}, 10) > 0.5);
  // 2 ids take 1 bit each: an order of 64.
  const KneserNey binary({std::vector<int32_t>(100, 1)}, 2, 64);
  CHECK(sum_over_next(binary, std::vector<int32_t>(70, 1), 2) == doctest::Approx(1.0));
}

TEST_CASE("Kneser-Ney of a higher order wins on a repetitive text") {
  const Ids train = repetitive(20, 60, 0);
  const Ids validation = repetitive(4, 40, 3);
  const double unigram = KneserNey(train, 5, 1).bits(validation);
  const double bigram = KneserNey(train, 5, 2).bits(validation);
  const double fourgram = KneserNey(train, 5, 4).bits(validation);
  CHECK(unigram > 1.8);  // ids 1 and 2 a third of the time each, 3 and 4 a sixth
  CHECK(bigram < unigram);
  CHECK(fourgram < bigram);
  CHECK(fourgram < 0.5);

  const lm::NgramChoice choice = lm::best_kneser_ney_order(train, validation, 5, 6);
  CHECK(choice.order > 2);
  REQUIRE(choice.by_order.size() == 6);
  CHECK(choice.validation_bits == choice.by_order[choice.order - 1]);
  for (int order = 1; order <= 6; ++order) {
    CAPTURE(order);
    // Counted once for order 6, each order is the model of that order counted on its own.
    CHECK(choice.by_order[order - 1] == doctest::Approx(KneserNey(train, 5, order).bits(validation)));
    CHECK(choice.by_order[order - 1] >= choice.validation_bits);
  }
}

TEST_CASE("The unknown id costs finitely many bits") {
  const Ids train = repetitive(5, 30, 0);
  const Ids test = {{1, 2, 0, 1, 2, 3}, {0}};
  for (int order = 1; order <= 4; ++order) {
    const double bits = KneserNey(train, 5, order).bits(test);
    CAPTURE(order);
    CHECK(std::isfinite(bits));
    CHECK(bits > 0);
  }
  CHECK(std::isfinite(lm::unigram_bits(train, test, 5)));
}

TEST_CASE("The baselines refuse bad arguments") {
  const Ids train = {{1, 2, 3}};
  CHECK_THROWS_WITH_AS(lm::unigram_bits(train, {{1, -1}}, 5),
                       "unigram_bits: text has id -1 (piece 0, position 1); expected ids in [0, 5)",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(lm::unigram_bits(train, {{}}, 5),
                       "unigram_bits: text has no characters; expected at least one", qkv::ValueError);
  CHECK_THROWS_WITH_AS(KneserNey(train, 0, 2), "KneserNey: vocabulary size 0; expected 1 to 2147483647 ids",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(KneserNey(train, 5, 0), "KneserNey: order 0; expected at least 1", qkv::ValueError);
  CHECK_THROWS_WITH_AS(
      KneserNey(train, 84, 10),
      "KneserNey: order 10 does not fit a 64-bit n-gram key (7 bits per id for 84 ids, 70 bits); "
      "expected order at most 9",
      qkv::ValueError);
  CHECK_THROWS_WITH_AS(KneserNey({{1}, {2, 7}}, 5, 2),
                       "KneserNey: train has id 7 (piece 1, position 1); expected ids in [0, 5)",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(KneserNey({{}, {}}, 5, 2), "KneserNey: train has no characters; expected at least one",
                       qkv::ValueError);
  const KneserNey model(train, 5, 2);
  CHECK_THROWS_WITH_AS(model.bits({}), "KneserNey::bits: text has no characters; expected at least one",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(model.probability({1}, 5),
                       "KneserNey::probability: next id 5; expected an id in [0, 5)", qkv::ValueError);
  CHECK_THROWS_WITH_AS(lm::best_kneser_ney_order(train, train, 5, 0),
                       "best_kneser_ney_order: order 0; expected at least 1", qkv::ValueError);
  CHECK_THROWS_WITH_AS(
      lm::best_kneser_ney_order(train, {{9}}, 5, 2),
      "best_kneser_ney_order: validation has id 9 (piece 0, position 0); expected ids in [0, 5)",
      qkv::ValueError);
  CHECK_THROWS_WITH_AS(lm::compressor_bits({}, "a", "b", 1), doctest::Contains("the command is empty"),
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(lm::compressor_bits({"xz"}, "a", "", 0),
                       "compressor_bits: test has 0 characters; expected at least one", qkv::ValueError);
}

TEST_CASE("compressor_bits: a test the compressor has seen in train costs fewer bits") {
  // -9e gives the same comparison more slowly on a busy machine.
  const std::vector<std::string> xz = {"xz", "-1", "-c"};
  const std::string block = random_letters(2000, 1);
  std::string train;
  for (int i = 0; i < 5; ++i) train += block;
  const lm::CompressorBits seen = lm::compressor_bits(xz, train, block.substr(300, 1000), 1000);
  if (!seen.bits) {
    MESSAGE("xz is not installed: compressor_bits not checked");
    return;
  }
  const lm::CompressorBits unseen = lm::compressor_bits(xz, train, random_letters(1000, 2), 1000);
  REQUIRE(unseen.bits.has_value());
  CHECK(*seen.bits < 0.5);
  CHECK(*unseen.bits > 4.0);  // log2 26 = 4.7 bits a letter, less what the coder can squeeze out
}

TEST_CASE("compressor_bits gives no rate, and says why, where train and test compress smaller than train") {
  // bzip2's run-length stage packs 2,030 repeats of a pattern into fewer bytes than 2,000 (libbz2
  // 1.0.8: 63 bytes against 67), so the test would cost -4 bytes: no rate of anything.
  std::string train, test;
  for (int i = 0; i < 2000; ++i) train += "abcdefghij";
  for (int i = 0; i < 30; ++i) test += "abcdefghij";
  const lm::CompressorBits c = lm::compressor_bits({"bzip2", "-9", "-c"}, train, test, 300);
  if (c.none == "not installed") {
    MESSAGE("bzip2 is not installed: not checked");
    return;
  }
  CHECK_FALSE(c.bits.has_value());
  CHECK(c.none == "no rate: train and test compress to 63 bytes, train alone to 67");
  // baselines.json keeps the reason, and an earlier file's negative rate reads as none.
  lm::BaselineBits b;
  b.bzip2 = c;
  b.xz = {0.5, ""};
  const lm::BaselineBits back = lm::BaselineBits::from_json(b.to_json(), "baselines.json");
  CHECK(back.bzip2.none == c.none);
  CHECK(back.xz.bits == 0.5);
  const qkv::io::Json old = qkv::io::parse_json(R"({"unigram": 4, "ngram_order": 3, "ngram": 2, "bzip2": -0.175, "xz": null})");
  const lm::BaselineBits earlier = lm::BaselineBits::from_json(old, "baselines.json");
  CHECK_FALSE(earlier.bzip2.bits.has_value());
  CHECK(earlier.bzip2.none.starts_with("no rate"));
  CHECK(earlier.xz.none == "not installed");
  std::ostringstream printed;
  lm::print_baselines(printed, earlier);
  CHECK(printed.str().find("-0.175") == std::string::npos);
}

TEST_CASE("compressor_bits: a missing program, a failing one, and the temporary directory") {
  namespace fs = std::filesystem;
  // A temporary directory of our own (TMPDIR), to see that compressor_bits leaves nothing in it.
  std::string own = (fs::temp_directory_path() / "qkv-test-lm-XXXXXX").string();
  REQUIRE(mkdtemp(own.data()) != nullptr);
  const char* old = getenv("TMPDIR");
  const std::string saved = old == nullptr ? "" : old;
  setenv("TMPDIR", own.c_str(), 1);

  CHECK(lm::compressor_bits({"qkv-no-such-compressor"}, "a", "b", 1).none == "not installed");
  CHECK_THROWS_WITH_AS(lm::compressor_bits({"false"}, "train", "test", 4),
                       "compressor_bits: `false` failed (exit code 1) compressing train.txt",
                       qkv::ValueError);
  CHECK(fs::is_empty(own));

  if (old == nullptr)
    unsetenv("TMPDIR");
  else
    setenv("TMPDIR", saved.c_str(), 1);
  fs::remove_all(own);
}
