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

#include <cstdint>

#include "nn/position_scheme.h"

namespace qkv::nn {

class ALiBi : public PositionScheme {
 public:
  explicit ALiBi(int64_t num_heads);
  Tensor offset_bias(const IndexTensor& offsets) override;
  std::string extra_repr() const override;

  int64_t num_heads;
  Tensor slopes;  // (H, 1): m_h
};

}  // namespace qkv::nn
