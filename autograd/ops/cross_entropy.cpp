// Cross-entropy losses taken from logits (autograd/ops/cross_entropy.h), fused: the log-softmax (or
// log-sigmoid) and the negative log-likelihood are one node, so backward needs only the logits and
// one log-sum-exp per row instead of an (N, C) tensor of log-probabilities, and the gradient is the
// well-known closed form "probabilities minus targets" instead of a chain of five ops. Beside each,
// its composed reference: those ops, one by one.
#include "autograd/ops/cross_entropy.h"

#include <cmath>
#include <string>

#include "autograd/function.h"
#include "autograd/ops/map.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/cross_entropy.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_targets(const IndexTensor& target, int64_t classes, int64_t ignore_index) {
  const int64_t* y = target.data();
  for (int64_t n = 0; n < target.numel(); ++n)
    if (y[n] != ignore_index && (y[n] < 0 || y[n] >= classes))
      throw IndexError("cross_entropy: target " + std::to_string(y[n]) + " (at position " + std::to_string(n) +
                       ") is out of range for " + std::to_string(classes) + " classes: expected 0 <= target < " +
                       std::to_string(classes) + ", or ignore_index " + std::to_string(ignore_index));
}

// softplus(x) = log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), which never overflows.
float softplus(float x) { return std::fmax(x, 0.0f) + std::log1p(std::exp(-std::fabs(x))); }

// σ(x) without overflow of e^-x for very negative x.
float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

}  // namespace

Tensor softmax_cross_entropy_reference(const Tensor& logits, const IndexTensor& target, const Tensor& weight,
                                       int64_t ignore_index, float label_smoothing) {
  const int64_t N = logits.size(0), C = logits.size(1);
  std::vector<int64_t> picked(static_cast<size_t>(N));  // the target, or class 0 where ignored
  std::vector<float> ignored(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    const bool skip = target[n] == ignore_index;
    picked[static_cast<size_t>(n)] = skip ? 0 : target[n];
    ignored[static_cast<size_t>(n)] = skip ? 1.0f : 0.0f;
  }
  const Tensor w = weight.defined() ? weight.detach() : ones({C});  // a constant: no gradient
  const IndexTensor y(picked, {N});
  const Tensor nll = -logits.log_softmax(1);  // (N, C): -log p
  Tensor loss = nll.gather(1, y.reshape({N, 1})).reshape({N}) * w.index_select(0, y) * (1.0f - label_smoothing);
  if (label_smoothing > 0.0f) loss = loss + (nll * w).sum({1}) * (label_smoothing / static_cast<float>(C));
  return loss.masked_fill(tensor(ignored, {N}), 0.0f);
}

Tensor softmax_cross_entropy(const Tensor& logits, const IndexTensor& target, const Tensor& weight,
                             int64_t ignore_index, float label_smoothing) {
  if (logits.dim() != 2)
    throw ShapeError("cross_entropy: logits must be (N, C), got shape " + shape_str(logits.shape()));
  const int64_t N = logits.size(0), C = logits.size(1);
  if (target.shape() != Shape{N})
    throw ShapeError("cross_entropy: target of shape " + shape_str(target.shape()) + " does not fit logits of shape " +
                     shape_str(logits.shape()) + ": expected (" + std::to_string(N) + ")");
  if (weight.defined() && weight.shape() != Shape{C})
    throw ShapeError("cross_entropy: weight of shape " + shape_str(weight.shape()) + " for " + std::to_string(C) +
                     " classes: expected (" + std::to_string(C) + ")");
  if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
    throw ValueError("cross_entropy: label_smoothing must be in [0, 1], got " + std::to_string(label_smoothing));
  check_targets(target, C, ignore_index);
  if (reference_mode()) return softmax_cross_entropy_reference(logits, target, weight, ignore_index, label_smoothing);
  const autograd::Op op("cross_entropy");
  // logits is (N, C); loss and lse (the log-sum-exp of each row) are (N): tensor/kernels/cross_entropy.h.
  const Tensor z = logits.detach().contiguous();
  const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  Tensor loss = Tensor::empty({N}), lse = Tensor::empty({N});
  const kernels::CrossEntropyTargets targets{target.data(), w.defined() ? w.data() : nullptr, ignore_index,
                                             label_smoothing};
  kernels::cross_entropy_forward(N, C, z.data(), targets, loss.data(), lse.data());
  return op.record(loss, {logits}, {z, lse, w},
      [target, ignore_index, label_smoothing, N, C](const Tensor& g, const BackwardContext& ctx) -> Grads {
        // The gradient is "probabilities minus targets", from the logits and each row's lse alone.
        const Tensor gc = g.contiguous();
        const Tensor& w = ctx.saved[2];
        const kernels::CrossEntropyTargets targets{target.data(), w.defined() ? w.data() : nullptr, ignore_index,
                                                   label_smoothing};
        Tensor dz = Tensor::empty({N, C});
        kernels::cross_entropy_backward(N, C, ctx.saved[0].data(), ctx.saved[1].data(), gc.data(), targets,
                                        dz.data());
        return {dz};
      },
      autograd::composed_backward(
          [target, ignore_index, label_smoothing](const std::vector<Tensor>& in, const std::vector<Tensor>& saved) {
            return softmax_cross_entropy_reference(in[0], target, saved[2], ignore_index, label_smoothing);
          },
          {0}));
}

