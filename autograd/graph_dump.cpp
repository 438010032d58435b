#include "autograd/graph_dump.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "autograd/node.h"
#include "tensor/error.h"

namespace qkv::autograd {
namespace {

// The graph reachable from a tensor: op nodes with inputs before their consumers (a depth-first
// post-order with an explicit stack, as in the engine), and the leaves they read.
struct Graph {
  std::vector<const Node*> nodes;
  std::map<const Node*, size_t> node_index;
  std::vector<const TensorImpl*> leaves;
  std::map<const TensorImpl*, size_t> leaf_index;
  std::vector<std::string> leaf_names;
  std::vector<bool> keep_node, keep_leaf;
  const Node* root = nullptr;
  const TensorImpl* root_leaf = nullptr;  // the root itself is a leaf
};

void add_leaf(Graph& g, const TensorImpl* leaf) {
  if (g.leaf_index.count(leaf)) return;
  g.leaf_index[leaf] = g.leaves.size();
  g.leaves.push_back(leaf);
}

Graph collect(const Tensor& root, const GraphDumpOptions& options) {
  Graph g;
  if (!root.defined()) throw ValueError("graph dump: the tensor is undefined");
  if (root.grad_fn()) {
    g.root = root.grad_fn().get();
    std::vector<std::pair<const Node*, size_t>> stack{{g.root, 0}};
    std::map<const Node*, bool> seen{{g.root, true}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->inputs.size()) {
        const Edge& e = node->inputs[next++];
        if (e.node && !seen[e.node.get()]) {
          seen[e.node.get()] = true;
          stack.emplace_back(e.node.get(), 0);
        } else if (e.leaf) {
          add_leaf(g, e.leaf.get());
        }
      } else {
        g.node_index[node] = g.nodes.size();
        g.nodes.push_back(node);
        stack.pop_back();
      }
    }
  } else if (root.requires_grad()) {
    g.root_leaf = root.impl();
    add_leaf(g, root.impl());
  }

  std::map<const TensorImpl*, std::string> names;
  for (const auto& [name, t] : options.names)
    if (t.defined()) names[t.impl()] = name;
  for (const TensorImpl* leaf : g.leaves) {
    auto it = names.find(leaf);
    g.leaf_names.push_back(it != names.end() ? it->second : !leaf->name.empty() ? leaf->name : "leaf");
  }

  g.keep_node.assign(g.nodes.size(), options.only_path_to.empty());
  g.keep_leaf.assign(g.leaves.size(), options.only_path_to.empty());
  if (!options.only_path_to.empty()) {
    bool found = false;
    for (size_t i = 0; i < g.leaves.size(); ++i)
      if (g.leaf_names[i] == options.only_path_to) g.keep_leaf[i] = found = true;
    if (!found)
      throw ValueError("graph dump: no leaf named '" + options.only_path_to +
                       "' is reached from this tensor (pass the names, e.g. named_parameters())");
    // Inputs come before consumers: one sweep marks every node that leads to the kept leaf.
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const Edge& e : g.nodes[i]->inputs)
        if ((e.leaf && g.keep_leaf[g.leaf_index.at(e.leaf.get())]) ||
            (e.node && g.keep_node[g.node_index.at(e.node.get())]))
          g.keep_node[i] = true;
  }
  return g;
}

// Nodes are numbered from the root (n0) towards the inputs.
// (Appending to a named string: GCC 12 warns falsely about "n" + std::to_string(...).)
std::string node_id(const Graph& g, const Node* n) {
  std::string id = "n";
  return id += std::to_string(g.nodes.size() - 1 - g.node_index.at(n));
}
std::string leaf_id(const Graph& g, const TensorImpl* l) {
  std::string id = "l";
  return id += std::to_string(g.leaf_index.at(l));
}

bool kept(const Graph& g, const Edge& e) {
  if (e.node) return g.keep_node[g.node_index.at(e.node.get())];
  if (e.leaf) return g.keep_leaf[g.leaf_index.at(e.leaf.get())];
  return false;
}

