#include "tensor/kernels/graph_attention.h"

#include <algorithm>
#include <cmath>

#include "tensor/kernels/parallel.h"
#include "tensor/kernels/row_ops.h"

namespace qkv::kernels {
namespace {

void zero(float* y, int64_t n) { std::fill(y, y + n, 0.0f); }

// The rows an edge loop reads are rows of random nodes: past the core's own cache each would be a
// miss the hardware prefetcher cannot foresee. Asking for the row kAhead edges on (across
// destinations: the CSR order is one list) while working on this one hides that wait
// (docs/graph.md, "Cost against the number of edges"). Tuned with one head, where the next row
// asked for is the next one read; with H heads it is read H passes later, and may have left L1.
constexpr int64_t kAhead = 8;
void prefetch_row(const float* row, int64_t n) {
  for (int64_t c = 0; c < n; c += 16) __builtin_prefetch(row + c);
}

// Destination t, head h: the softmax of t's scores into weights[e·H + h], then out_t.
void attend(const GraphCsr& g, int64_t H, int64_t D, float scale, const float* q, const float* k,
            const float* v, float* weights, float* out, int64_t t, int64_t h) {
  const int64_t first = g.offsets[t], last = g.offsets[t + 1], row = (t * H + h) * D;
  float* y = out + row;
  zero(y, D);
  if (first == last) return;  // no incoming edge: a zero row
  float top = -INFINITY;
  for (int64_t e = first; e < last; ++e) {
    if (e + kAhead < g.E) prefetch_row(k + (g.sources[e + kAhead] * H + h) * D, D);
    prefetch_row(v + (g.sources[e] * H + h) * D, D);  // read once the scores are done
    const float s = scale * dot(q + row, k + (g.sources[e] * H + h) * D, D);
    weights[e * H + h] = s;
    top = std::max(top, s);
  }
  float total = 0.0f;
  for (int64_t e = first; e < last; ++e) total += weights[e * H + h] = std::exp(weights[e * H + h] - top);
  for (int64_t e = first; e < last; ++e) {
    weights[e * H + h] /= total;
    axpy(weights[e * H + h], v + (g.sources[e] * H + h) * D, y, D);
  }
}

// Destination t, head h: dscore of t's edges and dq_t (when wanted).
void score_gradients(const GraphCsr& g, int64_t H, int64_t D, float scale, const float* k, const float* v,
                     const float* weights, const float* dout, float* dscore, float* dq, int64_t t, int64_t h) {
  const int64_t first = g.offsets[t], last = g.offsets[t + 1], row = (t * H + h) * D;
  float weighted = 0.0f;  // Σ_e α_e dα_e
  for (int64_t e = first; e < last; ++e) {
    if (e + kAhead < g.E) prefetch_row(v + (g.sources[e + kAhead] * H + h) * D, D);
    prefetch_row(k + (g.sources[e] * H + h) * D, D);  // read by dq below
    dscore[e * H + h] = dot(dout + row, v + (g.sources[e] * H + h) * D, D);
    weighted += weights[e * H + h] * dscore[e * H + h];
  }
  for (int64_t e = first; e < last; ++e) dscore[e * H + h] = weights[e * H + h] * (dscore[e * H + h] - weighted);
  if (!dq) return;
  zero(dq + row, D);
  for (int64_t e = first; e < last; ++e) axpy(scale * dscore[e * H + h], k + (g.sources[e] * H + h) * D, dq + row, D);
}

// Source s, head h: dk_s and dv_s from the edges leaving s.
void source_gradients(const GraphCsr& g, int64_t H, int64_t D, float scale, const float* q, const float* weights,
                      const float* dout, const float* dscore, float* dk, float* dv, int64_t s, int64_t h) {
  const int64_t row = (s * H + h) * D;
  if (dk) zero(dk + row, D);
  if (dv) zero(dv + row, D);
  for (int64_t i = g.out_offsets[s]; i < g.out_offsets[s + 1]; ++i) {
    if (i + kAhead < g.E) {
      const int64_t ahead = g.targets[g.out_edges[i + kAhead]];
      if (dk) prefetch_row(q + (ahead * H + h) * D, D);
      if (dv) prefetch_row(dout + (ahead * H + h) * D, D);
    }
    const int64_t e = g.out_edges[i], t = g.targets[e];
    if (dk) axpy(scale * dscore[e * H + h], q + (t * H + h) * D, dk + row, D);
    if (dv) axpy(weights[e * H + h], dout + (t * H + h) * D, dv + row, D);
  }
}

}  // namespace

void graph_attention_forward(const GraphCsr& g, int64_t H, int64_t D, float scale, const float* q,
                             const float* k, const float* v, float* weights, float* out) {
  parallel_for(g.N, 2 * (g.E + g.N) * H * D, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int64_t h = 0; h < H; ++h) attend(g, H, D, scale, q, k, v, weights, out, t, h);
  });
}

void graph_attention_backward(const GraphCsr& g, int64_t H, int64_t D, float scale, const float* q,
                              const float* k, const float* v, const float* weights, const float* dout,
                              float* dscore, float* dq, float* dk, float* dv) {
  parallel_for(g.N, 2 * (g.E + g.N) * H * D, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int64_t h = 0; h < H; ++h) score_gradients(g, H, D, scale, k, v, weights, dout, dscore, dq, t, h);
  });
  if (!dk && !dv) return;
  parallel_for(g.N, 2 * (g.E + g.N) * H * D, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s)
      for (int64_t h = 0; h < H; ++h) source_gradients(g, H, D, scale, q, weights, dout, dscore, dk, dv, s, h);
  });
}

}  // namespace qkv::kernels
