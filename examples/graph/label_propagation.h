// Label propagation (Zhu & Ghahramani 2002, "Learning from Labeled and Unlabeled Data with Label
// Propagation"), the classic baseline: no training, no features. Every node holds a distribution
// over the classes, the labelled nodes their one-hot label, the others the uniform distribution;
// then, `iterations` times, each unlabelled node takes the mean of its neighbours' distributions
// (F ← D⁻¹A·F) while the labelled ones are clamped back to their labels. A node without edges keeps
// the uniform distribution (predicted class 0, the first).
#pragma once

#include <cstdint>
#include <vector>

#include "examples/graph/graph.h"

namespace graph {

// The distributions (N, classes) after the iterations; g.train are the labelled nodes.
qkv::Tensor label_propagation(const Graph& g, int64_t iterations = 100);

}  // namespace graph
