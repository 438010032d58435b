#include "examples/vit/baselines.h"

#include <chrono>
#include <numeric>

#include "autograd/grad_mode.h"
#include "nn/activation.h"
#include "nn/container.h"
#include "nn/functional/loss.h"
#include "nn/linear.h"
#include "optim/adam.h"
#include "tensor/random.h"

namespace vit {

using qkv::Tensor;

namespace {

constexpr int64_t kBatch = 128;

// The images at `indices` as (B, rows·cols) vectors.
Tensor pixels(const ImageSet& set, const std::vector<int64_t>& indices, float mean, float std) {
  return patches(set, indices, 1, mean, std).view({static_cast<int64_t>(indices.size()), set.rows * set.cols});
}

double accuracy(qkv::nn::Sequential& model, const ImageSet& set, float mean, float std) {
  qkv::NoGradGuard no_grad;
  int64_t right = 0;
  for (int64_t start = 0; start < set.size(); start += 1000) {
    std::vector<int64_t> idx(static_cast<size_t>(std::min<int64_t>(1000, set.size() - start)));
    std::iota(idx.begin(), idx.end(), start);
    const qkv::IndexTensor predicted = model.forward(pixels(set, idx, mean, std)).argmax(1);
    for (size_t i = 0; i < idx.size(); ++i) right += predicted.data()[i] == set.labels[idx[i]];
  }
  return static_cast<double>(right) / static_cast<double>(set.size());
}

BaselineResult fit(qkv::nn::Sequential& model, const ImageData& data, float mean, float std, uint64_t seed,
                   int64_t epochs) {
  const auto started = std::chrono::steady_clock::now();
  qkv::optim::AdamW optimizer(model.parameters(), {.lr = 1e-3, .weight_decay = 0.0});
  qkv::Generator gen(seed);
  BaselineResult best;
  std::vector<int64_t> order(static_cast<size_t>(data.train.size()));
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    qkv::shuffle(order, gen);
    for (size_t start = 0; start < order.size(); start += kBatch) {
      const std::vector<int64_t> idx(order.begin() + start, order.begin() + std::min(order.size(), start + kBatch));
      std::vector<int64_t> targets;
      for (int64_t i : idx) targets.push_back(data.train.labels[i]);
      const Tensor loss = qkv::nn::functional::cross_entropy(model.forward(pixels(data.train, idx, mean, std)),
                                                             qkv::IndexTensor(targets));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    const double validation = accuracy(model, data.validation, mean, std);
    if (validation > best.validation_accuracy) {
      best.validation_accuracy = validation;
      best.best_epoch = epoch;
      best.test_accuracy = accuracy(model, data.test, mean, std);
    }
  }
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return best;
}

}  // namespace

qkv::io::Json Baselines::to_json() const {
  return qkv::io::Json(
      qkv::io::Json::Object{{"logistic", qkv::examples::to_json(logistic)}, {"mlp", qkv::examples::to_json(mlp)}});
}

Baselines Baselines::from_json(const qkv::io::Json& json, const std::string& source) {
  const qkv::io::Json* logistic = json.is_object() ? json.find("logistic") : nullptr;
  const qkv::io::Json* mlp = json.is_object() ? json.find("mlp") : nullptr;
  if (!logistic || !mlp) throw qkv::ValueError(source + ": expected the keys logistic and mlp");
  return {qkv::examples::from_json<BaselineResult>(*logistic, source + " logistic", "a vit"),
          qkv::examples::from_json<BaselineResult>(*mlp, source + " mlp", "a vit")};
}

Baselines compute_baselines(const ImageData& data, float mean, float std, uint64_t seed, int64_t epochs) {
  const int64_t in = data.train.rows * data.train.cols, classes = static_cast<int64_t>(data.class_names.size());
  Baselines b;
  // The baselines draw their initial weights from the default generator and give it back as they
  // found it: a ViT trained after them draws the same dropout with or without them.
  const qkv::GeneratorState before = qkv::default_generator().state();
  qkv::manual_seed(seed);
  qkv::nn::Sequential logistic;
  logistic.push_back(std::make_shared<qkv::nn::Linear>(in, classes));
  b.logistic = fit(logistic, data, mean, std, seed, epochs);
  qkv::nn::Sequential mlp;
  mlp.push_back(std::make_shared<qkv::nn::Linear>(in, 256))
      .push_back(std::make_shared<qkv::nn::ReLU>())
      .push_back(std::make_shared<qkv::nn::Linear>(256, classes));
  b.mlp = fit(mlp, data, mean, std, seed, epochs);
  qkv::default_generator().set_state(before);
  return b;
}

}  // namespace vit