Tensor sigmoid_cross_entropy_reference(const Tensor& x, const Tensor& y, const Tensor& pos_weight) {
  // softplus(−x) = −log σ(x) = −log_softmax([x, 0])[0]: stable for every x, and smooth at 0
  const Tensor softplus_neg_x = -stack({x, zeros_like(x)}, -1).log_softmax(-1).select(-1, 0);
  const Tensor positive = pos_weight.defined() ? (pos_weight - 1.0f) * y + 1.0f : Tensor();
  return (1.0f - y) * x + (positive.defined() ? positive * softplus_neg_x : softplus_neg_x);
}

Tensor sigmoid_cross_entropy(const Tensor& x, const Tensor& y, const Tensor& pos_weight) {
  const char* name = "binary_cross_entropy_with_logits";
  if (y.shape() != x.shape())
    throw ShapeError(std::string(name) + ": target of shape " + shape_str(y.shape()) + " must have the input's shape " +
                     shape_str(x.shape()));
  const Tensor pw = pos_weight.defined() ? pos_weight : Tensor::empty({}).fill_(1.0f);
  if (broadcast_shapes(x.shape(), pw.shape(), name) != x.shape())
    throw ShapeError(std::string(name) + ": pos_weight of shape " + shape_str(pw.shape()) +
                     " does not broadcast to the input's shape " + shape_str(x.shape()));
  if (reference_mode()) return sigmoid_cross_entropy_reference(x, y, pos_weight);
  const autograd::Op op(name);
  // -[pw·y·log σ(x) + (1-y)·log(1-σ(x))] = (1-y)·x + (1 + (pw-1)·y)·softplus(-x), as PyTorch writes
  // it, since log σ(x) = -softplus(-x) and log(1-σ(x)) = -x - softplus(-x).
  Tensor out = ops::map3(x, y, pw, name, [](float xv, float yv, float p) {
    return (1.0f - yv) * xv + (1.0f + (p - 1.0f) * yv) * softplus(-xv);
  });
  return op.record(out, {x, y, pos_weight}, {x, y, pw},
      [name](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &x = ctx.saved[0], &y = ctx.saved[1], &pw = ctx.saved[2];
        // dL/dx = (1-y) - (1 + (pw-1)·y)·σ(-x)   (= σ(x) - y when pw = 1)
        // dL/dy = -x + (pw-1)·softplus(-x)
        // dL/dpw = y·softplus(-x)
        Tensor gx, gy, gp;
        if (ctx.needs[0])
          gx = ops::map3(x, y, pw, name, [](float xv, float yv, float p) {
                 return (1.0f - yv) - (1.0f + (p - 1.0f) * yv) * sigmoid(-xv);
               }) * g;
        if (ctx.needs[1])
          gy = ops::map2(x, pw, name, [](float xv, float p) { return -xv + (p - 1.0f) * softplus(-xv); }) * g;
        if (ctx.needs[2])
          gp = (ops::map2(x, y, name, [](float xv, float yv) { return yv * softplus(-xv); }) * g).sum_to(pw.shape());
        return {gx, gy, gp};
      },
      autograd::composed_backward(
          [](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
            return sigmoid_cross_entropy_reference(in[0], in[1], in[2]);
          },
          {0, 1, 2}));
}

}  // namespace qkv
