// ALiBi, attention with linear biases (Press, Smith & Lewis 2022, "Train Short, Test Long",
// section 3): no position vectors at all; each head penalizes a score by its distance,
//
//   score(i, j) = q_i·k_j / √d − m_h · |j − i|,      m_h = 2^(−8h/H), h = 1 .. H
//
// The slopes form a geometric sequence (for 8 heads: 1/2, 1/4, ..., 1/256), so some heads look
// nearby and others far. The paper's decoder is causal and needs only j <= i; this encoder's version
// is symmetric in |j − i|, as bidirectional uses of ALiBi do. Nothing is learned: the slopes are a
// non-persistent buffer, so a checkpoint holds no ALiBi tensor.
//
// As a position scheme it overrides one hook, offset_bias (nn/position_scheme.h): for offsets o
// (n) → (H, n) with value −m_h·|o|, the same whether attention is dense or banded.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "nn/position_scheme.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

class ALiBi : public PositionScheme {
 public:
  explicit ALiBi(int64_t H) : num_heads(H) {
    if (H <= 0) throw ValueError("ALiBi: num_heads must be positive, got " + std::to_string(H));
    std::vector<float> m(static_cast<size_t>(H));
    for (int64_t h = 1; h <= H; ++h) m[h - 1] = std::exp2(-8.0f * h / H);
    slopes = register_buffer("slopes", tensor(m, {H, 1}), /*persistent=*/false);
  }

  Tensor offset_bias(const IndexTensor& offsets) override {
    std::vector<float> distance(static_cast<size_t>(offsets.numel()));
    for (int64_t i = 0; i < offsets.numel(); ++i) distance[i] = static_cast<float>(std::abs(offsets[i]));
    return -(slopes * tensor(distance, {1, offsets.numel()}));  // (H, 1) · (1, n) → (H, n)
  }

  std::string extra_repr() const override { return "num_heads=" + std::to_string(num_heads); }

  int64_t num_heads;
  Tensor slopes;  // (H, 1): m_h
};

}  // namespace qkv::nn
