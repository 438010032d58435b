// Learning-rate schedules. A scheduler sets the optimizer's learning rate from the step count;
// call scheduler.step() once after each optimizer.step():
//
//   optim::AdamW opt(model.parameters(), {.lr = 3e-4});
//   optim::WarmupLR schedule(opt, /*warmup_steps=*/100, /*total_steps=*/1000);
//   for (...) { ...; opt.step(); schedule.step(); }
//
// Every schedule is a closed form lr(step, base_lr), where base_lr is each group's learning rate
// when the scheduler was made and step counts the optimizer steps taken so far: the first
// optimizer step runs with lr(0), as with PyTorch's schedulers. A scheduler keeps a reference to
// its optimizer, which must outlive it. To resume, make the optimizer and the scheduler as at the
// start, load the optimizer's state, then set_last_step(saved step).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "optim/optimizer.h"

namespace qkv::optim {

class LRScheduler {
 public:
  using Schedule = std::function<double(int64_t step, double base_lr)>;
  // Reads the base learning rates and sets the learning rates of step 0.
  LRScheduler(Optimizer& optimizer, Schedule schedule);
  virtual ~LRScheduler() = default;

  void step();                        // the next step: sets its learning rates
  int64_t last_step() const { return step_; }
  void set_last_step(int64_t step);   // jumps to a step (to resume), setting its learning rates
  // The learning rate of a group at any step, without changing anything (for plots and tests).
  double lr_at(int64_t step, size_t group = 0) const;

 private:
  void apply();
  Optimizer& optimizer_;
  Schedule schedule_;
  std::vector<double> base_lrs_;
  int64_t step_ = 0;
};

// lr = base_lr · factor(step), with any factor.
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t step)> factor);
};

// lr = base_lr · gamma^⌊step / step_size⌋ (torch.optim.lr_scheduler.StepLR).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
};

// lr = eta_min + (base_lr - eta_min) · (1 + cos(π · step / t_max)) / 2, the closed form of
// torch.optim.lr_scheduler.CosineAnnealingLR (SGDR without restarts). Past t_max the cosine
// continues and the learning rate rises again, as in PyTorch.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0.0);
};

// Linear warmup from 0 to base_lr over warmup_steps, then decay to 0 at total_steps, by a cosine
// half-period or linearly, and 0 after (the schedules of Hugging Face transformers'
// get_cosine_schedule_with_warmup and get_linear_schedule_with_warmup, but flat at 0 after
// total_steps):
//   step < warmup:  base_lr · step / warmup
//   after:          base_lr · (1 + cos(π·q)) / 2   or   base_lr · (1 - q),
//                   q = min(1, (step - warmup) / (total - warmup))
enum class Decay { Cosine, Linear };
class WarmupLR : public LRScheduler {
 public:
  WarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, Decay decay = Decay::Cosine);
};

// The schedule of "Attention Is All You Need" (§5.3), with n = step + 1 counting optimizer steps
// from 1:
//   lr = base_lr · d_model^-0.5 · min(n^-0.5, n · warmup_steps^-1.5)
// Linear growth for warmup_steps steps, then decay as 1/√n. The paper has no base_lr: give the
// optimizer lr = 1 for the paper's values (the Annotated Transformer does the same).
class NoamLR : public LRScheduler {
 public:
  NoamLR(Optimizer& optimizer, int64_t d_model, int64_t warmup_steps);
};

}  // namespace qkv::optim
