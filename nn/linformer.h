// Linformer attention (Wang et al. 2020, "Linformer: Self-Attention with Linear Complexity",
// section 4). The (T, T) matrix of softmax attention is, in practice, close to low rank (the
// paper's Figure 1), so Linformer projects the keys and values along the sequence, from T rows to
// k, with two learned (k, n) matrices E and F, and attends over k projected rows:
//
//   out = softmax(Q·(E·K)ᵀ/√d) · (F·V)              (eq. 7)
//   Q (B, H, T, d); E·K, F·V (B, H, k, d); the weights (B, H, T, k): O(T·k) time and memory
//
// n is fixed when the layer is built (setup.max_len): E and F are parameters of n columns, and a
// sequence of T <= n tokens uses their first T columns. A longer one is refused, naming the limit.
// k = setup.features, default min(64, n); k > n is refused (it would add rows, not save them).
// One E and one F per layer, shared by the heads (the paper's headwise sharing, section 4
// "Parameter sharing"). Initialized as a Linear(n, k) is, uniform in ±1/√n.
//
// With k = n the projections are square and nothing is lost: the layer is dense attention over
// the keys E·X and values F·X (the projections of E·X by W_k and of F·X by W_v: with no biases,
// E·(X·W_k) = (E·X)·W_k), which tests/nn/test_efficient_attention.cpp checks to float rounding.
// E and F act on the projected keys and values, after W_k and W_v, so that rotary positions are
// applied to real positions first; with biases (use_bias) that adds (E·1)·b where eq. 7, which
// projects the input, adds b.
//
// valid_lens zero the padded keys and values before the projection, so they add nothing to E·K
// and F·V; the k projected rows are all visible to every query. Dropout acts on the (B, H, T, k)
// weights, which attention_weights keeps (there is no (T, T) matrix: dense_weights() is undefined).
// A score bias by offset, a window, a causal or an arbitrary mask have no meaning over projected
// rows, and are refused; rotary positions are applied to q and k before the projection.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "nn/attention_interface.h"
#include "nn/functional/attention.h"
#include "nn/functional/basic.h"
#include "nn/init.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {

class Linformer : public ProjectedAttention {
 public:
  explicit Linformer(const AttentionSetup& setup)
      : ProjectedAttention(setup, "Linformer"), max_len(setup.max_len) {
    if (max_len <= 0) throw ValueError("Linformer: max_len must be positive, got " + std::to_string(max_len));
    k = setup.features > 0 ? setup.features : std::min<int64_t>(64, max_len);
    if (setup.features < 0 || k > max_len)
      throw ValueError("Linformer: features (the projected length k) is " + std::to_string(setup.features) +
                       "; expected 1 .. max_len (" + std::to_string(max_len) + "), or 0 for the default");
    const float bound = 1.0f / std::sqrt(static_cast<float>(max_len));
    E = register_parameter("E", rand({k, max_len}) * (2 * bound) - bound);
    F = register_parameter("F", rand({k, max_len}) * (2 * bound) - bound);
  }

  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                 const Tensor& bias = Tensor()) override {
    const int64_t T = keys.size(1);
    if (T > max_len)
      throw ValueError(where() + ": a sequence of " + std::to_string(T) + " keys is longer than max_len " +
                       std::to_string(max_len) + ", the length Linformer's projections E and F were built for");
    Heads h = project(queries, keys, values, valid_lens, mask, bias, /*takes_mask_bias=*/false);
    if (valid_lens.defined()) {  // (B, 1, K) → (B, 1, K, 1): padded keys and values become zero rows
      const Tensor keep = functional::key_padding_mask(valid_lens, T).unsqueeze(-1);
      h.k = h.k * keep;
      h.v = h.v * keep;
    }
    const Tensor e = E.narrow(1, 0, T), f = F.narrow(1, 0, T);  // (k, T)
    const Tensor projected_k = e.matmul(h.k), projected_v = f.matmul(h.v);  // (B, H, k, d)
    const float scale = 1.0f / std::sqrt(static_cast<float>(h.q.size(-1)));
    const Tensor weights = (h.q.matmul(projected_k.transpose(-2, -1)) * scale).softmax(-1);  // (B, H, Q, k)
    attention_weights = weights.detach();
    return output(functional::dropout(weights, dropout, is_training()).matmul(projected_v));
  }

  AttentionSupport supports() const override { return {.transform_qk = true, .features = true}; }
  Tensor dense_weights() const override { return Tensor(); }

  std::string extra_repr() const override {
    return "num_heads=" + std::to_string(num_heads) + ", k=" + std::to_string(k) + ", max_len=" + std::to_string(max_len);
  }

  int64_t max_len, k;
  Tensor E, F;  // (k, max_len): the projections of the keys and of the values
};

}  // namespace qkv::nn
