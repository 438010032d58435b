// Softmax and log-softmax along a dim, fused: one kernel for the forward and one for the backward
// instead of the five ops of exp(x - max) / sum(exp(x - max)).
#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/kernels/softmax.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void split_at(const Shape& shape, int64_t d, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  n = shape[d];
  for (int64_t k = d + 1; k < static_cast<int64_t>(shape.size()); ++k) inner *= shape[k];
}

Tensor softmax_op(const char* op, const Tensor& x, int64_t dim, bool log) {
  const int64_t d = normalize_dim(dim, x.dim(), op);
  int64_t outer, n, inner;
  split_at(x.shape(), d, outer, n, inner);
  const Tensor in = x.detach().contiguous();
  Tensor out = Tensor::empty(x.shape());
  kernels::softmax_forward(outer, n, inner, in.data(), out.data(), log);
  return autograd::record(op, out, {x}, {out},
      [outer, n, inner, log](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor gc = g.contiguous();
        Tensor dx = Tensor::empty(g.shape());
        kernels::softmax_backward(outer, n, inner, ctx.saved[0].data(), gc.data(), dx.data(), log);
        return {dx};
      });
}

}  // namespace

Tensor Tensor::softmax(int64_t dim) const { return softmax_op("softmax", *this, dim, false); }
Tensor Tensor::log_softmax(int64_t dim) const { return softmax_op("log_softmax", *this, dim, true); }
Tensor softmax(const Tensor& x, int64_t dim) { return x.softmax(dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return x.log_softmax(dim); }

}  // namespace qkv
