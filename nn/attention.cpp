#include "nn/attention.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "nn/attention_checks.h"
#include "nn/functional/attention.h"
#include "nn/functional/banded_attention.h"
#include "nn/functional/basic.h"
#include "tensor/error.h"

namespace qkv::nn {
namespace {

// A causal restriction as valid lengths per query, min(valid length, i + 1): the keys the causal
// mask (key j ≤ query i) would hide, in the form that lets the fused kernel skip every tile above
// the diagonal instead of reading a (Q, K) mask. valid_lens (B), (B, Q) or undefined → (B, Q).
IndexTensor causal_lengths(const IndexTensor& valid_lens, int64_t B, int64_t Q, int64_t K) {
  const bool per_query = valid_lens.defined() && valid_lens.dim() == 2;
  std::vector<int64_t> lens(static_cast<size_t>(B * Q));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Q; ++i) {
      const int64_t given = !valid_lens.defined() ? K : valid_lens.data()[per_query ? b * Q + i : b];
      lens[b * Q + i] = std::min({given, i + 1, K});
    }
  return IndexTensor(std::move(lens), {B, Q});
}

std::string dropout_repr(float p) { return "dropout=" + std::to_string(p); }

}  // namespace

// ---- DotProductAttention -----------------------------------------------------------------------

DotProductAttention::DotProductAttention(float p) : dropout(p) { check_dropout("DotProductAttention", p); }

Tensor DotProductAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                    const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  if (queries.dim() >= 2 && keys.dim() >= 2)
    check_valid_lens(*this, valid_lens, queries.size(0), queries.size(-2), keys.size(-2));
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
  check_input(*this, "queries", queries, -1, W_q->in_features);
  check_input(*this, "keys", keys, queries.size(0), W_k->in_features);
  check_keys_values(*this, keys, values);
  return forward_projected(queries, project_keys(keys), values, valid_lens, mask, bias);
}

Tensor AdditiveAttention::project_keys(const Tensor& keys) const {
  check_input(*this, "keys", keys, -1, W_k->in_features);
  return W_k->forward(keys);
}

Tensor AdditiveAttention::forward_projected(const Tensor& queries, const Tensor& projected_keys,
                                            const Tensor& values, const IndexTensor& valid_lens,
                                            const Tensor& mask, const Tensor& bias) {
  check_input(*this, "queries", queries, -1, W_q->in_features);
  check_input(*this, "projected keys", projected_keys, queries.size(0), W_k->out_features);
  check_keys_values(*this, projected_keys, values);
  check_valid_lens(*this, valid_lens, queries.size(0), queries.size(1), projected_keys.size(1));
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
                                       int64_t num_hiddens, int64_t num_heads, float p, bool bias)
    : ProjectedAttention(Sizes{key_size, query_size, value_size, num_hiddens, num_heads}, p, bias,
                         "MultiHeadAttention") {}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  check_inputs(queries, keys, values, valid_lens,
               restriction.banded() ? "a window takes one length per sequence" : nullptr);
  const int64_t B = queries.size(0), Q = queries.size(1), K = keys.size(1);
  const bool keep = keeps_weights(B, Q, K);
  functional::AttentionOutput out;
  if (restriction.banded()) {
    out = attend_window(queries, keys, values, valid_lens, mask, bias);
  } else if (fused && restriction.is_causal) {
    // Told as lengths, the causal restriction lets the kernel skip every tile above the diagonal.
    const auto [all_mask, all_bias] = mask_and_bias(Q, K, mask, bias, /*causal_mask=*/false);
    out = attend_inputs(queries, keys, values, causal_lengths(valid_lens, B, Q, K), all_mask, all_bias, keep);
  } else {
    const auto [all_mask, all_bias] = mask_and_bias(Q, K, mask, bias);
    out = attend_inputs(queries, keys, values, valid_lens, all_mask, all_bias, keep);
  }
  attention_weights = keep ? out.weights.detach() : Tensor();
  return W_o->forward(out.output);
}

