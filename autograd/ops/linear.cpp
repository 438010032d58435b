// linear_with_bias: y = x·Wᵀ + b as one op (autograd/ops/linear.h), and linear_with_bias_reference,
// its composed reference. Composed, the product is followed by a pass over all of y for the bias, y
// too large for the caches; here the GEMM adds the bias to each output tile while it is in L1
// (kernels::gemm_bias). Backward is the composed one's, the same products and the same sum, so
// values and gradients are the reference's to the bit.
#include "autograd/ops/linear.h"

#include <string>

#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/kernels/gemm.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const bool fits = x.dim() >= 1 && weight.dim() == 2 && bias.dim() == 1 && x.size(-1) == weight.size(1) &&
                    bias.size(0) == weight.size(0);
  if (!fits)
    throw ShapeError("linear: input " + shape_str(x.shape()) + ", weight " + shape_str(weight.shape()) +
                     " and bias " + shape_str(bias.shape()) +
                     " do not fit: expected (..., in), (out, in) and (out)");
}

}  // namespace

Tensor linear_with_bias_reference(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return x.matmul(weight.t()) + bias;
}

Tensor linear_with_bias(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_linear(x, weight, bias);
  if (reference_mode()) return linear_with_bias_reference(x, weight, bias);
  const autograd::Op op("linear");
  const int64_t in = weight.size(1), out = weight.size(0);
  int64_t rows = 1;  // x's positions (not numel / in: in may be 0)
  for (int64_t i = 0; i + 1 < x.dim(); ++i) rows *= x.size(i);
  const Tensor xc = x.detach().contiguous(), wc = weight.detach().contiguous(), bc = bias.detach().contiguous();
  Shape out_shape = x.shape();
  out_shape.back() = out;
  Tensor y = Tensor::empty(out_shape);
  // (rows, in)·(in, out): W (out, in) read transposed through the GEMM's packing, as matmul reads w.t()
  kernels::gemm_bias(false, true, rows, out, in, xc.data(), in, wc.data(), in, bc.data(), y.data(), out);
  autograd::add_flops(2 * rows * out * in);
  return op.record(y, {x, weight, bias}, {x, weight},
                          [](const Tensor& g, const BackwardContext& ctx) -> Grads {
                            const Tensor &x = ctx.saved[0], &w = ctx.saved[1];
                            const int64_t in = w.size(1), out = w.size(0);
                            Tensor gx, gw, gb;
                            // y = x·Wᵀ + b:  dx = dy·W, (…, out)·(out, in);  dW = dyᵀ·x, (out, rows)·(rows,
                            // in), one product over all rows, written in W's own layout;  db = Σ_rows dy
                            if (ctx.needs[0]) gx = g.matmul(w);
                            if (ctx.needs[1]) gw = g.reshape({-1, out}).t().matmul(x.reshape({-1, in}));
                            if (ctx.needs[2]) gb = g.sum_to({out});
                            return {gx, gw, gb};
                          });
}

}  // namespace qkv
