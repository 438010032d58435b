// What the op profiler costs: an OpScope with no observer registered (the price every op pays,
// always), the number of such tests a training step of a small Transformer encoder makes (every
// announcement of autograd/observer.h is one), and the step with the profiler off and on.
// Usage: bench_profiler; threads from QKV_NUM_THREADS.
#include <chrono>
#include <cstdio>
#include <vector>

#include "autograd/debug/profiler.h"
#include "bench/timing.h"
#include "qkv.h"

using namespace qkv;
using qkv::bench::best_ms;

namespace {

// Counts the announcements of a step: with no observer, each is a test of observed() that fails.
struct CountingObserver : autograd::Observer {
  int64_t count = 0;
  void op_started(const char*, Pass) override { ++count; }
  void op_recorded(const char*, const Tensor&, const std::vector<Tensor>&, autograd::Node*) override {
    ++count;
  }
  void flops_counted(int64_t) override { ++count; }
  void backward_started(const std::vector<std::shared_ptr<autograd::Node>>&) override { ++count; }
  void node_finished(autograd::Node&, const Tensor&, const std::vector<Tensor>&) override { ++count; }
};

// Nanoseconds per iteration of `body` over n iterations, the best of 5 runs.
template <class F>
double ns_per_iteration(int64_t n, F body) {
  return 1e6 * best_ms(5, [&] {
           for (int64_t i = 0; i < n; ++i) body();
         }) / static_cast<double>(n);
}

}  // namespace

int main() {
  // 1. An OpScope when no profiler runs, against the same loop without it. The empty asm with a
  //    memory clobber keeps the compiler from deleting or merging the iterations.
  constexpr int64_t n = 200'000'000;
  const double empty = ns_per_iteration(n, [] { asm volatile("" ::: "memory"); });
  const double scoped = ns_per_iteration(n, [] {
    const autograd::OpScope scope("bench");
    asm volatile("" ::: "memory");
  });
  std::printf("OpScope with no observer registered: %.3f ns per scope (loop alone %.3f ns, with scope %.3f ns)\n",
              scoped - empty, empty, scoped);

  // 2. One training step (forward, backward, SGD) of a Transformer encoder tagger:
  //    B = 32 sentences of T = 20 tokens, D = 64, 4 heads, FFN 128, 2 layers, 17 tags.
  manual_seed(0);
  const int64_t B = 32, T = 20, V = 1000, C = 17;
  nn::TransformerEncoder encoder({.vocab_size = V, .num_hiddens = 64, .ffn_num_hiddens = 128,
                                  .num_heads = 4, .num_layers = 2, .dropout = 0.1f});
  nn::Linear head(64, C);
  std::vector<int64_t> ids(B * T), tags(B * T);
  for (int64_t i = 0; i < B * T; ++i) ids[i] = (i * 7919) % V, tags[i] = (i * 31) % C;
  const IndexTensor x(ids, {B, T}), y(tags, {B * T});
  std::vector<Tensor> params = encoder.parameters();
  for (const Tensor& p : head.parameters()) params.push_back(p);
  auto step = [&] {
    const Tensor logits = head.forward(encoder.forward(x)).reshape({B * T, C});
    const Tensor loss = nn::functional::cross_entropy(logits, y);
    for (Tensor& p : params) p.zero_grad();
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor& p : params) p.add_(p.grad(), -0.01f);
  };

  int64_t ops = 0, scopes = 0;
  {
    Profiler profiler;
    step();
    profiler.stop();
    for (const OpProfile& r : profiler.ops()) ops += r.calls;
    scopes = profiler.scopes_opened();
  }
  CountingObserver counter;
  autograd::add_observer(&counter);
  step();
  autograd::remove_observer(&counter);
  const int64_t tests = counter.count;
  const double off = best_ms(30, step);
  double on = 0;
  {
    Profiler profiler;
    on = best_ms(30, step);
  }
  const double off_again = best_ms(30, step);
  std::printf("training step, %d thread(s): %lld op calls (forward and backward); profiler off %.3f ms "
              "(again after: %.3f ms), on %.3f ms (%+.1f%%, %+.2f us per op call)\n",
              get_num_threads(), static_cast<long long>(ops), off, off_again, on, 100.0 * (on - off) / off,
              1e3 * (on - off) / static_cast<double>(ops));
  std::printf("cost of the observer tests when off: %lld announcements (%lld of them scopes, nested ones "
              "included) x %.3f ns = %.4f ms per step, %.4f%% of the step\n",
              static_cast<long long>(tests), static_cast<long long>(scopes), scoped - empty,
              tests * (scoped - empty) * 1e-6, 100.0 * tests * (scoped - empty) * 1e-6 / off);
  return 0;
}
