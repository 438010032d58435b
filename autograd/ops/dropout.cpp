// dropout (autograd/ops/dropout.h) and dropout_reference, its composed reference. The fused op
// draws the mask and applies it in one pass and never stores it: backward draws it again from the
// generator state the forward started at (the generator is counter-based, so the same state gives
// the same mask), where the reference x · m keeps a mask of x's size alive until backward and makes
// two more passes over it.
#include "autograd/ops/dropout.h"

#include <string>

#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/reference_mode.h"

namespace qkv {

Tensor dropout_reference(const Tensor& x, float p, Generator& gen) {
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError("dropout: p must be in [0, 1), got " + std::to_string(p));
  if (p == 0.0f) return x;
  // Inverted dropout: survivors scaled by 1/(1-p), so E[y] = x (Srivastava et al. 2014; PyTorch).
  const float keep = 1.0f - p;
  const Tensor one = ones(x.shape());
  Tensor multipliers = Tensor::empty(x.shape());  // 0 or 1/(1-p): the draw the fused op makes
  gen.bernoulli_scale(one.data(), multipliers.data(), multipliers.numel(), keep, 1.0f / keep);
  return x * multipliers;
}

Tensor dropout(const Tensor& x, float p, Generator& gen) {
  if (reference_mode()) return dropout_reference(x, p, gen);
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError("dropout: p must be in [0, 1), got " + std::to_string(p));
  if (p == 0.0f) return x;
  const autograd::Op op("dropout");
  const float keep = 1.0f - p, scale = 1.0f / keep;
  const Tensor in = x.is_contiguous() ? x.detach() : x.detach().contiguous();
  Tensor out = Tensor::empty(x.shape());
  const GeneratorState start = gen.state();
  gen.bernoulli_scale(in.data(), out.data(), out.numel(), keep, scale);
  return op.record(out, {x}, {},
      [start, keep, scale](const Tensor& g, const autograd::BackwardContext&) -> std::vector<Tensor> {
        // in the forward pass this was: y = x · m · scale, so dx = g · m · scale, with the same m
        const Tensor gc = g.is_contiguous() ? g : g.contiguous();
        Tensor gx = Tensor::empty(gc.shape());
        Generator replay;
        replay.set_state(start);
        replay.bernoulli_scale(gc.data(), gx.data(), gx.numel(), keep, scale);
        return {gx};
      },
      [start, keep, scale](const Tensor& g, const autograd::BackwardContext&) -> std::vector<Tensor> {
        // The multipliers m · scale, drawn again, are a constant: dx = g ⊙ m · scale.
        const Tensor one = ones(g.shape());
        Tensor multipliers = Tensor::empty(g.shape());
        Generator replay;
        replay.set_state(start);
        replay.bernoulli_scale(one.data(), multipliers.data(), multipliers.numel(), keep, scale);
        return {g * multipliers};
      });
}

}  // namespace qkv
