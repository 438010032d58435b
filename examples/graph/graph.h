// The graphs of the graph example: nodes with features and a class each, undirected edges, and a
// split of the nodes into the few whose labels training sees, validation and test (as in the
// citation benchmarks, where about 20 nodes per class are labelled).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor/graph_edges.h"
#include "tensor/index_tensor.h"
#include "tensor/tensor.h"

namespace graph {

struct Graph {
  int64_t nodes = 0, classes = 0;
  // Undirected edges, each once as (u, v) with u < v; no self-loops.
  std::vector<std::pair<int64_t, int64_t>> edges;
  qkv::Tensor features;                 // (N, F)
  qkv::IndexTensor labels;              // (N), each in [0, classes)
  std::vector<int64_t> train, val, test;  // node indices: labelled for training, validation, test
  std::vector<std::string> class_names;
};

// What the attention models read: both directions of every edge, and with self_loops the edge
// t → t of every node too (GAT's "neighbours and self"), so that no node is left without an input.
qkv::GraphEdges attention_edges(const Graph& g, bool self_loops);

// The fraction of edges whose two ends share a class (edge homophily), and the mean degree 2E/N.
double edge_homophily(const Graph& g);
double mean_degree(const Graph& g);

}  // namespace graph
