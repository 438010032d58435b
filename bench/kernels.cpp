// Time of the hot kernels besides the matmul, called directly on float arrays of attention-model
// sizes, on 1 and 2 threads: softmax and log-softmax forward and backward along the last dim,
// elementwise maps (contiguous, and with a broadcast row), sums along a dim, layer normalization
// forward and backward, and the sum of squares behind gradient clipping.
// Usage: bench_kernels [--threads LIST] (default 1,2). Each figure is the best of 30 calls, in µs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tensor/kernels/elementwise.h"
#include "tensor/kernels/layernorm.h"
#include "tensor/kernels/reduce.h"
#include "tensor/kernels/softmax.h"
#include "tensor/random.h"
#include "tensor/threads.h"

using namespace qkv::kernels;

namespace {

double best_us(const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < 30; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  qkv::Generator(seed).fill_uniform(v.data(), n, -3.0f, 3.0f);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2};
  if (argc > 2 && std::string(argv[1]) == "--threads") {
    thread_counts.clear();
    for (const char* p = argv[2]; *p;) {
      char* end = nullptr;
      thread_counts.push_back(static_cast<int>(std::strtol(p, &end, 10)));
      if (end == p) break;
      p = *end == ',' ? end + 1 : end;
    }
  }
  // Attention weights of the small tagger config (B·H·T = 32·8·64 rows of T = 64), logits over
  // a vocabulary (4096 × 1000), activations (B·T = 4096 rows of D = 256), and 4M parameters.
  const int64_t rows = 32 * 8 * 64, T = 64, N = 4096, V = 1000, D = 256, P = int64_t{1} << 22;
  const std::vector<float> att = random_values(rows * T, 1), logits = random_values(N * V, 2),
                           act = random_values(N * D, 3), act2 = random_values(N * D, 4),
                           bias = random_values(D, 5), params = random_values(P, 6);
  std::vector<float> out(static_cast<size_t>(std::max(rows * T, N * V))), grad(out.size()),
      mean(static_cast<size_t>(N)), rstd(mean.size()), dw(static_cast<size_t>(D)), db(dw.size());
  const std::vector<int64_t> shape = {N, D}, contiguous = {D, 1}, row = {0, 1};

  struct Case {
    std::string name;
    std::function<void()> run;
  };
  const std::vector<Case> cases = {
      {"softmax forward (16384, 64)", [&] { softmax_forward(rows, T, 1, att.data(), out.data(), false); }},
      {"softmax backward (16384, 64)",
       [&] { softmax_backward(rows, T, 1, out.data(), att.data(), grad.data(), false); }},
      {"log_softmax forward (4096, 1000)",
       [&] { softmax_forward(N, V, 1, logits.data(), out.data(), true); }},
      {"log_softmax backward (4096, 1000)",
       [&] { softmax_backward(N, V, 1, out.data(), logits.data(), grad.data(), true); }},
      {"add (4096, 256) + (4096, 256)",
       [&] {
         binary_map(shape, act.data(), contiguous, act2.data(), contiguous, out.data(),
                    [](float a, float b) { return a + b; });
       }},
      {"add (4096, 256) + (256)",
       [&] {
         binary_map(shape, act.data(), contiguous, bias.data(), row, out.data(),
                    [](float a, float b) { return a + b; });
       }},
      {"relu (4096, 256)",
       [&] { unary_map(N * D, act.data(), out.data(), [](float a) { return a > 0.0f ? a : 0.0f; }); }},
      {"sum over last dim (4096, 256)", [&] { sum_dim(N, D, 1, act.data(), out.data()); }},
      {"sum over first dim (4096, 256)", [&] { sum_dim(1, N, D, act.data(), out.data()); }},
      {"layernorm forward (4096, 256)",
       [&] {
         layernorm_forward(N, D, act.data(), bias.data(), bias.data(), 1e-5f, out.data(), mean.data(),
                           rstd.data());
       }},
      {"layernorm backward (4096, 256)",
       [&] {
         layernorm_backward(N, D, act.data(), bias.data(), mean.data(), rstd.data(), act2.data(), grad.data(),
                            dw.data(), db.data());
       }},
      {"sum of squares (4194304)",
       [&] {
         volatile double s = sum_abs_pow(P, params.data(), 2.0f);
         (void)s;
       }},
  };
  for (const Case& c : cases) {
    std::string line = c.name + ":";
    for (int t : thread_counts) {
      qkv::set_num_threads(t);
      char buf[64];
      std::snprintf(buf, sizeof buf, " threads=%d %.1f us", t, best_us(c.run));
      line += buf;
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  return 0;
}
