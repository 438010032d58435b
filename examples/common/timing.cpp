#include "examples/common/timing.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "autograd/debug/profiler.h"
#include "bench/peak.h"
#include "tensor/threads.h"

namespace qkv::examples {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

StepTimes time_steps(const std::function<void()>& step, int64_t warmup, int64_t steps, int64_t profiled) {
  std::vector<double> wall, cpu;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const auto start = Clock::now();
    const double cpu_start = cpu_seconds();
    step();
    if (s < warmup) continue;
    wall.push_back(seconds_since(start));
    cpu.push_back(cpu_seconds() - cpu_start);
  }
  int64_t flops = 0;
  {
    const FlopCounter counter;
    step();
    flops = counter.total.load();
  }
  const double peak = bench::peak_gflops(get_num_threads());
  if (profiled > 0) {
    Profiler profiler;
    for (int64_t i = 0; i < profiled; ++i) step();
    profiler.stop();
    std::cout << profiler.report();
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return {median(wall), median(cpu), static_cast<double>(usage.ru_maxrss) / 1024.0, flops, peak};
}

std::string flop_figures(const StepTimes& t) {
  const double gflops = t.wall > 0 ? static_cast<double>(t.flops) * 1e-9 / t.wall : 0.0;
  char line[160];
  std::snprintf(line, sizeof line, "gflop_per_step=%.3f gflops=%.1f peak_gflops=%.1f of_peak=%.0f%%",
                static_cast<double>(t.flops) * 1e-9, gflops, t.peak_gflops,
                t.peak_gflops > 0 ? 100.0 * gflops / t.peak_gflops : 0.0);
  return line;
}

}  // namespace qkv::examples
