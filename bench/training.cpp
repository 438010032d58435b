// Time of training.
//
// bench_training tagger CONFIG [STEPS]: one training step (forward, backward, Adam) of the
// Transformer-encoder tagger of ../shared/anchors/torch_anchor.py, CONFIG tiny | small | base
// (the table in its README), the same model: embedding·√d + sinusoidal positions, post-norm blocks
// with bias-free attention, dropout 0.1, a Linear to the tags, the cross-entropy of the valid
// tokens, Adam lr 1e-3. Prints the median over STEPS steps (default 30) after 5 warm-up steps, in
// the anchor's format: config=... threads=... ms_per_step=... tokens_per_s=..., then the median
// CPU time of the process per step (all threads), which other work on a shared machine disturbs
// less than the wall-clock time.
//
// bench_training [params N C]: the training toolkit's hot loops: one optimizer step (SGD with
// momentum, Adam) over a large parameter, and cross-entropy forward and backward, fused
// (nn::functional::cross_entropy) and composed (log_softmax then nll_loss), with the bytes each
// keeps alive for backward (defaults 4194304 4096 512).
//
// Threads from QKV_NUM_THREADS.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "nn/functional/loss.h"
#include "nn/linear.h"
#include "nn/transformer.h"
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

double cpu_time_ms() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

struct TaggerConfig {
  const char* name;
  int64_t V, C, d, h, f, L, B, T;
};

constexpr TaggerConfig kTaggerConfigs[] = {
    {"tiny", 1000, 12, 64, 4, 128, 2, 32, 32},
    {"small", 5000, 17, 128, 8, 512, 4, 32, 64},
    {"base", 10000, 17, 256, 8, 1024, 4, 32, 128},
};

int tagger_step(const std::string& name, int steps) {
  const TaggerConfig* c = nullptr;
  for (const TaggerConfig& k : kTaggerConfigs)
    if (name == k.name) c = &k;
  if (!c) {
    std::fprintf(stderr, "bench_training tagger: unknown config '%s' (tiny, small, base)\n", name.c_str());
    return 2;
  }
  manual_seed(0);
  auto encoder = std::make_shared<nn::TransformerEncoder>(nn::TransformerEncoderOptions{
      .vocab_size = c->V, .num_hiddens = c->d, .ffn_num_hiddens = c->f, .num_heads = c->h,
      .num_layers = c->L, .dropout = 0.1f});
  auto head = std::make_shared<nn::Linear>(c->d, c->C);
  std::vector<Tensor> params = encoder->parameters();
  for (const Tensor& p : head->parameters()) params.push_back(p);
  optim::Adam adam(params, {.lr = 1e-3});
  const IndexTensor tokens = randint(0, c->V, {c->B, c->T});
  const IndexTensor tags = randint(0, c->C, {c->B, c->T});
  const IndexTensor valid_lens = randint(c->T / 2, c->T + 1, {c->B});

  constexpr int kWarmup = 5;
  std::vector<double> ms, cpu_ms;
  for (int i = 0; i < kWarmup + steps; ++i) {
    const double cpu_start = cpu_time_ms();
    const auto start = std::chrono::steady_clock::now();
    const Tensor logits = head->forward(encoder->forward(tokens, valid_lens));
    const Tensor loss = F::sequence_cross_entropy(logits, tags, valid_lens);
    adam.zero_grad();
    loss.backward();
    adam.step();
    if (i >= kWarmup) {
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      cpu_ms.push_back(cpu_time_ms() - cpu_start);
    }
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  const double median = ms[ms.size() / 2];
  std::printf("config=%s threads=%d ms_per_step=%.2f tokens_per_s=%.0f cpu_ms_per_step=%.2f\n", c->name,
              get_num_threads(), median, static_cast<double>(c->B * c->T) / (median / 1000.0), cpu_ms[cpu_ms.size() / 2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "tagger")
    return tagger_step(argc > 2 ? argv[2] : "small", argc > 3 ? std::atoi(argv[3]) : 30);
  const int64_t P = argc > 3 ? std::atoll(argv[1]) : 4194304;
  const int64_t N = argc > 3 ? std::atoll(argv[2]) : 4096, C = argc > 3 ? std::atoll(argv[3]) : 512;
  Tensor p = randn({P}, true);
  p.set_grad(randn({P}));
  optim::SGD sgd({p}, {.lr = 1e-3, .momentum = 0.9});
  optim::Adam adam({p}, {.lr = 1e-3});
  std::printf("optimizer step on %lld floats, %d thread(s): SGD momentum %.2f ms, Adam %.2f ms\n",
              static_cast<long long>(P), get_num_threads(), best_ms(10, [&] { sgd.step(); }), best_ms(10, [&] { adam.step(); }));

  const Tensor x = randn({N, C}, true);
  const IndexTensor y = randint(0, C, {N});
  const double fused = best_ms(10, [&] { F::cross_entropy(x, y).backward(); });
  const double composed = best_ms(10, [&] { F::nll_loss(x.log_softmax(-1), y).backward(); });
  std::printf("cross_entropy forward+backward of (%lld, %lld), %d thread(s): fused %.2f ms, composed %.2f ms\n",
              static_cast<long long>(N), static_cast<long long>(C), get_num_threads(), fused, composed);
  std::printf("bytes kept for backward: fused %lld, composed %lld\n",
              static_cast<long long>(kept_bytes([&] { return F::cross_entropy(x, y); })),
              static_cast<long long>(kept_bytes([&] { return F::nll_loss(x.log_softmax(-1), y); })));
  return 0;
}
