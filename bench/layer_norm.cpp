// Time of layer normalization, forward and backward: its composed reference (qkv::layer_norm_reference:
// mean, sub, mul, rsqrt, ...) and the fused op (qkv::layer_norm). Usage: bench_layer_norm [rows D] (defaults 1120 256, i.e. B·T =
// 32·35); threads from QKV_NUM_THREADS.
#include <cstdio>
#include <cstdlib>

#include "autograd/ops/layer_norm.h"
#include "bench/timing.h"
#include "tensor/factories.h"
#include "tensor/threads.h"

using namespace qkv;
using qkv::bench::best_us;

int main(int argc, char** argv) {
  const int64_t rows = argc > 2 ? std::atoll(argv[1]) : 1120, D = argc > 2 ? std::atoll(argv[2]) : 256;
  Tensor x = randn({rows, D}, true), w = ones({D}, true), b = zeros({D}, true);
  const Tensor r = randn({rows, D});  // the loss Σ r ⊙ y gives every output a gradient
  const double composed = best_us(20, [&] { (layer_norm_reference(x, w, b, 1e-5f) * r).sum().backward(); });
  const double fused = best_us(20, [&] { (layer_norm(x, w, b, 1e-5f) * r).sum().backward(); });
  std::printf("layer_norm forward+backward of (%lld, %lld), %d thread(s): composed %.0f us, fused %.0f us\n",
              static_cast<long long>(rows), static_cast<long long>(D), get_num_threads(), composed, fused);
  return 0;
}
