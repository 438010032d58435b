#include "nn/attention.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "autograd/grad_mode.h"
#include "autograd/ops/row_lengths.h"
#include "nn/functional/attention.h"
#include "nn/functional/banded_attention.h"
#include "nn/functional/basic.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/reference_mode.h"

namespace qkv::nn {
namespace {

void check_dropout(const char* layer, float p) {
  if (!(p >= 0.0f && p < 1.0f))
    throw ValueError(std::string(layer) + ": dropout must be in [0, 1), got " + std::to_string(p));
}

// Throws unless x is (B, T, features) for the given batch size (any when B < 0) and features,
// naming the layer by its place in the model (Module::where(), computed only for the error).
void check_input(const Module& layer, const char* what, const Tensor& x, int64_t B, int64_t features) {
  if (x.dim() != 3 || (B >= 0 && x.size(0) != B) || x.size(2) != features)
    throw ShapeError(layer.where() + ": " + what + " of shape " + shape_str(x.shape()) + " must be (" +
                     (B >= 0 ? std::to_string(B) : std::string("B")) + ", T, " + std::to_string(features) +
                     ")");
}

void check_keys_values(const Module& layer, const Tensor& keys, const Tensor& values) {
  if (values.dim() != 3 || values.size(0) != keys.size(0) || values.size(1) != keys.size(1))
    throw ShapeError(layer.where() + ": values of shape " + shape_str(values.shape()) +
                     " must pair with keys of shape " + shape_str(keys.shape()) + ": expected (" +
                     std::to_string(keys.size(0)) + ", " + std::to_string(keys.size(1)) + ", dv)");
}

// valid_lens as the attention layers take it, checked before any path is chosen so that the error
// names the layer and not the op the configuration happens to run: undefined, (B) or, unless
// `per_example_only` says why not (a window, computed on the band), (B, Q); each length from 0 to K.
void check_valid_lens(const Module& layer, const IndexTensor& valid_lens, int64_t B, int64_t Q, int64_t K,
                      const char* per_example_only = nullptr) {
  if (!valid_lens.defined()) return;
  const Shape& s = valid_lens.shape();
  if (s != Shape{B} && (per_example_only || s != Shape{B, Q}))
    throw ShapeError(layer.where() + ": valid_lens of shape " + shape_str(s) + " does not fit " +
                     std::to_string(B) + " sequences of " + std::to_string(Q) + " queries: expected (" +
                     std::to_string(B) + ")" +
                     (per_example_only ? std::string(" (") + per_example_only + ")"
                                       : " or (" + std::to_string(B) + "," + std::to_string(Q) + ")"));
  const int64_t* v = valid_lens.data();
  for (int64_t i = 0; i < valid_lens.numel(); ++i)
    if (v[i] < 0 || v[i] > K) check_valid_lengths(layer.where(), valid_lens, K, ", the number of keys");
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
                                       int64_t num_hiddens, int64_t num_heads_, float p, bool bias)
    : num_heads(num_heads_), dropout(p) {
  if (num_heads <= 0 || num_hiddens % num_heads != 0)
    throw ValueError("MultiHeadAttention: num_hiddens " + std::to_string(num_hiddens) +
                     " must be a multiple of num_heads " + std::to_string(num_heads) +
                     " (each head takes num_hiddens / num_heads features)");
  check_dropout("MultiHeadAttention", p);
  W_q = register_module("W_q", std::make_shared<Linear>(query_size, num_hiddens, bias));
  W_k = register_module("W_k", std::make_shared<Linear>(key_size, num_hiddens, bias));
  W_v = register_module("W_v", std::make_shared<Linear>(value_size, num_hiddens, bias));
  W_o = register_module("W_o", std::make_shared<Linear>(num_hiddens, num_hiddens, bias));
}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const IndexTensor& valid_lens, const Tensor& mask, const Tensor& bias) {
  check_input(*this, "queries", queries, -1, W_q->in_features);
  check_input(*this, "keys", keys, queries.size(0), W_k->in_features);
  check_input(*this, "values", values, queries.size(0), W_v->in_features);
  check_keys_values(*this, keys, values);
  check_valid_lens(*this, valid_lens, queries.size(0), queries.size(1), keys.size(1),
                   restriction.banded() ? "a window takes one length per sequence" : nullptr);
  functional::AttentionOutput out;
  if (restriction.banded())
    out = attend_window(queries, keys, values, valid_lens, mask, bias);
  else if (fused && !reference_mode())
    out = attend_fused(queries, keys, values, valid_lens, mask, bias);
  else
    out = attend_composed(queries, keys, values, valid_lens, mask, bias);
  attention_weights = keeps_weights(queries.size(0), queries.size(1), keys.size(1)) ? out.weights.detach() : Tensor();
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
  if (position < 0 || position >= keys.size(2) || keys.size(2) != values.size(2))
    throw IndexError(where() + ": position " + std::to_string(position) + " is outside the cache's capacity " +
                     std::to_string(keys.size(2)));
  NoGradGuard no_grad;
  Tensor q = functional::split_heads(W_q->forward(x), num_heads);
  Tensor k = functional::split_heads(W_k->forward(x), num_heads);
  const Tensor v = functional::split_heads(W_v->forward(x), num_heads);
  if (positions) std::tie(q, k) = positions->transform_qk_at(q, k, position);
  keys.narrow(2, position, 1).copy_(k);
  values.narrow(2, position, 1).copy_(v);
  const Tensor K = keys.narrow(2, 0, position + 1), V = values.narrow(2, 0, position + 1);
  const Tensor bias = position_bias(1, position + 1, position);
  functional::AttentionOutput out;
  if (fused && !reference_mode()) {
    out = functional::fused_attention(q, K, V, IndexTensor(), Tensor(), bias);
  } else {
    out = functional::scaled_dot_product_attention(q, K, V, IndexTensor(), Tensor(), bias);
    out.output = functional::merge_heads(out.output);
  }
  attention_weights = out.weights.detach();
  return W_o->forward(out.output);
}

bool MultiHeadAttention::keeps_weights(int64_t B, int64_t Q, int64_t K) const {
  const double bytes = static_cast<double>(B) * num_heads * Q * K * sizeof(float);
  return !is_training() || bytes <= static_cast<double>(recompute_weights_above);
}

// The fused path: one op from the projections to the merged heads (it packs the projections of
// self-attention itself), the position scheme applied to the heads in between.
functional::AttentionOutput MultiHeadAttention::attend_fused(const Tensor& queries, const Tensor& keys,
                                                             const Tensor& values, const IndexTensor& valid_lens,
                                                             const Tensor& mask, const Tensor& bias) {
  functional::HeadTransform transform;
  if (positions) {
    transform.apply = [scheme = positions.get()](const Tensor& q, const Tensor& k) {
      return scheme->transform_qk(q, k);
    };
    transform.replaces_heads = positions->transforms_qk();
  }
  const auto [all_mask, all_bias] = mask_and_bias(queries.size(1), keys.size(1), mask, bias);
  return functional::fused_multi_head_attention(
      queries, keys, values, {W_q->weight, W_k->weight, W_v->weight, W_q->bias, W_k->bias, W_v->bias}, num_heads,
      transform, valid_lens, all_mask, all_bias, is_training() ? dropout : 0.0f, nullptr,
      keeps_weights(queries.size(0), queries.size(1), keys.size(1)));
}

// The heads of the three projections, (B, H, ·, d) views, the queries and keys transformed by the
// position scheme.
MultiHeadAttention::Heads MultiHeadAttention::project_heads(const Tensor& queries, const Tensor& keys,
                                                            const Tensor& values) const {
  Heads h{functional::split_heads(W_q->forward(queries), num_heads),
          functional::split_heads(W_k->forward(keys), num_heads),
          functional::split_heads(W_v->forward(values), num_heads)};
  if (positions) std::tie(h.q, h.k) = positions->transform_qk(h.q, h.k);
  return h;
}

// The composed path, d2l's MultiHeadAttention op by op: project, split the heads, attend, merge.
functional::AttentionOutput MultiHeadAttention::attend_composed(const Tensor& queries, const Tensor& keys,
                                                                const Tensor& values, const IndexTensor& valid_lens,
                                                                const Tensor& mask, const Tensor& bias) {
  const auto [q, k, v] = project_heads(queries, keys, values);
  const auto [all_mask, all_bias] = mask_and_bias(queries.size(1), keys.size(1), mask, bias);
  const functional::AttentionOutput out = functional::scaled_dot_product_attention(
      q, k, v, valid_lens, all_mask, all_bias, is_training() ? dropout : 0.0f);
  return {functional::merge_heads(out.output), out.weights};
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
                                                          const Tensor& bias) const {
  Tensor all_bias = bias.defined() && bias.dim() == 3 ? bias.unsqueeze(1) : bias;  // (B, Q, K): every head's
  if (const Tensor p = position_bias(Q, K); p.defined()) all_bias = all_bias.defined() ? all_bias + p : p;
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

// ---- Attention, ProjectedAttention ------------------------------------------------------------

Tensor Attention::forward_step(const Tensor&, Tensor&, Tensor&, int64_t) {
  throw ValueError(where() + ": this attention mechanism does not decode with a key/value cache");
}

namespace {

std::string support_list(const AttentionSupport& s) {
  std::string list = "valid lengths, positions on the input";
  if (s.transform_qk) list += ", positions on q and k";
  if (s.offset_bias) list += ", score biases by offset";
  if (s.window) list += ", a window";
  if (s.causal) list += ", causal";
  if (s.mask) list += ", a mask";
  return list;
}

}  // namespace

void check_supported(const Attention& attention, const AttentionSetup& setup, const std::string& where) {
  const AttentionSupport s = attention.supports();
  std::string missing;
  if (PositionScheme* p = setup.positions.get()) {
    // A scheme biases scores iff its offset_bias gives a tensor (the default gives none).
    if (!s.offset_bias && p->offset_bias(IndexTensor(std::vector<int64_t>{0})).defined())
      missing = "position scheme " + p->type_name() + " (a score bias by offset)";
    else if (!s.transform_qk && p->transforms_qk())
      missing = "position scheme " + p->type_name() + " (it transforms queries and keys)";
  }
  const AttentionRestriction& r = setup.attend;
  if (missing.empty() && ((r.banded() && !s.window) || (r.is_causal && !s.causal) || (r.allowed.defined() && !s.mask)))
    missing = "attend=" + r.describe();
  if (missing.empty() && setup.features != 0 && !s.features)
    missing = "features " + std::to_string(setup.features) + " (it is exact: it has no approximation size)";
  if (!missing.empty())
    throw ValueError(where + ": attention " + attention.type_name() + " does not support " + missing +
                     "; it takes " + support_list(s));
}

ProjectedAttention::ProjectedAttention(const AttentionSetup& s, const std::string& type)
    : num_heads(s.num_heads), dropout(s.dropout), positions(s.positions) {
  if (s.num_heads <= 0 || s.num_hiddens <= 0 || s.num_hiddens % s.num_heads != 0)
    throw ValueError(type + ": num_hiddens " + std::to_string(s.num_hiddens) + " must be a positive multiple of num_heads " +
                     std::to_string(s.num_heads));
  check_dropout(type.c_str(), s.dropout);
  const int64_t D = s.num_hiddens;
  W_q = register_module("W_q", std::make_shared<Linear>(D, D, s.use_bias));
  W_k = register_module("W_k", std::make_shared<Linear>(D, D, s.use_bias));
  W_v = register_module("W_v", std::make_shared<Linear>(D, D, s.use_bias));
  W_o = register_module("W_o", std::make_shared<Linear>(D, D, s.use_bias));
}

ProjectedAttention::Heads ProjectedAttention::project(const Tensor& queries, const Tensor& keys,
                                                      const Tensor& values, const IndexTensor& valid_lens,
                                                      const Tensor& mask, const Tensor& bias,
                                                      bool takes_mask_bias) const {
  check_input(*this, "queries", queries, -1, W_q->in_features);
  check_input(*this, "keys", keys, queries.size(0), W_k->in_features);
  check_input(*this, "values", values, queries.size(0), W_v->in_features);
  check_keys_values(*this, keys, values);
  check_valid_lens(*this, valid_lens, queries.size(0), queries.size(1), keys.size(1),
                   "this mechanism takes one length per sequence");
  if (!takes_mask_bias && (mask.defined() || bias.defined()))
    throw ValueError(where() + ": takes no mask or score bias of a caller's own; got" +
                     (mask.defined() ? std::string(" a mask") : std::string()) + (bias.defined() ? " a bias" : ""));
  Heads h{functional::split_heads(W_q->forward(queries), num_heads),
          functional::split_heads(W_k->forward(keys), num_heads),
          functional::split_heads(W_v->forward(values), num_heads)};
  if (positions) std::tie(h.q, h.k) = positions->transform_qk(h.q, h.k);
  return h;
}

Tensor ProjectedAttention::output(const Tensor& heads) const { return W_o->forward(functional::merge_heads(heads)); }

Tensor position_scores_bias(PositionScheme* positions, int64_t num_heads, int64_t Q, int64_t K, int64_t first_query,
                            const Module& layer) {
  if (!positions || Q == 0 || K == 0) return Tensor();
  // The scheme's bias for each distinct offset j − i, from −(first_query + Q − 1) to K − 1 − first_query: (H, Q + K − 1).
  const int64_t n = Q + K - 1;
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t o = 0; o < n; ++o) offsets[o] = o - (Q - 1) - first_query;
  const Tensor b = positions->offset_bias(IndexTensor(offsets));
  if (!b.defined()) return b;
  if (b.dim() != 2 || b.size(1) != n || (b.size(0) != 1 && b.size(0) != num_heads))
    throw ShapeError(layer.where() + ": position scheme " + positions->type_name() + " gave a bias of shape " +
                     shape_str(b.shape()) + " for " + std::to_string(n) + " offsets; expected (" +
                     std::to_string(num_heads) + " or 1, " + std::to_string(n) + ")");
  std::vector<int64_t> column(static_cast<size_t>(Q * K));  // pair (i, j) reads column j − i + Q − 1
  for (int64_t i = 0; i < Q; ++i)
    for (int64_t j = 0; j < K; ++j) column[i * K + j] = j - i + Q - 1;
  return b.index_select(1, IndexTensor(column)).view({1, b.size(0), Q, K});
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
