// Performer attention (Choromanski et al. 2021, "Rethinking Attention with Performers", FAVOR+:
// Fast Attention Via positive Orthogonal Random features). Softmax attention forms the (T, T)
// matrix exp(q_i·k_j/√d) and normalizes its rows: O(T²). FAVOR+ writes the kernel as an expectation,
//
//   exp(x·y) = E_ω[ exp(ω·x − |x|²/2) · exp(ω·y − |y|²/2) ],      ω ~ N(0, I_d)      (Lemma 1)
//
// and estimates it with m random features: φ(x) = exp(Wx − |x|²/2) / √m, W (m, d) rows ω_1..ω_m,
// so that exp(q·k/√d) ≈ φ(q')·φ(k') with q' = q/d^¼, k' = k/d^¼. Then attention reassociates:
//
//   out_i = Σ_j φ(q_i)·φ(k_j) v_j / Σ_j φ(q_i)·φ(k_j) = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / φ(q_i)ᵀ (Σ_j φ(k_j))
//
// The sums over keys are (m, d) and (m): O(T·m·d) time and no (T, T) matrix, linear in T. The
// features are positive (every estimate of a weight is > 0, so the normalizer is stable, unlike
// sin/cos features), and the rows of W are orthogonal within each block of d (section 4 of the
// paper: orthogonal features lower the estimator's variance), each scaled to the length of a
// Gaussian vector, as the paper's reference code does.
//
//   queries, keys, values (B, T, D) → (B, T, D); per head q, k, v (B, H, T, d), d = D / H
//   m = setup.features, default d·⌈ln d⌉ (the paper's m = Θ(d log d)), at least d
// Parameters: MultiHeadAttention's projections (ProjectedAttention), nothing else learned. The
// features W are a persistent buffer `features` (m, d), so a checkpoint evaluates with the features
// it was trained with. In training, W is drawn again every redraw_every forwards (the paper
// redraws periodically; 1000, performer-pytorch's default), from a generator of its own seeded from
// qkv's default generator when the layer is built: the draws follow the program's seed, and
// redrawing moves no other random stream. The count restarts when a run resumes.
//
// Stabilizing: a query's features are scaled by exp(−max over its m logits ω·q), the keys' by
// exp(−max over all their logits ω·k − |k|²/2), and |q|²/2 is left out: constants that cancel in
// the ratio (taken without gradient), so that the largest feature of a query and of the keys is 1
// and exp never overflows. The paper's code subtracts the maxima too but also adds 1e-4 to every
// feature; at inputs of unit scale that constant outweighs most key features once m is large, and
// the error stops falling (at about 0.7, measured by examples/performer_error.cpp), so it is not
// added here. valid_lens zero the features of the padded keys. There are no weights to drop out, and no mask
// or score bias can be applied to a matrix that is never formed: a position scheme that biases
// scores, a window, a causal or an arbitrary mask are refused (the paper's causal variant, with
// prefix sums, is not written here). Rotary positions are applied to q and k before the features.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/attention_interface.h"
#include "nn/functional/attention.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

namespace qkv::nn {

class Performer : public ProjectedAttention {
 public:
  explicit Performer(const AttentionSetup& setup) : ProjectedAttention(setup, "Performer") {
    const int64_t d = setup.num_hiddens / setup.num_heads;
    const int64_t by_default = std::max<int64_t>(d, d * static_cast<int64_t>(std::ceil(std::log(static_cast<double>(d)))));
    num_features = setup.features > 0 ? setup.features : by_default;
    if (setup.features < 0)
      throw ValueError("Performer: features must be positive (0: the default " + std::to_string(by_default) + "), got " +
                       std::to_string(setup.features));
    generator.manual_seed(default_generator().next_below(uint64_t{1} << 62));
    features = register_buffer("features", draw_features(num_features, d), /*persistent=*/true);
  }

  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                 const Tensor& bias = Tensor()) override {
    const Heads h = project(queries, keys, values, valid_lens, mask, bias, /*takes_mask_bias=*/false);
    if (is_training() && redraw_every > 0 && ++forwards_since_draw >= redraw_every) redraw();
    const Tensor phi_q = feature_map(h.q, /*is_query=*/true);   // (B, H, Q, m)
    Tensor phi_k = feature_map(h.k, /*is_query=*/false);         // (B, H, K, m)
    if (valid_lens.defined())  // (B, 1, K) → (B, 1, K, 1): padded keys get no features
      phi_k = phi_k * functional::key_padding_mask(valid_lens, keys.size(1)).unsqueeze(-1);
    const Tensor kv = phi_k.transpose(-2, -1).matmul(h.v);                      // (B, H, m, d)
    const Tensor normalizer = phi_q.matmul(phi_k.sum({-2}, true).transpose(-2, -1));  // (B, H, Q, 1)
    attention_weights = Tensor();
    // A sequence with no valid key has 0 / 0 here. Its normalizer becomes 1, a constant outside the
    // graph, so that its output is 0, as dense attention's all-zero weights give, and so are its
    // gradients: the division's backward −g·a/b² then reads 0 / 1. (Adding a tiny constant instead
    // gave the same output, but b² underflowed to 0 and the backward 0 / 0, a NaN that reached W_q
    // and W_k through the sum over the batch.) Any other normalizer is a sum of positive features
    // (a query's largest and the keys' largest are 1/√m): 0 only by underflow, with a numerator of 0.
    const Tensor empty = normalizer.detach().eq(0.0f);
    return output(phi_q.matmul(kv) / (normalizer + empty));
  }

