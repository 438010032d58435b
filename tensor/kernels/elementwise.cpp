#include "tensor/kernels/elementwise.h"

#include <cstring>

namespace qkv::kernels {

Collapsed collapse_dims(const std::vector<int64_t>& shape,
                        const std::vector<std::vector<int64_t>>& strides) {
  Collapsed c;
  c.strides.resize(strides.size());
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;  // a size-1 dim never moves the offset
    // Merge dim k into the previous kept dim when every operand steps through both as one.
    bool merge = !c.shape.empty();
    for (size_t o = 0; merge && o < strides.size(); ++o)
      merge = c.strides[o].back() == strides[o][k] * shape[k];
    if (merge) {
      c.shape.back() *= shape[k];
      for (size_t o = 0; o < strides.size(); ++o) c.strides[o].back() = strides[o][k];
    } else {
      c.shape.push_back(shape[k]);
      for (size_t o = 0; o < strides.size(); ++o) c.strides[o].push_back(strides[o][k]);
    }
  }
  for (int64_t d : shape)
    if (d == 0) c.shape.assign(1, 0);  // nothing to visit
  if (c.shape.size() == 1 && c.shape[0] == 0)
    for (auto& s : c.strides) s.assign(1, 0);
  return c;
}

void copy_strided(const std::vector<int64_t>& shape, const float* src,
                  const std::vector<int64_t>& src_strides, float* dst,
                  const std::vector<int64_t>& dst_strides) {
  const Collapsed c = collapse_dims(shape, {src_strides, dst_strides});
  const int64_t nd = static_cast<int64_t>(c.shape.size());
  const int64_t is = nd ? c.strides[0][nd - 1] : 0, id = nd ? c.strides[1][nd - 1] : 0;
  for_each_piece<2>(c, [&](const int64_t* off, int64_t len) {
    const float* s = src + off[0];
    float* d = dst + off[1];
    if (is == 1 && id == 1) {
      std::memcpy(d, s, static_cast<size_t>(len) * sizeof(float));
    } else if (is == 0) {
      for (int64_t i = 0; i < len; ++i) d[i * id] = s[0];
    } else {
      for (int64_t i = 0; i < len; ++i) d[i * id] = s[i * is];
    }
  });
}

}  // namespace qkv::kernels
