// Elementwise ops of one tensor (and tensor-scalar arithmetic). Each backward is the derivative
// written next to the forward; where the derivative reads better through the output y, y is saved.
// The exact GELU has a fast form, and beside it its composed reference, gelu_reference
// (autograd/ops/unary.h).
#include "autograd/ops/unary.h"

#include <cmath>
#include <functional>
#include <numbers>

#include "autograd/function.h"
#include "autograd/observer.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/kernels/vecmath.h"
#include "tensor/reference_mode.h"
#include "autograd/ops/map.h"

namespace qkv {
namespace {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;
using ops::map1;
using ops::map2;

// The derivative dy/dx as differentiable ops on x (or y), for a backward that records a graph.
using GraphDerivative = std::function<Tensor(const Tensor&)>;

// An op whose gradient is g · dy/dx, with dy/dx computed elementwise from x (or from y, when
// `from_output`) by `derivative`. dx has g's shape: when g is scratch (BackwardContext), dx is
// written over it, and a backward pass through a (rows, hidden) activation takes no new buffer.
// `graph_derivative` is the same derivative written with tensor ops, which create_graph records.
template <class F, class D>
Tensor pointwise(const char* name, const Tensor& x, F f, D derivative, GraphDerivative graph_derivative,
                 bool from_output = false) {
  const autograd::Op op(name);
  Tensor out = map1(x, f);
  const Tensor& saved = from_output ? out : x;
  return op.record(out, {x}, {saved},
                          [derivative, name](const Tensor& g, const BackwardContext& ctx) -> Grads {
                            const auto chain = [derivative](float gv, float v) { return gv * derivative(v); };
                            if (!ctx.grad_is_scratch) return {map2(g, ctx.saved[0], name, chain)};
                            Tensor dx = g;
                            ops::map2_into(dx, g, ctx.saved[0], chain);
                            return {dx};
                          },
                          [graph_derivative](const Tensor& g, const BackwardContext& ctx) -> Grads {
                            return {g * graph_derivative(ctx.saved[0])};
                          });
}

// y = scale·x + shift, whose gradient is g · scale.
Tensor affine(const char* name, const Tensor& x, float scale, float shift) {
  const autograd::Op op(name);
  Tensor out = map1(x, [scale, shift](float v) { return scale * v + shift; });
  return op.record(out, {x}, {},
      [scale](const Tensor& g, const BackwardContext&) -> Grads {
        return {scale == 1.0f ? g : map1(g, [scale](float gv) { return gv * scale; })};
      },
      [scale](const Tensor& g, const BackwardContext&) -> Grads { return {scale == 1.0f ? g : g * scale}; });
}

float normal_cdf(float x) { return 0.5f * std::erfc(-x * std::numbers::sqrt2_v<float> / 2.0f); }
float normal_pdf(float x) {
  return std::exp(-0.5f * x * x) * (std::numbers::inv_sqrtpi_v<float> / std::numbers::sqrt2_v<float>);
}

}  // namespace

Tensor Tensor::add(float s) const { return affine("add_scalar", *this, 1.0f, s); }
Tensor Tensor::sub(float s) const { return affine("add_scalar", *this, 1.0f, -s); }
Tensor Tensor::mul(float s) const { return affine("mul_scalar", *this, s, 0.0f); }
Tensor Tensor::div(float s) const {
  const autograd::Op op("div_scalar");
  // A true division (not multiplication by 1/s), so x / 3 gives the same bits as in PyTorch.
  Tensor out = map1(*this, [s](float v) { return v / s; });
  return op.record(out, {*this}, {},
      [s](const Tensor& g, const BackwardContext&) -> Grads {
        return {map1(g, [s](float gv) { return gv / s; })};
      },
      [s](const Tensor& g, const BackwardContext&) -> Grads { return {g / s}; });
}
Tensor Tensor::rsub(float s) const { return affine("rsub_scalar", *this, -1.0f, s); }
Tensor Tensor::neg() const { return affine("neg", *this, -1.0f, 0.0f); }

Tensor Tensor::rdiv(float s) const {
  // d(s/x)/dx = -s/x²
  return pointwise("rdiv_scalar", *this, [s](float v) { return s / v; },
                   [s](float v) { return -s / (v * v); }, [s](const Tensor& x) { return (x * x).rdiv(-s); });
}

Tensor Tensor::pow(float p) const {
  return pointwise("pow_scalar", *this, [p](float v) { return std::pow(v, p); },
                   [p](float v) { return p == 0.0f ? 0.0f : p * std::pow(v, p - 1.0f); },
                   [p](const Tensor& x) { return p == 0.0f ? zeros_like(x) : x.pow(p - 1.0f) * p; });
}

Tensor Tensor::sqrt() const {
  // d√x/dx = 1/(2√x) = 1/(2y)
  return pointwise("sqrt", *this, [](float v) { return std::sqrt(v); },
                   [](float y) { return 0.5f / y; }, [](const Tensor& y) { return y.rdiv(0.5f); },
                   /*from_output=*/true);
}

Tensor Tensor::rsqrt() const {
  // d(x^-1/2)/dx = -x^-3/2 / 2 = -y³/2
  return pointwise("rsqrt", *this, [](float v) { return 1.0f / std::sqrt(v); },
                   [](float y) { return -0.5f * y * y * y; }, [](const Tensor& y) { return y * y * y * -0.5f; },
                   true);
}

Tensor Tensor::exp() const {
  return pointwise("exp", *this, [](float v) { return std::exp(v); }, [](float y) { return y; },
                   [](const Tensor& y) { return y; }, true);
}

Tensor Tensor::log() const {
  return pointwise("log", *this, [](float v) { return std::log(v); }, [](float v) { return 1.0f / v; },
                   [](const Tensor& x) { return x.rdiv(1.0f); });
}

Tensor Tensor::sin() const {
  return pointwise("sin", *this, [](float v) { return std::sin(v); }, [](float v) { return std::cos(v); },
                   [](const Tensor& x) { return x.cos(); });
}

Tensor Tensor::cos() const {
  return pointwise("cos", *this, [](float v) { return std::cos(v); }, [](float v) { return -std::sin(v); },
                   [](const Tensor& x) { return -x.sin(); });
}

Tensor Tensor::tanh() const {
  // vtanh rather than std::tanh: a libm call per element cannot vectorize, and it made the tanh of
  // additive attention's (B, Q, K, h) features a quarter of a seq2seq training step
  // (docs/PERFORMANCE.md, "Seq2seq with attention").
  return pointwise("tanh", *this, [](float v) { return kernels::vtanh(v); },
                   [](float y) { return 1.0f - y * y; }, [](const Tensor& y) { return 1.0f - y * y; }, true);
}

Tensor Tensor::sigmoid() const {
  // σ(x) = 1/(1+e^-x), written to avoid overflow of e^-x for very negative x; σ' = y(1-y).
  return pointwise("sigmoid", *this,
                   [](float v) {
                     if (v >= 0) return 1.0f / (1.0f + std::exp(-v));
                     const float e = std::exp(v);
                     return e / (1.0f + e);
                   },
                   [](float y) { return y * (1.0f - y); }, [](const Tensor& y) { return y * (1.0f - y); }, true);
}

Tensor Tensor::relu() const {
  // y > 0 exactly where x > 0, so the output serves backward as well as the input. The output is
  // what the next layer saves anyway (an FFN's second Linear reads it for its weight gradient):
  // saving y keeps one (rows, hidden) tensor alive until backward instead of two.
  return pointwise(
      "relu", *this, [](float v) { return v > 0.0f ? v : 0.0f; },
      [](float y) { return y > 0.0f ? 1.0f : 0.0f; }, [](const Tensor& y) { return y.gt(0.0f); },
      /*from_output=*/true);
}

namespace {

// φ(x) = e^(−x²/2) / √(2π) and Φ(x), as differentiable ops.
Tensor normal_pdf_of(const Tensor& x) {
  return (x * x * -0.5f).exp() * (std::numbers::inv_sqrtpi_v<float> / std::numbers::sqrt2_v<float>);
}
Tensor normal_cdf_of(const Tensor& x) {
  return pointwise("normal_cdf", x, [](float v) { return normal_cdf(v); }, [](float v) { return normal_pdf(v); },
                   normal_pdf_of);
}

}  // namespace

Tensor gelu_reference(const Tensor& x) { return x * normal_cdf_of(x); }

Tensor Tensor::gelu(bool tanh_approximation) const {
  // GELU(x) = x·Φ(x);  d/dx = Φ(x) + x·φ(x)   (Hendrycks & Gimpel 2016). Its composed reference,
  // gelu_reference, calls libm's erfc and exp per element, which cannot vectorize, and took two
  // fifths of a training step of the character-level GPT (docs/PERFORMANCE.md); the fast form
  // computes Φ with vecmath.h's vnormal_cdf, and in backward Φ and φ from one exponential (vgauss),
  // within 3e-7 of it. The reference mode runs gelu_reference. φ(x) is 0 past |x| = 13.2 (vexp_nonpositive), as libm's exp
  // gives: vexp's clamp at 1e-38 made x·φ(x) grow with x, a gradient of 2.46 at 3e38 instead of 1.
  if (!tanh_approximation && reference_mode()) return gelu_reference(*this);
  if (!tanh_approximation)
    return pointwise("gelu", *this, [](float v) { return v * kernels::vnormal_cdf(v); },
                     [](float v) {
                       const float gauss = kernels::vgauss(v);  // one exponential for Φ and φ
                       return kernels::vnormal_cdf_from(v, gauss) +
                              v * gauss * (std::numbers::inv_sqrtpi_v<float> / std::numbers::sqrt2_v<float>);
                     },
                     [](const Tensor& x) { return normal_cdf_of(x) + x * normal_pdf_of(x); });
  // 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³);  d/dx = 0.5(1+t) + 0.5·x·(1-t²)·u'
  constexpr float k = 0.7978845608028654f, c = 0.044715f;
  return pointwise("gelu_tanh", *this,
                   [](float v) { return 0.5f * v * (1.0f + std::tanh(k * (v + c * v * v * v))); },
                   [](float v) {
                     const float t = std::tanh(k * (v + c * v * v * v));
                     return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * k * (1.0f + 3.0f * c * v * v);
                   },
                   [](const Tensor& x) {
                     const Tensor t = ((x + x * x * x * c) * k).tanh();
                     return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x);
                   });
}

Tensor Tensor::abs() const {
  return pointwise("abs", *this, [](float v) { return std::fabs(v); },
                   [](float v) { return v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : 0.0f); },
                   [](const Tensor& x) { return x.gt(0.0f) - x.lt(0.0f); });
}

Tensor Tensor::clamp(float min, float max) const {
  if (min > max) throw ValueError("clamp: min " + std::to_string(min) + " is above max " + std::to_string(max));
  // The gradient passes where the input was inside [min, max], as in PyTorch.
  return pointwise("clamp", *this, [min, max](float v) { return v < min ? min : (v > max ? max : v); },
                   [min, max](float v) { return v >= min && v <= max ? 1.0f : 0.0f; },
                   [min, max](const Tensor& x) { return x.ge(min) * x.le(max); });
}

Tensor Tensor::clamp_min(float min) const { return clamp(min, INFINITY); }
Tensor Tensor::clamp_max(float max) const { return clamp(-INFINITY, max); }

}  // namespace qkv
