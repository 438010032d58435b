// Optimizers (optim/sgd.h, optim/adam.h). The reference for the update rules is a plain scalar
// loop in double written from the algorithm boxes of the torch.optim docs (SGD, Adam, AdamW),
// run on the objective f(θ) = Σ θ³/3 + c·θ, whose gradient θ² + c the loop computes itself.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/scheduler.h"
#include "optim/sgd.h"
#include "qkv.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;
using V = std::vector<float>;
using D = std::vector<double>;

namespace {

const V kStart = {0.5f, -1.2f, 2.0f, 0.05f, -0.3f};
const V kShift = {0.1f, -0.4f, 0.3f, 0.0f, 1.0f};

// Runs `steps` optimizer steps on f from kStart; returns θ.
V train(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make, int steps) {
  Tensor p = tensor(kStart, {5}, true);
  const Tensor c = tensor(kShift, {5});
  auto opt = make({p});
  for (int t = 0; t < steps; ++t) {
    opt->zero_grad();
    ((p * p * p).sum() / 3.0f + (p * c).sum()).backward();
    opt->step();
  }
  return p.to_vector();
}

D gradient(const D& th) {
  D g(th.size());
  for (size_t i = 0; i < th.size(); ++i) g[i] = th[i] * th[i] + kShift[i];
  return g;
}

// torch.optim.SGD's algorithm box.
D sgd_reference(double lr, double mu, double tau, double wd, bool nesterov, int steps) {
  D th(kStart.begin(), kStart.end()), b(th.size());
  for (int t = 1; t <= steps; ++t) {
    D g = gradient(th);
    for (size_t i = 0; i < th.size(); ++i) {
      if (wd != 0) g[i] += wd * th[i];
      if (mu != 0) {
        b[i] = t > 1 ? mu * b[i] + (1 - tau) * g[i] : g[i];
        g[i] = nesterov ? g[i] + mu * b[i] : b[i];
      }
      th[i] -= lr * g[i];
    }
  }
  return th;
}

// torch.optim.Adam's and AdamW's algorithm boxes.
D adam_reference(double lr, double b1, double b2, double eps, double wd, bool amsgrad, bool decoupled, int steps) {
  D th(kStart.begin(), kStart.end()), m(th.size()), v(th.size()), v_max(th.size());
  for (int t = 1; t <= steps; ++t) {
    D g = gradient(th);
    for (size_t i = 0; i < th.size(); ++i) {
      if (decoupled)
        th[i] -= lr * wd * th[i];
      else
        g[i] += wd * th[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(b1, t));
      v_max[i] = std::max(v_max[i], v[i]);
      const double v_hat = (amsgrad ? v_max[i] : v[i]) / (1 - std::pow(b2, t));
      th[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
  return th;
}

void check_close(const V& got, const D& expected, double tol = 2e-5) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(tol));
}

bool bitwise_equal(const V& a, const V& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("SGD follows PyTorch's algorithm with momentum dampening nesterov and weight decay") {
  for (const optim::SGDOptions& o : {optim::SGDOptions{.lr = 0.1},
                                     optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.3},
                                     optim::SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true}}) {
    CAPTURE(o.momentum);
    CAPTURE(o.nesterov);
    const V ours = train([&](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(p, o); }, 8);
    check_close(ours, sgd_reference(o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, 8));
  }
}

TEST_CASE("Adam follows PyTorch's algorithm with L2 weight decay and amsgrad") {
  for (bool amsgrad : {false, true})
    for (double wd : {0.0, 0.05}) {
      CAPTURE(amsgrad);
      CAPTURE(wd);
      const optim::AdamOptions o{.lr = 0.1, .betas = {0.8, 0.6}, .eps = 1e-8, .weight_decay = wd, .amsgrad = amsgrad};
      const V ours = train([&](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p, o); }, 12);
      check_close(ours, adam_reference(0.1, 0.8, 0.6, 1e-8, wd, amsgrad, false, 12));
    }
  // The case is sensitive to amsgrad: v shrinks as θ settles, so max(v) changes the result.
  const D plain = adam_reference(0.1, 0.8, 0.6, 1e-8, 0.0, false, false, 12);
  const D ams = adam_reference(0.1, 0.8, 0.6, 1e-8, 0.0, true, false, 12);
  CHECK(std::fabs(plain[2] - ams[2]) > 1e-3);
}

