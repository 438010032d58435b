#include "nn/fourier_features.h"

#include <cmath>

#include "nn/init.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

FourierFeatures::FourierFeatures(const FourierFeaturesOptions& o) : options(o) {
  if (o.coordinates <= 0 || o.frequencies <= 0 || o.hidden <= 0 || o.out <= 0)
    throw ValueError("FourierFeatures: coordinates, frequencies, hidden and out must be positive, got " +
                     std::to_string(o.coordinates) + ", " + std::to_string(o.frequencies) + ", " +
                     std::to_string(o.hidden) + " and " + std::to_string(o.out));
  if (!(o.scale > 0.0f) || !std::isfinite(o.scale))
    throw ValueError("FourierFeatures: scale must be positive and finite, got " + std::to_string(o.scale));
  Tensor W = normal({o.frequencies, o.coordinates}, 0.0f, o.scale, o.learned);
  frequencies = o.learned ? register_parameter("frequencies", W) : register_buffer("frequencies", W, /*persistent=*/true);
  hidden = register_module("hidden", std::make_shared<Linear>(2 * o.frequencies, o.hidden));
  output = register_module("output", std::make_shared<Linear>(o.hidden, o.out));
  init::normal_(output->weight, 0.0f, 0.02f);
  init::zeros_(output->bias);
}

Tensor FourierFeatures::features(const Tensor& x) const {
  if (x.dim() != 2 || x.size(1) != options.coordinates)
    throw ShapeError("FourierFeatures: positions of shape " + shape_str(x.shape()) + " must be (N, " +
                     std::to_string(options.coordinates) + ")");
  const Tensor angles = x.matmul(frequencies.t());  // (N, F)
  return cat({angles.cos(), angles.sin()}, 1) * (1.0f / std::sqrt(static_cast<float>(options.frequencies)));
}

Tensor FourierFeatures::forward(const Tensor& x) const { return output->forward(hidden->forward(features(x)).gelu()); }

std::string FourierFeatures::extra_repr() const {
  return "coordinates=" + std::to_string(options.coordinates) + ", frequencies=" + std::to_string(options.frequencies) +
         ", hidden=" + std::to_string(options.hidden) + ", out=" + std::to_string(options.out) +
         ", learned=" + (options.learned ? "true" : "false") + ", scale=" + std::to_string(options.scale);
}

Tensor sequence_coordinates(int64_t n, int64_t offset) {
  if (n <= 0 || offset < 0)
    throw ValueError("sequence_coordinates: need n > 0 and offset >= 0, got " + std::to_string(n) + " and " +
                     std::to_string(offset));
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(offset + i);
  return tensor(std::move(x), {n, 1});
}

FourierPositions::FourierPositions(const PositionSizes& s, bool learned) {
  if (s.num_hiddens <= 0 || s.num_hiddens % 2 != 0)
    throw ValueError("FourierPositions: num_hiddens must be even and positive (D/2 frequencies), got " +
                     std::to_string(s.num_hiddens));
  features = register_module("features", std::make_shared<FourierFeatures>(FourierFeaturesOptions{
                                             .coordinates = 1, .frequencies = s.num_hiddens / 2,
                                             .hidden = s.num_hiddens, .out = s.num_hiddens,
                                             .learned = learned, .scale = 1.0f}));
}

Tensor FourierPositions::encode_input_at(const Tensor& X, int64_t offset) {
  if (X.dim() != 3 || X.size(2) != features->options.out)
    throw ShapeError("FourierPositions: input of shape " + shape_str(X.shape()) + " must be (B, T, " +
                     std::to_string(features->options.out) + ")");
  if (offset < 0) throw ValueError("FourierPositions: offset " + std::to_string(offset) + " is negative");
  return X + features->forward(sequence_coordinates(X.size(1), offset));
}

}  // namespace qkv::nn