Tensor MultiHeadAttention::forward_step(const Tensor& x, Tensor& keys, Tensor& values, int64_t position) {
  if (is_training()) throw StateError(where() + ": forward_step decodes in eval mode; call eval() first");
  if (!restriction.is_causal)
    throw ValueError(where() + ": forward_step decodes a causal layer (each token attends to those before it); "
                     "this one's restriction is " + restriction.describe());
  check_input(*this, "x", x, -1, W_q->in_features);
  const int64_t B = x.size(0), D = W_q->out_features, d = D / num_heads;
  if (x.size(1) != 1)
    throw ShapeError(where() + ": forward_step takes one token per sequence, x (B, 1, " +
                     std::to_string(W_q->in_features) + "); got " + shape_str(x.shape()));
  for (const Tensor* cache : {&keys, &values}) {
    if (cache->dim() != 4 || cache->size(0) != B || cache->size(1) != num_heads || cache->size(3) != d ||
        !cache->is_contiguous())
      throw ShapeError(where() + ": a cache of shape " + shape_str(cache->shape()) + " must be contiguous (" +
                       std::to_string(B) + ", " + std::to_string(num_heads) + ", capacity, " + std::to_string(d) + ")");
  }
  if (keys.size(2) != values.size(2))
    throw ShapeError(where() + ": the key cache holds " + std::to_string(keys.size(2)) +
                     " positions and the value cache " + std::to_string(values.size(2)) +
                     "; they must hold the same number");
  if (position < 0 || position >= keys.size(2))
    throw IndexError(where() + ": position " + std::to_string(position) + " is outside the cache's capacity " +
                     std::to_string(keys.size(2)) + " (positions 0 .. " + std::to_string(keys.size(2) - 1) + ")");
  NoGradGuard no_grad;
  Heads h = split_projections(x, x, x);
  if (positions) std::tie(h.q, h.k) = positions->transform_qk_at(h.q, h.k, position);
  keys.narrow(2, position, 1).copy_(h.k);
  values.narrow(2, position, 1).copy_(h.v);
  const Heads cached{h.q, keys.narrow(2, 0, position + 1), values.narrow(2, 0, position + 1)};
  const functional::AttentionOutput out =
      attend(cached, IndexTensor(), Tensor(), position_bias(1, position + 1, position), /*need_weights=*/true);
  attention_weights = out.weights.detach();
  return W_o->forward(out.output);
}

Attention::Memory MultiHeadAttention::prepare_memory(const Tensor& memory) const {
  if (positions || restriction.banded())
    throw ValueError(where() + ": prepare_memory is for cross-attention, without a position scheme or a window; "
                     "this layer has " + (positions ? "position scheme " + positions->type_name() : "a window"));
  check_input(*this, "memory", memory, -1, W_k->in_features);
  if (W_v->in_features != W_k->in_features)
    throw ShapeError(where() + ": prepare_memory reads one memory as keys and values, but W_k takes " +
                     std::to_string(W_k->in_features) + " features and W_v " + std::to_string(W_v->in_features));
  // The projections forward makes of keys and values that are not the queries (in_projections).
  return {functional::split_heads(W_k->forward(memory), num_heads),
          functional::split_heads(W_v->forward(memory), num_heads)};
}

Tensor MultiHeadAttention::forward_memory(const Tensor& queries, const Memory& memory, const IndexTensor& valid_lens) {
  check_input(*this, "queries", queries, memory.keys.defined() ? memory.keys.size(0) : -1, W_q->in_features);
  const int64_t d = W_q->out_features / num_heads;
  for (const Tensor* t : {&memory.keys, &memory.values})
    if (!t->defined() || t->dim() != 4 || t->size(0) != queries.size(0) || t->size(1) != num_heads ||
        t->size(3) != d || t->size(2) != memory.keys.size(2))
      throw ShapeError(where() + ": a prepared memory must hold keys and values (" + std::to_string(queries.size(0)) +
                       ", " + std::to_string(num_heads) + ", S, " + std::to_string(d) + ") from prepare_memory; got " +
                       (t->defined() ? shape_str(t->shape()) : std::string("undefined")));
  const int64_t B = queries.size(0), Q = queries.size(1), K = memory.keys.size(2);
  check_valid_lens(*this, valid_lens, B, Q, K);
  const bool keep = keeps_weights(B, Q, K);
  const auto [all_mask, all_bias] = mask_and_bias(Q, K, Tensor(), Tensor());
  const Heads h{functional::split_heads(W_q->forward(queries), num_heads), memory.keys, memory.values};
  const functional::AttentionOutput out = attend(h, valid_lens, all_mask, all_bias, keep);
  attention_weights = keep ? out.weights.detach() : Tensor();
  return W_o->forward(out.output);
}

bool MultiHeadAttention::keeps_weights(int64_t B, int64_t Q, int64_t K) const {
  const double bytes = static_cast<double>(B) * num_heads * Q * K * sizeof(float);
  return !is_training() || bytes <= static_cast<double>(recompute_weights_above);
}

// One route per mode below the fused op: its kernel by default, composed_attention in the reference
// mode (autograd/ops/attention.h). `fused` false composes in either mode.
functional::AttentionOutput MultiHeadAttention::attend(const Heads& h, const IndexTensor& valid_lens,
                                                       const Tensor& mask, const Tensor& bias, bool need_weights) {
  const float p = is_training() ? dropout : 0.0f;
  if (fused) return functional::fused_attention(h.q, h.k, h.v, valid_lens, mask, bias, p, nullptr, need_weights);
  const functional::AttentionOutput out =
      functional::scaled_dot_product_attention(h.q, h.k, h.v, valid_lens, mask, bias, p);
  return {functional::merge_heads(out.output), out.weights};
}

