#include "examples/lm/model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/grad_mode.h"
#include "nn/functional/basic.h"
#include "nn/init.h"
#include "tensor/error.h"
#include "tensor/precision.h"

namespace lm {

using qkv::IndexTensor;
using qkv::Tensor;

CharGPT::CharGPT(const ModelConfig& c) : config(c) {
  if (c.vocab_size < 2 || c.context < 2)
    throw qkv::ValueError("CharGPT: vocab_size " + std::to_string(c.vocab_size) + " and context " +
                          std::to_string(c.context) + " must be at least 2");
  embedding = register_module("embedding", std::make_shared<qkv::nn::Embedding>(c.vocab_size, c.d_model));
  qkv::nn::init::normal_(embedding->weight, 0.0f, 0.02f);
  encoder = register_module(
      "encoder", std::make_shared<qkv::nn::TransformerEncoder>(qkv::nn::TransformerEncoderOptions{
                     .vocab_size = 0, .num_hiddens = c.d_model, .ffn_num_hiddens = c.ffn_hidden,
                     .num_heads = c.heads, .num_layers = c.layers, .dropout = c.dropout, .max_len = c.context,
                     .positions = qkv::nn::position_scheme(c.positions),
                     .attend = qkv::nn::AttentionRestriction::causal(), .ffn = qkv::nn::feed_forward(c.ffn),
                     .norm = qkv::nn::NormPlacement::Pre, .recompute = c.recompute}));
}

Tensor CharGPT::forward(const IndexTensor& ids) {
  if (ids.dim() != 2 || ids.size(1) < 1 || ids.size(1) > config.context)
    throw qkv::ShapeError("CharGPT: ids of shape " + qkv::shape_str(ids.shape()) + " must be (B, T) with 1 <= T <= " +
                          std::to_string(config.context));
  return qkv::nn::functional::linear(encoder->forward(embedding->forward(ids)), embedding->weight);
}

Tensor CharGPT::forward_step(const IndexTensor& ids, qkv::nn::KVCache& cache) {
  qkv::NoGradGuard no_grad;
  return qkv::nn::functional::linear(encoder->forward_step(embedding->forward(ids), cache), embedding->weight);
}

std::shared_ptr<CharGPT> with_context(const CharGPT& model, int64_t context) {
  ModelConfig c = model.config;
  c.context = context;
  const qkv::nn::StateDict weights = model.state_dict();
  auto out = std::make_shared<CharGPT>(c);
  for (const auto& [name, tensor] : out->state_dict())
    if (const auto it = weights.find(name); it != weights.end() && it->second.shape() != tensor.shape())
      throw qkv::ValueError("a context of " + std::to_string(context) + " needs " + name + " of shape " +
                            qkv::shape_str(tensor.shape()) + "; the model's is " + qkv::shape_str(it->second.shape()) +
                            ", one row per position it was trained at");
  out->load_state_dict(weights);
  out->train(model.is_training());
  return out;
}

int32_t sample_id(const float* logits, int64_t V, const SampleOptions& o, qkv::Generator& gen) {
  if (V < 2) throw qkv::ValueError("sample_id: " + std::to_string(V) + " ids; expected the unknown symbol and a character");
  if (o.temperature == 0.0) return static_cast<int32_t>(std::max_element(logits + 1, logits + V) - logits);
  // The candidates, most likely first (ties: the lower id), cut to the top k.
  std::vector<int32_t> order(static_cast<size_t>(V - 1));
  std::iota(order.begin(), order.end(), 1);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (o.top_k > 0 && o.top_k < V - 1) order.resize(static_cast<size_t>(o.top_k));
  // softmax(logits / T) over them, in double, from the largest down.
  std::vector<double> p(order.size());
  double sum = 0;
  for (size_t i = 0; i < order.size(); ++i)
    sum += p[i] = std::exp((static_cast<double>(logits[order[i]]) - logits[order[0]]) / o.temperature);
  const double u = gen.next_uniform();
  double below = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    below += p[i] / sum;
    if (u < below) return order[i];
  }
  return order.back();  // u within rounding of 1
}

namespace {

// The window both modes read, and how the cached mode follows it.
class Window {
 public:
  Window(CharGPT& model, bool cached) : model_(model), cached_(cached) {
    if (cached_) cache_ = model.make_cache(1);
  }
  // Appends a character; returns the logits (V) for the character after the window, computed now
  // only when `want` (the cached mode must run every character; the plain mode runs on demand).
  std::vector<float> push(int32_t id, bool want) {
    ids_.push_back(id);
    const int64_t context = model_.config.context;
    bool refill = false;
    if (static_cast<int64_t>(ids_.size()) > context) {
      ids_.erase(ids_.begin(), ids_.end() - context / 2);
      refill = true;
    }
    if (!cached_) return want ? last_logits(model_.forward(as_ids(ids_))) : std::vector<float>();
    if (refill) {
      cache_.clear();
      Tensor logits;
      for (const int32_t i : ids_) logits = model_.forward_step(as_ids({i}), cache_);
      return last_logits(logits);
    }
    return last_logits(model_.forward_step(as_ids({id}), cache_));
  }

 private:
  static IndexTensor as_ids(const std::vector<int32_t>& ids) {
    return IndexTensor(std::vector<int64_t>(ids.begin(), ids.end()), {1, static_cast<int64_t>(ids.size())});
  }
  static std::vector<float> last_logits(const Tensor& logits) {
    const int64_t V = logits.size(2);
    const Tensor row = logits.narrow(1, logits.size(1) - 1, 1).contiguous();
    return std::vector<float>(row.data(), row.data() + V);
  }
  CharGPT& model_;
  bool cached_;
  qkv::nn::KVCache cache_;
  std::vector<int32_t> ids_;
};

}  // namespace

std::vector<int32_t> generate(CharGPT& model, const std::vector<int32_t>& prompt, const SampleOptions& o,
                              const std::function<void(int32_t)>& on_token, std::vector<std::vector<float>>* logits) {
  if (prompt.empty()) throw qkv::ValueError("generate: the prompt is empty; it needs at least one character");
  const bool was_training = model.is_training();
  model.eval();
  qkv::NoGradGuard no_grad;
  // Float32 products, whatever the training used: with bfloat16 ones a cached step (one row, too
  // small a product to round) and a whole window (rounded) would part in the last bits.
  const qkv::MatmulPrecisionGuard float32(qkv::MatmulPrecision::highest);
  qkv::Generator gen(o.seed);
  Window window(model, o.cache);
  std::vector<float> next;
  for (size_t i = 0; i < prompt.size(); ++i) next = window.push(prompt[i], i + 1 == prompt.size());
  std::vector<int32_t> out;
  for (int64_t t = 0; t < o.tokens; ++t) {
    if (logits) logits->push_back(next);
    const int32_t id = sample_id(next.data(), static_cast<int64_t>(next.size()), o, gen);
    out.push_back(id);
    if (on_token) on_token(id);
    if (t + 1 < o.tokens) next = window.push(id, true);
  }
  model.train(was_training);
  return out;
}

}  // namespace lm
