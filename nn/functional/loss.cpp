#include "nn/functional/loss.h"

#include <string>
#include <vector>

#include "autograd/ops/cross_entropy.h"
#include "tensor/error.h"
#include "tensor/factories.h"

namespace qkv::nn::functional {
namespace {

// x with its class dim moved last (a view): (..., C).
Tensor classes_last(const Tensor& x, int64_t class_dim, const char* op) {
  if (x.dim() == 0) throw ShapeError(std::string(op) + ": expected class scores of shape (..., C), got a 0-d tensor");
  const int64_t d = normalize_dim(class_dim, x.dim(), op);
  if (d == x.dim() - 1) return x;
  std::vector<int64_t> order;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (k != d) order.push_back(k);
  order.push_back(d);
  return x.permute(order);
}

// The target must have the shape of x (..., C) without its class dim.
void check_target_shape(const Tensor& x, const IndexTensor& target, const Tensor& input, const char* op) {
  const Shape expected(x.shape().begin(), x.shape().end() - 1);
  if (target.shape() != expected)
    throw ShapeError(std::string(op) + ": target of shape " + shape_str(target.shape()) + " does not fit input of shape " +
                     shape_str(input.shape()) + ": expected " + shape_str(expected) +
                     ", the input's shape without its class dim");
}

void check_class_weight(const Tensor& weight, int64_t classes, const char* op) {
  if (weight.defined() && weight.shape() != Shape{classes})
    throw ShapeError(std::string(op) + ": weight of shape " + shape_str(weight.shape()) + " for " +
                     std::to_string(classes) + " classes: expected (" + std::to_string(classes) + ")");
}

// Σ w[y] over the targets that are not ignored (their count without weights): the denominator of
// PyTorch's weighted mean.
float weight_total(const IndexTensor& target, const Tensor& weight, int64_t ignore_index) {
  const std::vector<float> w = weight.defined() ? weight.to_vector() : std::vector<float>();
  float total = 0.0f;
  for (int64_t y : target.values())
    if (y != ignore_index) total += w.empty() ? 1.0f : w[static_cast<size_t>(y)];
  return total;
}

// Per-element losses (flat) reduced as asked; `shape` is the shape of the unreduced result.
Tensor reduce(const Tensor& loss, const Shape& shape, Reduction reduction, float mean_denominator) {
  switch (reduction) {
    case Reduction::None: return loss.reshape(shape);
    case Reduction::Sum: return loss.sum();
    case Reduction::Mean: return loss.sum().div(mean_denominator);
  }
  throw ValueError("loss: unknown reduction");
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const IndexTensor& target, const CrossEntropyOptions& options) {
  const Tensor x = classes_last(logits, options.class_dim, "cross_entropy");
  check_target_shape(x, target, logits, "cross_entropy");
  const int64_t C = x.size(-1);
  check_class_weight(options.weight, C, "cross_entropy");
  const Tensor loss = softmax_cross_entropy(x.reshape({-1, C}), target.reshape({-1}), options.weight,
                                            options.ignore_index, options.label_smoothing);
  const float denominator =
      options.reduction == Reduction::Mean ? weight_total(target, options.weight, options.ignore_index) : 1.0f;
  return reduce(loss, target.shape(), options.reduction, denominator);
}

Tensor nll_loss(const Tensor& log_probs, const IndexTensor& target, const NLLLossOptions& options) {
  const Tensor x = classes_last(log_probs, options.class_dim, "nll_loss");
  check_target_shape(x, target, log_probs, "nll_loss");
  const int64_t C = x.size(-1), N = target.numel();
  check_class_weight(options.weight, C, "nll_loss");
  // Ignored elements pick class 0, which is then masked to 0 (not multiplied by 0: it may be -inf).
  const std::vector<float> w = options.weight.defined() ? options.weight.to_vector() : std::vector<float>();
  std::vector<int64_t> picked(static_cast<size_t>(N));
  std::vector<float> scale(static_cast<size_t>(N)), ignored(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t y = target[n];
    if (y == options.ignore_index) {
      ignored[n] = 1.0f;
      continue;
    }
    if (y < 0 || y >= C)
      throw IndexError("nll_loss: target " + std::to_string(y) + " (at position " + std::to_string(n) +
                       ") is out of range for " + std::to_string(C) + " classes: expected 0 <= target < " +
                       std::to_string(C) + ", or ignore_index " + std::to_string(options.ignore_index));
    picked[n] = y;
    scale[n] = w.empty() ? 1.0f : w[static_cast<size_t>(y)];
  }
  const Tensor log_p = x.reshape({-1, C}).gather(1, IndexTensor(picked, {N, 1})).reshape({N});
  const Tensor loss = -(log_p.masked_fill(tensor(ignored, {N}), 0.0f) * tensor(scale, {N}));
  const float denominator =
      options.reduction == Reduction::Mean ? weight_total(target, options.weight, options.ignore_index) : 1.0f;
  return reduce(loss, target.shape(), options.reduction, denominator);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (input.shape() != target.shape())
    throw ShapeError("mse_loss: target of shape " + shape_str(target.shape()) + " must have the input's shape " +
                     shape_str(input.shape()));
  const Tensor diff = input - target;
  const Tensor loss = diff * diff;
  return reduce(loss.reshape({-1}), input.shape(), reduction, static_cast<float>(input.numel()));
}

Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target, const BCEWithLogitsOptions& options) {
  Tensor loss = sigmoid_cross_entropy(x, target, options.pos_weight);
  if (options.weight.defined()) {
    if (broadcast_shapes(x.shape(), options.weight.shape(), "binary_cross_entropy_with_logits") != x.shape())
      throw ShapeError("binary_cross_entropy_with_logits: weight of shape " + shape_str(options.weight.shape()) +
                       " does not broadcast to the input's shape " + shape_str(x.shape()));
    loss = loss * options.weight;
  }
  return reduce(loss.reshape({-1}), x.shape(), options.reduction, static_cast<float>(x.numel()));
}

Tensor sequence_cross_entropy(const Tensor& logits, const IndexTensor& targets, const IndexTensor& valid_lens,
                              float label_smoothing) {
  if (logits.dim() != 3)
    throw ShapeError("sequence_cross_entropy: logits must be (B, T, C), got shape " + shape_str(logits.shape()));
  const int64_t B = logits.size(0), T = logits.size(1), C = logits.size(2);
  if (targets.shape() != Shape{B, T})
    throw ShapeError("sequence_cross_entropy: targets of shape " + shape_str(targets.shape()) +
                     " do not fit logits of shape " + shape_str(logits.shape()) + ": expected " + shape_str({B, T}));
  if (valid_lens.shape() != Shape{B})
    throw ShapeError("sequence_cross_entropy: valid_lens of shape " + shape_str(valid_lens.shape()) +
                     " for a batch of " + std::to_string(B) + ": expected " + shape_str({B}));
  // Padded steps get the target -1, ignored by the loss; real steps must hold a class.
  constexpr int64_t kPadding = -1;
  std::vector<int64_t> masked(static_cast<size_t>(B * T), kPadding);
  int64_t real = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = valid_lens[b];
    if (len < 0 || len > T)
      throw ValueError("sequence_cross_entropy: valid_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                       " is outside [0, " + std::to_string(T) + "] for sequences of " + std::to_string(T) + " steps");
    for (int64_t t = 0; t < len; ++t) {
      const int64_t y = targets[b * T + t];
      if (y < 0 || y >= C)
        throw IndexError("sequence_cross_entropy: target " + std::to_string(y) + " at (" + std::to_string(b) + ", " +
                         std::to_string(t) + ") is out of range for " + std::to_string(C) + " classes");
      masked[static_cast<size_t>(b * T + t)] = y;
    }
    real += len;
  }
  if (real == 0)
    throw ValueError("sequence_cross_entropy: every valid length is 0, so there is no token to average over");
  const Tensor loss = softmax_cross_entropy(logits.reshape({B * T, C}), IndexTensor(masked, {B * T}), Tensor(),
                                            kPadding, label_smoothing);
  return loss.sum().div(static_cast<float>(real));
}

}  // namespace qkv::nn::functional
