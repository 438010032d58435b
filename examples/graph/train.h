// Full-batch training of a node classifier on a graph's labelled nodes (every node's features go
// in; the loss reads the training nodes only), and the accuracy of predictions on a set of nodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/graph/graph.h"
#include "examples/graph/models.h"

namespace graph {

struct TrainOptions {
  ModelOptions model;
  int64_t epochs = 150;
  double lr = 0.01, weight_decay = 5e-4;  // Adam with an L2 penalty, as GAT and GCN train
  uint64_t seed = 0;                       // the initialization and the dropout
};

struct TrainResult {
  double train = 0, val = 0, test = 0;  // accuracies at the chosen epoch
  int64_t epoch = 0;                    // the epoch of the best validation accuracy (the last without val)
  std::shared_ptr<NodeModel> model;     // as at the end of training, evaluated once more (eval mode)
};

// Trains the model `name` on g and reports the test accuracy at the epoch of the best validation
// accuracy (the first such epoch; the last epoch when g has no validation nodes).
TrainResult train_model(const std::string& name, const Graph& g, const TrainOptions& options);

// The fraction of `nodes` whose largest score (N, classes) is their label; 0 for no nodes.
double accuracy(const qkv::Tensor& scores, const Graph& g, const std::vector<int64_t>& nodes);

}  // namespace graph
