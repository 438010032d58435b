#include "nn/position_scheme.h"

#include "nn/alibi.h"
#include "nn/registry.h"
#include "tensor/error.h"

namespace qkv::nn {

SinusoidalPositions::SinusoidalPositions(const PositionSizes& s) {
  encoding = register_module("encoding", std::make_shared<PositionalEncoding>(s.num_hiddens, 0.0f, s.max_len));
}

Tensor SinusoidalPositions::encode_input(const Tensor& X) { return encoding->forward(X); }

LearnedPositions::LearnedPositions(const PositionSizes& s) {
  encoding = register_module("encoding",
                             std::make_shared<LearnedPositionalEncoding>(s.num_hiddens, 0.0f, s.max_len));
}

Tensor LearnedPositions::encode_input(const Tensor& X) { return encoding->forward(X); }

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

const Registry<PositionFactory>& registry() {
  static const Registry<PositionFactory> schemes("position_scheme: unknown scheme", {
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
  });
  return schemes;
}

}  // namespace

PositionFactory position_scheme(const std::string& name) { return registry().at(name); }

std::vector<std::string> position_scheme_names() { return registry().names(); }

}  // namespace qkv::nn
