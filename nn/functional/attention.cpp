#include "nn/functional/attention.h"

#include <cmath>
#include <limits>
#include <string>

#include "autograd/ops/attention.h"
#include "autograd/ops/row_lengths.h"
#include "autograd/ops/softmax.h"
#include "nn/functional/basic.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"

namespace qkv::nn::functional {
namespace {

// True when `shape` broadcasts to `target` without enlarging it.
bool broadcasts_to(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && shape[i] != target[lead + i]) return false;
  return true;
}

// A mask or bias made to broadcast against scores of shape `scores`: a 3-d (B, Q, K) one is shared
// by the heads of 4-d (B, H, Q, K) scores, so it gains the heads dim as size 1.
Tensor fit_to_scores(const Tensor& t, const Shape& scores, const char* op, const char* what) {
  const Tensor fitted = scores.size() == 4 && t.dim() == 3 ? t.unsqueeze(1) : t;
  if (!broadcasts_to(fitted.shape(), scores))
    throw ShapeError(std::string(op) + ": " + what + " of shape " + shape_str(t.shape()) +
                     " does not broadcast to the scores of shape " + shape_str(scores) +
                     ": expected (Q, K), (B, Q, K) or (B, H, Q, K) with sizes equal or 1");
  return fitted;
}

}  // namespace

Tensor masked_softmax(const Tensor& X, const IndexTensor& valid_lens) {
  return qkv::masked_softmax(X, valid_lens);  // the fused op of autograd/ops/softmax.cpp
}

Tensor masked_softmax(const Tensor& X, const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  return qkv::masked_softmax(X, valid_lens,
                             mask.defined() ? fit_to_scores(mask, X.shape(), "masked_softmax", "mask") : mask,
                             bias.defined() ? fit_to_scores(bias, X.shape(), "masked_softmax", "bias") : bias);
}

Tensor causal_mask(int64_t Q, int64_t K) {
  if (Q < 0 || K < 0)
    throw ValueError("causal_mask: sizes must be >= 0, got Q " + std::to_string(Q) + " and K " + std::to_string(K));
  return arange(static_cast<float>(K)).le(arange(static_cast<float>(Q)).unsqueeze(1));
}

Tensor window_mask(int64_t Q, int64_t K, int64_t window) {
  if (Q < 0 || K < 0 || window < 0)
    throw ValueError("window_mask: sizes and window must be >= 0, got Q " + std::to_string(Q) + ", K " +
                     std::to_string(K) + " and window " + std::to_string(window));
  const Tensor distance = (arange(static_cast<float>(K)) - arange(static_cast<float>(Q)).unsqueeze(1)).abs();
  return distance.le(static_cast<float>(window));
}

Tensor adjacency_mask(int64_t num_nodes, const std::vector<std::pair<int64_t, int64_t>>& edges, bool self_loops) {
  if (num_nodes < 0) throw ValueError("adjacency_mask: num_nodes must be >= 0, got " + std::to_string(num_nodes));
  Tensor mask = self_loops ? eye(num_nodes) : zeros({num_nodes, num_nodes});
  float* m = mask.data();
  for (const auto& [i, j] : edges) {
    if (i < 0 || i >= num_nodes || j < 0 || j >= num_nodes)
      throw IndexError("adjacency_mask: edge (" + std::to_string(i) + ", " + std::to_string(j) +
                       ") has a node outside [0, " + std::to_string(num_nodes) + ")");
    m[i * num_nodes + j] = m[j * num_nodes + i] = 1.0f;
  }
  return mask;
}

Tensor key_padding_mask(const IndexTensor& valid_lens, int64_t K) {
  if (!valid_lens.defined() || valid_lens.dim() < 1 || valid_lens.dim() > 2)
    throw ShapeError("key_padding_mask: valid_lens must be (B) or (B, Q), got shape " +
                     (valid_lens.defined() ? shape_str(valid_lens.shape()) : std::string("undefined")));
  if (K < 0) throw ValueError("key_padding_mask: K must be >= 0, got " + std::to_string(K));
  // The lengths masked_softmax accepts: a length past K would mask nothing and hide the mistake.
  check_valid_lengths("key_padding_mask", valid_lens, K);
  // d2l's sequence_mask: arange(K)[None, :] < valid_len[:, None], one row per length.
  const Tensor mask = sequence_mask(valid_lens, K);
  return valid_lens.dim() == 1 ? mask.unsqueeze(1) : mask;
}

Tensor mask_and(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a.ne(0.0f) * b.ne(0.0f);
}

