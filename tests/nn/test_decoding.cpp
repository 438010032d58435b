// nn/decoding.h: greedy and beam search on toy models small enough to enumerate. Beam search with
// a beam as wide as every prefix returns the exact best sequences; with width 1 it is greedy
// search; a batch of sources gives what each source gives alone; the length penalty ranks as its
// formula says; and bad options and logits are refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/decoding.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;

namespace {

constexpr int64_t kBos = 0, kEos = 1;

// A model whose next-token logits are a fixed pseudo-random function of the source and the prefix:
// its state is each row's source and tokens so far, which select_rows reorders.
struct ToyModel {
  int64_t V;
  std::vector<std::vector<int64_t>> rows;  // per row: the source, then the tokens so far
  int64_t steps = 0;

  ToyModel(int64_t vocab, int64_t sources) : V(vocab) {
    for (int64_t s = 0; s < sources; ++s) rows.push_back({s});
  }
  static float logit(const std::vector<int64_t>& row, int64_t v) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : row) h = (h ^ static_cast<uint64_t>(x + 7)) * 1099511628211ull;
    h = (h ^ static_cast<uint64_t>(v + 101)) * 1099511628211ull;
    return static_cast<float>((h >> 11) % 10007) / 2000.0f;  // 0 .. 5
  }
  nn::StepModel stepper() {
    return {[this](const std::vector<int64_t>& last) {
              REQUIRE(last.size() == rows.size());
              std::vector<float> out;
              for (size_t r = 0; r < rows.size(); ++r) {
                if (steps > 0 || last[r] != kBos) rows[r].push_back(last[r]);
                for (int64_t v = 0; v < V; ++v) out.push_back(logit(rows[r], v));
              }
              ++steps;
              return tensor(out, {static_cast<int64_t>(rows.size()), V});
            },
            [this](const std::vector<int64_t>& keep) {
              std::vector<std::vector<int64_t>> next;
              for (int64_t r : keep) next.push_back(rows[static_cast<size_t>(r)]);
              rows = std::move(next);
            }};
  }
};

// log p(token | source, prefix) under ToyModel, in double as the search computes it.
double log_prob(int64_t source, const std::vector<int64_t>& prefix, int64_t token, int64_t V) {
  std::vector<int64_t> row{source};
  row.insert(row.end(), prefix.begin(), prefix.end());
  std::vector<double> x;
  for (int64_t v = 0; v < V; ++v) x.push_back(ToyModel::logit(row, v));
  const double max = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (double v : x) sum += std::exp(v - max);
  return x[static_cast<size_t>(token)] - max - std::log(sum);
}

// Every output of at most max_len tokens (ending at the first <eos>, or cut at max_len), scored.
std::vector<nn::Hypothesis> enumerate(int64_t source, int64_t V, int64_t max_len, double alpha) {
  std::vector<nn::Hypothesis> all;
  std::function<void(std::vector<int64_t>&, double)> grow = [&](std::vector<int64_t>& ids, double lp) {
    for (int64_t v = 0; v < V; ++v) {
      const double next = lp + log_prob(source, ids, v, V);
      ids.push_back(v);
      if (v == kEos || static_cast<int64_t>(ids.size()) == max_len)
        all.push_back({ids, next, next / nn::length_penalty(static_cast<int64_t>(ids.size()), alpha)});
      else
        grow(ids, next);
      ids.pop_back();
    }
  };
  std::vector<int64_t> ids;
  grow(ids, 0.0);
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
  return all;
}

}  // namespace

