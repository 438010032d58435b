// Learning-rate schedules (optim/scheduler.h), at specific steps against values worked out by hand
// in the comments.
#include <doctest/doctest.h>

#include "optim/scheduler.h"
#include "optim/sgd.h"
#include "qkv.h"

using namespace qkv;

namespace {

Tensor param() { return ones({1}, true); }

}  // namespace

TEST_CASE("StepLR multiplies by gamma every step_size steps") {
  const Tensor p = param();
  optim::SGD opt({p}, {.lr = 0.1});
  optim::StepLR schedule(opt, 3, 0.5);
  const double expected[] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025};
  for (double lr : expected) {
    CHECK(opt.lr() == doctest::Approx(lr));
    schedule.step();
  }
  CHECK(schedule.last_step() == 8);
}

TEST_CASE("CosineAnnealingLR follows PyTorch's closed form") {
  const Tensor p = param();
  optim::SGD opt({p}, {.lr = 0.1});
  optim::CosineAnnealingLR schedule(opt, 10, 0.01);
  // eta_min + (0.1 - eta_min)·(1 + cos(π·t/10))/2: t = 0 → 0.1; t = 3 → 0.01 + 0.09·(1 + cos 54°)/2
  // = 0.01 + 0.09·0.7938926 = 0.0814503; t = 5 → 0.055; t = 10 → 0.01; t = 15 rises back to 0.055.
  CHECK(opt.lr() == doctest::Approx(0.1));
  CHECK(schedule.lr_at(3) == doctest::Approx(0.0814503364));
  CHECK(schedule.lr_at(5) == doctest::Approx(0.055));
  CHECK(schedule.lr_at(10) == doctest::Approx(0.01));
  CHECK(schedule.lr_at(15) == doctest::Approx(0.055));
  for (int t = 0; t < 3; ++t) schedule.step();
  CHECK(opt.lr() == doctest::Approx(0.0814503364));
}

TEST_CASE("WarmupLR rises linearly then decays by cosine or linearly to zero") {
  const Tensor p = param();
  optim::SGD opt({p}, {.lr = 2.0});
  optim::WarmupLR cosine(opt, 4, 12);
  // Warmup: 2·t/4. Decay over 8 steps with q = (t - 4)/8: t = 6 → q = 1/4, 2·(1 + cos(π/4))/2
  // = 1.7071068; t = 8 → q = 1/2 → 1; t = 12 → 0; after 12 it stays 0.
  CHECK(cosine.lr_at(0) == 0.0);
  CHECK(cosine.lr_at(2) == doctest::Approx(1.0));
  CHECK(cosine.lr_at(4) == doctest::Approx(2.0));
  CHECK(cosine.lr_at(6) == doctest::Approx(1.7071067812));
  CHECK(cosine.lr_at(8) == doctest::Approx(1.0));
  CHECK(cosine.lr_at(12) == doctest::Approx(0.0));
  CHECK(cosine.lr_at(20) == doctest::Approx(0.0));
  CHECK(opt.lr() == 0.0);  // the schedule set step 0's rate

  const Tensor p2 = param();
  optim::SGD opt2({p2}, {.lr = 2.0});
  optim::WarmupLR linear(opt2, 4, 12, optim::Decay::Linear);
  // After warmup 2·(1 - q): t = 6 → 1.5; t = 10 → 0.5.
  CHECK(linear.lr_at(3) == doctest::Approx(1.5));
  CHECK(linear.lr_at(6) == doctest::Approx(1.5));
  CHECK(linear.lr_at(10) == doctest::Approx(0.5));
  CHECK(linear.lr_at(13) == 0.0);
  CHECK_THROWS_WITH_AS(optim::WarmupLR(opt2, 5, 5), "WarmupLR: expected 0 <= warmup_steps < total_steps, got 5 and 5",
                       ValueError);
}

TEST_CASE("NoamLR is the Transformer paper's schedule with steps counted from 1") {
  const Tensor p = param();
  optim::SGD opt({p}, {.lr = 1.0});
  optim::NoamLR schedule(opt, 512, 4000);
  // 512^-0.5 = 0.0441941738, 4000^-1.5 = 3.95284708e-6.
  // Relative tolerances only (scale 0): the rates are far below Approx's default absolute slack.
  auto near = [](double x) { return doctest::Approx(x).epsilon(1e-8).scale(0); };
  // n = 1 (the first step, last_step 0): 0.0441941738 · 1 · 3.95284708e-6 = 1.74692811e-7; counting
  // from 0 instead would give 0 here.
  CHECK(opt.lr() == near(1.74692811e-7));
  // n = 100: min(0.1, 100·3.95284708e-6) = 3.95284708e-4 → 1.74692811e-5; n = 99 would give 1.7294e-5.
  CHECK(schedule.lr_at(99) == near(1.74692811e-5));
  // n = 4000, the peak: both terms are 4000^-0.5 = 0.0158113883 → 6.98771243e-4.
  CHECK(schedule.lr_at(3999) == near(6.98771243e-4));
  // n = 16000: 16000^-0.5 = 0.00790569415 → 3.49385621e-4, half the peak.
  CHECK(schedule.lr_at(15999) == near(3.49385621e-4));
  schedule.step();
  CHECK(opt.lr() == near(2 * 1.74692811e-7));
}

TEST_CASE("a scheduler scales every group from its own base rate and can jump to a step") {
  const Tensor a = param(), b = param();
  optim::SGD opt(std::vector<optim::ParamGroup>{{.params = {a}}, {.params = {b}, .lr = 0.5}}, {.lr = 0.1});
  optim::LambdaLR schedule(opt, [](int64_t step) { return 1.0 / static_cast<double>(step + 1); });
  schedule.set_last_step(4);
  CHECK(opt.lr(0) == doctest::Approx(0.02));
  CHECK(opt.lr(1) == doctest::Approx(0.1));
  CHECK(schedule.last_step() == 4);
}
