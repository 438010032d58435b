// How kernels share work among threads. A kernel cuts its work into tasks, each of which computes
// its own outputs in a fixed order; run_tasks hands the tasks out to whichever thread asks first.
// Results therefore never depend on the thread count, nor on which thread ran what.
//
// Why not an OpenMP parallel region: a region ends when every thread of its team has arrived,
// including one the operating system has not run yet. On a shared machine (another process, or
// the hypervisor taking the second core away for a while) every region then waits for a thread
// that is not running, and two threads end up slower than one. Here the caller works on the tasks
// itself and waits only for tasks another thread has actually started; a thread that wakes late
// finds nothing left to take and goes back to sleep. tensor/kernels/parallel.cpp has the details
// (the hand-out, the bounded spin before sleeping) and docs/PERFORMANCE.md the measurements.
//
// The plain way stays beside it: in the reference mode (tensor/reference_mode.h) both calls below
// are an OpenMP `parallel for` with a static split, the loop a reader expects, and give the same
// results, since each task computes its outputs the same way on any thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace qkv::kernels {

// Below this many elements of work a kernel runs on one thread: handing out work costs about a
// microsecond, more than the work itself.
constexpr int64_t kMinParallelWork = 1 << 15;

// A task: fn(context, task index, worker). `worker` (0 for the calling thread, 1.. for the pool's
// threads, always below get_num_threads()) lets a task use scratch memory of its own thread.
struct TaskFn {
  void (*fn)(const void* context, int64_t task, int worker);
  const void* context;
};

// Runs every task in [0, tasks) exactly once, on the calling thread and up to `threads` - 1 pool
// threads, and returns when all are finished. `cost` is an estimate of the job's work (element
// operations, multiply-adds): jobs alike in code, task count and cost are one kind of job, for
// which the pool learns whether threads pay (job_record.h) and runs it on the caller alone when
// they do not. Runs the tasks in order on the calling thread alone when threads <= 1 or
// tasks <= 1, or when called from inside a task (kernels nest: a task may call gemm, which then
// runs on that thread). Tasks must not throw. In the reference mode: an OpenMP parallel for over
// the tasks, schedule(static).
void run_tasks(int64_t tasks, int threads, TaskFn task, int64_t cost);

// Whether the calling thread is running a task of run_tasks, or is inside an OpenMP parallel region.
bool in_parallel_task();

// How many jobs the pool has run with threads and on their callers alone, for benchmarks' reports.
struct PoolStats {
  int64_t parallel_jobs = 0, serial_jobs = 0;
};
PoolStats pool_stats();

// run_tasks with a callable f(task, worker).
template <class F>
void parallel_tasks(int64_t tasks, int threads, int64_t cost, F&& f) {
  run_tasks(tasks, threads,
            TaskFn{[](const void* context, int64_t task, int worker) {
                     (*static_cast<const F*>(context))(task, worker);
                   },
                   &f},
            cost);
}

// Calls fn(begin, end) on disjoint ranges covering [0, n), in parallel when `work` (an estimate of
// the total cost in element operations) is large enough and we are not already inside a task. The
// ranges are a few per thread, so that a thread that runs takes over the ranges of one that does
// not; fn must compute each index the same way whatever range it falls in.
template <class F>
void parallel_for(int64_t n, int64_t work, F&& fn) {
  const int threads = get_num_threads();
  if (n <= 1 || threads <= 1 || work < kMinParallelWork || in_parallel_task()) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  if (reference_mode()) {  // the plain way: one range per thread, OpenMP's static split
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int t = 0; t < threads; ++t)
      if (n * t / threads < n * (t + 1) / threads) fn(n * t / threads, n * (t + 1) / threads);
    return;
  }
  // Four ranges per thread, none under a quarter of kMinParallelWork of work.
  const int64_t ranges =
      std::min({n, int64_t{4} * threads, std::max<int64_t>(threads, 4 * work / kMinParallelWork)});
  parallel_tasks(ranges, threads, work, [&](int64_t r, int) {
    const int64_t begin = n * r / ranges, end = n * (r + 1) / ranges;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace qkv::kernels
