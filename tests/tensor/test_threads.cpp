// Determinism across thread counts: every kernel gives each output to one thread, in a fixed order.
#include <doctest/doctest.h>

#include <cstdio>

#include "child_process.h"
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

TEST_CASE("set_num_threads takes 1 to kMaxThreads and names the range otherwise") {
  const int saved = get_num_threads();
  CHECK_THROWS_WITH_AS(set_num_threads(0), "set_num_threads: expected 1 to 256 threads, got 0", ValueError);
  CHECK_THROWS_AS(set_num_threads(-1), ValueError);
  CHECK_THROWS_AS(set_num_threads(kMaxThreads + 1), ValueError);
  CHECK_THROWS_AS(set_num_threads(100000), ValueError);  // used to crash inside the OpenMP runtime
  set_num_threads(kMaxThreads);
  CHECK(get_num_threads() == kMaxThreads);
  set_num_threads(saved);
}

// A fresh process reads QKV_NUM_THREADS once, at the first use of the thread count.
QKV_CHILD("print threads", [](const std::vector<std::string>&) {
  std::printf("%d", get_num_threads());
  return 0;
});

TEST_CASE("QKV_NUM_THREADS sets the initial thread count and a bad value is reported and ignored") {
  CHECK(run_child("print threads", {}, {"QKV_NUM_THREADS=1"}).output == "1");
  CHECK(run_child("print threads", {}, {"QKV_NUM_THREADS=3"}).output == "3");
  const std::string fallback =
      run_child("print threads", {}, {"OMP_NUM_THREADS=2", "QKV_NUM_THREADS=lots"}).output;
  CHECK(fallback == "2");  // OpenMP's own default
  // One rule for both: the environment variable takes the same range as set_num_threads.
  CHECK(run_child("print threads", {}, {"OMP_NUM_THREADS=2", "QKV_NUM_THREADS=257"}).output == "2");
  CHECK(run_child("print threads", {}, {"QKV_NUM_THREADS=256"}).output == "256");
  // Decimal digits only, as the programs' integer options: no sign, no whitespace.
  for (const char* text : {"QKV_NUM_THREADS= 3", "QKV_NUM_THREADS=+3", "QKV_NUM_THREADS=3 "})
    CHECK(run_child("print threads", {}, {"OMP_NUM_THREADS=2", text}).output == "2");
}
