// A citation-like graph from a stochastic block model (Holland, Laskey & Leinhardt 1983): N nodes
// in K classes, edges placed so that a fraction h of them join two nodes of the same class (the
// homophily), and bag-of-words features that say something about the class, but not much.
#pragma once

#include <cstdint>

#include "examples/graph/graph.h"

namespace graph {

struct SbmOptions {
  int64_t nodes = 1000, classes = 4;
  double homophily = 0.7;  // h: the fraction of edges inside a class, in [0, 1]
  double degree = 6.0;     // the mean degree 2E/N
  // Features: each node draws `words` words from a vocabulary of `vocab`, each from its class's
  // preferred vocab/K words with probability `signal` and from the whole vocabulary otherwise; the
  // feature is 1 for every word drawn (binary bag of words).
  int64_t vocab = 200, words = 20;
  double signal = 0.2;
  int64_t labelled_per_class = 20, val = 200;  // the training and validation nodes; the rest is test
  uint64_t seed = 0;
};

// The graph, drawn from qkv's generator seeded with options.seed: the same options give the same
// graph. ValueError naming the option when the sizes leave no room (too few nodes for the split, a
// degree a class cannot hold, h outside [0, 1]).
Graph stochastic_block_model(const SbmOptions& options);

// The checks stochastic_block_model makes, alone: for a program to refuse bad options before it
// writes anything.
void check_options(const SbmOptions& options);

}  // namespace graph
