// Graph attention: scaled dot-product attention computed on a graph's edges only (the op is
// autograd/ops/graph_attention.h). Letters: N nodes, E edges, H heads, D the width of one head's
// query, key and value. An edge e = s → t lets destination t attend to source s:
//
//   score_e = q_t·k_s / √D,    α_e = exp(score_e) / Σ_{e' into t} exp(score_e'),    out_t = Σ_{e into t} α_e v_s
//
// per head, the softmax over each destination's incoming edges (Veličković et al. 2018, "Graph
// Attention Networks", eq. 2–4, with the dot-product score of Vaswani et al. 2017 in place of GAT's
// additive one). A destination with no incoming edge gets a zero row. Cost O(E·H·D) forward and
// backward, against O(N²·H·D) for dense attention under an adjacency mask.
//
// Every array is contiguous, row-major: q, k, v and out (N, H, D); the weights α (E, H) in the CSR
// order of the edges (tensor/graph_edges.h). Each output row is written by one thread in a fixed
// order, so results do not depend on the thread count: the forward and dq walk the edges into each
// destination, dk and dv the edges out of each source (the transpose), so no two threads ever add
// to the same float.
#pragma once

#include <cstdint>

namespace qkv::kernels {

// The edge structure as the kernels read it: by destination (offsets (N + 1), sources (E)) and by
// source (out_offsets (N + 1), out_edges (E) edge indices; targets (E) the destination of each edge).
struct GraphCsr {
  int64_t N = 0, E = 0;
  const int64_t *offsets = nullptr, *sources = nullptr, *targets = nullptr;
  const int64_t *out_offsets = nullptr, *out_edges = nullptr;
};

// q, k, v (N, H, D) → weights (E, H) and out (N, H, D), as above, with scale = 1/√D.
void graph_attention_forward(const GraphCsr& g, int64_t H, int64_t D, float scale, const float* q,
                             const float* k, const float* v, float* weights, float* out);

// In the forward this was out_t = Σ_e α_e v_s with α = softmax over t's edges of scale · q_t·k_s, so
// with dout = dL/dout:
//   dα_e = dout_t·v_s,   dscore_e = α_e (dα_e − Σ_{e' into t} α_e' dα_e')          (per destination)
//   dq_t = scale · Σ_{e into t} dscore_e k_s                                         (per destination)
//   dk_s = scale · Σ_{e out of s} dscore_e q_t,   dv_s = Σ_{e out of s} α_e dout_t  (per source)
// dscore (E, H) is scratch the caller provides; dq, dk, dv may each be null (not needed).
void graph_attention_backward(const GraphCsr& g, int64_t H, int64_t D, float scale, const float* q,
                              const float* k, const float* v, const float* weights, const float* dout,
                              float* dscore, float* dq, float* dk, float* dv);

}  // namespace qkv::kernels
