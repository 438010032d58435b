// Layer normalization over the last dim, fused: one kernel for the forward and one for the
// backward (tensor/kernels/layernorm.h has the formulas) instead of the composed
// mean, sub, mul, mean, add, rsqrt, mul, mul, add and their nine backward steps, each of which
// reads and writes the whole (..., D) tensor. Measured with `QKV_NUM_THREADS=1 bench_layer_norm`
// on (1120, 256), forward and backward: composed 1.56 ms, fused 0.42 ms.
#include <cmath>
#include <string>

#include "autograd/function.h"
#include "autograd/observer.h"
#include "tensor/error.h"
#include "tensor/kernels/layernorm.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_affine(const Tensor& p, const char* what, const Tensor& x) {
  if (p.defined() && p.shape() != Shape{x.size(-1)})
    throw ShapeError(std::string("layer_norm: ") + what + " of shape " + shape_str(p.shape()) +
                     " does not fit input of shape " + shape_str(x.shape()) + ": expected (" +
                     std::to_string(x.size(-1)) + ")");
}

const float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

}  // namespace

// x (..., D) → y (..., D), normalized over D; weight and bias (D) or undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const autograd::OpScope scope("layer_norm");
  if (x.dim() == 0 || x.size(-1) == 0)
    throw ShapeError("layer_norm: input of shape " + shape_str(x.shape()) +
                     " has no last dim to normalize over");
  if (!(eps >= 0.0f)) throw ValueError("layer_norm: eps must be >= 0, got " + std::to_string(eps));
  check_affine(weight, "weight", x);
  check_affine(bias, "bias", x);
  const int64_t D = x.size(-1), N = x.numel() / D;
  const Tensor xc = x.detach().contiguous();
  const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor y = Tensor::empty(x.shape());
  Tensor mean = Tensor::empty({N}), rstd = Tensor::empty({N});
  kernels::layernorm_forward(N, D, xc.data(), data_or_null(w), data_or_null(b), eps, y.data(),
                             mean.data(), rstd.data());
  return autograd::record("layer_norm", y, {x, weight, bias}, {xc, w, mean, rstd},
      [N, D](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &xs = ctx.saved[0], &ws = ctx.saved[1], &m = ctx.saved[2], &s = ctx.saved[3];
        const Tensor gc = g.contiguous();
        Tensor dx, dw, db;
        if (ctx.needs[0]) dx = Tensor::empty(xs.shape());
        if (ctx.needs[1]) dw = Tensor::empty({D});
        if (ctx.needs[2]) db = Tensor::empty({D});
        kernels::layernorm_backward(N, D, xs.data(), data_or_null(ws), m.data(), s.data(), gc.data(),
                                    dx.defined() ? dx.data() : nullptr, dw.defined() ? dw.data() : nullptr,
                                    db.defined() ? db.data() : nullptr);
        return {dx, dw, db};
      });
}

}  // namespace qkv
