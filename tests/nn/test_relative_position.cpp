// Relative position bias: the clipped (Shaw et al.) and log-bucketed (T5) bucket functions against
// values worked out by hand, the (1, H, Q, K) bias the modules read from their table, and its gradient.
#include <doctest/doctest.h>

#include <vector>

#include "gradcheck_registry.h"
#include "nn/relative_position.h"
#include "tensor/error.h"
#include "tensor/factories.h"

using namespace qkv;
using namespace qkv::testing;
using V = std::vector<float>;

namespace {

// The bucket that a list of first distances implies for distance n >= 0: n itself below `exact`,
// then exact + (how many of the firsts are <= n) − 1.
int64_t bucket_from_firsts(int64_t n, int64_t exact, const std::vector<int64_t>& firsts) {
  if (n < exact) return n;
  int64_t count = 0;
  for (int64_t f : firsts) count += f <= n;
  return exact + count - 1;
}

}  // namespace

TEST_CASE("clipped_relative_position_bucket clips j minus i to k on both sides") {
  // k = 3: distances −3..3 get buckets 0..6, farther ones the end buckets.
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {-100, 0}, {-4, 0}, {-3, 0}, {-2, 1}, {-1, 2}, {0, 3}, {1, 4}, {2, 5}, {3, 6}, {4, 6}, {100, 6}};
  for (const auto& [relative, bucket] : want)
    CHECK(nn::clipped_relative_position_bucket(relative, 3) == bucket);
}

TEST_CASE("t5_relative_position_bucket with 32 bidirectional buckets up to distance 128 matches T5") {
  // 16 buckets a side, the first 8 exact. A distance n >= 8 goes to 8 + ⌊log(n/8)/log(128/8)·8⌋ =
  // 8 + ⌊2·log2(n/8)⌋, capped at 15: bucket 8 + k starts at the first n >= 8·2^(k/2), i.e. at
  // 8, 12 (11.31), 16, 23 (22.63), 32, 46 (45.25), 64, 91 (90.51). Keys before the query (j − i <= 0)
  // use buckets 0..15, keys after it 16..31. The same edges come out of Hugging Face's
  // T5Attention._relative_position_bucket run with torch over −300..300.
  const std::vector<int64_t> firsts = {8, 12, 16, 23, 32, 46, 64, 91};
  for (int64_t n = 0; n <= 300; ++n) {
    CAPTURE(n);
    CHECK(nn::t5_relative_position_bucket(-n) == bucket_from_firsts(n, 8, firsts));
    if (n > 0) CHECK(nn::t5_relative_position_bucket(n) == 16 + bucket_from_firsts(n, 8, firsts));
  }
  CHECK(nn::t5_relative_position_bucket(0) == 0);
  CHECK(nn::t5_relative_position_bucket(1) == 17);
  CHECK(nn::t5_relative_position_bucket(-128) == 15);
  CHECK(nn::t5_relative_position_bucket(100000) == 31);
}

TEST_CASE("t5_relative_position_bucket of a causal decoder puts later keys in bucket 0") {
  // Unidirectional, 32 buckets, 16 exact: n >= 16 goes to 16 + ⌊log(n/16)/log(8)·16⌋, so bucket 16 + k
  // starts at the first n >= 16·8^(k/16) = 16·2^(3k/16): 16, 19 (18.22), 21 (20.75), 24 (23.63),
  // 27 (26.91), 31 (30.64), 35 (34.90), 40 (39.74), 46 (45.25), 52 (51.54), 59 (58.69), 67 (66.83),
  // 77 (76.11), 87 (86.67), 99 (98.70), 113 (112.40). Hugging Face's T5 gives the same edges.
  const std::vector<int64_t> firsts = {16, 19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113};
  for (int64_t n = 0; n <= 300; ++n) {
    CAPTURE(n);
    CHECK(nn::t5_relative_position_bucket(-n, false) == bucket_from_firsts(n, 16, firsts));
    CHECK(nn::t5_relative_position_bucket(n, false) == 0);
  }
  CHECK(nn::t5_relative_position_bucket(-(int64_t{1} << 62), false) == 31);
}

TEST_CASE("t5_relative_position_bucket rejects bucket counts that leave no exact or log range") {
  CHECK_THROWS_WITH_AS(
      nn::t5_relative_position_bucket(0, true, 31, 128),
      "t5_relative_position_bucket: num_buckets 31 and max_distance 128 (bidirectional true) do not "
      "fit: num_buckets must be even when bidirectional, each side needs 2 buckets or more, and "
      "max_distance must exceed the 7 exact distances",
      ValueError);
  // One bucket a side; then 16 exact distances and nothing left to space logarithmically.
  CHECK_THROWS_AS(nn::t5_relative_position_bucket(0, true, 2, 128), ValueError);
  CHECK_THROWS_AS(nn::t5_relative_position_bucket(0, false, 32, 16), ValueError);
  CHECK(nn::t5_relative_position_bucket(-20, false, 32, 17) == 31);
  CHECK_THROWS_WITH_AS(nn::clipped_relative_position_bucket(0, 0),
                       "clipped_relative_position_bucket: max_distance must be at least 1, got 0",
                       ValueError);
}

