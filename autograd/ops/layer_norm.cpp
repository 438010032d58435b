// layer_norm (autograd/ops/layer_norm.h) and layer_norm_reference, its composed reference. The
// fused op runs one kernel forward and one backward (tensor/kernels/layernorm.h has the formulas)
// where the reference runs nine ops with a backward each, every one a pass over the whole (..., D)
// tensor; docs/PERFORMANCE.md gives what that buys.
#include "autograd/ops/layer_norm.h"

#include <cmath>
#include <string>

#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/kernels/layernorm.h"
#include "tensor/reference_mode.h"

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

Tensor layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const Tensor centered = x - x.mean({-1}, true);
  const Tensor var = (centered * centered).mean({-1}, true);  // biased: ÷ D
  Tensor y = centered * (var + eps).rsqrt();
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

// x (..., D) → y (..., D), normalized over D; weight and bias (D) or undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  if (x.dim() == 0 || x.size(-1) == 0)
    throw ShapeError("layer_norm: input of shape " + shape_str(x.shape()) +
                     " has no last dim to normalize over");
  if (!(eps >= 0.0f)) throw ValueError("layer_norm: eps must be >= 0, got " + std::to_string(eps));
  check_affine(weight, "weight", x);
  check_affine(bias, "bias", x);
  if (reference_mode()) return layer_norm_reference(x, weight, bias, eps);
  const autograd::Op op("layer_norm");
  const int64_t D = x.size(-1), N = x.numel() / D;
  const Tensor xc = x.detach().contiguous();
  const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor y = Tensor::empty(x.shape());
  Tensor mean = Tensor::empty({N}), rstd = Tensor::empty({N});
  kernels::layernorm_forward(N, D, xc.data(), data_or_null(w), data_or_null(b), eps, y.data(),
                             mean.data(), rstd.data());
  return op.record(y, {x, weight, bias}, {xc, w, mean, rstd},
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
      },
      autograd::composed_backward(
          [eps](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
            return layer_norm_reference(in[0], in[1], in[2], eps);
          },
          {0, 1, autograd::kValueUnused}));
}

}  // namespace qkv
