// A graph of the user's own, from two text files:
//
//   labels file: one line "NODE CLASS" per node, the nodes numbered 0 ... N − 1, each exactly once;
//                CLASS is any word (the classes are the distinct words, in sorted order)
//   edges file:  one line "U V" per undirected edge between nodes U and V
//
// In both, blank lines and lines starting with '#' are skipped. The rules, each refused with a
// one-line ValueError "FILE:LINE: ..." unless said otherwise:
//   - an edge naming a node outside [0, N) is refused (N comes from the labels file);
//   - an edge given twice, in either direction, is refused, naming the line that gave it first;
//   - a self-loop "U U" is skipped and counted in the notes: the attention models add every
//     node's self-loop themselves;
//   - a node without edges is kept: the MLP classifies it from its features, graph attention sees
//     only itself, label propagation leaves it at the uniform distribution (so its prediction is
//     class 0, the first in sorted order).
// Features are the identity (one-hot): files of edges carry no features. The split is seeded:
// labelled_per_class random nodes of each class train, a fifth of the rest validates, the rest tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/graph/graph.h"

namespace graph {

// The most nodes a graph of your own may have: the one-hot features and full attention's (N, N)
// scores take N² floats, 400 MB at this size.
inline constexpr int64_t kMaxNodes = 10000;

struct GraphFile {
  Graph graph;
  std::vector<std::string> notes;  // what was skipped, to print
};

GraphFile read_graph(const std::string& edges_path, const std::string& labels_path, int64_t labelled_per_class,
                     uint64_t seed);

}  // namespace graph
