// rotary and rotary_packed (autograd/ops/rotary.h), and their composed references. The composed
// form is ten ops with a backward each (two slices, four products, a difference, a sum, a stack,
// a flatten), every one a pass over the heads; in a character GPT with rotary positions they and
// the separate projections they forced took a seventh of the training step (docs/PERFORMANCE.md).
#include "autograd/ops/rotary.h"

#include <algorithm>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "tensor/error.h"
#include "tensor/kernels/rotary.h"
#include "tensor/reference_mode.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

void check_tables(const char* op, int64_t T, int64_t d, const Tensor& cos, const Tensor& sin) {
  if (d <= 0 || d % 2 != 0)
    throw ShapeError(std::string(op) + ": a head's width must be even and positive (features turn in pairs), got " +
                     std::to_string(d));
  const Shape want{T, d / 2};
  if (!cos.defined() || !sin.defined() || cos.shape() != want || sin.shape() != want)
    throw ShapeError(std::string(op) + ": cos and sin of shapes " + (cos.defined() ? shape_str(cos.shape()) : "undefined") +
                     " and " + (sin.defined() ? shape_str(sin.shape()) : "undefined") + " must be " +
                     shape_str(want) + " for " + std::to_string(T) + " positions of " + std::to_string(d) +
                     " features");
}

// x as (B, H, T, d) rows the kernel reads in place: a 4-D x through its strides when its rows are
// contiguous, anything else as a contiguous copy seen as (1, N, T, d).
struct HeadRows {
  Tensor x;
  int64_t B, H;
  kernels::RotaryRows at;
};

HeadRows head_rows(const Tensor& x) {
  const int64_t T = x.size(-2), d = x.size(-1);
  if (x.dim() == 4 && x.strides()[3] == 1) return {x, x.size(0), x.size(1), {x.strides()[0], x.strides()[1], x.strides()[2]}};
  const Tensor c = x.contiguous();
  const int64_t N = T * d > 0 ? c.numel() / (T * d) : 0;
  return {c, 1, N, {N * T * d, T * d, d}};
}

kernels::RotaryRows contiguous_rows(int64_t H, int64_t T, int64_t d) { return {H * T * d, T * d, d}; }

}  // namespace

Tensor rotary_reference(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t d = x.size(-1);
  const Tensor even = x.slice(-1, 0, d, 2), odd = x.slice(-1, 1, d, 2);    // (..., T, d/2)
  return stack({even * cos - odd * sin, even * sin + odd * cos}, -1).flatten(-2);  // pairs interleaved again
}

Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  if (x.dim() < 2) throw ShapeError("rotary: input of shape " + shape_str(x.shape()) + " must be (..., T, d)");
  const int64_t T = x.size(-2), d = x.size(-1);
  check_tables("rotary", T, d, cos, sin);
  if (reference_mode()) return rotary_reference(x, cos, sin);
  const autograd::Op op("rotary");
  const HeadRows in = head_rows(x.detach());
  const Tensor c = cos.detach().contiguous(), s = sin.detach().contiguous();
  Tensor y = Tensor::empty(x.shape());
  kernels::rotary(in.B, in.H, T, d, in.x.data(), in.at, c.data(), s.data(), false, y.data(),
                  contiguous_rows(in.H, T, d));
  return op.record(y, {x}, {c, s}, [B = in.B, H = in.H, T, d](const Tensor& g, const BackwardContext& ctx) -> Grads {
    const bool in_place = ctx.grad_is_scratch && g.is_contiguous();  // as rotary_packed's, below
    const Tensor gc = in_place ? g : g.contiguous();
    Tensor dx = in_place ? g : Tensor::empty(g.shape());
    kernels::rotary(B, H, T, d, gc.data(), contiguous_rows(H, T, d), ctx.saved[0].data(), ctx.saved[1].data(),
                    true, dx.data(), contiguous_rows(H, T, d));
    return {dx};
  },
  autograd::composed_backward(  // linear in x, turned by the saved tables
      [](const std::vector<Tensor>& in, const std::vector<Tensor>& saved) {
        return rotary_reference(in[0], saved[0], saved[1]);
      },
      {autograd::kValueUnused}));
}

Tensor rotary_packed_reference(const Tensor& qkv, int64_t heads, const Tensor& cos, const Tensor& sin) {
  const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(2) / 3;
  // Block i as heads, (B, T, D) → (B, T, H, d) → (B, H, T, d), and back.
  const auto turned = [&](int64_t i) {
    const Tensor h = qkv.narrow(2, i * D, D).reshape({B, T, heads, D / heads}).permute({0, 2, 1, 3});
    return rotary_reference(h, cos, sin).permute({0, 2, 1, 3}).reshape({B, T, D});
  };
  return cat({turned(0), turned(1), qkv.narrow(2, 2 * D, D)}, 2);
}

Tensor rotary_packed(const Tensor& qkv, int64_t heads, const Tensor& cos, const Tensor& sin) {
  if (qkv.dim() != 3 || heads <= 0 || qkv.size(2) % (3 * heads) != 0)
    throw ShapeError("rotary_packed: projection of shape " + shape_str(qkv.shape()) + " with " +
                     std::to_string(heads) + " heads: expected (B, T, 3·H·d) for H = " + std::to_string(heads));
  const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(2) / 3, d = D / heads;
  check_tables("rotary_packed", T, d, cos, sin);
  if (reference_mode()) return rotary_packed_reference(qkv, heads, cos, sin);
  const autograd::Op op("rotary_packed");
  const Tensor x = qkv.detach().contiguous();
  const Tensor c = cos.detach().contiguous(), s = sin.detach().contiguous();
  // Rows of the projection's heads: (b, h, t) at b·T·3D + t·3D + h·d, from a block's first column.
  const kernels::RotaryRows rows{T * 3 * D, d, 3 * D};
  // Q and K turned (forward) or turned back (backward), V copied: from `from` into `to`, which may
  // be `from` itself (then V stays where it is).
  const auto apply = [B, T, D, d, heads, rows](const float* from, const float* cs, const float* sn, bool inverse,
                                               float* to) {
    for (int64_t block = 0; block < 2; ++block)
      kernels::rotary(B, heads, T, d, from + block * D, rows, cs, sn, inverse, to + block * D, rows);
    if (to != from)
      for (int64_t r = 0; r < B * T; ++r)
        std::copy(from + r * 3 * D + 2 * D, from + (r + 1) * 3 * D, to + r * 3 * D + 2 * D);
  };
  Tensor y = Tensor::empty(x.shape());
  apply(x.data(), c.data(), s.data(), false, y.data());
  return op.record(y, {qkv}, {c, s}, [apply, shape = x.shape()](const Tensor& g, const BackwardContext& ctx) -> Grads {
    // A gradient no one else holds is turned back where it is: no (B, T, 3·H·d) buffer more.
    const bool in_place = ctx.grad_is_scratch && g.is_contiguous();
    const Tensor gc = in_place ? g : g.contiguous();
    Tensor dx = in_place ? g : Tensor::empty(shape);
    apply(gc.data(), ctx.saved[0].data(), ctx.saved[1].data(), true, dx.data());
    return {dx};
  },
  autograd::composed_backward(
      [heads](const std::vector<Tensor>& in, const std::vector<Tensor>& saved) {
        return rotary_packed_reference(in[0], heads, saved[0], saved[1]);
      },
      {autograd::kValueUnused}));
}

}  // namespace qkv
