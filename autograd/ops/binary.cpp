// Elementwise ops of two tensors, with NumPy/PyTorch broadcasting. When an input was broadcast,
// its gradient is summed back to its own shape (sum_to): a bias of shape (D,) added to (B,T,D)
// receives the sum over B and T.
#include <cmath>

#include "autograd/function.h"
#include "autograd/observer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "autograd/ops/map.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;
using ops::map2;
using ops::map3;

}  // namespace

Tensor Tensor::add(const Tensor& other) const {
  const autograd::Op op("add");
  Tensor out = map2(*this, other, op.name(), [](float a, float b) { return a + b; });
  return op.record(out, {*this, other}, {},
      [sa = shape(), sb = other.shape()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        return {ctx.needs[0] ? g.sum_to(sa) : Tensor(), ctx.needs[1] ? g.sum_to(sb) : Tensor()};
      });
}

Tensor Tensor::sub(const Tensor& other) const {
  const autograd::Op op("sub");
  Tensor out = map2(*this, other, op.name(), [](float a, float b) { return a - b; });
  return op.record(out, {*this, other}, {},
      [sa = shape(), sb = other.shape()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        return {ctx.needs[0] ? g.sum_to(sa) : Tensor(), ctx.needs[1] ? g.neg().sum_to(sb) : Tensor()};
      });
}

Tensor Tensor::mul(const Tensor& other) const {
  const autograd::Op op("mul");
  Tensor out = map2(*this, other, op.name(), [](float a, float b) { return a * b; });
  return op.record(out, {*this, other}, {*this, other},
      [](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &a = ctx.saved[0], &b = ctx.saved[1];
        return {ctx.needs[0] ? (g * b).sum_to(a.shape()) : Tensor(),
                ctx.needs[1] ? (g * a).sum_to(b.shape()) : Tensor()};
      });
}

Tensor Tensor::div(const Tensor& other) const {
  const autograd::Op op("div");
  Tensor out = map2(*this, other, op.name(), [](float a, float b) { return a / b; });
  return op.record(out, {*this, other}, {*this, other},
      [name = op.name()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &a = ctx.saved[0], &b = ctx.saved[1];
        // d(a/b)/da = 1/b,  d(a/b)/db = -a/b²
        return {ctx.needs[0] ? (g / b).sum_to(a.shape()) : Tensor(),
                ctx.needs[1] ? map3(g, a, b, name, [](float gv, float av, float bv) {
                                 return -gv * av / (bv * bv);
                               }).sum_to(b.shape())
                             : Tensor()};
      },
      [](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &a = ctx.saved[0], &b = ctx.saved[1];
        return {ctx.needs[0] ? (g / b).sum_to(a.shape()) : Tensor(),
                ctx.needs[1] ? (-g * a / (b * b)).sum_to(b.shape()) : Tensor()};
      });
}

Tensor Tensor::pow(const Tensor& exponent) const {
  const autograd::Op op("pow");
  Tensor out = map2(*this, exponent, op.name(), [](float a, float b) { return std::pow(a, b); });
  return op.record(out, {*this, exponent}, {*this, exponent, out},
      [name = op.name()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &a = ctx.saved[0], &b = ctx.saved[1], &y = ctx.saved[2];
        // d(a^b)/da = b·a^(b-1);  d(a^b)/db = a^b·ln a, taken as 0 where a = 0 (as PyTorch does:
        // the limit along a > 0 when b > 0, and the only finite choice otherwise).
        Tensor ga, gb;
        if (ctx.needs[0])
          ga = map3(g, a, b, name, [](float gv, float av, float bv) {
                 return bv == 0.0f ? 0.0f : gv * bv * std::pow(av, bv - 1.0f);
               }).sum_to(a.shape());
        if (ctx.needs[1])
          gb = map3(g, y, a, name, [](float gv, float yv, float av) {
                 return av == 0.0f ? 0.0f : gv * yv * std::log(av);
               }).sum_to(b.shape());
        return {ga, gb};
      },
      [](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &a = ctx.saved[0], &b = ctx.saved[1], &y = ctx.saved[2];
        Tensor ga, gb;
        // b = 0 gives 0 (as above), with a stand-in exponent so that 0^-1 = inf never enters the graph
        if (ctx.needs[0]) {
          const Tensor none = b.eq(0.0f);
          ga = (g * b * a.pow(b.masked_fill(none, 1.0f) - 1.0f)).masked_fill(none, 0.0f).sum_to(a.shape());
        }
        if (ctx.needs[1]) {
          const Tensor zero = a.eq(0.0f);  // ln a taken as 0 there, as above: a stand-in of 1
          gb = (g * y * a.masked_fill(zero, 1.0f).log()).masked_fill(zero, 0.0f).sum_to(b.shape());
        }
        return {ga, gb};
      });
}

