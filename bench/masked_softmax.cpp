// Time of the masked softmax over the attention scores of one layer, forward and backward: its
// composed reference (qkv::masked_softmax_reference: d2l's sequence_mask, the hidden logits
// replaced, softmax, and the mask again for rows that see nothing) and the fused op
// (qkv::masked_softmax). Shapes of `tagger bench`'s configs (bench/tagger_bench.cpp): scores
// (B·H, T, T) with one valid length per sequence, drawn in [T/2, T].
// Usage: bench_masked_softmax; threads from QKV_NUM_THREADS.
#include <cstdio>

#include "autograd/ops/softmax.h"
#include "bench/timing.h"
#include "tensor/factories.h"
#include "tensor/threads.h"

using namespace qkv;
using qkv::bench::best_us;

int main() {
  struct Config {
    const char* name;
    int64_t B, H, T;
  };
  for (const Config& c :
       {Config{"tiny", 32, 4, 32}, Config{"small", 32, 8, 64}, Config{"base", 32, 8, 128}}) {
    Generator g(0);
    // d2l's MultiHeadAttention repeats each sequence's length for its H heads.
    const IndexTensor lens = randint(c.T / 2, c.T + 1, {c.B}, &g).repeat_interleave(c.H);
    Tensor x = randn({c.B * c.H, c.T, c.T}, true, &g);
    const Tensor r = randn({c.B * c.H, c.T, c.T}, false, &g);  // Σ r ⊙ y gives every output a gradient
    const double composed = best_us(20, [&] { (masked_softmax_reference(x, lens) * r).sum().backward(); });
    const double fused = best_us(20, [&] { (masked_softmax(x, lens) * r).sum().backward(); });
    const double loss_only = best_us(20, [&] { (x * r).sum().backward(); });  // the Σ r ⊙ y around both
    std::printf(
        "%-5s scores (%lld, %lld, %lld), %d thread(s), forward+backward: composed %.0f us, fused %.0f us "
        "(minus the %.0f us of the loss around them: %.0f and %.0f)\n",
        c.name, static_cast<long long>(c.B * c.H), static_cast<long long>(c.T), static_cast<long long>(c.T),
        get_num_threads(), composed, fused, loss_only, composed - loss_only, fused - loss_only);
  }
  return 0;
}
