// The two products of windowed attention on the band (autograd/ops/band.h, tensor/kernels/band.h),
// as ops: each a kernel forward and a kernel backward, beside its composed reference. Composed of
// slices and sums, each of the 2w + 1 offsets is a pass over all of q and k, and at sequence lengths
// where those no longer fit in the cache the time grows faster than T (`scaling_study`,
// docs/introspection.md); here each query reads its 2w + 1 keys while they are in cache.
#include "autograd/ops/band.h"

#include <string>
#include <vector>

#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/band.h"
#include "tensor/reference_mode.h"

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

// x (B, H, T, ·) with `window` zeros added at both ends of T: row i + window holds row i.
Tensor pad_time(const Tensor& x, int64_t window) {
  if (window == 0) return x;
  const Tensor edge = zeros({x.size(0), x.size(1), window, x.size(3)});
  return cat({edge, x, edge}, 2);
}

}  // namespace

Tensor band_scores_reference(const Tensor& q, const Tensor& k, int64_t window, float scale) {
  const int64_t T = q.size(2);
  const Tensor padded = pad_time(k, window);
  std::vector<Tensor> scores;  // one (B, H, T) slice per offset: query i against key i + o − window
  for (int64_t o = 0; o <= 2 * window; ++o) scores.push_back((q * padded.narrow(2, o, T)).sum({-1}));
  return stack(scores, -1) * scale;
}

Tensor band_sum_reference(const Tensor& p, const Tensor& v, int64_t window) {
  const int64_t T = p.size(2);
  const Tensor padded = pad_time(v, window);
  Tensor out;
  for (int64_t o = 0; o <= 2 * window; ++o) {
    const Tensor term = p.narrow(3, o, 1) * padded.narrow(2, o, T);  // weight of key i + o − window
    out = out.defined() ? out + term : term;
  }
  return out;
}

Tensor band_scores(const Tensor& q, const Tensor& k, int64_t window, float scale) {
  check_band("band_scores", q, k, window);
  if (q.size(3) != k.size(3))
    throw ShapeError("band_scores: queries " + shape_str(q.shape()) + " and keys " + shape_str(k.shape()) +
                     " must have the same width");
  if (reference_mode()) return band_scores_reference(q, k, window, scale);
  const autograd::Op op("band_scores");
  const int64_t N = rows_of(q), T = q.size(2), d = q.size(3), W = 2 * window + 1;
  const Tensor qc = q.detach().contiguous(), kc = k.detach().contiguous();
  Tensor s = Tensor::empty({q.size(0), q.size(1), T, W});
  kernels::band_scores_forward(N, T, d, window, scale, qc.data(), kc.data(), s.data());
  autograd::add_flops(2 * N * T * W * d);  // a multiply and an add per (row, query, offset, feature)
  return op.record(s, {q, k}, {qc, kc},
                          [N, T, d, window, scale](const Tensor& g, const BackwardContext& ctx) -> Grads {
                            const Tensor gc = g.contiguous(), &qs = ctx.saved[0], &ks = ctx.saved[1];
                            Tensor dq = ctx.needs[0] ? Tensor::empty(qs.shape()) : Tensor();
                            Tensor dk = ctx.needs[1] ? Tensor::empty(ks.shape()) : Tensor();
                            kernels::band_scores_backward(N, T, d, window, scale, qs.data(), ks.data(),
                                                          gc.data(), dq.defined() ? dq.data() : nullptr,
                                                          dk.defined() ? dk.data() : nullptr);
                            return {dq, dk};
                          },
                          autograd::composed_backward(
                              [window, scale](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
                                return band_scores_reference(in[0], in[1], window, scale);
                              },
                              {0, 1}));
}

Tensor band_sum(const Tensor& p, const Tensor& v, int64_t window) {
  check_band("band_sum", p, v, window);
  if (p.size(3) != 2 * window + 1)
    throw ShapeError("band_sum: weights of shape " + shape_str(p.shape()) +
                     " must end in 2·window + 1 = " + std::to_string(2 * window + 1) + " offsets");
  if (reference_mode()) return band_sum_reference(p, v, window);
  const autograd::Op op("band_sum");
  const int64_t N = rows_of(p), T = p.size(2), dv = v.size(3);
  const Tensor pc = p.detach().contiguous(), vc = v.detach().contiguous();
  Tensor out = Tensor::empty({v.size(0), v.size(1), T, dv});
  kernels::band_sum_forward(N, T, dv, window, pc.data(), vc.data(), out.data());
  autograd::add_flops(2 * N * T * (2 * window + 1) * dv);
  return op.record(out, {p, v}, {pc, vc},
                          [N, T, dv, window](const Tensor& g, const BackwardContext& ctx) -> Grads {
                            const Tensor gc = g.contiguous(), &ps = ctx.saved[0], &vs = ctx.saved[1];
                            Tensor dp = ctx.needs[0] ? Tensor::empty(ps.shape()) : Tensor();
                            Tensor dv_ = ctx.needs[1] ? Tensor::empty(vs.shape()) : Tensor();
                            kernels::band_sum_backward(N, T, dv, window, ps.data(), vs.data(), gc.data(),
                                                       dp.defined() ? dp.data() : nullptr,
                                                       dv_.defined() ? dv_.data() : nullptr);
                            return {dp, dv_};
                          },
                          autograd::composed_backward(
                              [window](const std::vector<Tensor>& in, const std::vector<Tensor>&) {
                                return band_sum_reference(in[0], in[1], window);
                              },
                              {0, 1}));
}

}  // namespace qkv