namespace {

// maximum/minimum: the gradient goes to the larger (smaller) input; on a tie it is split evenly,
// as PyTorch does, which keeps the gradient a valid subgradient and symmetric in a and b.
Tensor extremum(const char* name, const Tensor& a, const Tensor& b, bool is_max) {
  const autograd::Op op(name);
  Tensor out = map2(a, b, name, [is_max](float x, float y) {
    if (std::isnan(x) || std::isnan(y)) return NAN;
    return is_max ? std::fmax(x, y) : std::fmin(x, y);
  });
  return op.record(out, {a, b}, {a, b},
      [is_max, name](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor &x = ctx.saved[0], &y = ctx.saved[1];
        auto share = [is_max](float gv, float mine, float other) {
          if (mine == other) return 0.5f * gv;
          return (is_max ? mine > other : mine < other) ? gv : 0.0f;
        };
        return {ctx.needs[0] ? map3(g, x, y, name, share).sum_to(x.shape()) : Tensor(),
                ctx.needs[1] ? map3(g, y, x, name, share).sum_to(y.shape()) : Tensor()};
      },
      [is_max, name](const Tensor& g, const BackwardContext& ctx) -> Grads {
        // The shares (1, ½ or 0) are constant where they are defined: g times a 0/1/½ mask.
        const Tensor &x = ctx.saved[0], &y = ctx.saved[1];
        const auto share = [is_max, name](const Tensor& mine, const Tensor& other) {
          return map2(mine, other, name, [is_max](float m, float o) {
            return m == o ? 0.5f : ((is_max ? m > o : m < o) ? 1.0f : 0.0f);
          });
        };
        return {ctx.needs[0] ? (g * share(x, y)).sum_to(x.shape()) : Tensor(),
                ctx.needs[1] ? (g * share(y, x)).sum_to(y.shape()) : Tensor()};
      });
}

}  // namespace

Tensor Tensor::maximum(const Tensor& other) const { return extremum("maximum", *this, other, true); }
Tensor Tensor::minimum(const Tensor& other) const { return extremum("minimum", *this, other, false); }
Tensor maximum(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return a.minimum(b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const autograd::Op op("where");
  Tensor out = map3(cond, a, b, op.name(), [](float c, float x, float y) { return c != 0.0f ? x : y; });
  return op.record(out, {a, b}, {cond},
      [sa = a.shape(), sb = b.shape(), name = op.name()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor& c = ctx.saved[0];
        return {ctx.needs[0] ? map2(c, g, name, [](float cv, float gv) { return cv != 0.0f ? gv : 0.0f; }).sum_to(sa)
                             : Tensor(),
                ctx.needs[1] ? map2(c, g, name, [](float cv, float gv) { return cv != 0.0f ? 0.0f : gv; }).sum_to(sb)
                             : Tensor()};
      },
      [sa = a.shape(), sb = b.shape()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        const Tensor& c = ctx.saved[0];
        const Tensor zero = scalar_tensor(0.0f);
        return {ctx.needs[0] ? where(c, g, zero).sum_to(sa) : Tensor(),
                ctx.needs[1] ? where(c, zero, g).sum_to(sb) : Tensor()};
      });
}

Tensor Tensor::masked_fill(const Tensor& mask, float value) const {
  const autograd::Op op("masked_fill");
  if (broadcast_shapes(shape(), mask.shape(), op.name()) != shape())
    throw ShapeError(std::string(op.name()) + ": mask of shape " + shape_str(mask.shape()) +
                     " does not broadcast to the input's shape " + shape_str(shape()));
  Tensor out = map2(*this, mask, op.name(), [value](float x, float m) { return m != 0.0f ? value : x; });
  return op.record(out, {*this}, {mask},
      [name = op.name()](const Tensor& g, const BackwardContext& ctx) -> Grads {
        return {map2(g, ctx.saved[0], name, [](float gv, float m) { return m != 0.0f ? 0.0f : gv; })};
      },
      [](const Tensor& g, const BackwardContext& ctx) -> Grads { return {g.masked_fill(ctx.saved[0], 0.0f)}; });
}

// ---- comparisons: 0/1 masks, outside the graph --------------------------------------------

#define QKV_COMPARISON(name, expr)                                                        \
  Tensor Tensor::name(const Tensor& other) const {                                        \
    const autograd::Op op(#name);                                                 \
    return map2(*this, other, #name, [](float a, float b) { return (expr) ? 1.0f : 0.0f; }); \
  }                                                                                       \
  Tensor Tensor::name(float s) const {                                                    \
    const autograd::Op op(#name "_scalar");                                       \
    return ops::map1(*this, [s](float a) { const float b = s; return (expr) ? 1.0f : 0.0f; }); \
  }
QKV_COMPARISON(eq, a == b)
QKV_COMPARISON(ne, a != b)
QKV_COMPARISON(lt, a < b)
QKV_COMPARISON(le, a <= b)
QKV_COMPARISON(gt, a > b)
QKV_COMPARISON(ge, a >= b)
#undef QKV_COMPARISON

// ---- operators -----------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator+(const Tensor& a, float s) { return a.add(s); }
Tensor operator-(const Tensor& a, float s) { return a.sub(s); }
Tensor operator*(const Tensor& a, float s) { return a.mul(s); }
Tensor operator/(const Tensor& a, float s) { return a.div(s); }
Tensor operator+(float s, const Tensor& a) { return a.add(s); }
Tensor operator-(float s, const Tensor& a) { return a.rsub(s); }
Tensor operator*(float s, const Tensor& a) { return a.mul(s); }
Tensor operator/(float s, const Tensor& a) { return a.rdiv(s); }
Tensor operator-(const Tensor& a) { return a.neg(); }

}  // namespace qkv
