// make_batches: padding, lengths, grouping by length, determinism.
#include <doctest/doctest.h>

#include <cstdint>

#include <algorithm>
#include <numeric>

#include "data/batching.h"
#include "tensor/error.h"

using qkv::data::Batch;
using qkv::data::BatchOptions;
using qkv::data::make_batches;

namespace {

// Sentence i has length lengths[i]; its token j is 100·i + j + 1 and its target j is 10·i + j.
struct Data {
  std::vector<std::vector<int64_t>> inputs, targets;
};

Data make_data(const std::vector<int64_t>& lengths) {
  Data d;
  for (size_t i = 0; i < lengths.size(); ++i) {
    auto& in = d.inputs.emplace_back();
    auto& tg = d.targets.emplace_back();
    for (int64_t j = 0; j < lengths[i]; ++j) {
      in.push_back(100 * static_cast<int64_t>(i) + j + 1);
      tg.push_back(10 * static_cast<int64_t>(i) + j);
    }
  }
  return d;
}

std::vector<int64_t> all_indices(const std::vector<Batch>& batches) {
  std::vector<int64_t> indices;
  for (const Batch& b : batches) indices.insert(indices.end(), b.indices.begin(), b.indices.end());
  return indices;
}

}  // namespace

TEST_CASE("make_batches pads inputs with pad_id and targets with ignore_index") {
  const Data d = make_data({2, 3});
  const std::vector<Batch> batches =
      make_batches(d.inputs, d.targets, {.batch_size = 2, .shuffle = false, .pad_id = 0});
  REQUIRE(batches.size() == 1);
  const Batch& b = batches[0];
  CHECK(b.batch_size == 2);
  CHECK(b.max_len == 3);
  CHECK(b.inputs == std::vector<int64_t>{1, 2, 0, 101, 102, 103});
  CHECK(b.targets == std::vector<int64_t>{0, 1, -100, 10, 11, 12});
  CHECK(b.valid_lens == std::vector<int64_t>{2, 3});
  CHECK(b.indices == std::vector<int64_t>{0, 1});
}

TEST_CASE("make_batches without shuffle sorts each pool by length and keeps pool order") {
  const Data d = make_data({5, 1, 3, 2, 4, 1});
  // Pools of 2 batches × 2 sentences: {0,1,2,3} sorted by length is 1,3,2,0; then {4,5} is 5,4.
  const std::vector<Batch> batches =
      make_batches(d.inputs, {}, {.batch_size = 2, .pool_batches = 2, .shuffle = false});
  REQUIRE(batches.size() == 3);
  CHECK(batches[0].indices == std::vector<int64_t>{1, 3});
  CHECK(batches[1].indices == std::vector<int64_t>{2, 0});
  CHECK(batches[2].indices == std::vector<int64_t>{5, 4});
  CHECK(batches[1].valid_lens == std::vector<int64_t>{3, 5});
  CHECK(batches[1].max_len == 5);
  CHECK(batches[0].targets.empty());
}

TEST_CASE("make_batches puts every sentence in exactly one batch per epoch") {
  std::vector<int64_t> lengths;
  for (int i = 0; i < 103; ++i) lengths.push_back(1 + (i * 37) % 40);
  const Data d = make_data(lengths);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const std::vector<Batch> batches =
        make_batches(d.inputs, d.targets, {.batch_size = 8, .pool_batches = 4, .seed = 7 + epoch});
    std::vector<int64_t> indices = all_indices(batches);
    std::sort(indices.begin(), indices.end());
    std::vector<int64_t> expected(103);
    std::iota(expected.begin(), expected.end(), 0);
    CHECK(indices == expected);
    int64_t short_batches = 0;
    for (const Batch& b : batches) {
      short_batches += b.batch_size != 8;
      // Every row holds its own sentence, then padding.
      for (int64_t r = 0; r < b.batch_size; ++r) {
        const int64_t i = b.indices[r];
        CHECK(b.valid_lens[r] == lengths[i]);
        for (int64_t t = 0; t < b.max_len; ++t) {
          const bool valid = t < lengths[i];
          CHECK(b.inputs[r * b.max_len + t] == (valid ? 100 * i + t + 1 : 0));
          CHECK(b.targets[r * b.max_len + t] == (valid ? 10 * i + t : -100));
        }
      }
    }
    CHECK(short_batches == 1);  // 103 = 12·8 + 7
  }
}

