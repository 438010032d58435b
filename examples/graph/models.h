// The four node classifiers the graph example compares, each reading node features (N, F) and
// giving logits (N, classes):
//   mlp        a two-layer perceptron on each node's features alone: the edges ignored;
//   attention  self-attention over all N nodes as one sequence: every node sees every node, the
//              edges ignored again;
//   graph      graph attention (autograd/ops/graph_attention.h): each node attends to its neighbours
//              and itself only, a small GAT (Veličković et al. 2018) with dot-product scores;
// and label propagation (label_propagation.h), which reads the edges and the training labels and
// learns nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "examples/graph/graph.h"
#include "nn/module.h"
#include "tensor/graph_edges.h"

namespace graph {

struct ModelOptions {
  int64_t hidden = 32, heads = 2, layers = 1;  // width, attention heads, attention layers
  float dropout = 0.5f;                        // on the input features and the hidden layer
};

class NodeModel : public qkv::nn::Module {
 public:
  virtual qkv::Tensor logits(const qkv::Tensor& features) = 0;  // (N, F) → (N, classes)
};

// The names of the trained models, in the order of the tables: mlp, attention, graph.
const std::vector<std::string>& model_names();

// The model `name` for graph g (whose edges the graph model keeps, with self-loops); ValueError
// naming the known models otherwise.
std::shared_ptr<NodeModel> make_model(const std::string& name, const Graph& g, const ModelOptions& options);

// The graph model's attention weights (E, H) of its last forward, with the edges they belong to.
struct EdgeWeights {
  qkv::GraphEdges edges;
  qkv::Tensor weights;
};
EdgeWeights last_attention(const NodeModel& graph_model);

}  // namespace graph
