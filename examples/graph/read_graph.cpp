#include "examples/graph/read_graph.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "examples/common/args.h"
#include "io/file.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"

namespace graph {
namespace {

using qkv::ValueError;

// The non-comment lines of a file as (line number, words).
std::vector<std::pair<int64_t, std::vector<std::string>>> read_lines(const std::string& path) {
  qkv::io::require_regular_file(path, "graph");  // a directory would read as an empty file
  std::ifstream in(path);
  if (!in) throw ValueError(path + ": cannot be opened for reading");
  std::vector<std::pair<int64_t, std::vector<std::string>>> lines;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (!w.empty() && w[0][0] != '#') lines.emplace_back(number, std::move(w));
  }
  return lines;
}

// A node number: decimal digits only, at most 12 of them.
int64_t node_number(const std::string& word, const std::string& where) {
  if (word.empty() || word.size() > 12 || !std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw ValueError(where + qkv::examples::quoted(word) + " is not a node number (0, 1, 2, ...)");
  return std::stoll(word);
}

std::string at(const std::string& path, int64_t line) { return path + ":" + std::to_string(line) + ": "; }

void read_labels(Graph& g, const std::string& path) {
  const auto lines = read_lines(path);
  std::map<int64_t, std::pair<std::string, int64_t>> named;  // node → (class, line)
  for (const auto& [line, w] : lines) {
    if (w.size() != 2) throw ValueError(at(path, line) + "expected 'NODE CLASS', got " + std::to_string(w.size()) + " words");
    const int64_t node = node_number(w[0], at(path, line));
    if (const auto it = named.find(node); it != named.end())
      throw ValueError(at(path, line) + "node " + w[0] + " was already labelled on line " + std::to_string(it->second.second));
    named[node] = {w[1], line};
  }
  g.nodes = static_cast<int64_t>(named.size());
  if (g.nodes == 0) throw ValueError(path + ": no labelled node");
  if (g.nodes > kMaxNodes)
    throw ValueError(path + ": " + std::to_string(g.nodes) + " nodes; at most " + std::to_string(kMaxNodes) +
                     " (the one-hot features and full attention's scores take N² floats)");
  if (named.rbegin()->first != g.nodes - 1)
    throw ValueError(at(path, named.rbegin()->second.second) + "node " + std::to_string(named.rbegin()->first) +
                     " is labelled, but only " + std::to_string(g.nodes) + " nodes are: number them 0 ... N - 1");
  for (const auto& [node, label] : named) g.class_names.push_back(label.first);
  std::sort(g.class_names.begin(), g.class_names.end());
  g.class_names.erase(std::unique(g.class_names.begin(), g.class_names.end()), g.class_names.end());
  g.classes = static_cast<int64_t>(g.class_names.size());
  if (g.classes < 2)  // every model would score 1.000 without learning anything
    throw ValueError(path + ": every node is of class " + qkv::examples::quoted(g.class_names[0]) +
                     "; classifying needs at least two classes");
  std::vector<int64_t> labels;
  for (const auto& [node, label] : named)
    labels.push_back(std::lower_bound(g.class_names.begin(), g.class_names.end(), label.first) - g.class_names.begin());
  g.labels = qkv::IndexTensor(labels);
}

void read_edges(GraphFile& f, const std::string& path) {
  Graph& g = f.graph;
  std::map<std::pair<int64_t, int64_t>, int64_t> seen;  // edge → its line
  int64_t self_loops = 0;
  for (const auto& [line, w] : read_lines(path)) {
    if (w.size() != 2) throw ValueError(at(path, line) + "expected 'U V', got " + std::to_string(w.size()) + " words");
    const int64_t u = node_number(w[0], at(path, line)), v = node_number(w[1], at(path, line));
    for (int64_t node : {u, v})
      if (node >= g.nodes)
        throw ValueError(at(path, line) + "node " + std::to_string(node) + " is outside [0, N) for N = " +
                         std::to_string(g.nodes) + " (the nodes the labels file names)");
    if (u == v) {
      ++self_loops;
      continue;
    }
    const std::pair<int64_t, int64_t> e{std::min(u, v), std::max(u, v)};
    if (const auto it = seen.find(e); it != seen.end())
      throw ValueError(at(path, line) + "the edge " + w[0] + " " + w[1] + " was already given on line " +
                       std::to_string(it->second) + " (edges are undirected; give each once)");
    seen[e] = line;
    g.edges.push_back(e);
  }
  std::sort(g.edges.begin(), g.edges.end());
  if (self_loops > 0)
    f.notes.push_back(path + ": skipped " + std::to_string(self_loops) +
                      " self-loop(s); the attention models add every node's self-loop themselves");
}

void split(Graph& g, int64_t labelled_per_class, uint64_t seed) {
  qkv::Generator gen(seed);
  std::vector<int64_t> order(static_cast<size_t>(g.nodes));
  for (int64_t i = 0; i < g.nodes; ++i) order[i] = i;
  for (int64_t i = g.nodes - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(i + 1)))]);
  std::vector<int64_t> taken(static_cast<size_t>(g.classes), 0), rest;
  for (int64_t i : order) {
    if (taken[g.labels[i]] < labelled_per_class) ++taken[g.labels[i]], g.train.push_back(i);
    else rest.push_back(i);
  }
  const size_t val = rest.size() / 5;
  g.val.assign(rest.begin(), rest.begin() + static_cast<int64_t>(val));
  g.test.assign(rest.begin() + static_cast<int64_t>(val), rest.end());
  if (g.test.empty())
    throw ValueError("graph train: " + std::to_string(g.nodes) + " nodes in " + std::to_string(g.classes) +
                     " classes leave no test node after --labelled " + std::to_string(labelled_per_class) +
                     " per class; give a smaller --labelled");
}

}  // namespace

GraphFile read_graph(const std::string& edges_path, const std::string& labels_path, int64_t labelled_per_class,
                     uint64_t seed) {
  GraphFile f;
  read_labels(f.graph, labels_path);
  read_edges(f, edges_path);
  f.graph.features = qkv::eye(f.graph.nodes);
  split(f.graph, labelled_per_class, seed);
  return f;
}

}  // namespace graph
