// Time per step of a one-layer GRU, forward and backward, three ways:
//   composed  gru_sequence's composed reference (autograd/ops/gru.h): the input projections in one
//             product, then each step as tensor ops: a product, narrow, sigmoid, tanh, mul, add, ...
//   GRUCell   each step as two linear and the fused gate op gru_cell (4 nodes)
//   GRU       nn::GRU: one product for the input projections of all steps, then the whole time loop
//             as one fused node (gru_sequence)
// The loss is the sum of every h_t. Usage: bench_gru [T B in H [repeats]] (defaults 35 32 28 64 5);
// threads from QKV_NUM_THREADS.
#include <cstdio>
#include <cstdlib>

#include "autograd/ops/gru.h"
#include "bench/timing.h"
#include "nn/functional/basic.h"
#include "nn/gru.h"
#include "tensor/factories.h"
#include "tensor/threads.h"

using namespace qkv;
using qkv::bench::best_ms;

int main(int argc, char** argv) {
  const int64_t T = argc > 4 ? std::atoll(argv[1]) : 35, B = argc > 4 ? std::atoll(argv[2]) : 32;
  const int64_t in = argc > 4 ? std::atoll(argv[3]) : 28, H = argc > 4 ? std::atoll(argv[4]) : 64;
  const int repeats = argc > 5 ? std::atoi(argv[5]) : 5;
  manual_seed(0);
  nn::GRU gru(in, H);
  nn::GRUCell cell(in, H);
  const nn::GRU::LayerWeights& w = gru.weights[0];
  const Tensor x = randn({T, B, in}, true);
  std::vector<Tensor> steps;  // the same inputs as T separate leaves, for the step-by-step versions
  for (int64_t t = 0; t < T; ++t) steps.push_back(x.select(0, t).detach().clone().requires_grad_());

  const double composed = best_ms(repeats, [&] {
    const Tensor gi = nn::functional::linear(x, w.weight_ih, w.bias_ih);
    gru_sequence_reference(gi, zeros({B, H}), w.weight_hh, w.bias_hh).sum().backward();
  });
  const double stepwise = best_ms(repeats, [&] {
    Tensor h, loss = zeros({});
    for (const Tensor& xt : steps) {
      h = cell.forward(xt, h);
      loss = loss + h.sum();
    }
    loss.backward();
  });
  const double fused = best_ms(repeats, [&] { gru.forward(x).output.sum().backward(); });

  std::printf("GRU forward+backward, T=%lld B=%lld in=%lld H=%lld, %d thread(s): ms per time step\n",
              static_cast<long long>(T), static_cast<long long>(B), static_cast<long long>(in),
              static_cast<long long>(H), get_num_threads());
  std::printf("  composed  %8.4f\n  GRUCell   %8.4f\n  GRU       %8.4f\n", composed / T, stepwise / T, fused / T);
  return 0;
}
