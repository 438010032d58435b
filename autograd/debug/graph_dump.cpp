#include "autograd/debug/graph_dump.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include "autograd/node.h"
#include "autograd/observer.h"
#include "io/json.h"
#include "tensor/error.h"

namespace qkv::autograd {
namespace {

// The norm of the gradient a node sent to each input (NaN where it sent none).
struct GradNorms : NodeNote {
  std::vector<float> norms;
};

// While a RecordGradNorms lives: notes the norms of each node's gradients as the engine reports them.
class GradNormObserver : public Observer {
 public:
  void node_finished(Node& node, const Tensor&, const std::vector<Tensor>& grads) override {
    GradNorms* note = node.note<GradNorms>();
    if (!note) {
      node.notes.push_back(std::make_unique<GradNorms>());
      note = static_cast<GradNorms*>(node.notes.back().get());
    }
    note->norms.assign(grads.size(), NAN);
    for (size_t i = 0; i < grads.size(); ++i)
      if (grads[i].defined()) note->norms[i] = grads[i].norm().item();
  }
};

GradNormObserver g_grad_norms;
std::mutex g_recorders_mutex;
int g_recorders = 0;  // RecordGradNorms alive: the observer is registered while there is one

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
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

// A DOT string: quotes and backslashes escaped, line breaks as \n.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

io::Json json_shape(const Shape& shape) {
  io::Json::Array dims;
  for (int64_t d : shape) dims.emplace_back(d);
  return dims;
}

float grad_norm(const Node& n, size_t input) {
  const GradNorms* note = n.note<GradNorms>();
  return note && input < note->norms.size() ? note->norms[input] : NAN;
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

namespace {

io::Json json_node(const Graph& g, const Node& n) {
  io::Json::Array inputs;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Edge& e = n.inputs[k];
    if (e.needed() && !kept(g, e)) continue;
    const float norm = grad_norm(n, k);
    inputs.push_back(io::Json::Object{
        {"from", !e.needed() ? io::Json()
                 : e.node    ? node_id(g, e.node.get())
                             : leaf_id(g, e.leaf.get())},
        {"shape", json_shape(e.shape)},
        {"grad_norm", std::isfinite(norm) ? io::Json(static_cast<double>(norm)) : io::Json()}});
  }
  return io::Json::Object{{"id", node_id(g, &n)},
                          {"op", n.op},
                          {"shape", json_shape(n.out_shape)},
                          {"saved_bytes", n.saved_bytes()},
                          {"released", n.released},
                          {"inputs", std::move(inputs)}};
}

}  // namespace

std::string graph_to_json(const Tensor& root, const GraphDumpOptions& options) {
  const Graph g = collect(root, options);
  io::Json::Array nodes, leaves;
  for (size_t i = g.nodes.size(); i-- > 0;)
    if (g.keep_node[i]) nodes.push_back(json_node(g, *g.nodes[i]));
  for (size_t i = 0; i < g.leaves.size(); ++i)
    if (g.keep_leaf[i])
      leaves.push_back(io::Json::Object{{"id", leaf_id(g, g.leaves[i])},
                                        {"name", g.leaf_names[i]},
                                        {"shape", json_shape(g.leaves[i]->shape)}});
  const io::Json root_id = g.root        ? io::Json(node_id(g, g.root))
                           : g.root_leaf ? io::Json(leaf_id(g, g.root_leaf))
                                         : io::Json();
  return io::to_json(io::Json::Object{
             {"root", root_id}, {"nodes", std::move(nodes)}, {"leaves", std::move(leaves)}}) +
         "\n";
}

RecordGradNorms::RecordGradNorms() {
  std::lock_guard<std::mutex> lock(g_recorders_mutex);
  if (g_recorders++ == 0) add_observer(&g_grad_norms);
}

RecordGradNorms::~RecordGradNorms() {
  std::lock_guard<std::mutex> lock(g_recorders_mutex);
  if (--g_recorders == 0) remove_observer(&g_grad_norms);
}

}  // namespace qkv::autograd
