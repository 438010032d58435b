// Time of the training toolkit's hot loops: one optimizer step (SGD with momentum, Adam) over a
// large parameter, and cross-entropy forward and backward, fused (nn::functional::cross_entropy)
// and composed (log_softmax then nll_loss), with the bytes each keeps alive for backward.
// Usage: bench_training [params N C] (defaults 4194304 4096 512); threads from QKV_NUM_THREADS.
// A whole training step of the Transformer tagger is `tagger bench --config CONFIG`
// (bench/tagger_bench.cpp); PyTorch's is `./qkv bench torch CONFIG` (bench/torch_anchor.py).
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "bench/timing.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "tensor/factories.h"
#include "tensor/storage.h"
#include "tensor/threads.h"

using namespace qkv;
using qkv::bench::best_ms;
namespace F = qkv::nn::functional;

namespace {

// Bytes allocated by fn's result that are still alive while it is held (its graph, for a loss).
int64_t kept_bytes(const std::function<Tensor()>& fn) {
  const int64_t before = memory_stats().live_bytes;
  const Tensor out = fn();
  return memory_stats().live_bytes - before;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t P = argc > 3 ? std::atoll(argv[1]) : 4194304;
  const int64_t N = argc > 3 ? std::atoll(argv[2]) : 4096, C = argc > 3 ? std::atoll(argv[3]) : 512;
  Tensor p = randn({P}, true);
  p.set_grad(randn({P}));
  optim::SGD sgd({p}, {.lr = 1e-3, .momentum = 0.9});
  optim::Adam adam({p}, {.lr = 1e-3});
  std::printf("optimizer step on %lld floats, %d thread(s): SGD momentum %.2f ms, Adam %.2f ms\n",
              static_cast<long long>(P), get_num_threads(), best_ms(10, [&] { sgd.step(); }),
              best_ms(10, [&] { adam.step(); }));

  const Tensor x = randn({N, C}, true);
  const IndexTensor y = randint(0, C, {N});
  const double fused = best_ms(10, [&] { F::cross_entropy(x, y).backward(); });
  const double composed = best_ms(10, [&] { F::nll_loss(x.log_softmax(-1), y).backward(); });
  std::printf(
      "cross_entropy forward+backward of (%lld, %lld), %d thread(s): fused %.2f ms, composed %.2f ms\n",
      static_cast<long long>(N), static_cast<long long>(C), get_num_threads(), fused, composed);
  std::printf("bytes kept for backward: fused %lld, composed %lld\n",
              static_cast<long long>(kept_bytes([&] { return F::cross_entropy(x, y); })),
              static_cast<long long>(kept_bytes([&] { return F::nll_loss(x.log_softmax(-1), y); })));
  return 0;
}
