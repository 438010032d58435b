#include "optim/scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "tensor/error.h"

namespace qkv::optim {
namespace {

void require(bool ok, const char* scheduler, const std::string& what) {
  if (!ok) throw ValueError(std::string(scheduler) + ": " + what);
}

// Each schedule checks its arguments once, before the scheduler applies it.

LRScheduler::Schedule step_schedule(int64_t step_size, double gamma) {
  require(step_size > 0, "StepLR", "step_size must be positive, got " + std::to_string(step_size));
  return [step_size, gamma](int64_t step, double base) {
    return base * std::pow(gamma, static_cast<double>(step / step_size));
  };
}

LRScheduler::Schedule cosine_schedule(int64_t t_max, double eta_min) {
  require(t_max > 0, "CosineAnnealingLR", "t_max must be positive, got " + std::to_string(t_max));
  return [t_max, eta_min](int64_t step, double base) {
    const double angle = std::numbers::pi * static_cast<double>(step) / static_cast<double>(t_max);
    return eta_min + (base - eta_min) * (1.0 + std::cos(angle)) / 2.0;
  };
}

LRScheduler::Schedule warmup_schedule(int64_t warmup_steps, int64_t total_steps, Decay decay) {
  require(warmup_steps >= 0 && total_steps > warmup_steps, "WarmupLR",
          "expected 0 <= warmup_steps < total_steps, got " + std::to_string(warmup_steps) + " and " +
              std::to_string(total_steps));
  return [warmup_steps, total_steps, decay](int64_t step, double base) {
    if (step < warmup_steps) return base * static_cast<double>(step) / static_cast<double>(warmup_steps);
    const double q = std::min(1.0, static_cast<double>(step - warmup_steps) /
                                       static_cast<double>(total_steps - warmup_steps));
    return decay == Decay::Cosine ? base * (1.0 + std::cos(std::numbers::pi * q)) / 2.0 : base * (1.0 - q);
  };
}

LRScheduler::Schedule noam_schedule(int64_t d_model, int64_t warmup_steps) {
  require(d_model > 0 && warmup_steps > 0, "NoamLR",
          "d_model and warmup_steps must be positive, got " + std::to_string(d_model) + " and " +
              std::to_string(warmup_steps));
  return [d_model, warmup_steps](int64_t step, double base) {
    const double n = static_cast<double>(step + 1), w = static_cast<double>(warmup_steps);
    return base * std::pow(static_cast<double>(d_model), -0.5) * std::min(std::pow(n, -0.5), n * std::pow(w, -1.5));
  };
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, Schedule schedule)
    : optimizer_(optimizer), schedule_(std::move(schedule)) {
  for (size_t g = 0; g < optimizer.num_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
  apply();
}

void LRScheduler::step() {
  ++step_;
  apply();
}

void LRScheduler::set_last_step(int64_t step) {
  require(step >= 0, "LRScheduler", "step must be >= 0, got " + std::to_string(step));
  step_ = step;
  apply();
}

double LRScheduler::lr_at(int64_t step, size_t group) const {
  require(group < base_lrs_.size(), "LRScheduler", "no parameter group " + std::to_string(group));
  return schedule_(step, base_lrs_[group]);
}

void LRScheduler::apply() {
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_lr(g, lr_at(step_, g));
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> factor)
    : LRScheduler(optimizer, [factor = std::move(factor)](int64_t step, double base) { return base * factor(step); }) {}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer, step_schedule(step_size, gamma)) {}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer, cosine_schedule(t_max, eta_min)) {}

WarmupLR::WarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, Decay decay)
    : LRScheduler(optimizer, warmup_schedule(warmup_steps, total_steps, decay)) {}

NoamLR::NoamLR(Optimizer& optimizer, int64_t d_model, int64_t warmup_steps)
    : LRScheduler(optimizer, noam_schedule(d_model, warmup_steps)) {}

}  // namespace qkv::optim
