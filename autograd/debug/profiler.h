// The op profiler: where the time and the memory of a training step go, op by op.
//
//   qkv::Profiler profiler;             // records every op run on this thread from here on
//   Tensor loss = model_loss(batch);
//   loss.backward();
//   profiler.stop();
//   std::cout << profiler.report();     // a table sorted by time
//   profiler.write_csv("profile.csv");
//
// Each op kind gets one row for its forward and one for its backward: calls, total and mean time,
// FLOPs and GFLOP/s where the op knows its count (matmul), bytes allocated and the peak of live
// tensor memory during its calls. An op that calls other ops (matmul views its operands, a
// backward runs a few forward ops) is timed as one unit: what it calls is folded into its row, so a
// backward row is the whole cost of sending that op's gradient back.
//
// A profiler is an observer (autograd/observer.h): it times the OpScopes that ops open before their
// work and that the engine opens around each node's backward. With no observer registered, an OpScope
// costs one load and one untaken branch (docs/PERFORMANCE.md has the measurement). While a profiler records,
// memory_stats().peak_bytes is restarted at each op (that is how each op's own peak is measured); read the
// peak of the region from the profiler.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "autograd/observer.h"

namespace qkv {

// One row of the profile: one op kind in one pass.
struct OpProfile {
  std::string op;
  Pass pass = Pass::Forward;
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t flops = 0;            // floating-point operations (a multiply-add is 2); 0 if unknown
  int64_t bytes_allocated = 0;  // tensor storage allocated during the calls (freed or not)
  int64_t peak_bytes = 0;       // the most live tensor memory reached during any call

  double total_ms() const { return static_cast<double>(total_ns) * 1e-6; }
  double mean_us() const { return calls ? static_cast<double>(total_ns) * 1e-3 / calls : 0.0; }
  double gflops_per_s() const { return total_ns ? static_cast<double>(flops) / total_ns : 0.0; }
};

class Profiler {
 public:
  // Starts recording the ops run on the calling thread. A profiler started inside another one
  // takes over until it stops.
  Profiler();
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  void stop();  // idempotent; the destructor stops too

  // Rows sorted by total time, longest first (ties by name, then forward before backward).
  std::vector<OpProfile> ops() const;
  // Time from start to stop (or to now), of which the rows account for ops_ms().
  double wall_ms() const;
  double ops_ms() const;
  // The most live tensor memory reached between start and stop, and what was live at the start.
  int64_t peak_bytes() const;
  int64_t start_bytes() const { return start_bytes_; }
  // OpScopes opened on this thread, nested ones included (the rows count outermost ones only).
  int64_t scopes_opened() const;
  // Ops that recorded a graph node without opening an OpScope: their forward time is missing.
  const std::set<std::string>& unscoped_ops() const;

  // A table of ops() with a total line: what a person reads.
  std::string report() const;
  // One line per row: op,pass,calls,total_ms,mean_us,flops,gflop_per_s,bytes_allocated,peak_bytes
  std::string csv() const;
  // {"wall_ms": ..., "ops_ms": ..., "peak_bytes": ..., "ops": [{"op": ..., "pass": ..., ...}]}
  std::string json() const;
  void write_csv(const std::string& path) const;
  void write_json(const std::string& path) const;

  struct State;  // the recording, an observer of this thread's ops (profiler.cpp)

 private:
  State* state_;
  State* previous_;  // the profiler this one took over from
  int64_t start_bytes_ = 0;
  bool stopped_ = false;
};

}  // namespace qkv
