#include "nn/attention.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "nn/functional/attention.h"
#include "nn/functional/banded_attention.h"
#include "nn/functional/basic.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn {
namespace {

void check_dropout(const char* layer, float p) {
  if (!(p >= 0.0f && p < 1.0f))
    throw ValueError(std::string(layer) + ": dropout must be in [0, 1), got " + std::to_string(p));
}

// Throws unless x is (B, T, features) for the given batch size (any when B < 0) and features.
void check_input(const char* layer, const char* what, const Tensor& x, int64_t B, int64_t features) {
  if (x.dim() != 3 || (B >= 0 && x.size(0) != B) || x.size(2) != features)
    throw ShapeError(std::string(layer) + ": " + what + " of shape " + shape_str(x.shape()) + " must be (" +
                     (B >= 0 ? std::to_string(B) : std::string("B")) + ", T, " + std::to_string(features) +
                     ")");
}

void check_keys_values(const char* layer, const Tensor& keys, const Tensor& values) {
  if (values.dim() != 3 || values.size(0) != keys.size(0) || values.size(1) != keys.size(1))
    throw ShapeError(std::string(layer) + ": values of shape " + shape_str(values.shape()) +
                     " must pair with keys of shape " + shape_str(keys.shape()) + ": expected (" +
                     std::to_string(keys.size(0)) + ", " + std::to_string(keys.size(1)) + ", dv)");
}

// d2l's transpose_output: the heads (B, H, Q, d) → (B, Q, H, d) → (B, Q, D), side by side.
Tensor merge_heads(const Tensor& heads) {
  return heads.permute({0, 2, 1, 3}).reshape({heads.size(0), heads.size(2), heads.size(1) * heads.size(3)});
}

std::string dropout_repr(float p) { return "dropout=" + std::to_string(p); }

}  // namespace

// ---- DotProductAttention -----------------------------------------------------------------------

DotProductAttention::DotProductAttention(float p) : dropout(p) { check_dropout("DotProductAttention", p); }

Tensor DotProductAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                    const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  const functional::AttentionOutput out = functional::scaled_dot_product_attention(
      queries, keys, values, valid_lens, mask, bias, is_training() ? dropout : 0.0f);
  attention_weights = out.weights.detach();
  return out.output;
}

std::string DotProductAttention::extra_repr() const { return dropout_repr(dropout); }

// ---- AdditiveAttention -------------------------------------------------------------------------

AdditiveAttention::AdditiveAttention(int64_t key_size, int64_t query_size, int64_t num_hiddens, float p)
    : dropout(p) {
  check_dropout("AdditiveAttention", p);
  W_k = register_module("W_k", std::make_shared<Linear>(key_size, num_hiddens, false));
  W_q = register_module("W_q", std::make_shared<Linear>(query_size, num_hiddens, false));
  w_v = register_module("w_v", std::make_shared<Linear>(num_hiddens, 1, false));
}

Tensor AdditiveAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                  const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  check_input("AdditiveAttention", "queries", queries, -1, W_q->in_features);
  check_input("AdditiveAttention", "keys", keys, queries.size(0), W_k->in_features);
  check_keys_values("AdditiveAttention", keys, values);
  return forward_projected(queries, project_keys(keys), values, valid_lens, mask, bias);
}

Tensor AdditiveAttention::project_keys(const Tensor& keys) const {
  check_input("AdditiveAttention", "keys", keys, -1, W_k->in_features);
  return W_k->forward(keys);
}

Tensor AdditiveAttention::forward_projected(const Tensor& queries, const Tensor& projected_keys,
                                            const Tensor& values, const IndexTensor& valid_lens,
                                            const Tensor& mask, const Tensor& bias) {
  check_input("AdditiveAttention", "queries", queries, -1, W_q->in_features);
  check_input("AdditiveAttention", "projected keys", projected_keys, queries.size(0), W_k->out_features);
  check_keys_values("AdditiveAttention", projected_keys, values);
  // Every query meets every key by broadcasting: (B, Q, 1, h) + (B, 1, K, h) → (B, Q, K, h).
  const Tensor features = (W_q->forward(queries).unsqueeze(2) + projected_keys.unsqueeze(1)).tanh();
  const Tensor scores = w_v->forward(features).squeeze(-1);  // (B, Q, K)
  const Tensor weights = functional::masked_softmax(scores, valid_lens, mask, bias);
  attention_weights = weights.detach();
  return functional::dropout(weights, dropout, is_training()).matmul(values);
}