AttentionOutput scaled_dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                             const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias,
                                             float dropout_p) {
  const int64_t rank = queries.dim();
  const bool fits = (rank == 3 || rank == 4) && keys.dim() == rank && values.dim() == rank &&
                    Shape(queries.shape().begin(), queries.shape().end() - 2) ==
                        Shape(keys.shape().begin(), keys.shape().end() - 2) &&
                    Shape(keys.shape().begin(), keys.shape().end() - 2) ==
                        Shape(values.shape().begin(), values.shape().end() - 2) &&
                    queries.size(-1) == keys.size(-1) && keys.size(-2) == values.size(-2);
  if (!fits)
    throw ShapeError("scaled_dot_product_attention: queries " + shape_str(queries.shape()) + ", keys " +
                     shape_str(keys.shape()) + " and values " + shape_str(values.shape()) +
                     " do not fit: expected (B, Q, d), (B, K, d) and (B, K, dv), or the same with a heads dim after B");
  Shape scores(queries.shape().begin(), queries.shape().end() - 1);  // (B, [H,] Q, K)
  scores.push_back(keys.size(-2));
  const char* op = "scaled_dot_product_attention";
  const FusedAttention out = composed_attention(
      queries, keys, values, valid_lens, mask.defined() ? fit_to_scores(mask, scores, op, "mask") : mask,
      bias.defined() ? fit_to_scores(bias, scores, op, "bias") : bias, dropout_p, default_generator());
  return {out.output, out.weights};
}

AttentionOutput fused_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias, float dropout_p,
                                Generator* gen, bool need_weights) {
  if (queries.dim() != 4)
    throw ShapeError("fused_attention: queries of shape " + shape_str(queries.shape()) + " must be (B, H, Q, d)");
  const Shape scores{queries.size(0), queries.size(1), queries.size(2), keys.dim() == 4 ? keys.size(2) : 0};
  const FusedAttention out = qkv::fused_attention(
      queries, keys, values, valid_lens, mask.defined() ? fit_to_scores(mask, scores, "fused_attention", "mask") : mask,
      bias.defined() ? fit_to_scores(bias, scores, "fused_attention", "bias") : bias, dropout_p,
      gen ? *gen : default_generator(), need_weights);
  return {out.output, out.weights};
}

AttentionOutput fused_attention_packed(const Tensor& qkv, int64_t heads, const IndexTensor& valid_lens,
                                       const Tensor& mask, const Tensor& bias, float dropout_p, Generator* gen,
                                       bool need_weights) {
  if (qkv.dim() != 3 || heads <= 0)
    throw ShapeError("fused_attention_packed: projection of shape " + shape_str(qkv.shape()) +
                     " must be (B, T, 3·H·d)");
  const Shape scores{qkv.size(0), heads, qkv.size(1), qkv.size(1)};
  const char* op = "fused_attention_packed";
  const FusedAttention out = qkv::fused_attention_packed(
      qkv, heads, valid_lens, mask.defined() ? fit_to_scores(mask, scores, op, "mask") : mask,
      bias.defined() ? fit_to_scores(bias, scores, op, "bias") : bias, dropout_p, gen ? *gen : default_generator(),
      need_weights);
  return {out.output, out.weights};
}

Projections in_projections(const Tensor& queries, const Tensor& keys, const Tensor& values, const Tensor& weight_q,
                           const Tensor& bias_q, const Tensor& weight_k, const Tensor& bias_k, const Tensor& weight_v,
                           const Tensor& bias_v) {
  const Tensor qkv = packed_in_projection(queries, keys, values, weight_q, bias_q, weight_k, bias_k, weight_v, bias_v);
  if (!qkv.defined())
    return {linear(queries, weight_q, bias_q), linear(keys, weight_k, bias_k), linear(values, weight_v, bias_v)};
  const int64_t D = weight_q.size(0);
  return {qkv.narrow(2, 0, D), qkv.narrow(2, D, D), qkv.narrow(2, 2 * D, D)};
}

Tensor packed_in_projection(const Tensor& queries, const Tensor& keys, const Tensor& values, const Tensor& weight_q,
                            const Tensor& bias_q, const Tensor& weight_k, const Tensor& bias_k, const Tensor& weight_v,
                            const Tensor& bias_v) {
  const bool self = queries.impl() == keys.impl() && keys.impl() == values.impl();
  const bool biases = bias_q.defined() == bias_k.defined() && bias_k.defined() == bias_v.defined();
  if (reference_mode() || !self || !biases) return Tensor();
  return linear(queries, cat({weight_q, weight_k, weight_v}, 0),
                bias_q.defined() ? cat({bias_q, bias_k, bias_v}, 0) : Tensor());  // (B, T, 3D)
}

Tensor split_heads(const Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).permute({0, 2, 1, 3});
}

Tensor merge_heads(const Tensor& heads) {
  return heads.permute({0, 2, 1, 3}).reshape({heads.size(0), heads.size(2), heads.size(1) * heads.size(3)});
}

}  // namespace qkv::nn::functional
