// The two products of windowed attention on the band (tensor/kernels/band.h), as ops: each a
// kernel forward and a kernel backward. Composed of slices and sums instead, each of the 2w + 1
// offsets is a pass over all of q and k, and at sequence lengths where those no longer fit in the
// cache the time grows faster than T (`scaling_study`, docs/introspection.md); here each query
// reads its 2w + 1 keys while they are in cache.
#include "tensor/kernels/band.h"

#include <string>
#include <vector>

#include "autograd/function.h"
#include "autograd/observer.h"
#include "tensor/error.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

// (B, H, T, ·) seen as (N, T, ·), N = B·H.
int64_t rows_of(const Tensor& x) { return x.size(0) * x.size(1); }

void check_band(const char* op, const Tensor& a, const Tensor& b, int64_t window) {
  if (a.dim() != 4 || b.dim() != 4 || a.size(0) != b.size(0) || a.size(1) != b.size(1) ||
      a.size(2) != b.size(2))
    throw ShapeError(std::string(op) + ": operands of shapes " + shape_str(a.shape()) + " and " +
                     shape_str(b.shape()) + " must be (B, H, T, ·) with the same B, H and T");
  if (window < 0) throw ValueError(std::string(op) + ": window must be >= 0, got " + std::to_string(window));
}

}  // namespace

Tensor band_scores(const Tensor& q, const Tensor& k, int64_t window, float scale) {
  const autograd::OpScope scope("band_scores");
  check_band("band_scores", q, k, window);
  if (q.size(3) != k.size(3))
    throw ShapeError("band_scores: queries " + shape_str(q.shape()) + " and keys " + shape_str(k.shape()) +
                     " must have the same width");
  const int64_t N = rows_of(q), T = q.size(2), d = q.size(3), W = 2 * window + 1;
  const Tensor qc = q.detach().contiguous(), kc = k.detach().contiguous();
  Tensor s = Tensor::empty({q.size(0), q.size(1), T, W});
  kernels::band_scores_forward(N, T, d, window, scale, qc.data(), kc.data(), s.data());
  autograd::add_flops(2 * N * T * W * d);  // a multiply and an add per (row, query, offset, feature)
  return autograd::record("band_scores", s, {q, k}, {qc, kc},
                          [N, T, d, window, scale](const Tensor& g, const BackwardContext& ctx) -> Grads {
                            const Tensor gc = g.contiguous(), &qs = ctx.saved[0], &ks = ctx.saved[1];
                            Tensor dq = ctx.needs[0] ? Tensor::empty(qs.shape()) : Tensor();
                            Tensor dk = ctx.needs[1] ? Tensor::empty(ks.shape()) : Tensor();
                            kernels::band_scores_backward(N, T, d, window, scale, qs.data(), ks.data(),
                                                          gc.data(), dq.defined() ? dq.data() : nullptr,
                                                          dk.defined() ? dk.data() : nullptr);
                            return {dq, dk};
                          });
}

Tensor band_sum(const Tensor& p, const Tensor& v, int64_t window) {
  const autograd::OpScope scope("band_sum");
  check_band("band_sum", p, v, window);
  if (p.size(3) != 2 * window + 1)
    throw ShapeError("band_sum: weights of shape " + shape_str(p.shape()) +
                     " must end in 2·window + 1 = " + std::to_string(2 * window + 1) + " offsets");
  const int64_t N = rows_of(p), T = p.size(2), dv = v.size(3);
  const Tensor pc = p.detach().contiguous(), vc = v.detach().contiguous();
  Tensor out = Tensor::empty({v.size(0), v.size(1), T, dv});
  kernels::band_sum_forward(N, T, dv, window, pc.data(), vc.data(), out.data());
  autograd::add_flops(2 * N * T * (2 * window + 1) * dv);
  return autograd::record("band_sum", out, {p, v}, {pc, vc},
                          [N, T, dv, window](const Tensor& g, const BackwardContext& ctx) -> Grads {
                            const Tensor gc = g.contiguous(), &ps = ctx.saved[0], &vs = ctx.saved[1];
                            Tensor dp = ctx.needs[0] ? Tensor::empty(ps.shape()) : Tensor();
                            Tensor dv_ = ctx.needs[1] ? Tensor::empty(vs.shape()) : Tensor();
                            kernels::band_sum_backward(N, T, dv, window, ps.data(), vs.data(), gc.data(),
                                                       dp.defined() ? dp.data() : nullptr,
                                                       dv_.defined() ? dv_.data() : nullptr);
                            return {dp, dv_};
                          });
}

}  // namespace qkv