std::string AdditiveAttention::extra_repr() const { return dropout_repr(dropout); }

// ---- MultiHeadAttention ------------------------------------------------------------------------

MultiHeadAttention::MultiHeadAttention(int64_t key_size, int64_t query_size, int64_t value_size,
                                       int64_t num_hiddens, int64_t num_heads_, float p, bool bias)
    : num_heads(num_heads_) {
  if (num_heads <= 0 || num_hiddens % num_heads != 0)
    throw ValueError("MultiHeadAttention: num_hiddens " + std::to_string(num_hiddens) +
                     " must be a multiple of num_heads " + std::to_string(num_heads) +
                     " (each head takes num_hiddens / num_heads features)");
  attention = register_module("attention", std::make_shared<DotProductAttention>(p));
  W_q = register_module("W_q", std::make_shared<Linear>(query_size, num_hiddens, bias));
  W_k = register_module("W_k", std::make_shared<Linear>(key_size, num_hiddens, bias));
  W_v = register_module("W_v", std::make_shared<Linear>(value_size, num_hiddens, bias));
  W_o = register_module("W_o", std::make_shared<Linear>(num_hiddens, num_hiddens, bias));
}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  check_input("MultiHeadAttention", "queries", queries, -1, W_q->in_features);
  check_input("MultiHeadAttention", "keys", keys, queries.size(0), W_k->in_features);
  check_input("MultiHeadAttention", "values", values, queries.size(0), W_v->in_features);
  check_keys_values("MultiHeadAttention", keys, values);
  const Tensor out = packs_projections(queries, keys, values)
                         ? W_o->forward(attend_packed(queries, valid_lens, mask, bias))  // (B, Q, D)
                         : W_o->forward(attend_heads(queries, keys, values, valid_lens, mask, bias));
  if (!keeps_weights(queries.size(0), queries.size(1), keys.size(1)))
    attention_weights = attention->attention_weights = Tensor();
  return out;
}

bool MultiHeadAttention::keeps_weights(int64_t B, int64_t Q, int64_t K) const {
  const double bytes = static_cast<double>(B) * num_heads * Q * K * sizeof(float);
  return !is_training() || bytes <= static_cast<double>(recompute_weights_above);
}

// The heads of the three projections, transformed by the position scheme, and attend on them:
// (B, Q, D).
Tensor MultiHeadAttention::attend_heads(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                        const IndexTensor& valid_lens, const Tensor& mask,
                                        const Tensor& bias) {
  const int64_t D = W_o->in_features, d = D / num_heads;
  // (B, T, D) → (B, H, T, d): d2l's transpose_qkv without its final reshape, so a view.
  auto split_heads = [&](const Tensor& x) {
    return x.view({x.size(0), x.size(1), num_heads, d}).permute({0, 2, 1, 3});
  };
  Tensor q = split_heads(W_q->forward(queries)), k = split_heads(W_k->forward(keys));
  const Tensor v = split_heads(W_v->forward(values));
  if (positions) std::tie(q, k) = positions->transform_qk(q, k);
  return attend(q, k, v, valid_lens, mask, bias);
}

// Self-attention (one tensor as queries, keys and values) on the fused path, dense, with heads that
// no position scheme transforms: then the three projections can run as one.
bool MultiHeadAttention::packs_projections(const Tensor& queries, const Tensor& keys,
                                           const Tensor& values) const {
  const bool self = queries.impl() == keys.impl() && keys.impl() == values.impl();
  const bool biases =
      W_q->bias.defined() == W_k->bias.defined() && W_k->bias.defined() == W_v->bias.defined();
  return fused && self && biases && !(positions && positions->transforms_qk()) && !restriction.banded();
}

