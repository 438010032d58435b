// Windowed self-attention computed on the band only: O(T·w) time and memory, not O(T²).
//
// With a window w, query i sees only the keys j with |j − i| <= w (d2l §11.6.2 compares
// self-attention with CNNs and RNNs; restricting it to a neighbourhood of size r costs O(r·n·d)
// instead of O(n²·d), Vaswani et al. 2017, section 4). A dense (T, T) score matrix with a window
// mask computes the same result, but spends T² work on scores that are thrown away. Here the scores
// are stored by offset: band[..., i, o] is the score of query i against key j = i + o − w, for o in
// [0, 2w]; keys outside the sequence (j < 0 or j >= T) or past the valid length are hidden.
//
//   band scores  s[b, h, i, o] = q_i · k_{i+o−w} / √d + bias[h, o]
//   weights      masked softmax over o
//   output       Σ_o dropout(weights)[b, h, i, o] · v_{i+o−w}
//   queries, keys (B, H, T, d), values (B, H, T, dv) → output (B, H, T, dv), weights (B, H, T, 2w+1)
//   valid_lens   (B), or undefined for every key
//   offset_bias  (H, 2w+1) or (1, 2w+1): a bias per head and offset o − w = j − i, the form every
//                relative position scheme takes (nn/position_scheme.h); undefined for none
//
// Two band ops (band_scores, band_sum: a kernel forward and backward each, tensor/kernels/band.h)
// around the masked softmax and dropout. The tests check it against the dense masked computation,
// values and gradients.
#pragma once

#include <cstdint>

#include "nn/functional/attention.h"
#include "tensor/index_tensor.h"
#include "tensor/tensor.h"

namespace qkv::nn::functional {

AttentionOutput banded_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                 int64_t window, const IndexTensor& valid_lens = IndexTensor(),
                                 const Tensor& offset_bias = Tensor(), float dropout_p = 0.0f,
                                 bool training = true);

// Band weights (..., T, 2w+1) spread into the dense (..., T, T) layout, zero outside the band: for
// figures and for comparison with dense attention. No gradient.
Tensor band_to_dense(const Tensor& band);

}  // namespace qkv::nn::functional
