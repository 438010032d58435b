#include "examples/tagger/bench.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "examples/tagger/model.h"
#include "nn/functional/loss.h"
#include "optim/adam.h"
#include "tensor/error.h"
#include "tensor/factories.h"
#include "tensor/random.h"
#include "tensor/threads.h"

namespace tagger {

namespace {

double cpu_time_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

BenchConfig bench_config(const std::string& name) {
  if (name == "tiny") return {name, 1000, 12, 64, 4, 128, 2, 32, 32};
  if (name == "small") return {name, 5000, 17, 128, 8, 512, 4, 32, 64};
  if (name == "base") return {name, 10000, 17, 256, 8, 1024, 4, 32, 128};
  throw qkv::ValueError("tagger bench: unknown config \"" + name + "\" (tiny, small or base)");
}

BenchResult run_bench(const BenchConfig& c, int64_t steps, int64_t warmup) {
  if (steps < 1 || warmup < 0) throw qkv::ValueError("tagger bench: steps must be >= 1 and warmup >= 0");
  qkv::manual_seed(0);
  Config config;
  config.d_model = c.d;
  config.heads = c.h;
  config.ffn_width = c.f;
  config.layers = c.L;
  config.dropout = 0.1;
  const auto model = make_model(config, c.V, c.C);
  model->train();
  qkv::optim::Adam optimizer(model->parameters(), {.lr = 1e-3});
  const IndexTensor ids = qkv::randint(0, c.V, {c.B, c.T});
  const IndexTensor targets = qkv::randint(0, c.C, {c.B, c.T});
  const IndexTensor valid_lens = qkv::randint(c.T / 2, c.T + 1, {c.B});
  std::vector<double> times, cpu_times;
  for (int64_t i = 0; i < warmup + steps; ++i) {
    const double cpu0 = cpu_time_ms();
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor loss = qkv::nn::functional::sequence_cross_entropy(model->forward(ids, valid_lens), targets, valid_lens);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) {
      times.push_back(ms);
      cpu_times.push_back(cpu_time_ms() - cpu0);
    }
  }
  BenchResult r;
  r.ms_per_step = median(times);
  r.cpu_ms_per_step = median(cpu_times);
  r.tokens_per_s = static_cast<double>(c.B * c.T) / (r.ms_per_step / 1000.0);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  r.peak_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
  r.threads = qkv::get_num_threads();
  return r;
}

std::string format_bench(const BenchConfig& c, const BenchResult& r) {
  char line[200];
  std::snprintf(line, sizeof line,
                "config=%s threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mib=%.0f cpu_ms_per_step=%.2f",
                c.name.c_str(), r.threads, r.ms_per_step, r.tokens_per_s, r.peak_rss_mib, r.cpu_ms_per_step);
  return line;
}

}  // namespace tagger