// attend for self-attention, the projections packed: x·[W_q; W_k; W_v]ᵀ (+ [b_q; b_k; b_v]) is one
// (B, T, 3D) product whose column blocks the fused op reads as Q, K and V, and whose gradient it
// writes as one tensor, so that backward is one product for dx and one for the stacked weights
// instead of three of each and a sum (the stacking copies 3·D² floats). The parameters stay three
// Linears, so names, checkpoints and the PyTorch mapping are those of the unpacked layer.
Tensor MultiHeadAttention::attend_packed(const Tensor& x, const IndexTensor& valid_lens, const Tensor& mask,
                                         const Tensor& bias) {
  const int64_t T = x.size(1), D = W_o->in_features;
  const Tensor weight = cat({W_q->weight, W_k->weight, W_v->weight}, 0);
  const Tensor qkv = W_q->bias.defined()
                         ? functional::linear(x, weight, cat({W_q->bias, W_k->bias, W_v->bias}, 0))
                         : functional::linear(x, weight, Tensor());
  if (positions) {  // it said it leaves the heads alone (transforms_qk); one that does not is still obeyed
    const auto heads = [&](int64_t block) {
      return qkv.narrow(2, block * D, D).view({x.size(0), T, num_heads, D / num_heads}).permute({0, 2, 1, 3});
    };
    const Tensor q = heads(0), k = heads(1);
    const auto [q2, k2] = positions->transform_qk(q, k);
    if (q2.impl() != q.impl() || k2.impl() != k.impl())
      return attend(q2, k2, heads(2), valid_lens, mask, bias);
  }
  const auto [all_mask, all_bias] = mask_and_bias(T, T, mask, bias);
  const functional::AttentionOutput out = functional::fused_attention_packed(
      qkv, num_heads, valid_lens, all_mask, all_bias, is_training() ? attention->dropout : 0.0f, nullptr,
      keeps_weights(x.size(0), T, T));
  attention->attention_weights = attention_weights = out.weights;
  return out.output;
}

// The scores of the heads q (B, H, Q, d) against k (B, H, K, d), restricted and biased as this
// layer's parts say, and the weighted sum of v, with the heads merged: (B, Q, D).
Tensor MultiHeadAttention::attend(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  const int64_t Q = q.size(2), K = k.size(2);
  if (restriction.banded()) {
    if (Q != K || mask.defined() || bias.defined())
      throw ValueError(
          "MultiHeadAttention: a window is computed on the band, for self-attention without a mask "
          "or bias of its own; got " +
          std::to_string(Q) + " queries, " + std::to_string(K) + " keys" +
          (mask.defined() ? ", a mask" : "") + (bias.defined() ? ", a bias" : ""));
    return merge_heads(attend_band(q, k, v, valid_lens));
  }
  const auto [all_mask, all_bias] = mask_and_bias(Q, K, mask, bias);
  if (fused) {
    const functional::AttentionOutput out = functional::fused_attention(
        q, k, v, valid_lens, all_mask, all_bias, is_training() ? attention->dropout : 0.0f, nullptr,
        keeps_weights(q.size(0), Q, K));
    attention->attention_weights = attention_weights = out.weights;
    return out.output;
  }
  const Tensor heads = attention->forward(q, k, v, valid_lens, all_mask, all_bias);
  attention_weights = attention->attention_weights;
  return merge_heads(heads);
}

Tensor MultiHeadAttention::attend_band(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const IndexTensor& valid_lens) {
  // A window as wide as the sequence or wider sees the same keys as one of T − 1.
  const int64_t w = std::min(restriction.window_size, std::max<int64_t>(q.size(2) - 1, 0));
  std::vector<int64_t> offsets(static_cast<size_t>(2 * w + 1));  // the band's offsets j − i: −w .. w
  for (int64_t o = 0; o <= 2 * w; ++o) offsets[o] = o - w;
  const Tensor offset_bias = positions ? positions->offset_bias(IndexTensor(offsets)) : Tensor();
  const functional::AttentionOutput out =
      functional::banded_attention(q, k, v, w, valid_lens, offset_bias, attention->dropout, is_training());
  attention_weights = out.weights.detach();
  return out.output;
}

