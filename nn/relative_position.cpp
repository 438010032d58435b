#include "nn/relative_position.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "autograd/ops/embedding.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {
namespace {

// Both return the number of buckets, after checking the arguments of the bucket function.
int64_t clipped_num_buckets(int64_t max_distance) {
  if (max_distance < 1)
    throw ValueError("clipped_relative_position_bucket: max_distance must be at least 1, got " +
                     std::to_string(max_distance));
  return 2 * max_distance + 1;
}

int64_t t5_num_buckets(bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  const int64_t side = bidirectional ? num_buckets / 2 : num_buckets, exact = side / 2;
  if ((bidirectional && num_buckets % 2 != 0) || exact < 1 || max_distance <= exact)
    throw ValueError(
        "t5_relative_position_bucket: num_buckets " + std::to_string(num_buckets) + " and max_distance " +
        std::to_string(max_distance) + " (bidirectional " + (bidirectional ? "true" : "false") +
        ") do not fit: num_buckets must be even when bidirectional, each side needs 2 buckets or "
        "more, and max_distance must exceed the " +
        std::to_string(exact) + " exact distances");
  return num_buckets;
}

}  // namespace

int64_t clipped_relative_position_bucket(int64_t relative_position, int64_t max_distance) {
  clipped_num_buckets(max_distance);
  return std::clamp(relative_position, -max_distance, max_distance) + max_distance;
}

int64_t t5_relative_position_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets,
                                    int64_t max_distance) {
  t5_num_buckets(bidirectional, num_buckets, max_distance);
  int64_t side = num_buckets, first = 0, distance = 0;
  if (bidirectional) {
    side = num_buckets / 2;
    first = relative_position > 0 ? side : 0;  // keys after the query use the upper half
    distance = std::abs(relative_position);
  } else {
    distance = std::max<int64_t>(-relative_position, 0);  // keys after the query count as distance 0
  }
  const int64_t exact = side / 2;
  if (distance < exact) return first + distance;
  // Mesh TensorFlow: max_exact + to_int32(log(n / max_exact) / math.log(max_distance / max_exact) ·
  // (num_buckets − max_exact)), tensors in float32 and the Python constant a double.
  const float scale =
      static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(exact)));
  const float log_ratio = std::log(static_cast<float>(distance) / static_cast<float>(exact));
  const float steps = log_ratio / scale * static_cast<float>(side - exact);
  // Capped at the last bucket before the conversion, which a float past int64's range would make undefined.
  return first + exact + static_cast<int64_t>(std::min(steps, static_cast<float>(side - 1 - exact)));
}

RelativePositionBias::RelativePositionBias(int64_t heads, int64_t buckets)
    : num_heads(heads), num_buckets(buckets) {}

// Called by the derived constructors: there type_name() names the derived class.
void RelativePositionBias::init_weight() {
  if (num_heads <= 0)
    throw ValueError(type_name() + ": num_heads must be positive, got " + std::to_string(num_heads));
  weight = register_parameter("weight", normal({num_buckets, num_heads}, 0.0f, 0.02f));
}

IndexTensor RelativePositionBias::buckets(int64_t Q, int64_t K, int64_t query_offset) const {
  if (Q <= 0 || K <= 0 || query_offset < 0)
    throw ValueError(type_name() +
                     ": need positive query and key lengths and a non-negative query_offset, got " +
                     std::to_string(Q) + ", " + std::to_string(K) + " and " + std::to_string(query_offset));
  // j − i takes only Q + K − 1 values, from lowest = −(query_offset + Q − 1) up: bucket each once
  // (a T5 bucket costs a log), then fill the matrix from that list.
  const int64_t lowest = -(query_offset + Q - 1);
  std::vector<int64_t> by_distance(static_cast<size_t>(Q + K - 1));
  for (int64_t r = 0; r < Q + K - 1; ++r) by_distance[r] = bucket(lowest + r);
  std::vector<int64_t> ids(static_cast<size_t>(Q * K));
  for (int64_t i = 0; i < Q; ++i)
    for (int64_t j = 0; j < K; ++j) ids[i * K + j] = by_distance[j - (query_offset + i) - lowest];
  return IndexTensor(std::move(ids), {Q, K});
}

Tensor RelativePositionBias::forward(int64_t Q, int64_t K, int64_t query_offset) const {
  // weight (num_buckets, H) looked up at (Q, K) buckets → (Q, K, H) → (1, H, Q, K)
  return embedding(buckets(Q, K, query_offset), weight).permute({2, 0, 1}).unsqueeze(0);
}

ClippedRelativePositionBias::ClippedRelativePositionBias(int64_t heads, int64_t k)
    : RelativePositionBias(heads, clipped_num_buckets(k)), max_distance(k) {
  init_weight();
}

int64_t ClippedRelativePositionBias::bucket(int64_t relative_position) const {
  return clipped_relative_position_bucket(relative_position, max_distance);
}

std::string ClippedRelativePositionBias::extra_repr() const {
  return "num_heads=" + std::to_string(num_heads) + ", max_distance=" + std::to_string(max_distance);
}

T5RelativePositionBias::T5RelativePositionBias(int64_t heads, bool bidir, int64_t buckets, int64_t max_dist)
    : RelativePositionBias(heads, t5_num_buckets(bidir, buckets, max_dist)),
      bidirectional(bidir),
      max_distance(max_dist) {
  init_weight();
}

int64_t T5RelativePositionBias::bucket(int64_t relative_position) const {
  return t5_relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance);
}

std::string T5RelativePositionBias::extra_repr() const {
  return "num_heads=" + std::to_string(num_heads) + ", bidirectional=" + (bidirectional ? "true" : "false") +
         ", num_buckets=" + std::to_string(num_buckets) + ", max_distance=" + std::to_string(max_distance);
}

}  // namespace qkv::nn
