// The thread pool behind run_tasks (parallel.h says why it is not an OpenMP region).
//
// One job at a time: the calling thread publishes the job (its function, its task count) and a
// ticket, then takes tasks itself. Every thread takes the next task by advancing the ticket, so a
// task goes to whichever thread asks first, and a thread that is not running takes none. The
// caller then waits only for the tasks other threads have started. Threads wait for work, and the
// caller for the last task, by spinning for up to kSpin (the gap between two kernels of a training
// step is usually shorter) and then sleeping, so that a waiting thread never holds a core another
// thread or process could use for long; workers spin only while most jobs use them. And each kind
// of job runs with threads only while that is measured to be faster (job_record.h).
//
// The ticket is (job generation << 32) | next task index. A thread that wakes late holds the
// generation of a finished job; its ticket no longer matches, so it can never take a task of the
// next job by mistake. A finished job's ticket is closed (index kClosed) before the next job's
// fields are written, so a claim that succeeds always read the fields of its own job.
#include "tensor/kernels/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tensor/kernels/job_record.h"

namespace qkv::kernels {
namespace {

using Clock = std::chrono::steady_clock;

thread_local bool t_in_task = false;

// How long a thread spins on a value before it sleeps on it. Jobs of a small model's step come
// tens of microseconds apart: a pool that slept at once paid a wake-up for each, and two threads
// were slower than one on a small model (docs/PERFORMANCE.md, "Threads on a shared machine").
constexpr auto kSpin = std::chrono::microseconds(100);

constexpr uint32_t kClosed = 0xFFFFFFFF;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A value threads wait on: spinning for kSpin, then asleep on a condition variable. (Not
// std::atomic::wait: GCC 12's libstdc++ can miss its notify and sleep forever.)
class Signal {
 public:
  uint32_t load() const { return value_.load(); }

  // Waits until the value differs from `old` and returns it; sleeps at once unless `spin`.
  uint32_t wait_until_changed(uint32_t old, bool spin = true) {
    const auto until = Clock::now() + (spin ? kSpin : Clock::duration::zero());
    for (int i = 1;; ++i) {
      if (const uint32_t v = value_.load(); v != old) return v;
      if (i % 64 == 0 && Clock::now() > until) break;
      cpu_relax();
    }
    std::unique_lock lock(mutex_);
    ++sleepers_;
    uint32_t v;
    while ((v = value_.load()) == old) wakeup_.wait(lock);
    --sleepers_;
    return v;
  }

  // Sets the value, or adds to it, and wakes those asleep on it.
  void set(uint32_t v) {
    value_.store(v);
    wake_sleepers();
  }
  void add(uint32_t n) {
    value_.fetch_add(n);
    wake_sleepers();
  }

 private:
  // Either this sees a sleeper (and wakes it under the lock, so not before it sleeps) or the
  // sleeper, counted before it reads the value, sees the new one.
  void wake_sleepers() {
    if (sleepers_.load() == 0) return;
    { const std::lock_guard lock(mutex_); }
    wakeup_.notify_all();
  }

  std::atomic<uint32_t> value_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wakeup_;
};

// The records of kinds of jobs (job_record.h), by the job's task function, task count and cost
// within a quarter of an octave, so that the calls of a training step find their own.
class Records {
 public:
  JobRecord& find(TaskFn task, int64_t tasks, int64_t cost) {
    if (records_.size() > kMaxRecords) records_.clear();
    const auto fn = reinterpret_cast<uintptr_t>(task.fn);
    return records_[fn * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(tasks) << 40 ^ quarter_octave(cost)];
  }

 private:
  static constexpr size_t kMaxRecords = 1 << 16;

  static uint64_t quarter_octave(int64_t cost) {
    const auto c = static_cast<uint64_t>(std::max<int64_t>(cost, 1));
    const int octave = 63 - std::countl_zero(c);
    return static_cast<uint64_t>(octave) << 2 | (octave >= 2 ? c >> (octave - 2) & 3 : 0);
  }

  std::unordered_map<uint64_t, JobRecord> records_;
};

class Pool {
 public:
  // Never destroyed: its threads sleep until the process exits.
  static Pool& instance() {
    static Pool* const pool = new Pool;
    return *pool;
  }

  // Runs the job, with threads or on the caller alone as its record says is faster, and returns
  // true; or false, doing nothing, when another thread is running a job.
  bool run(int64_t tasks, int threads, TaskFn task, int64_t cost) {
    const std::unique_lock lock(use_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    JobRecord& record = records_.find(task, tasks, cost);
    const bool parallel = record.next_run_parallel();
    const auto start = Clock::now();
    if (parallel) {
      run_with_threads(tasks, threads, task);
    } else {
      for (int64_t i = 0; i < tasks; ++i) task.fn(task.context, i, 0);
    }
    record.add(parallel, std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
                             static_cast<double>(std::max<int64_t>(cost, 1)));
    ++jobs_[parallel];
    // Workers spin between jobs only while most jobs use them. When threads do not pay (the
    // second core is busy or shared), a spinning worker would only take time from the caller.
    parallel_share_ += ((parallel ? 1.0 : 0.0) - parallel_share_) / 16;
    workers_spin_ = parallel_share_ > 0.5;
    return true;
  }

  PoolStats stats() const { return {jobs_[1].load(), jobs_[0].load()}; }

 private:
  void run_with_threads(int64_t tasks, int threads, TaskFn task) {
    resize(threads - 1);
    const uint32_t generation = generation_.load() + 1;
    fn_ = task.fn;
    context_ = task.context;
    tasks_ = static_cast<uint32_t>(tasks);
    done_.set(0);
    ticket_ = uint64_t{generation} << 32;
    generation_.set(generation);
    take_tasks(generation, 0);
    for (uint32_t done = done_.load(); done != tasks_; done = done_.load()) done_.wait_until_changed(done);
    ticket_ = uint64_t{generation} << 32 | kClosed;
  }

  // Takes and runs tasks of job `generation` until none is left.
  void take_tasks(uint32_t generation, int worker) {
    t_in_task = true;
    for (uint64_t ticket = ticket_.load();;) {
      if (ticket >> 32 != generation) break;
      const uint32_t task = static_cast<uint32_t>(ticket), tasks = tasks_.load();
      if (task == kClosed || task >= tasks) break;
      if (!ticket_.compare_exchange_weak(ticket, ticket + 1)) continue;
      // The job cannot finish while this task is not done, so its fields stay as they are.
      fn_.load()(context_.load(), task, worker);
      done_.add(1);
      ticket = ticket_.load();
    }
    t_in_task = false;
  }

  // A worker's life: from the generation current when it was started (not when its thread first
  // runs: by then a job may have come and the worker been stopped), waits for each next job.
  void work(int worker, uint32_t seen) {
    for (;;) {
      seen = generation_.wait_until_changed(seen, workers_spin_.load());
      if (worker > active_.load()) return;
      take_tasks(seen, worker);
    }
  }

  // Makes the pool `workers` threads (worker numbers 1..workers), starting or stopping threads.
  void resize(int workers) {
    const int current = static_cast<int>(threads_.size());
    if (workers == current) return;
    active_ = workers;
    if (workers < current) {
      generation_.set(generation_.load() + 1);  // no job (the ticket stays closed): stopping threads exit
      for (int i = workers; i < current; ++i) threads_[i].join();
      threads_.resize(workers);
      return;
    }
    const uint32_t now = generation_.load();
    for (int i = current; i < workers; ++i) threads_.emplace_back([this, i, now] { work(i + 1, now); });
  }

  std::mutex use_;  // one job at a time
  Records records_;
  std::atomic<int64_t> jobs_[2] = {0, 0};  // run on the caller alone, with threads
  double parallel_share_ = 1;              // of recent jobs
  std::atomic<bool> workers_spin_{true};
  std::vector<std::thread> threads_;  // worker i + 1
  std::atomic<int> active_{0};        // workers numbered above it exit
  Signal generation_;                 // the current job's; threads wait for it to change
  std::atomic<uint64_t> ticket_{kClosed};
  std::atomic<void (*)(const void*, int64_t, int)> fn_{nullptr};
  std::atomic<const void*> context_{nullptr};
  std::atomic<uint32_t> tasks_{0};
  Signal done_;  // tasks finished; the caller waits for it to reach tasks_
};

}  // namespace

bool in_parallel_task() { return t_in_task || omp_in_parallel(); }

PoolStats pool_stats() { return Pool::instance().stats(); }

void run_tasks(int64_t tasks, int threads, TaskFn task, int64_t cost) {
  const bool serial = threads <= 1 || tasks <= 1 || in_parallel_task() || tasks >= kClosed;
  if (!serial && reference_mode()) {  // the plain way: OpenMP hands out the tasks, a static split
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < tasks; ++i) task.fn(task.context, i, omp_get_thread_num());
    return;
  }
  if (serial || !Pool::instance().run(tasks, threads, task, cost))
    for (int64_t i = 0; i < tasks; ++i) task.fn(task.context, i, 0);
}

}  // namespace qkv::kernels