TEST_CASE("beam search with a beam as wide as every prefix returns the exact n best outputs") {
  const int64_t V = 4, max_len = 5;
  for (const double alpha : {0.0, 0.6, 1.0}) {
    CAPTURE(alpha);
    ToyModel model(V, 3);
    const nn::SearchOptions o{.bos = kBos, .eos = kEos, .max_len = max_len, .beam_size = 400, .n_best = 5,
                              .length_penalty = alpha};
    const auto found = nn::beam_search(model.stepper(), 3, o);
    REQUIRE(found.size() == 3);
    for (int64_t s = 0; s < 3; ++s) {
      const std::vector<nn::Hypothesis> exact = enumerate(s, V, max_len, alpha);
      REQUIRE(found[s].size() == 5);
      for (size_t i = 0; i < 5; ++i) {
        CAPTURE(i);
        CHECK(found[s][i].ids == exact[i].ids);
        CHECK(found[s][i].score == doctest::Approx(exact[i].score).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("a narrow beam can miss the best output that an exact search finds, and never beats it") {
  const int64_t V = 6, max_len = 6;
  int64_t missed = 0;
  for (int64_t s = 0; s < 40; ++s) {
    ToyModel model(V, 1);
    // Each source alone, as source s: the toy model's rows start at source 0, so shift them.
    model.rows = {{s}};
    const auto found = nn::beam_search(model.stepper(), 1, {.bos = kBos, .eos = kEos, .max_len = max_len, .beam_size = 2});
    const double best = enumerate(s, V, max_len, 0.0)[0].score;
    CHECK(found[0][0].score <= best + 1e-12);
    missed += found[0][0].score < best - 1e-12;
  }
  CHECK(missed > 0);  // the search is approximate, as it should be at width 2 ...
  CHECK(missed < 40);  // ... and mostly right
}

TEST_CASE("beam search of width 1 is greedy search, token for token and score for score") {
  for (const double alpha : {0.0, 0.8}) {
    ToyModel a(7, 5), b(7, 5);
    const nn::SearchOptions o{.bos = kBos, .eos = kEos, .max_len = 9, .beam_size = 1, .length_penalty = alpha};
    const std::vector<nn::Hypothesis> greedy = nn::greedy_search(a.stepper(), 5, o);
    const auto beam = nn::beam_search(b.stepper(), 5, o);
    for (size_t s = 0; s < 5; ++s) {
      CAPTURE(s);
      CHECK(beam[s][0].ids == greedy[s].ids);
      CHECK(beam[s][0].log_prob == greedy[s].log_prob);
      CHECK(beam[s][0].score == greedy[s].score);
    }
  }
}

TEST_CASE("greedy search takes the likeliest token at each step and stops each source at <eos> or max_len") {
  ToyModel model(5, 4);
  const std::vector<nn::Hypothesis> out =
      nn::greedy_search(model.stepper(), 4, {.bos = kBos, .eos = kEos, .max_len = 6});
  for (int64_t s = 0; s < 4; ++s) {
    const std::vector<int64_t>& ids = out[s].ids;
    REQUIRE(!ids.empty());
    CHECK((ids.back() == kEos || ids.size() == 6));
    CHECK(std::count(ids.begin(), ids.end(), kEos) <= 1);
    double lp = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
      const std::vector<int64_t> prefix(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(t));
      for (int64_t v = 0; v < 5; ++v) CHECK(log_prob(s, prefix, v, 5) <= log_prob(s, prefix, ids[t], 5));
      lp += log_prob(s, prefix, ids[t], 5);
    }
    CHECK(out[s].log_prob == doctest::Approx(lp).epsilon(1e-12));
  }
}

TEST_CASE("a batch of sources gives each source what it gives alone, n-best sorted by score") {
  const nn::SearchOptions o{.bos = kBos, .eos = kEos, .max_len = 7, .beam_size = 3, .n_best = 3, .length_penalty = 0.6};
  ToyModel batch(6, 6);
  const auto together = nn::beam_search(batch.stepper(), 6, o);
  for (int64_t s = 0; s < 6; ++s) {
    ToyModel alone(6, 1);
    alone.rows = {{s}};
    const auto one = nn::beam_search(alone.stepper(), 1, o);
    REQUIRE(together[s].size() == one[0].size());
    for (size_t i = 0; i < one[0].size(); ++i) {
      CHECK(together[s][i].ids == one[0][i].ids);
      if (i > 0) CHECK(together[s][i].score <= together[s][i - 1].score);
    }
  }
}

TEST_CASE("the length penalty is Wu et al.'s ((5 + |y|) / 6)^alpha, and 1 at alpha 0") {
  CHECK(nn::length_penalty(7, 0.0) == 1.0);
  CHECK(nn::length_penalty(1, 1.0) == doctest::Approx(1.0));
  CHECK(nn::length_penalty(7, 0.5) == doctest::Approx(std::sqrt(2.0)));
}

TEST_CASE("the searches refuse bad options and logits, naming them") {
  ToyModel model(4, 2);
  const auto refuses = [&](nn::SearchOptions o, const std::string& what) {
    CAPTURE(what);
    CHECK_THROWS_WITH_AS(nn::beam_search(model.stepper(), 2, o), doctest::Contains(what.c_str()), ValueError);
  };
  refuses({.max_len = 0}, "max_len must be >= 1, got 0");
  refuses({.beam_size = 0}, "beam_size must be >= 1, got 0");
  refuses({.beam_size = 2, .n_best = 3}, "n_best must be in 1 .. beam_size (2), got 3");
  refuses({.length_penalty = -1}, "length_penalty must be finite and >= 0");
  refuses({.bos = -1}, "bos and eos must be ids >= 0");
  CHECK_THROWS_WITH_AS(nn::greedy_search(model.stepper(), 0, {}), doctest::Contains("at least one source"),
                       ValueError);
  const nn::StepModel nan_model{[](const std::vector<int64_t>& last) {
                                  return full({static_cast<int64_t>(last.size()), 3}, std::nanf(""));
                                },
                                [](const std::vector<int64_t>&) {}};
  CHECK_THROWS_WITH_AS(nn::greedy_search(nan_model, 1, {.eos = 1}), doctest::Contains("logits hold a NaN"), ValueError);
  const nn::StepModel narrow{[](const std::vector<int64_t>& last) { return zeros({static_cast<int64_t>(last.size()), 2}); },
                             [](const std::vector<int64_t>&) {}};
  CHECK_THROWS_WITH_AS(nn::beam_search(narrow, 1, {.eos = 5}), doctest::Contains("with V > eos (5)"), ShapeError);
}