TEST_CASE("AdamW decays weights decoupled from the gradient") {
  const optim::AdamWOptions o{.lr = 0.1, .betas = {0.9, 0.99}, .weight_decay = 0.2};
  const V ours = train([&](std::vector<Tensor> p) { return std::make_unique<optim::AdamW>(p, o); }, 10);
  check_close(ours, adam_reference(0.1, 0.9, 0.99, 1e-8, 0.2, false, true, 10));
  const optim::AdamWOptions ams{.lr = 0.1, .betas = {0.8, 0.6}, .weight_decay = 0.2, .amsgrad = true};
  check_close(train([&](std::vector<Tensor> p) { return std::make_unique<optim::AdamW>(p, ams); }, 12),
              adam_reference(0.1, 0.8, 0.6, 1e-8, 0.2, true, true, 12));
  // Not the same as Adam's L2 penalty.
  const D l2 = adam_reference(0.1, 0.9, 0.99, 1e-8, 0.2, false, false, 10);
  CHECK(std::fabs(ours[2] - l2[2]) > 1e-3);
}

TEST_CASE("the first Adam step moves every parameter by lr against the sign of its gradient") {
  // At t = 1: m̂ = g and v̂ = g², so the step is lr·g / (|g| + ε) ≈ lr·sign(g).
  Tensor p = tensor({1.0f, -2.0f, 3.0f}, true);
  optim::Adam opt({p}, {.lr = 0.1});
  (p * tensor({5.0f, 0.01f, -300.0f})).sum().backward();
  opt.step();
  check_close(p.to_vector(), {0.9, -2.1, 3.1}, 1e-6);
}

TEST_CASE("optimizers skip parameters without gradient and do not advance their state") {
  Tensor a = tensor({1.0f, 2.0f}, true), b = tensor({3.0f}, true);
  optim::Adam opt({a, b}, {.lr = 0.1});
  for (int t = 0; t < 3; ++t) {
    opt.zero_grad();
    (a * a).sum().backward();
    opt.step();
  }
  CHECK(b.to_vector() == V{3.0f});
  optim::OptimizerState s = opt.state_dict();
  CHECK(s.scalars.at("state.0.step") == 3.0);
  CHECK(s.tensors.count("state.0.exp_avg") == 1);
  CHECK(s.scalars.count("state.1.step") == 0);
  CHECK(s.tensors.count("state.1.exp_avg") == 0);
  (b * b).sum().backward();
  opt.step();
  CHECK(opt.state_dict().scalars.at("state.1.step") == 1.0);
  CHECK(opt.state_dict().scalars.at("state.0.step") == 4.0);  // a's gradient was kept, so a moved too
}

TEST_CASE("param groups override the learning rate and weight decay") {
  Tensor w = ones({2}, true), b = ones({2}, true);
  optim::AdamW opt(std::vector<optim::ParamGroup>{{.params = {w}}, {.params = {b}, .lr = 0.2, .weight_decay = 0.0}},
                   {.lr = 0.5, .weight_decay = 0.1});
  CHECK(opt.num_groups() == 2);
  CHECK(opt.lr(0) == 0.5);
  CHECK(opt.lr(1) == 0.2);
  CHECK(opt.weight_decay(1) == 0.0);
  // A zero gradient leaves m = v = 0 and the Adam step 0 / (0 + ε) = 0: only the decay acts,
  // w·(1 - 0.5·0.1) = 0.95, and b, without decay, stays.
  w.set_grad(zeros({2}));
  b.set_grad(zeros({2}));
  opt.step();
  CHECK(w.to_vector() == V{0.95f, 0.95f});
  CHECK(b.to_vector() == V{1.0f, 1.0f});
}

TEST_CASE("zero_grad drops gradients or fills them with zeros") {
  Tensor p = tensor({1.0f, 2.0f}, true);
  optim::SGD opt({p});
  (p * p).sum().backward();
  opt.zero_grad(false);
  CHECK(p.grad().to_vector() == V{0.0f, 0.0f});
  opt.zero_grad();
  CHECK_FALSE(p.grad().defined());
}

