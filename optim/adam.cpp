#include "optim/adam.h"

#include <cmath>
#include <type_traits>

#include "tensor/kernels/parallel.h"

namespace qkv::optim {
namespace {

std::vector<std::string> buffers(bool amsgrad) {
  if (amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

AdamOptions as_adam(const AdamWOptions& o) { return {o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad}; }

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam("Adam", std::vector<ParamGroup>{{.params = std::move(params)}}, options, false) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Adam("Adam", std::move(groups), options, false) {}

Adam::Adam(const char* name, std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled)
    : Optimizer(name, std::move(groups), options.lr, options.weight_decay, buffers(options.amsgrad)),
      options_(options),
      decoupled_(decoupled) {
  const auto [beta1, beta2] = options.betas;
  require(beta1 >= 0.0 && beta1 < 1.0, "invalid beta1 " + format(beta1) + " (expected [0, 1))");
  require(beta2 >= 0.0 && beta2 < 1.0, "invalid beta2 " + format(beta2) + " (expected [0, 1))");
  require(options.eps >= 0.0, "invalid eps " + format(options.eps));
}

void Adam::update(float* p, const float* g, int64_t n, double lr, double weight_decay, ParamState& state) {
  const auto [beta1, beta2] = options_.betas;
  const double t = static_cast<double>(state.step);
  const double bias_correction1 = 1.0 - std::pow(beta1, t);
  const double bias_correction2 = 1.0 - std::pow(beta2, t);
  const float step_size = static_cast<float>(lr / bias_correction1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float b1 = static_cast<float>(beta1), one_minus_b1 = static_cast<float>(1.0 - beta1);
  const float b2 = static_cast<float>(beta2), one_minus_b2 = static_cast<float>(1.0 - beta2);
  const float eps = static_cast<float>(options_.eps);
  const float l2 = decoupled_ ? 0.0f : static_cast<float>(weight_decay);
  const float shrink = decoupled_ ? static_cast<float>(1.0 - lr * weight_decay) : 1.0f;
  float* m = state.buffers[0].data();
  float* v = state.buffers[1].data();
  float* v_max = options_.amsgrad ? state.buffers[2].data() : nullptr;
  // One loop per amsgrad setting, so that neither has a branch inside and both vectorize.
  auto run = [&](auto amsgrad) {
    // Captured by value, so that the loop need not reread the scalars through references that
    // might alias p (which would keep it from vectorizing).
    kernels::parallel_for(n, n * 8, [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float d = l2 != 0.0f ? g[i] + l2 * p[i] : g[i];
        const float theta = p[i] * shrink;  // exact when shrink = 1
        m[i] = b1 * m[i] + one_minus_b1 * d;
        v[i] = b2 * v[i] + one_minus_b2 * d * d;
        float second = v[i];
        if constexpr (amsgrad) second = v_max[i] = std::fmax(v_max[i], v[i]);
        const float denom = std::sqrt(second) / bc2_sqrt + eps;
        p[i] = theta + (-step_size * m[i]) / denom;  // addcdiv's order: self + (value·t1)/t2
      }
    });
  };
  if (v_max)
    run(std::true_type{});
  else
    run(std::false_type{});
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : Adam("AdamW", std::vector<ParamGroup>{{.params = std::move(params)}}, as_adam(options), true) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options)
    : Adam("AdamW", std::move(groups), as_adam(options), true) {}

}  // namespace qkv::optim
