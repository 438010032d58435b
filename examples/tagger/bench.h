// `tagger bench`: the training step of three reference configs on random data, timed the way
// bench/torch_anchor.py times the same models in PyTorch, so the two lines compare one to one.
#pragma once

#include <cstdint>
#include <string>

namespace tagger {

// Vocabulary V, tags C, model width d, heads h, FFN width f, layers L, batch B, sentence length T
// (valid lengths drawn in [T/2, T]).
struct BenchConfig {
  std::string name;
  int64_t V, C, d, h, f, L, B, T;
};

// tiny, small or base; ValueError for another name.
BenchConfig bench_config(const std::string& name);

struct BenchResult {
  double ms_per_step = 0;   // median of the timed steps
  double tokens_per_s = 0;  // B·T / median, as bench/torch_anchor.py counts (padding included)
  double peak_rss_mib = 0;  // the process's peak resident set (getrusage)
  // The median CPU time of the process per step, all threads together: other work on a shared
  // machine disturbs it less than the wall clock, so it is the steadier figure for comparing builds.
  double cpu_ms_per_step = 0;
  int threads = 0;
};

// `warmup` untimed steps, then `steps` timed ones: forward, masked cross-entropy, backward, Adam.
constexpr int64_t kBenchSteps = 30, kBenchWarmup = 5;
BenchResult run_bench(const BenchConfig& config, int64_t steps = kBenchSteps, int64_t warmup = kBenchWarmup);

// config=tiny threads=2 ms_per_step=... tokens_per_s=... peak_rss_mib=... cpu_ms_per_step=...
// (bench/torch_anchor.py's line, and the CPU time after it)
std::string format_bench(const BenchConfig& config, const BenchResult& result);

}  // namespace tagger