TEST_CASE("make_batches groups similar lengths and is a function of the seed") {
  std::vector<int64_t> lengths;
  for (int i = 0; i < 400; ++i) lengths.push_back(3 + (i * 17) % 38);
  const Data d = make_data(lengths);
  const BatchOptions options{.batch_size = 16, .pool_batches = 25, .seed = 1};
  const std::vector<Batch> a = make_batches(d.inputs, d.targets, options);
  const std::vector<Batch> b = make_batches(d.inputs, d.targets, options);
  BatchOptions other = options;
  other.seed = 2;
  const std::vector<Batch> c = make_batches(d.inputs, d.targets, other);
  CHECK(all_indices(a) == all_indices(b));
  CHECK(all_indices(a) != all_indices(c));
  // One pool of 400 sentences sorted by length: padding is what a sorted order leaves.
  int64_t padded = 0, tokens = 0;
  for (const Batch& batch : a) {
    padded += batch.batch_size * batch.max_len;
    for (int64_t len : batch.valid_lens) tokens += len;
  }
  CHECK(static_cast<double>(padded - tokens) / tokens < 0.05);
}

TEST_CASE("make_batches rejects empty sentences and mismatched targets") {
  const Data d = make_data({2, 3});
  CHECK_THROWS_WITH_AS(make_batches({{1}, {}}, {}, {}), "make_batches: sentence 1 is empty",
                       qkv::ValueError);
  CHECK_THROWS_WITH_AS(make_batches(d.inputs, {{0, 1}}, {}),
                       "make_batches: 2 input sequences but 1 target sequences", qkv::ValueError);
  CHECK_THROWS_WITH_AS(make_batches(d.inputs, {{0, 1}, {0, 1}}, {}),
                       "make_batches: sentence 1 has 3 inputs but 2 targets", qkv::ValueError);
  CHECK_THROWS_WITH_AS(make_batches(d.inputs, d.targets, {.batch_size = 0}),
                       "make_batches: batch_size and pool_batches must be at least 1, got 0 and 50",
                       qkv::ValueError);
  CHECK(make_batches({}, {}, {}).empty());
}

TEST_CASE("make_batches takes a batch size as large as int64 allows: one batch of everything") {
  // batch_size · pool_batches overflowed int64 and the pool loop never ended.
  const Data d = make_data({2, 3, 1, 4});
  for (const int64_t size : {int64_t{5}, INT64_MAX / 2, INT64_MAX}) {
    const auto batches = make_batches(d.inputs, d.targets, {.batch_size = size, .pool_batches = 50});
    REQUIRE(batches.size() == 1);
    CHECK(batches[0].batch_size == 4);
    CHECK(batches[0].max_len == 4);
  }
}

TEST_CASE("select_rows takes a batch's rows in the order given and cuts the padding to the longest") {
  const Data d = make_data({4, 2, 3});
  const Batch b = make_batches(d.inputs, d.targets, {.batch_size = 3, .shuffle = false, .pad_id = 0})[0];
  REQUIRE(b.max_len == 4);
  const Batch s = qkv::data::select_rows(b, {2, 1});  // lengths 3 and 2 after sorting: rows are 2,3,4 long
  CHECK(s.batch_size == 2);
  CHECK(s.max_len == 4);
  CHECK(s.valid_lens == std::vector<int64_t>{4, 3});
  const Batch t = qkv::data::select_rows(b, {0});
  CHECK(t.max_len == 2);
  CHECK(t.inputs == std::vector<int64_t>{101, 102});
  CHECK(t.targets == std::vector<int64_t>{10, 11});
  CHECK(t.indices == std::vector<int64_t>{1});
  CHECK(qkv::data::select_rows(b, {}).batch_size == 0);
  CHECK_THROWS_WITH_AS(qkv::data::select_rows(b, {3}), doctest::Contains("row 3 of a batch of 3"), qkv::ValueError);
}
