#include "optim/clip.h"

#include <sstream>
#include <string>

#include "autograd/grad_mode.h"
#include "tensor/error.h"
#include "tensor/kernels/reduce.h"

namespace qkv::optim {
namespace {

std::string str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  if (!(norm_type >= 1.0))
    throw ValueError("clip_grad_norm_: norm_type must be >= 1 or INFINITY, got " + str(norm_type));
  if (!(max_norm >= 0.0)) throw ValueError("clip_grad_norm_: max_norm must be >= 0, got " + str(max_norm));
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  // ‖g‖_p = (Σ_params Σ_i |g_i|^p)^(1/p), the p-norm of the per-parameter p-norms; ‖g‖_∞ = max |g_i|.
  double total = 0.0;
  for (const Tensor& g : grads) {
    const Tensor c = g.contiguous();
    if (std::isinf(norm_type)) {
      for (int64_t i = 0; i < c.numel(); ++i) {
        const double a = std::fabs(c.data()[i]);
        if (a > total || std::isnan(a)) total = a;  // once NaN, stays NaN
      }
    } else {
      total += kernels::sum_abs_pow(c.numel(), c.data(), static_cast<float>(norm_type));
    }
  }
  if (!std::isinf(norm_type)) total = std::pow(total, 1.0 / norm_type);
  const double factor = max_norm / (total + 1e-6);
  if (factor < 1.0 || std::isnan(factor))
    for (Tensor& g : grads) g.mul_(static_cast<float>(factor));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  if (!(clip_value >= 0.0))
    throw ValueError("clip_grad_value_: clip_value must be >= 0, got " + str(clip_value));
  NoGradGuard no_grad;
  const float v = static_cast<float>(clip_value);
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) g.copy_(g.clamp(-v, v));
  }
}

}  // namespace qkv::optim
