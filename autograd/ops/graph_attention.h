// Graph attention: self-attention restricted to a graph's edges, a graph neural network
// (Veličković et al. 2018, "Graph Attention Networks"; tensor/kernels/graph_attention.h has the
// equations). Each node t attends to the sources of its incoming edges only:
//
//   α_{s→t} = softmax over t's incoming edges of q_t·k_s/√D,     out_t = Σ_{s→t} α_{s→t} v_s
//
// per head. A model that wants a node to see itself adds the self-loop t → t (GAT's "neighbours and
// self"). A node with no incoming edge gets a zero output row, and no gradient flows through it to
// its query; the same rule as masked_softmax's for a row that sees no key.
#pragma once

#include "tensor/graph_edges.h"
#include "tensor/tensor.h"

namespace qkv {

struct GraphAttention {
  Tensor output;   // (N, H, D)
  Tensor weights;  // (E, H): α of every edge in the CSR order of GraphEdges, per head; detached
};

// The op: q, k, v (N, H, D), any strides, N = edges.nodes(); → output (N, H, D) in the graph, and
// the weights. One kernel forward and one backward, each O(E·H·D) (tensor/kernels/graph_attention.h),
// deterministic at any thread count. ShapeError when q, k, v differ in shape, are not 3-d, or N is
// not the graph's node count.
GraphAttention graph_attention(const Tensor& q, const Tensor& k, const Tensor& v, const GraphEdges& edges);

// graph_attention's composed reference, what the reference mode runs: dense scaled dot-product
// attention over all N nodes under the adjacency as a 0/1 mask (composed_attention, d2l 11.3.3, the
// heads as the batch), whose masked softmax gives a row with no visible key zero weights, hence a
// zero output row; the weights are then read off the dense (H, N, N) weights at the edges. It
// computes all N² scores: O(N²·H·D) time and O(H·N²) memory.
GraphAttention graph_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const GraphEdges& edges);

// The adjacency as a 0/1 mask (N, N), mask[t, s] = 1 for every edge s → t: the rows are the
// destinations (queries), the columns the sources (keys), as attention's scores are laid out.
Tensor adjacency_mask(const GraphEdges& edges);

}  // namespace qkv