TEST_CASE("optimizers reject bad hyperparameters and parameters") {
  Tensor p = ones({2}, true);
  CHECK_THROWS_WITH_AS(optim::Adam({p}, {.betas = {0.9, 1.0}}), "Adam: invalid beta2 1 (expected [0, 1))", ValueError);
  CHECK_THROWS_WITH_AS(optim::SGD({p}, {.lr = -0.1}), "SGD: invalid learning rate -0.1 in group 0", ValueError);
  CHECK_THROWS_WITH_AS(optim::SGD({p}, {.nesterov = true}),
                       "SGD: Nesterov momentum requires a momentum and zero dampening", ValueError);
  CHECK_THROWS_WITH_AS(optim::AdamW({p, p}), "AdamW: parameter 1 appears twice", ValueError);
  CHECK_THROWS_WITH_AS(optim::SGD({ones({2})}), "SGD: parameter 0 is not a leaf that requires grad", ValueError);
  CHECK_THROWS_WITH_AS(optim::SGD(std::vector<Tensor>{}), "SGD: got an empty parameter list", ValueError);
  // An infinite rate or decay made every parameter inf or NaN at the first step.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(optim::SGD({p}, {.lr = inf}), "SGD: invalid learning rate inf in group 0", ValueError);
  CHECK_THROWS_WITH_AS(optim::AdamW({p}, {.weight_decay = inf}), "AdamW: invalid weight_decay inf in group 0",
                       ValueError);
  optim::SGD sgd({p}, {.lr = 0.1});
  CHECK_THROWS_WITH_AS(sgd.set_lr(inf), "SGD: invalid learning rate inf", ValueError);
  CHECK(sgd.lr() == 0.1);
}

TEST_CASE("optimizer state with an infinite or NaN rate or decay is refused, as a checkpoint's would be") {
  // Before, a `last` checkpoint with lr = inf passed --resume and the run then "diverged".
  Tensor p = ones({2}, true);
  optim::Adam opt({p}, {.lr = 0.1});
  for (const char* key : {"param_groups.0.lr", "param_groups.0.weight_decay"}) {
    for (const double value : {std::numeric_limits<double>::infinity(), std::nan("")}) {
      optim::OptimizerState state = opt.state_dict();
      state.scalars[key] = value;
      CAPTURE(key);
      CHECK_THROWS_WITH_AS(opt.load_state_dict(state),
                           doctest::Contains((std::string(key) + " = " + (std::isnan(value) ? "nan" : "inf") +
                                              " (expected a finite number >= 0)")
                                                 .c_str()),
                           ValueError);
      CHECK(opt.lr() == 0.1);
    }
  }
}

TEST_CASE("optimizer load_state_dict reports every problem at once and changes nothing") {
  Tensor a = ones({2, 3}, true), b = ones({3}, true);
  optim::Adam opt({a, b}, {.lr = 0.1});
  (a.sum() + (b * b).sum()).backward();
  opt.step();
  const optim::OptimizerState live = opt.state_dict();
  const V m_before = live.tensors.at("state.0.exp_avg").to_vector();

  optim::OptimizerState bad = live;
  bad.tensors.erase("state.0.exp_avg_sq");
  bad.tensors["state.1.exp_avg"] = zeros({4});
  bad.tensors["state.5.exp_avg"] = zeros({1});
  bad.scalars["momentum"] = 0.9;
  bad.scalars["param_groups.0.lr"] = -1.0;
  bad.scalars.erase("param_groups.0.weight_decay");
  CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                       "load_state_dict: cannot load into Adam (nothing was changed):\n"
                       "  missing keys: param_groups.0.weight_decay; state.0.exp_avg_sq;\n"
                       "  unexpected keys: momentum; state.5.exp_avg;\n"
                       "  invalid values: param_groups.0.lr = -1 (expected a finite number >= 0); state.1.exp_avg "
                       "(expected shape (3), got (4));",
                       ValueError);
  CHECK(opt.lr() == 0.1);
  CHECK(opt.state_dict().tensors.at("state.0.exp_avg").to_vector() == m_before);
  CHECK(opt.state_dict().scalars.at("state.1.step") == 1.0);
  // SGD state cannot be loaded into Adam: its keys are foreign.
  Tensor c = ones({3}, true);
  optim::SGD sgd({c}, {.lr = 0.1, .momentum = 0.9});
  c.sum().backward();
  sgd.step();
  CHECK_THROWS_AS(optim::Adam({c}).load_state_dict(sgd.state_dict()), ValueError);
}

