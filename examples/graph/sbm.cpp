#include "examples/graph/sbm.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "examples/graph/read_graph.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

namespace graph {
namespace {

using qkv::ValueError;

}  // namespace

void check_options(const SbmOptions& o) {
  if (o.labelled_per_class < 1 || o.val < 0)
    throw ValueError("stochastic block model: --labelled must be at least 1 and --val at least 0");
  if (o.nodes > kMaxNodes)
    throw ValueError("stochastic block model: --nodes " + std::to_string(o.nodes) + "; at most " +
                     std::to_string(kMaxNodes) + " (full attention's scores take N² floats)");
  if (o.classes < 2 || o.nodes < o.classes * (o.labelled_per_class + 2) + o.val)
    throw ValueError("stochastic block model: " + std::to_string(o.nodes) + " nodes in " +
                     std::to_string(o.classes) + " classes leave no test nodes after " +
                     std::to_string(o.labelled_per_class) + " labelled per class and " + std::to_string(o.val) +
                     " for validation (or fewer than 2 classes)");
  if (!(o.homophily >= 0.0 && o.homophily <= 1.0))
    throw ValueError("stochastic block model: --homophily must be in [0, 1], got " + std::to_string(o.homophily));
  // Drawing stays quick while the edges fill at most a quarter of the pairs inside a class.
  const double per_class = static_cast<double>(o.nodes / o.classes);
  if (!(o.degree >= 0.0 && o.degree <= per_class / 4))
    throw ValueError("stochastic block model: --degree must be in [0, " + std::to_string(per_class / 4) +
                     "] for classes of " + std::to_string(o.nodes / o.classes) + " nodes, got " +
                     std::to_string(o.degree));
  if (o.vocab < o.classes || o.words < 1 || o.words > o.vocab || !(o.signal >= 0.0 && o.signal <= 1.0))
    throw ValueError("stochastic block model: features need vocab >= classes, 1 <= words <= vocab and signal in [0, 1]");
}

namespace {

// Node i is in class i mod K: class c holds nodes c, c + K, c + 2K, ...
int64_t random_member(int64_t c, const SbmOptions& o, qkv::Generator& gen) {
  const int64_t members = (o.nodes - c + o.classes - 1) / o.classes;
  return c + o.classes * static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(members)));
}

// E = round(N·degree/2) edges, each inside u's class with probability h, else to another class.
std::vector<std::pair<int64_t, int64_t>> draw_edges(const SbmOptions& o, qkv::Generator& gen) {
  const auto E = static_cast<size_t>(std::llround(static_cast<double>(o.nodes) * o.degree / 2));
  std::set<std::pair<int64_t, int64_t>> seen;
  std::vector<std::pair<int64_t, int64_t>> edges;
  while (edges.size() < E) {
    const auto u = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(o.nodes)));
    const int64_t c = u % o.classes;
    const int64_t other =
        gen.next_chance(o.homophily) ? c : (c + 1 + static_cast<int64_t>(gen.next_below(o.classes - 1))) % o.classes;
    const int64_t v = random_member(other, o, gen);
    const std::pair<int64_t, int64_t> e{std::min(u, v), std::max(u, v)};
    if (u != v && seen.insert(e).second) edges.push_back(e);
  }
  return edges;
}

qkv::Tensor draw_features(const SbmOptions& o, qkv::Generator& gen) {
  qkv::Tensor x = qkv::zeros({o.nodes, o.vocab});
  const int64_t preferred = o.vocab / o.classes;  // class c prefers words [c·preferred, (c + 1)·preferred)
  for (int64_t i = 0; i < o.nodes; ++i)
    for (int64_t w = 0; w < o.words; ++w) {
      const int64_t word = gen.next_chance(o.signal)
                               ? (i % o.classes) * preferred + static_cast<int64_t>(gen.next_below(preferred))
                               : static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(o.vocab)));
      x.data()[i * o.vocab + word] = 1.0f;
    }
  return x;
}

// A random order of the nodes: the first labelled_per_class of each class train, the next `val`
// validate, the rest test.
void split(Graph& g, const SbmOptions& o, qkv::Generator& gen) {
  std::vector<int64_t> order(static_cast<size_t>(o.nodes));
  for (int64_t i = 0; i < o.nodes; ++i) order[i] = i;
  for (int64_t i = o.nodes - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(i + 1)))]);
  std::vector<int64_t> taken(static_cast<size_t>(o.classes), 0);
  for (int64_t i : order) {
    if (taken[i % o.classes] < o.labelled_per_class) {
      ++taken[i % o.classes];
      g.train.push_back(i);
    } else if (static_cast<int64_t>(g.val.size()) < o.val) {
      g.val.push_back(i);
    } else {
      g.test.push_back(i);
    }
  }
}

}  // namespace

Graph stochastic_block_model(const SbmOptions& o) {
  check_options(o);
  qkv::Generator gen(o.seed);
  Graph g;
  g.nodes = o.nodes, g.classes = o.classes;
  std::vector<int64_t> labels(static_cast<size_t>(o.nodes));
  for (int64_t i = 0; i < o.nodes; ++i) labels[i] = i % o.classes;
  g.labels = qkv::IndexTensor(labels);
  for (int64_t c = 0; c < o.classes; ++c) g.class_names.push_back("class " + std::to_string(c));
  g.edges = draw_edges(o, gen);
  std::sort(g.edges.begin(), g.edges.end());
  g.features = draw_features(o, gen);
  split(g, o, gen);
  return g;
}

}  // namespace graph
