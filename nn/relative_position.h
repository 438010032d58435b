// Relative position bias: a learned scalar per head and per relative distance, added to the
// attention scores before the softmax, so that the score of query i against key j also depends on
// their distance j − i, whatever their absolute positions (Shaw et al. 2018; T5, below).
//
//   score(i, j) = q_i·k_j / √d + b_h(bucket(j − i)),    j − i = key position − query position
//
// Distances are grouped into buckets so that one table serves every sequence length:
//   Clipped (Shaw et al. 2018, "Self-Attention with Relative Position Representations"): j − i
//     clipped to [−k, k], 2k + 1 buckets, one per distance up to k. Shaw et al. learn vectors per
//     clipped distance, adding q_i·a_{j−i} to the score (and another vector to the values); qkv
//     keeps their clipping with T5's simplification to one scalar per head, so that both bucketings
//     fit in the same module.
//   T5 (Raffel et al. 2020, section 2.1; Mesh TensorFlow's _relative_position_bucket): with
//     bidirectional, half the buckets for j − i > 0 and half for j − i <= 0; within each half of n
//     buckets, distances below n/2 get one bucket each and distances from n/2 up to max_distance
//     share the other n/2 buckets, spaced logarithmically; farther ones fall in the last bucket.
//     Unidirectional (a causal decoder): n = num_buckets buckets for j − i <= 0, and every j > i
//     (masked anyway) shares bucket 0 with j = i.
//
// Module: bias.forward(Q, K) → (1, H, Q, K), with bias[0, h, i, j] = weight[bucket(j − i), h]:
// broadcastable to the (B, H, Q, K) attention scores. weight is (num_buckets, H), the layout of
// T5's relative_attention_bias (an nn.Embedding(num_buckets, H)), so its trained table loads as
// weight. Initialized N(0, 0.02²): attention starts nearly blind to distance and learns how much
// it cares (Swin Transformer's relative bias table starts the same way). The gradient of the bias
// adds into the rows of weight its entries were looked up from.
#pragma once

#include "nn/module.h"

namespace qkv::nn {

// The bucket of a relative position j − i, in [0, 2·max_distance]: clip(j − i, −k, k) + k.
int64_t clipped_relative_position_bucket(int64_t relative_position, int64_t max_distance);

// T5's bucket of a relative position j − i, in [0, num_buckets). One side has n buckets (n =
// num_buckets / 2 when bidirectional, num_buckets otherwise), e = ⌊n/2⌋ of them exact; a distance
// d >= e goes to
//   min(e + ⌊log(d/e) / log(max_distance/e) · (n − e)⌋, n − 1)     (+ n on the side j − i > 0)
// computed in float32, as Mesh TensorFlow and Hugging Face's T5 compute it.
// Needs num_buckets even when bidirectional, e >= 1 and max_distance > e.
int64_t t5_relative_position_bucket(int64_t relative_position, bool bidirectional = true,
                                    int64_t num_buckets = 32, int64_t max_distance = 128);

// The module behind both bucketings: a (num_buckets, H) table read through bucket(j − i).
class RelativePositionBias : public Module {
 public:
  // (1, H, Q, K): the bias of queries at positions query_offset .. query_offset + Q − 1 against keys
  // at 0 .. K − 1. With a key cache, the Q new queries of a decoding step sit at query_offset = K − Q.
  Tensor forward(int64_t query_length, int64_t key_length, int64_t query_offset = 0) const;
  // (Q, K): the bucket of each (query, key) pair, the indices forward reads weight at.
  IndexTensor buckets(int64_t query_length, int64_t key_length, int64_t query_offset = 0) const;
  virtual int64_t bucket(int64_t relative_position) const = 0;

  int64_t num_heads, num_buckets;
  Tensor weight;  // (num_buckets, num_heads)

 protected:
  RelativePositionBias(int64_t num_heads, int64_t num_buckets);
  void init_weight();  // checks num_heads and registers weight
};

// Shaw et al.'s clipping: 2·max_distance + 1 buckets.
class ClippedRelativePositionBias : public RelativePositionBias {
 public:
  ClippedRelativePositionBias(int64_t num_heads, int64_t max_distance);
  int64_t bucket(int64_t relative_position) const override;
  std::string extra_repr() const override;

  int64_t max_distance;
};

// T5's log buckets. T5 uses bidirectional buckets in its encoder and unidirectional ones in its decoder.
class T5RelativePositionBias : public RelativePositionBias {
 public:
  explicit T5RelativePositionBias(int64_t num_heads, bool bidirectional = true, int64_t num_buckets = 32,
                                  int64_t max_distance = 128);
  int64_t bucket(int64_t relative_position) const override;
  std::string extra_repr() const override;

  bool bidirectional;
  int64_t max_distance;
};

}  // namespace qkv::nn
