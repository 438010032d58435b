// Dropout as one op: the mask is drawn and applied in one pass and never stored. Backward draws it
// again from the generator state the forward started at (the generator is counter-based, so the
// same state gives the same mask), where the composed x · (mask · scale) kept a mask of x's size
// alive until backward and made two more passes over it.
#include <string>

#include "autograd/function.h"
#include "autograd/observer.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace qkv {

Tensor dropout(const Tensor& x, float p, Generator& gen) {
  const autograd::OpScope scope("dropout");
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError("dropout: p must be in [0, 1), got " + std::to_string(p));
  if (p == 0.0f) return x;
  // Inverted dropout: survivors scaled by 1/(1-p), so E[y] = x (Srivastava et al. 2014; PyTorch).
  const float keep = 1.0f - p, scale = 1.0f / keep;
  const Tensor in = x.is_contiguous() ? x.detach() : x.detach().contiguous();
  Tensor out = Tensor::empty(x.shape());
  const GeneratorState start = gen.state();
  gen.bernoulli_scale(in.data(), out.data(), out.numel(), keep, scale);
  return autograd::record("dropout", out, {x}, {},
      [start, keep, scale](const Tensor& g, const autograd::BackwardContext&) -> std::vector<Tensor> {
        // in the forward pass this was: y = x · m · scale, so dx = g · m · scale, with the same m
        const Tensor gc = g.is_contiguous() ? g : g.contiguous();
        Tensor gx = Tensor::empty(gc.shape());
        Generator replay;
        replay.set_state(start);
        replay.bernoulli_scale(gc.data(), gx.data(), gx.numel(), keep, scale);
        return {gx};
      });
}

}  // namespace qkv
