// What nn/attention_interface.h declares: the default of Attention::forward_step, the check of a
// setup against a mechanism's support, ProjectedAttention's projections, the position scheme's bias
// of the scores, and AttentionRestriction. The registry of mechanisms is nn/attention_registry.cpp.
#include "nn/attention_interface.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "nn/attention_checks.h"
#include "nn/functional/attention.h"
#include "tensor/error.h"

namespace qkv::nn {

// ---- Attention, ProjectedAttention ------------------------------------------------------------

Tensor Attention::forward_step(const Tensor&, Tensor&, Tensor&, int64_t) {
  throw ValueError(where() + ": this attention mechanism does not decode with a key/value cache");
}

Attention::Memory Attention::Memory::select_rows(const IndexTensor& rows) const {
  return {keys.index_select(0, rows), values.index_select(0, rows)};
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
    : ProjectedAttention(Sizes{s.num_hiddens, s.num_hiddens, s.num_hiddens, s.num_hiddens, s.num_heads}, s.dropout,
                         s.use_bias, type) {
  positions = s.positions;
}

ProjectedAttention::ProjectedAttention(const Sizes& s, float p, bool use_bias, const std::string& type)
    : num_heads(s.num_heads), dropout(p) {
  if (s.num_heads <= 0 || s.num_hiddens <= 0 || s.num_hiddens % s.num_heads != 0)
    throw ValueError(type + ": num_hiddens " + std::to_string(s.num_hiddens) +
                     " must be a positive multiple of num_heads " + std::to_string(s.num_heads) +
                     " (each head takes num_hiddens / num_heads features)");
  check_dropout(type.c_str(), p);
  W_q = register_module("W_q", std::make_shared<Linear>(s.query_size, s.num_hiddens, use_bias));
  W_k = register_module("W_k", std::make_shared<Linear>(s.key_size, s.num_hiddens, use_bias));
  W_v = register_module("W_v", std::make_shared<Linear>(s.value_size, s.num_hiddens, use_bias));
  W_o = register_module("W_o", std::make_shared<Linear>(s.num_hiddens, s.num_hiddens, use_bias));
}

void ProjectedAttention::check_inputs(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                      const IndexTensor& valid_lens, const char* per_example_only) const {
  check_input(*this, "queries", queries, -1, W_q->in_features);
  check_input(*this, "keys", keys, queries.size(0), W_k->in_features);
  check_input(*this, "values", values, queries.size(0), W_v->in_features);
  check_keys_values(*this, keys, values);
  check_valid_lens(*this, valid_lens, queries.size(0), queries.size(1), keys.size(1), per_example_only);
}

ProjectedAttention::Heads ProjectedAttention::split_projections(const Tensor& queries, const Tensor& keys,
                                                                const Tensor& values) const {
  const functional::Projections p = functional::in_projections(queries, keys, values, W_q->weight, W_q->bias,
                                                               W_k->weight, W_k->bias, W_v->weight, W_v->bias);
  return {functional::split_heads(p.q, num_heads), functional::split_heads(p.k, num_heads),
          functional::split_heads(p.v, num_heads)};
}

ProjectedAttention::Heads ProjectedAttention::project(const Tensor& queries, const Tensor& keys,
                                                      const Tensor& values, const IndexTensor& valid_lens,
                                                      const Tensor& mask, const Tensor& bias,
                                                      bool takes_mask_bias) const {
  check_inputs(queries, keys, values, valid_lens, "this mechanism takes one length per sequence");
  if (!takes_mask_bias && (mask.defined() || bias.defined()))
    throw ValueError(where() + ": takes no mask or score bias of a caller's own; got" +
                     (mask.defined() ? std::string(" a mask") : std::string()) + (bias.defined() ? " a bias" : ""));
  return project_heads(queries, keys, values);
}

ProjectedAttention::Heads ProjectedAttention::project_heads(const Tensor& queries, const Tensor& keys,
                                                            const Tensor& values) const {
  Heads h = split_projections(queries, keys, values);
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
