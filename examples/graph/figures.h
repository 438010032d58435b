// The graph example's figures: the graph model's attention drawn on the adjacency matrix, and test
// accuracy against homophily, one line per model.
#pragma once

#include <string>
#include <vector>

#include "examples/graph/graph.h"
#include "examples/graph/models.h"

namespace graph {

// An N×N heatmap: cell (t, s) the weight with which node t attends to s (averaged over the heads),
// on the edges only; cells without an edge stay white. Written to `path` (PNG).
void draw_attention(const Graph& g, const EdgeWeights& attention, const std::string& title, const std::string& path);

// Test accuracy (y) against homophily (x), one line per model: accuracy[model][homophily index].
void draw_sweep(const std::vector<double>& homophily, const std::vector<std::string>& models,
                const std::vector<std::vector<double>>& accuracy, const std::string& path);

}  // namespace graph
