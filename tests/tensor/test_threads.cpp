// Determinism across thread counts: every kernel gives each output to one thread, in a fixed order.
#include <doctest/doctest.h>

#include "qkv.h"
#include "thread_testing.h"

using namespace qkv;
using namespace qkv::testing;

namespace {

// Forward and backward of a two-layer network big enough for every kernel to go parallel;
// returns the loss and all gradients, flattened.
std::vector<float> one_step() {
  Generator g(99);
  Tensor x = randn({512, 96}, false, &g);
  Tensor w1 = randn({96, 160}, true, &g), b1 = randn({160}, true, &g), w2 = randn({160, 10}, true, &g);
  Tensor h = (x.matmul(w1) + b1).gelu();
  Tensor logits = h.matmul(w2);
  Tensor loss = logits.log_softmax(-1).mean() + (h * h).sum({1}).sqrt().mean() + h.var({0}).sum();
  loss.backward();
  std::vector<float> out = {loss.item()};
  for (const Tensor& p : {w1, b1, w2}) {
    const std::vector<float> v = p.grad().to_vector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

TEST_CASE("results are bitwise identical with 1 and 2 threads") {
  check_bitwise_identical_with_1_and_2_threads(one_step);
}

TEST_CASE("set_num_threads rejects zero") {
  CHECK_THROWS_AS(set_num_threads(0), ValueError);
}
