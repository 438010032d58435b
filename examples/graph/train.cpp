#include "examples/graph/train.h"

#include "autograd/grad_mode.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "tensor/random.h"

namespace graph {

double accuracy(const qkv::Tensor& scores, const Graph& g, const std::vector<int64_t>& nodes) {
  if (nodes.empty()) return 0.0;
  const qkv::IndexTensor predicted = scores.argmax(1);
  int64_t right = 0;
  for (int64_t i : nodes) right += predicted[i] == g.labels[i] ? 1 : 0;
  return static_cast<double>(right) / static_cast<double>(nodes.size());
}

TrainResult train_model(const std::string& name, const Graph& g, const TrainOptions& o) {
  qkv::manual_seed(o.seed);
  TrainResult best;
  best.model = make_model(name, g, o.model);
  qkv::optim::Adam adam(best.model->parameters(), {.lr = o.lr, .weight_decay = o.weight_decay});
  const qkv::IndexTensor train(g.train);
  std::vector<int64_t> targets;
  for (int64_t i : g.train) targets.push_back(g.labels[i]);
  const qkv::IndexTensor target(targets);
  double best_val = -1;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    best.model->train();
    adam.zero_grad();
    qkv::nn::functional::cross_entropy(best.model->logits(g.features).index_select(0, train), target).backward();
    adam.step();
    best.model->eval();
    const qkv::NoGradGuard no_grad;
    const qkv::Tensor scores = best.model->logits(g.features);
    const double val = accuracy(scores, g, g.val);
    if (val > best_val || (g.val.empty() && epoch == o.epochs)) {
      best_val = val;
      best.train = accuracy(scores, g, g.train), best.val = val, best.test = accuracy(scores, g, g.test);
      best.epoch = epoch;
    }
  }
  const qkv::NoGradGuard no_grad;
  best.model->logits(g.features);  // the weights of the graph model's final state, for its figure
  return best;
}

}  // namespace graph
