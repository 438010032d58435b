#include "nn/functional/interpolate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/index_tensor.h"

namespace qkv::nn::functional {

namespace {

// x resampled along `dim` (0 or 1 of a 3-D tensor) from n to m entries, as resize_bilinear says.
Tensor resize_along(const Tensor& x, int64_t dim, int64_t m) {
  const int64_t n = x.size(dim);
  if (n == m) return x;
  std::vector<int64_t> lower(static_cast<size_t>(m)), upper(static_cast<size_t>(m));
  std::vector<float> w_lower(static_cast<size_t>(m)), w_upper(static_cast<size_t>(m));
  const double ratio = static_cast<double>(n) / static_cast<double>(m);  // PyTorch's scale, in float there
  for (int64_t i = 0; i < m; ++i) {
    const float s = std::max(static_cast<float>((static_cast<double>(i) + 0.5) * ratio - 0.5), 0.0f);
    const int64_t k = std::min(static_cast<int64_t>(s), n - 1);
    const float lambda = s - static_cast<float>(k);
    lower[i] = k, upper[i] = std::min(k + 1, n - 1);
    w_lower[i] = 1.0f - lambda, w_upper[i] = lambda;
  }
  Shape weight_shape{1, 1, 1};
  weight_shape[static_cast<size_t>(dim)] = m;
  return x.index_select(dim, IndexTensor(lower)) * tensor(w_lower, weight_shape) +
         x.index_select(dim, IndexTensor(upper)) * tensor(w_upper, weight_shape);
}

}  // namespace

Tensor resize_bilinear(const Tensor& x, int64_t height, int64_t width) {
  if (x.dim() != 3) throw ShapeError("resize_bilinear: input of shape " + shape_str(x.shape()) + " must be (H, W, C)");
  if (height < 1 || width < 1)
    throw ValueError("resize_bilinear: size " + std::to_string(height) + "×" + std::to_string(width) +
                     " must be at least 1×1");
  return resize_along(resize_along(x, 0, height), 1, width);
}

}  // namespace qkv::nn::functional
