#include "nn/alibi.h"

#include <cmath>
#include <string>

#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

ALiBi::ALiBi(int64_t H) : PositionScheme("ALiBi"), num_heads(H) {
  if (H <= 0) throw ValueError("ALiBi: num_heads must be positive, got " + std::to_string(H));
  std::vector<float> m(static_cast<size_t>(H));
  for (int64_t h = 1; h <= H; ++h) m[h - 1] = std::exp2(-8.0f * static_cast<float>(h) / static_cast<float>(H));
  slopes = register_buffer("slopes", tensor(m, {H, 1}), /*persistent=*/false);
}

Tensor ALiBi::offset_bias(const IndexTensor& offsets) {
  std::vector<float> distance(static_cast<size_t>(offsets.numel()));
  for (int64_t i = 0; i < offsets.numel(); ++i) distance[i] = static_cast<float>(std::abs(offsets[i]));
  return -(slopes * tensor(distance, {1, offsets.numel()}));  // (H, 1) · (1, n) → (H, n)
}

std::string ALiBi::extra_repr() const { return "num_heads=" + std::to_string(num_heads); }

}  // namespace qkv::nn
