// GraphEdges: the edges of a directed graph on N nodes, as graph attention reads them.
//
// Kept as integers (IndexTensor), never as floats, like token ids and valid lengths. The edges are
// stored grouped by destination (CSR: the incoming edges of node t are edges offsets[t] ...
// offsets[t + 1] − 1, their sources ascending), which is the order in which attention computes a
// node's softmax over its neighbours; and once more grouped by source (the transpose: the edges
// leaving node s), so that a backward can gather the gradient of each key and value row from the
// edges that read it instead of scattering into it from many threads.
//
// Letters: N nodes, E edges; an edge e = s → t carries information from source s to destination t
// (the key and value of s to the query of t). Self-loops s → s are edges like any other; an edge
// given twice is refused (its softmax weight would be counted twice).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/index_tensor.h"

namespace qkv {

class GraphEdges {
 public:
  GraphEdges() = default;  // no nodes, no edges

  // The graph on `nodes` nodes with edges sources[e] → targets[e], in any order. ValueError when
  // the two lists differ in length, naming the lengths; when an edge names a node outside [0, N),
  // naming the edge's index, the node and N; when an edge appears twice, naming the pair; for more
  // than 2^59 nodes. A qkv::Error naming N and the bytes when the memory for N nodes' offsets is not
  // there.
  static GraphEdges from_pairs(int64_t nodes, const std::vector<int64_t>& sources,
                               const std::vector<int64_t>& targets);

  int64_t nodes() const { return nodes_; }
  int64_t edges() const { return sources_.defined() ? sources_.numel() : 0; }

  // By destination (CSR), edges sorted by (target, source): offsets (N + 1); sources and targets (E).
  const IndexTensor& offsets() const { return offsets_; }
  const IndexTensor& sources() const { return sources_; }
  const IndexTensor& targets() const { return targets_; }
  // By source: the edges leaving s are out_edges[out_offsets[s] ...], as indices into the CSR order
  // above, by ascending target. out_offsets (N + 1), out_edges (E).
  const IndexTensor& out_offsets() const { return out_offsets_; }
  const IndexTensor& out_edges() const { return out_edges_; }

  // How many edges end at node t.
  int64_t in_degree(int64_t t) const;

 private:
  int64_t nodes_ = 0;
  IndexTensor offsets_{0}, sources_, targets_, out_offsets_{0}, out_edges_;  // the empty graph's offsets
};

}  // namespace qkv