  AttentionSupport supports() const override { return {.transform_qk = true, .features = true}; }

  // Replaces the features by a fresh orthogonal draw from this layer's generator.
  void redraw() {
    NoGradGuard no_grad;
    features.copy_(draw_features(num_features, features.size(1)));
    forwards_since_draw = 0;
  }

  // φ(x) for x (B, H, T, d), (B, H, T, m): the positive random features of x / d^¼, each scaled by
  // a constant that cancels in the ratio (see the header comment).
  Tensor feature_map(const Tensor& x, bool is_query) const {
    const float scale = std::pow(static_cast<float>(x.size(-1)), -0.25f);
    const Tensor xs = x * scale;
    Tensor logits = xs.matmul(features.t());  // (B, H, T, m): ω·x
    // |q|²/2 is the same for all of a query's features: it cancels, and is left out.
    if (!is_query) logits = logits - (xs * xs).sum({-1}, true) * 0.5f;
    // The largest logit of each query row, or of all the keys of a head, without gradient.
    Tensor top = logits.detach().max(-1, true).first;
    if (!is_query) top = top.max(-2, true).first;
    return (logits - top).exp() * (1.0f / std::sqrt(static_cast<float>(num_features)));
  }

  std::string extra_repr() const override {
    return "num_heads=" + std::to_string(num_heads) + ", features=" + std::to_string(num_features) +
           ", redraw_every=" + std::to_string(redraw_every);
  }

  int64_t num_features;
  int64_t redraw_every = 1000;  // training forwards between draws; 0: never redraw
  Tensor features;              // (m, d): W, one ω per row
  Generator generator;

 private:
  // m rows in blocks of d: each block a Gaussian (d, d) matrix orthonormalized by Gram–Schmidt,
  // each row then scaled to the norm of a fresh Gaussian d-vector (the paper's reference code).
  // W is written straight into its tensor, whose allocation names the shape and bytes when m is
  // more than memory holds.
  Tensor draw_features(int64_t m, int64_t d) {
    Tensor W = Tensor::empty({m, d}, "Performer");
    float* rows = W.data();
    std::vector<float> block(static_cast<size_t>(d * d)), lengths(static_cast<size_t>(d * d));
    for (int64_t first = 0; first < m; first += d) {
      generator.fill_normal(block.data(), d * d, 0.0f, 1.0f);
      generator.fill_normal(lengths.data(), d * d, 0.0f, 1.0f);
      std::vector<double> u(static_cast<size_t>(d * d));  // the orthonormal rows
      for (int64_t r = 0; r < d; ++r) {
        double* row = &u[r * d];
        for (int64_t c = 0; c < d; ++c) row[c] = block[r * d + c];
        for (int64_t p = 0; p < r; ++p) {  // minus its projection on each row before it
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += row[c] * u[p * d + c];
          for (int64_t c = 0; c < d; ++c) row[c] -= dot * u[p * d + c];
        }
        double norm = 0, length = 0;
        for (int64_t c = 0; c < d; ++c) norm += row[c] * row[c];
        for (int64_t c = 0; c < d; ++c) length += static_cast<double>(lengths[r * d + c]) * lengths[r * d + c];
        for (int64_t c = 0; c < d; ++c) row[c] /= std::sqrt(norm);
        if (first + r < m)
          for (int64_t c = 0; c < d; ++c) rows[(first + r) * d + c] = static_cast<float>(row[c] * std::sqrt(length));
      }
    }
    return W;
  }

  int64_t forwards_since_draw = 0;
};

}  // namespace qkv::nn