namespace {

// A small classifier, a batch, and one training step of the loop in docs/training.md.
struct Setup {
  std::shared_ptr<nn::Sequential> model;
  Tensor x;
  IndexTensor y;
};

Setup make_setup(uint64_t seed) {
  manual_seed(seed);
  Setup s;
  s.model = std::make_shared<nn::Sequential>();
  s.model->push_back(std::make_shared<nn::Linear>(6, 16)).push_back(std::make_shared<nn::Tanh>());
  s.model->push_back(std::make_shared<nn::Linear>(16, 4));
  Generator data(77);
  s.x = randn({32, 6}, false, &data);
  s.y = randint(0, 4, {32}, &data);
  return s;
}

void train_step(Setup& s, optim::Optimizer& opt, optim::LRScheduler& schedule) {
  opt.zero_grad();
  nn::functional::cross_entropy(s.model->forward(s.x), s.y, {.label_smoothing = 0.1f}).backward();
  optim::clip_grad_norm_(s.model->parameters(), 0.5);
  opt.step();
  schedule.step();
}

V flat_params(const nn::Module& m) {
  V out;
  for (const Tensor& p : m.parameters()) {
    const V v = p.to_vector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

std::unique_ptr<optim::Optimizer> make_optimizer(int kind, const nn::Module& m) {
  switch (kind) {
    case 0: return std::make_unique<optim::SGD>(m.parameters(), optim::SGDOptions{.lr = 0.2, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true});
    case 1: return std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions{.lr = 0.02, .weight_decay = 1e-3, .amsgrad = true});
    default: {
      // Weights decay, biases do not: two groups.
      std::vector<Tensor> weights, biases;
      for (const auto& [name, p] : m.named_parameters()) (p.dim() == 2 ? weights : biases).push_back(p);
      return std::make_unique<optim::AdamW>(
          std::vector<optim::ParamGroup>{{.params = weights}, {.params = biases, .weight_decay = 0.0}},
          optim::AdamWOptions{.lr = 0.02});
    }
  }
}

}  // namespace

TEST_CASE("optimizer state restored into a fresh optimizer continues training bitwise") {
  const int N = 8, k = 3;
  for (int kind = 0; kind < 3; ++kind) {
    CAPTURE(kind);
    // N steps without interruption.
    Setup full = make_setup(1);
    auto opt = make_optimizer(kind, *full.model);
    optim::WarmupLR schedule(*opt, 2, N);
    for (int t = 0; t < N; ++t) train_step(full, *opt, schedule);

    // k steps, then a snapshot (copies, as a file would hold).
    Setup first = make_setup(1);
    auto opt1 = make_optimizer(kind, *first.model);
    optim::WarmupLR schedule1(*opt1, 2, N);
    for (int t = 0; t < k; ++t) train_step(first, *opt1, schedule1);
    nn::StateDict model_state;
    for (const auto& [name, t] : first.model->state_dict()) model_state[name] = t.clone();
    optim::OptimizerState optim_state = opt1->state_dict();
    for (auto& [name, t] : optim_state.tensors) t = t.clone();
    const int64_t step = schedule1.last_step();

    // Fresh objects (another initialization), restored, then N - k more steps.
    Setup second = make_setup(999);
    auto opt2 = make_optimizer(kind, *second.model);
    optim::WarmupLR schedule2(*opt2, 2, N);
    second.model->load_state_dict(model_state);
    opt2->load_state_dict(optim_state);
    schedule2.set_last_step(step);
    for (int t = k; t < N; ++t) train_step(second, *opt2, schedule2);

    CHECK(bitwise_equal(flat_params(*second.model), flat_params(*full.model)));
    CHECK(opt2->lr(0) == opt->lr(0));
  }
}

TEST_CASE("training steps with losses and optimizers are bitwise identical with 1 and 2 threads") {
  // Sizes above the kernels' parallel threshold: the loss, backward and Adam update all split.
  auto run = [] {
    manual_seed(5);
    nn::Linear layer(64, 512);
    Generator data(6);
    const Tensor x = randn({256, 64}, false, &data);
    const IndexTensor y = randint(0, 512, {256}, &data);
    optim::AdamW opt(layer.parameters(), {.lr = 1e-2});
    for (int t = 0; t < 3; ++t) {
      opt.zero_grad();
      nn::functional::cross_entropy(layer.forward(x), y, {.label_smoothing = 0.1f}).backward();
      optim::clip_grad_norm_(layer.parameters(), 1.0);
      opt.step();
    }
    return flat_params(layer);
  };
  check_bitwise_identical_with_1_and_2_threads(run);
}
