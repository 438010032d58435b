// The autograd graph behind a tensor, written out as Graphviz DOT or as JSON.
//
//   Tensor loss = model_loss(batch);
//   {
//     RecordGradNorms record;                    // optional: adds each gradient's norm to the edges
//     loss.backward({}, /*retain_graph=*/true);
//   }
//   GraphDumpOptions opts;
//   opts.names = model.named_parameters();       // leaves labelled "fc1.weight", ...
//   std::ofstream("graph.dot") << qkv::autograd::graph_to_dot(loss, opts);
//   // dot -Tpng graph.dot -o graph.png
//
// One box per op node: its name, its output shape and the bytes of the tensors it saved for
// backward. One ellipse per leaf that requires grad (a parameter): its name and shape. An edge runs
// from an input to the op that consumed it, as data flows forward; it is labelled with the input's
// shape and, after a backward that kept the graph (retain_graph) while a RecordGradNorms was alive,
// the norm of the gradient that went back along it. After a backward that freed the graph only the
// root's node is left.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace qkv::autograd {

// While alive, every backward notes on each node the norm of the gradient it sends to each input
// (an observer of the engine, autograd/observer.h): the dumps show them on the edges. It costs a
// norm per gradient, so it is off unless asked for.
class RecordGradNorms {
 public:
  RecordGradNorms();
  ~RecordGradNorms();
  RecordGradNorms(const RecordGradNorms&) = delete;
  RecordGradNorms& operator=(const RecordGradNorms&) = delete;
};

struct GraphDumpOptions {
  // Names for leaves, e.g. module.named_parameters(); a leaf not listed shows its own name() if
  // set, else "leaf".
  std::vector<std::pair<std::string, Tensor>> names;
  // If set: only the nodes on a path from the root to this named leaf (the name must be in
  // `names` or be a leaf's name()); ValueError if the graph does not reach it.
  std::string only_path_to;
};

std::string graph_to_dot(const Tensor& root, const GraphDumpOptions& options = {});

// {"root":"n0",
//  "nodes":[{"id":"n0","op":"sum","shape":[],"saved_bytes":0,"released":false,
//            "inputs":[{"from":"n1","shape":[4,2],"grad_norm":1.5},...]},...],
//  "leaves":[{"id":"l0","name":"fc1.weight","shape":[2,3]},...]}
// on one line (io::to_json). "grad_norm" is null when no gradient was recorded for that edge. An
// input that needs no gradient (a constant) has "from": null.
std::string graph_to_json(const Tensor& root, const GraphDumpOptions& options = {});

}  // namespace qkv::autograd