// Self-attention whose heads are the projection's column blocks as they are (no position scheme
// transforms q and k), or with its Q and K turned by a scheme that can (rotary: transforms_packed),
// runs the fused op on the one (B, T, 3·H·d) product (fused_attention_packed): its backward writes
// one gradient for the product, where the heads' three gradients would each be scattered into a
// zero (B, T, 3·H·d) tensor and summed; the same values and gradients to the bit. A scheme that
// does not say it transforms the heads (PositionScheme::transforms_qk) is still asked, and heads it
// replaced are attended as they are. Everything else projects the heads apart
// (ProjectedAttention::project_heads).
functional::AttentionOutput MultiHeadAttention::attend_inputs(const Tensor& queries, const Tensor& keys,
                                                              const Tensor& values, const IndexTensor& valid_lens,
                                                              const Tensor& mask, const Tensor& bias,
                                                              bool need_weights) {
  const bool turns = positions && positions->transforms_qk();
  if (fused && (!turns || positions->transforms_packed())) {
    const Tensor qkv = functional::packed_in_projection(queries, keys, values, W_q->weight, W_q->bias, W_k->weight,
                                                        W_k->bias, W_v->weight, W_v->bias);
    if (qkv.defined()) {
      if (turns)
        return functional::fused_attention_packed(positions->transform_packed(qkv, num_heads), num_heads, valid_lens,
                                                  mask, bias, is_training() ? dropout : 0.0f, nullptr, need_weights);
      if (positions) {
        const int64_t D = W_q->out_features;
        const Heads h{functional::split_heads(qkv.narrow(2, 0, D), num_heads),
                      functional::split_heads(qkv.narrow(2, D, D), num_heads),
                      functional::split_heads(qkv.narrow(2, 2 * D, D), num_heads)};
        const auto [q, k] = positions->transform_qk(h.q, h.k);
        if (q.impl() != h.q.impl() || k.impl() != h.k.impl())
          return attend(Heads{q, k, h.v}, valid_lens, mask, bias, need_weights);
      }
      return functional::fused_attention_packed(qkv, num_heads, valid_lens, mask, bias,
                                                is_training() ? dropout : 0.0f, nullptr, need_weights);
    }
  }
  return attend(project_heads(queries, keys, values), valid_lens, mask, bias, need_weights);
}

// A window: each query sees the keys within ±w of it, computed on the band only (self-attention).
functional::AttentionOutput MultiHeadAttention::attend_window(const Tensor& queries, const Tensor& keys,
                                                              const Tensor& values, const IndexTensor& valid_lens,
                                                              const Tensor& mask, const Tensor& bias) {
  const int64_t T = queries.size(1);
  if (keys.size(1) != T || mask.defined() || bias.defined())
    throw ValueError(
        where() + ": a window is computed on the band, for self-attention without a mask "
        "or bias of its own; got " +
        std::to_string(T) + " queries, " + std::to_string(keys.size(1)) + " keys" +
        (mask.defined() ? ", a mask" : "") + (bias.defined() ? ", a bias" : ""));
  const auto [q, k, v] = project_heads(queries, keys, values);
  // A window as wide as the sequence or wider sees the same keys as one of T − 1.
  const int64_t w = std::min(restriction.window_size, std::max<int64_t>(T - 1, 0));
  std::vector<int64_t> offsets(static_cast<size_t>(2 * w + 1));  // the band's offsets j − i: −w .. w
  for (int64_t o = 0; o <= 2 * w; ++o) offsets[o] = o - w;
  const Tensor offset_bias = positions ? positions->offset_bias(IndexTensor(offsets)) : Tensor();
  const functional::AttentionOutput out =
      functional::banded_attention(q, k, v, w, valid_lens, offset_bias, dropout, is_training());
  return {functional::merge_heads(out.output), out.weights};
}

std::pair<Tensor, Tensor> MultiHeadAttention::mask_and_bias(int64_t Q, int64_t K, const Tensor& mask,
                                                          const Tensor& bias, bool causal_mask) const {
  Tensor all_bias = bias.defined() && bias.dim() == 3 ? bias.unsqueeze(1) : bias;  // (B, Q, K): every head's
  if (const Tensor p = position_bias(Q, K); p.defined()) all_bias = all_bias.defined() ? all_bias + p : p;
  if (restriction.is_causal && !causal_mask) return {mask, all_bias};
  return {functional::mask_and(mask, restriction.dense_mask(Q, K)), all_bias};
}

Tensor MultiHeadAttention::position_bias(int64_t Q, int64_t K, int64_t first_query) const {
  return position_scores_bias(positions.get(), num_heads, Q, K, first_query, *this);
}

Tensor MultiHeadAttention::dense_weights() const {
  const bool band = restriction.banded() && attention_weights.defined();
  return band ? functional::band_to_dense(attention_weights) : attention_weights;
}

std::string MultiHeadAttention::extra_repr() const {
  return "num_hiddens=" + std::to_string(W_o->in_features) + ", num_heads=" + std::to_string(num_heads) + ", " +
         dropout_repr(dropout) +
         (restriction.describe() != "full" ? ", attend=" + restriction.describe() : std::string()) +
         (fused ? "" : ", fused=false");
}

}  // namespace qkv::nn
