#include "examples/graph/graph.h"

namespace graph {

qkv::GraphEdges attention_edges(const Graph& g, bool self_loops) {
  std::vector<int64_t> src, dst;
  for (const auto& [u, v] : g.edges) src.insert(src.end(), {u, v}), dst.insert(dst.end(), {v, u});
  if (self_loops)
    for (int64_t t = 0; t < g.nodes; ++t) src.push_back(t), dst.push_back(t);
  return qkv::GraphEdges::from_pairs(g.nodes, src, dst);
}

double edge_homophily(const Graph& g) {
  int64_t same = 0;
  for (const auto& [u, v] : g.edges) same += g.labels[u] == g.labels[v] ? 1 : 0;
  return g.edges.empty() ? 0.0 : static_cast<double>(same) / static_cast<double>(g.edges.size());
}

double mean_degree(const Graph& g) {
  return g.nodes == 0 ? 0.0 : 2.0 * static_cast<double>(g.edges.size()) / static_cast<double>(g.nodes);
}

}  // namespace graph