TEST_CASE("ClippedRelativePositionBias reads weight at the clipped distance for every head") {
  // 2 heads, k = 2: 5 buckets. weight[b, h] = 10·b + h, so bias[0, h, i, j] = 10·(clip(j − i) + 2) + h.
  nn::ClippedRelativePositionBias bias(2, 2);
  CHECK(bias.weight.shape() == Shape{5, 2});
  bias.load_state_dict({{"weight", tensor({{0, 1}, {10, 11}, {20, 21}, {30, 31}, {40, 41}})}});
  const Tensor out = bias.forward(3, 4);
  REQUIRE(out.shape() == Shape{1, 2, 3, 4});
  CHECK(out.select(0, 0).select(0, 0).to_vector() == V{20, 30, 40, 40,   // i = 0: j − i = 0, 1, 2, 3
                                                       10, 20, 30, 40,   // i = 1: −1..2
                                                       0, 10, 20, 30});  // i = 2: −2..1
  CHECK(out.select(0, 0).select(0, 1).to_vector() == V{21, 31, 41, 41, 11, 21, 31, 41, 1, 11, 21, 31});
  CHECK(bias.buckets(3, 4) == IndexTensor({2, 3, 4, 4, 1, 2, 3, 4, 0, 1, 2, 3}, {3, 4}));
  CHECK(bias.summary() == "ClippedRelativePositionBias(num_heads=2, max_distance=2)  10 parameters\n");
}

TEST_CASE("RelativePositionBias at a query offset gives the last rows of the full bias") {
  // A decoding step with a cache of K keys scores its one new query, at position K − 1, against all of them.
  nn::T5RelativePositionBias bias(3, /*bidirectional=*/false, 8, 20);
  const Tensor full = bias.forward(6, 6);
  CHECK(bias.forward(1, 6, 5).to_vector() == full.narrow(2, 5, 1).to_vector());
  CHECK(bias.forward(2, 6, 4).to_vector() == full.narrow(2, 4, 2).to_vector());
  // Entry (i, j) is the bucket of j minus the query's position query_offset + i.
  nn::T5RelativePositionBias t5(1);
  const IndexTensor ids = t5.buckets(7, 300, 150);
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 300; ++j) CHECK(ids.at({i, j}) == nn::t5_relative_position_bucket(j - 150 - i));
}

TEST_CASE("T5RelativePositionBias buckets by sign and log distance") {
  // 8 buckets, bidirectional, max_distance 20: 4 a side, 2 exact; n >= 2 goes to 2 + ⌊log(n/2)/log(10)·2⌋:
  // n = 2..6 → 2 (log 3/log 10·2 = 0.95), n >= 7 → 3 (log 3.5/log 10·2 = 1.09). Keys after the query: + 4.
  nn::T5RelativePositionBias bias(1, true, 8, 20);
  CHECK(bias.buckets(1, 12) == IndexTensor({0, 5, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7}, {1, 12}));  // j − i = j
  CHECK(bias.buckets(12, 1) == IndexTensor({0, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3}, {12, 1}));  // j − i = −i
  CHECK(bias.summary() ==
        "T5RelativePositionBias(num_heads=1, bidirectional=true, num_buckets=8, max_distance=20)"
        "  8 parameters\n");
}

TEST_CASE("RelativePositionBias gradient sums the scores' gradients of each bucket into its row") {
  // Q = K = 4: distances −3..3 occur 1, 2, 3, 4, 3, 2, 1 times. Clipped at k = 2, bucket 0 collects
  // −3 and −2 (3 pairs), bucket 4 collects 2 and 3 (3 pairs). With d loss/d bias = 1 everywhere the
  // gradient of weight[b, h] is that count, for every head.
  nn::ClippedRelativePositionBias bias(2, 2);
  bias.forward(4, 4).sum().backward();
  CHECK(bias.weight.grad().to_vector() == V{3, 3, 3, 3, 4, 4, 3, 3, 3, 3});
  // Each head's scores reach only that head's column.
  bias.zero_grad();
  (bias.forward(4, 4) * tensor({0.0f, 1.0f}).view({1, 2, 1, 1})).sum().backward();
  CHECK(bias.weight.grad().to_vector() == V{0, 3, 0, 3, 0, 4, 0, 3, 0, 3});
}

TEST_CASE("RelativePositionBias initializes its table small and rejects bad sizes") {
  manual_seed(5);
  nn::T5RelativePositionBias big(200, true, 64, 256);  // 12800 draws: std of the variance estimate is 1.2%
  CHECK(big.weight.var().item() == doctest::Approx(0.02f * 0.02f).epsilon(0.05));
  CHECK_THROWS_WITH_AS(nn::ClippedRelativePositionBias(0, 4),
                       "ClippedRelativePositionBias: num_heads must be positive, got 0", ValueError);
  CHECK_THROWS_AS(nn::ClippedRelativePositionBias(2, 0), ValueError);
  CHECK_THROWS_AS(nn::T5RelativePositionBias(2, true, 7), ValueError);
  nn::ClippedRelativePositionBias bias(2, 4);
  CHECK_THROWS_WITH_AS(bias.forward(0, 3),
                       "ClippedRelativePositionBias: need positive query and key lengths and a non-negative "
                       "query_offset, got 0, 3 and 0",
                       ValueError);
  CHECK_THROWS_AS(bias.forward(2, 3, -1), ValueError);
}

// Both bucketings, as attention uses them: scores (B, H, Q, K) plus the bias, through a softmax.
QKV_GRADCHECK_MODULE(
    "ClippedRelativePositionBias", {In::normal({2, 2, 3, 4})},
    [] { return std::make_shared<nn::ClippedRelativePositionBias>(2, 2); },
    [](nn::ClippedRelativePositionBias& m, const Inputs& x) { return (x[0] + m.forward(3, 4)).softmax(-1); });
QKV_GRADCHECK_MODULE(
    "T5RelativePositionBias", {In::normal({1, 2, 5, 5})},
    [] { return std::make_shared<nn::T5RelativePositionBias>(2, true, 8, 20); },
    [](nn::T5RelativePositionBias& m, const Inputs& x) { return (x[0] + m.forward(5, 5)).softmax(-1); });
