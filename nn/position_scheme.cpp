#include "nn/position_scheme.h"

#include "nn/alibi.h"
#include "nn/fourier_features.h"
#include "nn/registry.h"
#include "tensor/error.h"

namespace qkv::nn {

namespace {

// x (..., T, ·) with `offset` rows of zeros before its T rows, along dim −2.
Tensor after_zeros(const Tensor& x, int64_t offset, const char* hook) {
  if (offset < 0) throw ValueError(std::string("PositionScheme::") + hook + ": offset " + std::to_string(offset) +
                                   " is negative");
  if (x.dim() < 2) throw ShapeError(std::string("PositionScheme::") + hook + ": input of shape " +
                                    shape_str(x.shape()) + " has no positions dim");
  Shape padding = x.shape();
  padding[padding.size() - 2] = offset;
  return offset == 0 ? x : cat({zeros(padding), x}, x.dim() - 2);
}

// The last `rows` rows of y along dim −2.
Tensor last_rows(const Tensor& y, int64_t rows) { return y.narrow(y.dim() - 2, y.size(y.dim() - 2) - rows, rows); }

}  // namespace

Tensor PositionScheme::encode_input_at(const Tensor& X, int64_t offset) {
  return last_rows(encode_input(after_zeros(X, offset, "encode_input_at")), X.size(X.dim() - 2));
}

std::pair<Tensor, Tensor> PositionScheme::transform_qk_at(const Tensor& q, const Tensor& k, int64_t offset) {
  const auto [tq, tk] = transform_qk(after_zeros(q, offset, "transform_qk_at"), after_zeros(k, offset, "transform_qk_at"));
  return {last_rows(tq, q.size(q.dim() - 2)), last_rows(tk, k.size(k.dim() - 2))};
}

Tensor PositionScheme::transform_packed(const Tensor& qkv, int64_t) {
  throw StateError(type_name() + " does not turn a packed projection (transforms_packed is false); got one of shape " +
                   shape_str(qkv.shape()));
}

SinusoidalPositions::SinusoidalPositions(const PositionSizes& s) {
  encoding = register_module("encoding", std::make_shared<PositionalEncoding>(s.num_hiddens, 0.0f, s.max_len));
}

Tensor SinusoidalPositions::encode_input(const Tensor& X) { return encoding->forward(X); }
Tensor SinusoidalPositions::encode_input_at(const Tensor& X, int64_t offset) { return encoding->forward(X, offset); }

LearnedPositions::LearnedPositions(const PositionSizes& s) {
  encoding = register_module("encoding",
                             std::make_shared<LearnedPositionalEncoding>(s.num_hiddens, 0.0f, s.max_len));
}

Tensor LearnedPositions::encode_input(const Tensor& X) { return encoding->forward(X); }
Tensor LearnedPositions::encode_input_at(const Tensor& X, int64_t offset) { return encoding->forward(X, offset); }

RotaryPositions::RotaryPositions(const PositionSizes& s) {
  if (s.num_heads <= 0 || s.num_hiddens % s.num_heads != 0)
    throw ValueError("RotaryPositions: num_hiddens " + std::to_string(s.num_hiddens) +
                     " must be a multiple of num_heads " + std::to_string(s.num_heads));
  rotary =
      register_module("rotary", std::make_shared<RotaryEmbedding>(s.num_hiddens / s.num_heads, s.max_len));
}

std::pair<Tensor, Tensor> RotaryPositions::transform_qk(const Tensor& q, const Tensor& k) {
  return {rotary->forward(q), rotary->forward(k)};
}

Tensor RotaryPositions::transform_packed(const Tensor& qkv, int64_t heads) { return rotary->forward_packed(qkv, heads); }

std::pair<Tensor, Tensor> RotaryPositions::transform_qk_at(const Tensor& q, const Tensor& k, int64_t offset) {
  return {rotary->forward(q, offset), rotary->forward(k, offset)};
}

RelativeBiasPositions::RelativeBiasPositions(std::shared_ptr<RelativePositionBias> table) {
  bias = register_module("bias", std::move(table));
}

Tensor RelativeBiasPositions::offset_bias(const IndexTensor& offsets) {
  std::vector<int64_t> buckets(static_cast<size_t>(offsets.numel()));
  for (int64_t i = 0; i < offsets.numel(); ++i) buckets[i] = bias->bucket(offsets[i]);
  // weight is (num_buckets, H): the rows of the offsets' buckets, (n, H), turned to (H, n).
  return bias->weight.index_select(0, IndexTensor(buckets)).t();
}

namespace {

Registry<PositionFactory> builtin_schemes() {
  return Registry<PositionFactory>("position_scheme", "scheme", {
      {"none", [](const PositionSizes&) { return std::make_shared<NoPositions>(); }},
      {"sinusoidal", [](const PositionSizes& s) { return std::make_shared<SinusoidalPositions>(s); }},
      {"learned", [](const PositionSizes& s) { return std::make_shared<LearnedPositions>(s); }},
      {"rotary", [](const PositionSizes& s) { return std::make_shared<RotaryPositions>(s); }},
      {"relative",
       [](const PositionSizes& s) {
         return std::make_shared<RelativeBiasPositions>(
             std::make_shared<T5RelativePositionBias>(s.num_heads));
       }},
      {"clipped",
       [](const PositionSizes& s) {
         return std::make_shared<RelativeBiasPositions>(
             std::make_shared<ClippedRelativePositionBias>(s.num_heads, 16));
       }},
      {"alibi", [](const PositionSizes& s) { return std::make_shared<ALiBi>(s.num_heads); }},
      {"learned-fourier", [](const PositionSizes& s) { return std::make_shared<FourierPositions>(s, true); }},
      {"random-fourier", [](const PositionSizes& s) { return std::make_shared<FourierPositions>(s, false); }},
  });
}

}  // namespace

Registry<PositionFactory>& position_schemes() {
  static Registry<PositionFactory> schemes = builtin_schemes();
  return schemes;
}

bool register_position_scheme(const std::string& name, PositionFactory factory) {
  return position_schemes().add(name, std::move(factory));
}

PositionFactory position_scheme(const std::string& name) { return position_schemes().at(name); }

std::vector<std::string> position_scheme_names() { return position_schemes().names(); }

}  // namespace qkv::nn
