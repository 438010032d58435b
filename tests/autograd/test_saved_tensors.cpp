// What ops keep alive for backward, measured in live tensor memory: a training step's peak is
// every saved activation at once, so an op that keeps more than its gradient needs costs memory.
#include <doctest/doctest.h>

#include "qkv.h"

using namespace qkv;

TEST_CASE("relu saves its output so that the layer after it keeps the hidden activations once") {
  const int64_t rows = 64, in = 32, hidden = 128, out = 8;
  const Tensor x = randn({rows, in}), w1 = randn({in, hidden}, true), w2 = randn({hidden, out}, true);
  // (relu's gradient from its output is checked by the gradcheck registry)
  const int64_t before = memory_stats().live_bytes;
  Tensor y;
  {
    const Tensor h = x.matmul(w1);  // freed at the end of the scope unless a node saved it
    y = h.relu().matmul(w2);        // the second product saves relu's output for w2's gradient
  }
  // Alive: y and relu's output, which both relu and the product read in backward; not h.
  CHECK(memory_stats().live_bytes - before == (rows * out + rows * hidden) * 4);
}