std::pair<Tensor, Tensor> MultiHeadAttention::mask_and_bias(int64_t Q, int64_t K, const Tensor& mask,
                                                          const Tensor& bias) const {
  Tensor all_bias = bias.defined() && bias.dim() == 3 ? bias.unsqueeze(1) : bias;  // (B, Q, K): every head's
  if (const Tensor p = position_bias(Q, K); p.defined()) all_bias = all_bias.defined() ? all_bias + p : p;
  return {functional::mask_and(mask, restriction.dense_mask(Q, K)), all_bias};
}

// The position scheme's bias of Q queries against K keys, (1, H or 1, Q, K); undefined without one.
Tensor MultiHeadAttention::position_bias(int64_t Q, int64_t K) const {
  if (!positions || Q == 0 || K == 0) return Tensor();
  // The scheme's bias for each distinct offset j − i, from −(Q − 1) to K − 1: (H, Q + K − 1).
  const int64_t n = Q + K - 1;
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t o = 0; o < n; ++o) offsets[o] = o - (Q - 1);
  const Tensor b = positions->offset_bias(IndexTensor(offsets));
  if (!b.defined()) return b;
  if (b.dim() != 2 || b.size(1) != n || (b.size(0) != 1 && b.size(0) != num_heads))
    throw ShapeError("MultiHeadAttention: position scheme " + positions->type_name() +
                     " gave a bias of shape " + shape_str(b.shape()) + " for " + std::to_string(n) +
                     " offsets; expected (" + std::to_string(num_heads) + " or 1, " + std::to_string(n) +
                     ")");
  std::vector<int64_t> column(static_cast<size_t>(Q * K));  // pair (i, j) reads column j − i + Q − 1
  for (int64_t i = 0; i < Q; ++i)
    for (int64_t j = 0; j < K; ++j) column[i * K + j] = j - i + Q - 1;
  return b.index_select(1, IndexTensor(column)).view({1, b.size(0), Q, K});
}

std::string MultiHeadAttention::extra_repr() const {
  return "num_hiddens=" + std::to_string(W_o->in_features) + ", num_heads=" + std::to_string(num_heads) +
         (restriction.describe() != "full" ? ", attend=" + restriction.describe() : std::string());
}

// ---- AttentionRestriction ----------------------------------------------------------------------

AttentionRestriction AttentionRestriction::window(int64_t w) {
  if (w < 0) throw ValueError("AttentionRestriction::window: w must be >= 0, got " + std::to_string(w));
  AttentionRestriction r;
  r.window_size = w;
  return r;
}

AttentionRestriction AttentionRestriction::causal() {
  AttentionRestriction r;
  r.is_causal = true;
  return r;
}

AttentionRestriction AttentionRestriction::mask(Tensor allowed) {
  if (!allowed.defined() || allowed.dim() != 2)
    throw ShapeError("AttentionRestriction::mask: the mask must be a (Q, K) tensor, got " +
                     (allowed.defined() ? shape_str(allowed.shape()) : std::string("undefined")));
  AttentionRestriction r;
  r.allowed = std::move(allowed);
  return r;
}

Tensor AttentionRestriction::dense_mask(int64_t Q, int64_t K) const {
  if (banded()) return functional::window_mask(Q, K, window_size);
  if (is_causal) return functional::causal_mask(Q, K);
  if (allowed.defined() && (allowed.size(0) != Q || allowed.size(1) != K))
    throw ShapeError("AttentionRestriction: the mask of shape " + shape_str(allowed.shape()) +
                     " does not fit " + std::to_string(Q) + " queries and " + std::to_string(K) + " keys");
  return allowed;
}

std::string AttentionRestriction::describe() const {
  if (banded()) return "window=" + std::to_string(window_size);
  if (is_causal) return "causal";
  return allowed.defined() ? "mask" : "full";
}

}  // namespace qkv::nn
