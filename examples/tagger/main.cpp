// Placeholder for the tagger example (issue 6): fits y = sin(x) with a two-layer MLP trained by
// plain gradient descent on qkv's autograd, printing the loss as it falls.
#include <cstdio>

#include "qkv.h"

int main() {
  using namespace qkv;
  manual_seed(0);
  const Tensor x = linspace(-3.0f, 3.0f, 256).unsqueeze(1);  // (256, 1)
  const Tensor y = x.sin();
  Tensor w1 = (randn({1, 32}) * 0.5f).requires_grad_(), b1 = zeros({32}, true);
  Tensor w2 = (randn({32, 1}) * 0.2f).requires_grad_(), b2 = zeros({1}, true);
  const float lr = 0.05f;
  for (int step = 0; step <= 2000; ++step) {
    const Tensor pred = (x.matmul(w1) + b1).tanh().matmul(w2) + b2;
    const Tensor loss = ((pred - y) * (pred - y)).mean();
    for (Tensor* p : {&w1, &b1, &w2, &b2}) p->zero_grad();
    loss.backward();
    {
      NoGradGuard no_grad;
      for (Tensor* p : {&w1, &b1, &w2, &b2}) p->add_(p->grad(), -lr);
    }
    if (step % 250 == 0) std::printf("step %4d  mse %.5f\n", step, loss.item());
  }
  return 0;
}
