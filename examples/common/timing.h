// Timing for the programs' reports and benchmarks: wall-clock seconds since a point, and medians.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/observer.h"

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

// Adds up the FLOPs the ops announce (autograd/observer.h) while it exists: each op counts the
// products it computes (a multiply-add is 2 FLOPs), the fused attention the tiles it visits.
class FlopCounter : public autograd::Observer {
 public:
  FlopCounter() { autograd::add_observer(this); }
  ~FlopCounter() override { autograd::remove_observer(this); }
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;
  void flops_counted(int64_t flops) override { total.fetch_add(flops, std::memory_order_relaxed); }
  std::atomic<int64_t> total{0};
};

// A training step timed as the PyTorch anchors time theirs (bench/torch_anchor.py): `warmup`
// untimed calls of `step`, then the medians of `steps` timed ones, wall-clock and CPU, and the
// process's peak resident memory. One more untimed step counts the step's FLOPs (FlopCounter; the
// timed steps run with no observer), and the machine's FMA peak is probed at the current thread
// count (bench/peak.h), so that the figures say what fraction of the peak the step reaches. Then
// `profiled` more steps are profiled op by op (autograd/debug/profiler.h) and the report printed:
// over several steps, since on a shared machine one step's profile is mostly where the scheduler
// happened to preempt it.
struct StepTimes {
  double wall = 0, cpu = 0;  // seconds per step
  double peak_rss_mib = 0;
  int64_t flops = 0;         // per step, as the ops count them
  double peak_gflops = 0;    // the FMA peak of the threads the step ran on
};
StepTimes time_steps(const std::function<void()>& step, int64_t warmup, int64_t steps, int64_t profiled = 0);

// "gflop_per_step=… gflops=… peak_gflops=… of_peak=…%": the benchmark lines' figures of work.
std::string flop_figures(const StepTimes& t);

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
