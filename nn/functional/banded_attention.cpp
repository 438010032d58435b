#include "nn/functional/banded_attention.h"

#include <cmath>
#include <string>

#include "autograd/ops/band.h"
#include "autograd/ops/row_lengths.h"
#include "nn/functional/basic.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn::functional {
namespace {

void check_shapes(const Tensor& q, const Tensor& k, const Tensor& v, int64_t window,
                  const Tensor& offset_bias) {
  const bool fits = q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && q.shape() == k.shape() &&
                    v.size(0) == q.size(0) && v.size(1) == q.size(1) && v.size(2) == q.size(2);
  if (!fits)
    throw ShapeError("banded_attention: queries " + shape_str(q.shape()) + ", keys " + shape_str(k.shape()) +
                     " and values " + shape_str(v.shape()) +
                     " do not fit: expected (B, H, T, d), (B, H, T, d) and (B, H, T, dv) (self-attention)");
  if (window < 0 || window > (int64_t{1} << 30))
    throw ValueError("banded_attention: window must be in [0, 2^30], got " + std::to_string(window));
  const int64_t W = 2 * window + 1;
  if (offset_bias.defined() && (offset_bias.dim() != 2 || offset_bias.size(1) != W ||
                                (offset_bias.size(0) != 1 && offset_bias.size(0) != q.size(1))))
    throw ShapeError("banded_attention: offset_bias of shape " + shape_str(offset_bias.shape()) +
                     " must be (" + std::to_string(q.size(1)) + " or 1, " + std::to_string(W) +
                     "): one value per head and offset");
}

// (B or 1, 1, T, 2w+1): 1 where key j = i + o − w exists and lies within the valid length.
Tensor band_visibility(int64_t B, int64_t T, int64_t window, const IndexTensor& valid_lens) {
  const int64_t W = 2 * window + 1, rows = valid_lens.defined() ? B : 1;
  if (valid_lens.defined() && (valid_lens.dim() != 1 || valid_lens.size(0) != B))
    throw ShapeError("banded_attention: valid_lens of shape " + shape_str(valid_lens.shape()) + " must be (" +
                     std::to_string(B) + ")");
  Tensor visible = zeros({rows, 1, T, W});
  float* out = visible.data();
  if (valid_lens.defined()) check_valid_lengths("banded_attention", valid_lens, T);
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t len = valid_lens.defined() ? valid_lens[b] : T;
    for (int64_t i = 0; i < T; ++i)
      for (int64_t o = 0; o < W; ++o) {
        const int64_t j = i + o - window;
        out[(b * T + i) * W + o] = (j >= 0 && j < len) ? 1.0f : 0.0f;
      }
  }
  return visible;
}

}  // namespace

AttentionOutput banded_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                 int64_t window, const IndexTensor& valid_lens, const Tensor& offset_bias,
                                 float dropout_p, bool training) {
  check_shapes(queries, keys, values, window, offset_bias);
  const int64_t B = queries.size(0), T = queries.size(2), W = 2 * window + 1;
  const Tensor band =
      band_scores(queries, keys, window, 1.0f / std::sqrt(static_cast<float>(queries.size(-1))));
  const Tensor bias = offset_bias.defined() ? offset_bias.view({1, offset_bias.size(0), 1, W}) : Tensor();
  const Tensor weights = masked_softmax(band, IndexTensor(), band_visibility(B, T, window, valid_lens), bias);
  const Tensor output = band_sum(dropout(weights, dropout_p, training && dropout_p > 0.0f), values, window);
  return {output, weights};
}

Tensor band_to_dense(const Tensor& band) {
  if (band.dim() < 2 || band.size(-1) % 2 == 0)
    throw ShapeError("band_to_dense: band of shape " + shape_str(band.shape()) +
                     " must end in (T, 2w + 1): an odd number of offsets");
  const int64_t W = band.size(-1), window = (W - 1) / 2;
  Shape shape = band.shape();
  shape.back() = band.size(-2);
  if (band.numel() == 0) return zeros(shape);
  const int64_t T = band.size(-2), rows = band.numel() / (T * W);
  Tensor dense = zeros(shape);
  const Tensor in = band.detach().contiguous();
  const float* src = in.data();
  float* dst = dense.data();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t o = 0; o < W; ++o) {
        const int64_t j = i + o - window;
        if (j >= 0 && j < T) dst[(r * T + i) * T + j] = src[(r * T + i) * W + o];
      }
  return dense;
}

}  // namespace qkv::nn::functional