std::string bytes_str(int64_t bytes) {
  char buf[32];
  if (bytes < 1024) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

std::string json_shape(const Shape& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

float grad_norm(const Node& n, size_t input) {
  return input < n.input_grad_norms.size() ? n.input_grad_norms[input] : NAN;
}

}  // namespace

std::string graph_to_dot(const Tensor& root, const GraphDumpOptions& options) {
  const Graph g = collect(root, options);
  std::ostringstream out;
  out << "digraph autograd {\n"
      << "  node [fontname=\"monospace\", fontsize=10];\n"
      << "  edge [fontname=\"monospace\", fontsize=9];\n";
  for (size_t i = 0; i < g.leaves.size(); ++i) {
    if (!g.keep_leaf[i]) continue;
    out << "  " << leaf_id(g, g.leaves[i]) << " [shape=ellipse, style=filled, fillcolor=lightblue, label="
        << quoted(g.leaf_names[i] + "\n" + shape_str(g.leaves[i]->shape)) << "];\n";
  }
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!g.keep_node[i]) continue;
    const Node& n = *g.nodes[i];
    std::string label = n.op + "\n" + shape_str(n.out_shape) + "\nsaved " + bytes_str(n.saved_bytes());
    if (n.released) label += "\n(freed by backward)";
    out << "  " << node_id(g, &n) << " [shape=box, label=" << quoted(label)
        << (&n == g.root ? ", peripheries=2" : "") << "];\n";
  }
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!g.keep_node[i]) continue;
    const Node& n = *g.nodes[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Edge& e = n.inputs[k];
      if (!kept(g, e)) continue;
      std::string label = shape_str(e.shape);
      const float norm = grad_norm(n, k);
      if (!std::isnan(norm)) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "\n|grad| %.4g", norm);
        label += buf;
      }
      out << "  " << (e.node ? node_id(g, e.node.get()) : leaf_id(g, e.leaf.get())) << " -> "
          << node_id(g, &n) << " [label=" << quoted(label) << "];\n";
    }
  }
  out << "}\n";
  return out.str();
}

std::string graph_to_json(const Tensor& root, const GraphDumpOptions& options) {
  const Graph g = collect(root, options);
  std::ostringstream out;
  out << "{\"root\": "
      << (g.root ? quoted(node_id(g, g.root)) : g.root_leaf ? quoted(leaf_id(g, g.root_leaf)) : "null")
      << ",\n \"nodes\": [";
  bool first = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!g.keep_node[i]) continue;
    const Node& n = *g.nodes[i];
    out << (first ? "\n  " : ",\n  ") << "{\"id\": " << quoted(node_id(g, &n)) << ", \"op\": " << quoted(n.op)
        << ", \"shape\": " << json_shape(n.out_shape) << ", \"saved_bytes\": " << n.saved_bytes()
        << ", \"released\": " << (n.released ? "true" : "false") << ", \"inputs\": [";
    first = false;
    bool first_input = true;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Edge& e = n.inputs[k];
      const bool needed = e.needed();
      if (needed && !kept(g, e)) continue;
      const float norm = grad_norm(n, k);
      std::ostringstream num;
      num.precision(9);
      num << norm;
      out << (first_input ? "" : ", ") << "{\"from\": "
          << (!needed ? "null" : quoted(e.node ? node_id(g, e.node.get()) : leaf_id(g, e.leaf.get())))
          << ", \"shape\": " << json_shape(e.shape)
          << ", \"grad_norm\": " << (std::isfinite(norm) ? num.str() : "null") << "}";
      first_input = false;
    }
    out << "]}";
  }
  out << "],\n \"leaves\": [";
  first = true;
  for (size_t i = 0; i < g.leaves.size(); ++i) {
    if (!g.keep_leaf[i]) continue;
    out << (first ? "\n  " : ",\n  ") << "{\"id\": " << quoted(leaf_id(g, g.leaves[i]))
        << ", \"name\": " << quoted(g.leaf_names[i]) << ", \"shape\": " << json_shape(g.leaves[i]->shape) << "}";
    first = false;
  }
  out << "]}\n";
  return out.str();
}

}  // namespace qkv::autograd
