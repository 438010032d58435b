// graph_attention (autograd/ops/graph_attention.h): attention on a graph's edges as one op, a kernel
// forward and a kernel backward (tensor/kernels/graph_attention.h), beside its composed reference,
// graph_attention_reference: dense attention under the adjacency mask. The reference is the
// definition a reader can check against d2l's masked attention; the op computes the same numbers on
// the E edges alone, O(E·D) instead of O(N²·D), which is what makes attention on a graph of
// thousands of nodes cheap (`scaling_study`, docs/introspection.md).
#include "autograd/ops/graph_attention.h"

#include <cmath>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "autograd/ops/attention.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/graph_attention.h"
#include "tensor/random.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const GraphEdges& edges) {
  if (q.dim() != 3 || q.shape() != k.shape() || q.shape() != v.shape())
    throw ShapeError("graph_attention: q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + " and v " +
                     shape_str(v.shape()) + " must all be (N, H, D)");
  if (q.size(2) == 0) throw ShapeError("graph_attention: heads of width 0 in q " + shape_str(q.shape()));
  if (q.size(0) != edges.nodes())
    throw ShapeError("graph_attention: q, k and v of shape " + shape_str(q.shape()) + " have " +
                     std::to_string(q.size(0)) + " nodes, but the graph has " + std::to_string(edges.nodes()));
}

kernels::GraphCsr csr(const GraphEdges& edges) {
  if (edges.edges() == 0) return {edges.nodes(), 0, edges.offsets().data(), nullptr, nullptr,
                                  edges.out_offsets().data(), nullptr};
  return {edges.nodes(),          edges.edges(),           edges.offsets().data(), edges.sources().data(),
          edges.targets().data(), edges.out_offsets().data(), edges.out_edges().data()};
}

float* data_or_null(Tensor& x) { return x.defined() ? x.data() : nullptr; }

// dq, dk, dv for the inputs that need them; dscore is scratch.
Grads backward(const GraphEdges& edges, float scale, const Tensor& g, const BackwardContext& ctx) {
  const Tensor &q = ctx.saved[0], &k = ctx.saved[1], &v = ctx.saved[2], &weights = ctx.saved[3];
  const Tensor gc = g.contiguous();
  const auto buffer = [&](size_t input) { return ctx.needs[input] ? Tensor::empty(q.shape()) : Tensor(); };
  Tensor dq = buffer(0), dk = buffer(1), dv = buffer(2);
  Tensor dscore = Tensor::empty(weights.shape());
  kernels::graph_attention_backward(csr(edges), q.size(1), q.size(2), scale, q.data(), k.data(), v.data(),
                                    weights.data(), gc.data(), dscore.data(), data_or_null(dq),
                                    data_or_null(dk), data_or_null(dv));
  return {dq, dk, dv};
}

}  // namespace

Tensor adjacency_mask(const GraphEdges& edges) {
  const int64_t N = edges.nodes();
  Tensor mask = zeros({N, N});
  for (int64_t e = 0; e < edges.edges(); ++e) mask.data()[edges.targets()[e] * N + edges.sources()[e]] = 1.0f;
  return mask;
}

GraphAttention graph_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const GraphEdges& edges) {
  check_inputs(q, k, v, edges);
  const int64_t N = q.size(0), H = q.size(1);
  const auto heads = [](const Tensor& x) { return x.permute({1, 0, 2}); };  // (N, H, D) → (H, N, D)
  Generator unused;  // no dropout
  const FusedAttention dense =
      composed_attention(heads(q), heads(k), heads(v), IndexTensor(), adjacency_mask(edges), Tensor(), 0.0f, unused);
  // The weights of edge s → t are dense[h, t, s]: element t·N + s of each head's (N, N) block.
  std::vector<int64_t> at(static_cast<size_t>(edges.edges()));
  for (int64_t e = 0; e < edges.edges(); ++e) at[e] = edges.targets()[e] * N + edges.sources()[e];
  const Tensor weights = dense.weights.detach().reshape({H, N * N}).index_select(1, IndexTensor(at));
  return {dense.output.permute({1, 0, 2}), weights.t().contiguous()};
}

GraphAttention graph_attention(const Tensor& q, const Tensor& k, const Tensor& v, const GraphEdges& edges) {
  check_inputs(q, k, v, edges);
  if (reference_mode()) return graph_attention_reference(q, k, v, edges);
  const autograd::Op op("graph_attention");
  const int64_t N = q.size(0), H = q.size(1), D = q.size(2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));  // Vaswani et al. 2017, section 3.2.1
  const Tensor qc = q.detach().contiguous(), kc = k.detach().contiguous(), vc = v.detach().contiguous();
  Tensor weights = Tensor::empty({edges.edges(), H}), out = Tensor::empty({N, H, D});
  kernels::graph_attention_forward(csr(edges), H, D, scale, qc.data(), kc.data(), vc.data(), weights.data(),
                                   out.data());
  autograd::add_flops(4 * edges.edges() * H * D);  // q_t·k_s and α v_s: a multiply and an add each
  const Tensor recorded = op.record(out, {q, k, v}, {qc, kc, vc, weights},
                                    [edges, scale](const Tensor& g, const BackwardContext& ctx) {
                                      return backward(edges, scale, g, ctx);
                                    },
                                    autograd::composed_backward(
                                        [edges](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
                                          return graph_attention_reference(in[0], in[1], in[2], edges).output;
                                        },
                                        {0, 1, 2}));
  return {recorded, weights};
}

}  // namespace qkv
