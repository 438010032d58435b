// Talking-heads attention (Shazeer, Lan, Cheng, Ding & Hou 2020, "Talking-Heads Attention",
// section 4): in multi-head attention each head computes its weights alone; here the heads mix,
// once before the softmax and once after, through two learned (H, H) matrices:
//
//   L_h = Q_h·K_hᵀ/√d + bias_h                         each head's logits (B, H, Q, K)
//   L'_g = Σ_h L_h · P_l[h, g]                          the logits mixed across heads
//   W_g = masked_softmax(L'_g)                          over the visible keys
//   W'_g = Σ_h W_h · P_w[h, g]                          the weights mixed across heads
//   out_g = dropout(W'_g) · V_g,  then W_o as in multi-head attention
//
// The paper lets the number of heads change between the mixes (h_k, h, h_v); here all three are H,
// the case its Table 1 calls "talking-heads" at equal heads. P_l and P_w start as the identity, so
// a fresh layer computes multi-head attention exactly (a test holds it to that), and training
// learns how the heads talk. The cost over multi-head attention is two (H, H) products per score.
//
// The mask (valid lengths, a causal or an arbitrary mask) acts on the mixed logits, so that a hidden
// key gets weight 0 in every head after both mixes: the mask is shared by the heads, and a mixed
// weight is a sum of weights that are all 0 there. A score bias by offset (relative, ALiBi) is added
// to each head's logits before the mix, and rotary positions transform q and k; a window is refused
// (it is computed on the band, where the heads' logits are not formed as (Q, K) matrices).
// attention_weights keeps W' (B, H, Q, K), the weights that multiply the values.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "nn/attention_interface.h"
#include "nn/functional/attention.h"
#include "nn/functional/basic.h"
#include "tensor/factories.h"

namespace qkv::nn {

class TalkingHeadsAttention : public ProjectedAttention {
 public:
  explicit TalkingHeadsAttention(const AttentionSetup& setup)
      : ProjectedAttention(setup, "TalkingHeadsAttention"), restriction(setup.attend) {
    P_l = register_parameter("P_l", eye(setup.num_heads));
    P_w = register_parameter("P_w", eye(setup.num_heads));
  }

  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const IndexTensor& valid_lens = IndexTensor(), const Tensor& mask = Tensor(),
                 const Tensor& bias = Tensor()) override {
    const Heads h = project(queries, keys, values, valid_lens, mask, bias, /*takes_mask_bias=*/true);
    const int64_t Q = queries.size(1), K = keys.size(1);
    const float scale = 1.0f / std::sqrt(static_cast<float>(h.q.size(-1)));
    Tensor logits = h.q.matmul(h.k.transpose(-2, -1)) * scale;  // (B, H, Q, K)
    if (bias.defined()) logits = logits + (bias.dim() == 3 ? bias.unsqueeze(1) : bias);
    if (const Tensor p = position_scores_bias(positions.get(), num_heads, Q, K, 0, *this); p.defined())
      logits = logits + p;
    const Tensor all_mask = functional::mask_and(mask, restriction.dense_mask(Q, K));
    const Tensor weights = mix_heads(functional::masked_softmax(mix_heads(logits, P_l), valid_lens, all_mask), P_w);
    attention_weights = weights.detach();
    return output(functional::dropout(weights, dropout, is_training()).matmul(h.v));
  }

  AttentionSupport supports() const override {
    return {.offset_bias = true, .transform_qk = true, .causal = true, .mask = true};
  }

  // x (B, H, Q, K) → (B, H, Q, K): out[:, g] = Σ_h x[:, h] · P[h, g], one (H, H) product per score.
  static Tensor mix_heads(const Tensor& x, const Tensor& P) {
    return x.permute({0, 2, 3, 1}).matmul(P).permute({0, 3, 1, 2});
  }

  std::string extra_repr() const override {
    return "num_heads=" + std::to_string(num_heads) + ", attend=" + restriction.describe();
  }

  AttentionRestriction restriction;
  Tensor P_l, P_w;  // (H, H): the mixes of the logits and of the weights
};

}  // namespace qkv::nn
