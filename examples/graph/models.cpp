#include "examples/graph/models.h"

#include "autograd/ops/graph_attention.h"
#include "nn/attention.h"
#include "nn/functional/basic.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "tensor/error.h"

namespace graph {
namespace {

using qkv::Tensor;
namespace nn = qkv::nn;

class Mlp : public NodeModel {
 public:
  Mlp(int64_t features, int64_t classes, const ModelOptions& o)
      : in_(register_module("in", std::make_shared<nn::Linear>(features, o.hidden))),
        out_(register_module("out", std::make_shared<nn::Linear>(o.hidden, classes))),
        p_(o.dropout) {}
  Tensor logits(const Tensor& x) override {
    const Tensor h = in_->forward(nn::functional::dropout(x, p_, is_training())).relu();
    return out_->forward(nn::functional::dropout(h, p_, is_training()));
  }

 private:
  std::shared_ptr<nn::Linear> in_, out_;
  float p_;
};

// Linear in, `layers` attention sublayers h ← LayerNorm(h + attend(h)), a linear head. The two
// attention models differ in attend(): whom each node may look at; and in one detail of it: full
// attention is nn::MultiHeadAttention, whose projections have no bias (d2l's default), while the
// graph model's own projections have biases.
class AttentionModel : public NodeModel {
 public:
  AttentionModel(int64_t features, int64_t classes, const ModelOptions& o) : o_(o) {
    in_ = register_module("in", std::make_shared<nn::Linear>(features, o.hidden));
    for (int64_t l = 0; l < o.layers; ++l)
      norms_.push_back(register_module("norm" + std::to_string(l), std::make_shared<nn::LayerNorm>(o.hidden)));
    out_ = register_module("out", std::make_shared<nn::Linear>(o.hidden, classes));
  }
  Tensor logits(const Tensor& x) override {
    Tensor h = in_->forward(nn::functional::dropout(x, o_.dropout, is_training())).relu();
    for (int64_t l = 0; l < o_.layers; ++l) h = norms_[l]->forward(h + attend(h, l));
    return out_->forward(nn::functional::dropout(h, o_.dropout, is_training()));
  }

 protected:
  virtual Tensor attend(const Tensor& h, int64_t layer) = 0;  // (N, hidden) → (N, hidden)
  ModelOptions o_;

 private:
  std::shared_ptr<nn::Linear> in_, out_;
  std::vector<std::shared_ptr<nn::LayerNorm>> norms_;
};

// Every node attends to every node: one sequence of N nodes, multi-head attention (d2l 11.5).
class FullAttention : public AttentionModel {
 public:
  FullAttention(int64_t features, int64_t classes, const ModelOptions& o) : AttentionModel(features, classes, o) {
    for (int64_t l = 0; l < o.layers; ++l)
      layers_.push_back(register_module("attention" + std::to_string(l),
                                        std::make_shared<nn::MultiHeadAttention>(o.hidden, o.hidden, o.hidden, o.hidden,
                                                                                 o.heads, 0.0f)));
  }

 protected:
  Tensor attend(const Tensor& h, int64_t layer) override {
    const Tensor x = h.unsqueeze(0);  // (1, N, hidden)
    return layers_[layer]->forward(x, x, x).squeeze(0);
  }

 private:
  std::vector<std::shared_ptr<nn::MultiHeadAttention>> layers_;
};

// Each node attends to its neighbours and itself: per layer, the queries, keys and values of one
// projection (N, 3·hidden), split into H heads, graph_attention over the edges, and an output
// projection, as multi-head attention has.
class GraphAttentionModel : public AttentionModel {
 public:
  GraphAttentionModel(const Graph& g, int64_t classes, const ModelOptions& o)
      : AttentionModel(g.features.size(1), classes, o), edges_(attention_edges(g, /*self_loops=*/true)) {
    if (o.hidden % o.heads != 0)
      throw qkv::ValueError("--hidden " + std::to_string(o.hidden) + " must be a multiple of --heads " +
                            std::to_string(o.heads));
    for (int64_t l = 0; l < o.layers; ++l) {
      qkv_.push_back(register_module("qkv" + std::to_string(l), std::make_shared<nn::Linear>(o.hidden, 3 * o.hidden)));
      proj_.push_back(register_module("proj" + std::to_string(l), std::make_shared<nn::Linear>(o.hidden, o.hidden)));
    }
  }
  const qkv::GraphEdges& edges() const { return edges_; }
  const Tensor& weights() const { return weights_; }

 protected:
  Tensor attend(const Tensor& h, int64_t layer) override {
    const int64_t N = h.size(0), D = o_.hidden / o_.heads;
    const Tensor p = qkv_[layer]->forward(h);
    const auto head = [&](int64_t i) { return p.narrow(1, i * o_.hidden, o_.hidden).reshape({N, o_.heads, D}); };
    const qkv::GraphAttention a = qkv::graph_attention(head(0), head(1), head(2), edges_);
    weights_ = a.weights;
    return proj_[layer]->forward(a.output.reshape({N, o_.hidden}));
  }

 private:
  qkv::GraphEdges edges_;
  std::vector<std::shared_ptr<nn::Linear>> qkv_, proj_;
  Tensor weights_;
};

}  // namespace

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "attention", "graph"};
  return names;
}

std::shared_ptr<NodeModel> make_model(const std::string& name, const Graph& g, const ModelOptions& o) {
  const int64_t F = g.features.size(1);
  if (name == "mlp") return std::make_shared<Mlp>(F, g.classes, o);
  if (name == "attention") return std::make_shared<FullAttention>(F, g.classes, o);
  if (name == "graph") return std::make_shared<GraphAttentionModel>(g, g.classes, o);
  throw qkv::ValueError("unknown model '" + name + "'; expected mlp, attention or graph");
}

EdgeWeights last_attention(const NodeModel& model) {
  const auto* m = dynamic_cast<const GraphAttentionModel*>(&model);
  if (!m) throw qkv::ValueError("attention weights: only the graph model has them");
  return {m->edges(), m->weights()};
}

}  // namespace graph
