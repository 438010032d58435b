// How the thread pool decides, for each kind of job, whether threads pay.
//
// On a quiet machine two threads make most jobs of a training step nearly twice as fast. On a
// shared one they may not: another process may hold the second core, or the hypervisor may take it
// away for a while or run both virtual cores on one, and then a job with threads waits for a thread
// that is not running, or runs at half speed on each. Nothing the program can read says which state
// the machine is in, but the time a job takes does. So the pool keeps, for each kind of job (the
// same code and task count, and a cost within a quarter of an octave: the calls a training step
// repeats), its time per unit of cost both ways: with threads and on the calling thread alone. A
// job runs the faster way, and now and then the other way, to see whether that has changed. The
// results are the same either way (parallel.h): only the time differs.
#pragma once

#include <algorithm>
#include <cstdint>

namespace qkv::kernels {

class JobRecord {
 public:
  // Checks of the slower way come after kFirstCheck runs, then after twice as many runs each time
  // the check confirms the choice (up to kLongestInterval), and after kFirstCheck again once it
  // changes it. On a steady machine the checks cost little (one run in 64); after a change the
  // choice follows within 64 runs.
  static constexpr int64_t kFirstCheck = 8, kLongestInterval = 64;

  // Whether the next run should use threads: both ways once first (threads first), then the
  // faster way, and the slower one when a check is due.
  bool next_run_parallel() const {
    if (time_[1] == 0) return true;
    if (time_[0] == 0) return false;
    return (runs_ >= next_check_) != prefers_parallel();
  }

  // A run took `time` (per unit of cost) with threads or without. The preferred way's time is
  // smoothed over its last few runs (a run slower than 4 times that counts as 4 times, so that one
  // run the operating system interrupted does not decide alone); a check's time replaces the old
  // one, which is stale. If a check was unlucky, the smoothed time of the way it chose soon shows it.
  void add(bool parallel, double time) {
    const bool checked = time_[0] != 0 && time_[1] != 0 && parallel != prefers_parallel();
    const bool preferred = prefers_parallel();
    double& t = time_[parallel ? 1 : 0];
    t = t == 0 || checked ? time : t + (std::min(time, 4 * t) - t) / 4;
    ++runs_;
    if (checked) {
      interval_ = prefers_parallel() == preferred ? std::min(2 * interval_, kLongestInterval) : kFirstCheck;
      next_check_ = runs_ + interval_;
    }
  }

  bool prefers_parallel() const { return time_[1] <= time_[0]; }

 private:
  double time_[2] = {0, 0};  // on the caller alone, with threads; 0: not measured yet
  int64_t runs_ = 0, next_check_ = kFirstCheck, interval_ = kFirstCheck;
};

}  // namespace qkv::kernels
