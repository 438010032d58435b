// Fourier features of positions: the sinusoidal encoding (nn/positional_encoding.h) with its fixed
// frequencies 1/10000^(2j/D) replaced by frequencies that are learned (Li et al. 2021) or drawn at
// random (Tancik et al. 2020), for positions of any number of coordinates M: 1 for a token's place
// in a sequence, 2 for a patch's row and column.
//
//   r(x) = [cos(x Wᵀ) ‖ sin(x Wᵀ)] / √F        x (N, M) positions, W (F, M) frequencies → (N, 2F)
//   P(x) = GELU(r(x) W₁ + b₁) W₂ + b₂           a two-layer MLP to the model's width → (N, D)
//
// Learned (Li et al. 2021, "Learnable Fourier Features for Multi-Dimensional Spatial Positional
//   Encoding", section 3, eqs. 2–3): W is a parameter, initialized N(0, σ²) (the paper's γ⁻² is
//   σ² here); the paper's G groups of coordinates are one group here. The paper divides by the
//   square root of the feature width, √(2F); qkv by √F, so that ‖r(x)‖ = 1 (a constant factor,
//   which W₁ absorbs).
// Random (Tancik et al. 2020, "Fourier Features Let Networks Learn High Frequency Functions",
//   section 5): γ(v) = [cos(2πBv), sin(2πBv)] with B ~ N(0, s²), fixed, fed to an MLP. Here W = 2πB
//   (σ = 2πs) is drawn once from the default generator, so the seed of the model's initialization
//   picks it, and is a persistent buffer: state_dict and every checkpoint hold it, and a loaded
//   model reads with the frequencies it was trained with, never with new ones. The MLP is the
//   learned variant's, so that the two differ only in whether W learns.
// σ is in radians per unit of the coordinates: per token for 1-D positions 0, 1, 2, ...
// The MLP's output layer starts N(0, 0.02²) with a zero bias, so that P starts as small as a learned
// table's rows (nn/learned_positional_encoding.h) and does not drown token embeddings of that size.
//
// Nothing in P is tied to a length or a grid: it is a function of the coordinates, evaluated
// wherever it is asked, so a Fourier scheme reads sequences longer than any it was trained on
// (how well is what docs/positional_encodings.md measures, "Past the length and the size they
// were trained at").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "nn/linear.h"
#include "nn/module.h"
#include "nn/position_scheme.h"

namespace qkv::nn {

struct FourierFeaturesOptions {
  int64_t coordinates = 1;   // M
  int64_t frequencies = 32;  // F: r(x) has 2F features
  int64_t hidden = 64;       // the MLP's hidden width
  int64_t out = 64;          // D
  bool learned = true;       // false: random, fixed frequencies
  float scale = 1.0f;        // σ, the standard deviation of W's entries
};

class FourierFeatures : public Module {
 public:
  explicit FourierFeatures(const FourierFeaturesOptions& options);
  // r(x): x (N, M) → (N, 2F)
  Tensor features(const Tensor& x) const;
  // P(x): x (N, M) → (N, D)
  Tensor forward(const Tensor& x) const;
  std::string extra_repr() const override;

  FourierFeaturesOptions options;
  Tensor frequencies;  // W (F, M): a parameter when learned, a persistent buffer when random
  std::shared_ptr<Linear> hidden, output;
};

// Positions offset .. offset + n − 1 as (n, 1) coordinates.
Tensor sequence_coordinates(int64_t n, int64_t offset = 0);

// A 1-D position scheme (nn/position_scheme.h) of Fourier features: P(0 .. T − 1) added to the
// token representations, at any T. F = D/2 frequencies (as many as the sinusoidal table has), an
// MLP hidden width of D, σ = 1 radian per token. Registered as "learned-fourier" and "random-fourier".
class FourierPositions : public PositionScheme {
 public:
  FourierPositions(const PositionSizes& sizes, bool learned);
  Tensor encode_input(const Tensor& X) override { return encode_input_at(X, 0); }
  Tensor encode_input_at(const Tensor& X, int64_t offset) override;
  std::pair<Tensor, Tensor> transform_qk_at(const Tensor& q, const Tensor& k, int64_t) override { return {q, k}; }

  std::shared_ptr<FourierFeatures> features;
};

}  // namespace qkv::nn
