// Timing for the programs' reports and benchmarks: wall-clock seconds since a point, and medians.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace qkv::examples {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The median of `values` (the upper one of an even count), 0 for none: what the benchmarks quote,
// since on a shared machine the mean takes in every stall.
double median(std::vector<double> values);

// CPU seconds this process has used, all threads together.
double cpu_seconds();

// A training step timed as the PyTorch anchors time theirs (bench/torch_anchor.py): `warmup`
// untimed calls of `step`, then the medians of `steps` timed ones, wall-clock and CPU, and the
// process's peak resident memory. Then `profiled` more steps are profiled op by op
// (autograd/debug/profiler.h) and the report printed: over several steps, since on a shared machine
// one step's profile is mostly where the scheduler happened to preempt it.
struct StepTimes {
  double wall = 0, cpu = 0;  // seconds per step
  double peak_rss_mib = 0;
};
StepTimes time_steps(const std::function<void()>& step, int64_t warmup, int64_t steps, int64_t profiled = 0);

// Seconds of work summed over the intervals from start() to stop(): the training steps' own time,
// with the evaluations between them left out.
class Stopwatch {
 public:
  void start() { started_ = Clock::now(); }
  void stop() { total_ += seconds_since(started_); }
  double seconds() const { return total_; }

 private:
  Clock::time_point started_ = Clock::now();
  double total_ = 0;
};

}  // namespace qkv::examples
