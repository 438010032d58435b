// The thread pool behind run_tasks (parallel.h says why it is not an OpenMP region).
//
// One job at a time: the calling thread publishes the job (its function, its task count) and a
// ticket, then takes tasks itself. Every thread takes the next task by advancing the ticket, so a
// task goes to whichever thread asks first, and a thread that is not running takes none. The
// caller then waits only for the tasks other threads have started. Threads wait for work, and the
// caller for the last task, by spinning for a few tens of microseconds (the gap between two
// kernels of a training step is usually shorter) and then sleeping on a futex, so that a waiting
// thread never holds a core another thread or process could use for long.
//
// The ticket is (job generation << 32) | next task index. A thread that wakes late holds the
// generation of a finished job; its ticket no longer matches, so it can never take a task of the
// next job by mistake. A finished job's ticket is closed (index kClosed) before the next job's
// fields are written, so a claim that succeeds always read the fields of its own job.
#include "tensor/kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace qkv::kernels {
namespace {

thread_local bool t_in_task = false;

// How long a thread spins on a value before it sleeps on it.
constexpr auto kSpin = std::chrono::microseconds(30);

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

  // Waits until the value differs from `old` and returns it.
  uint32_t wait_until_changed(uint32_t old) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1;; ++i) {
      if (const uint32_t v = value_.load(); v != old) return v;
      if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
      cpu_relax();
    }
    std::unique_lock lock(mutex_);
    ++sleepers_;
    uint32_t v;
    while ((v = value_.load()) == old) wakeup_.wait(lock);
    --sleepers_;
    return v;
  }

  // Sets the value and wakes those asleep on it. Either set() sees a sleeper (and wakes it under
  // the lock, so not before it sleeps) or the sleeper, counted before it reads, sees the new value.
  void set(uint32_t v) {
    value_.store(v);
    if (sleepers_.load() == 0) return;
    { const std::lock_guard lock(mutex_); }
    wakeup_.notify_all();
  }
  uint32_t add(uint32_t n) {
    const uint32_t v = value_.fetch_add(n) + n;
    if (sleepers_.load() != 0) {
      { const std::lock_guard lock(mutex_); }
      wakeup_.notify_all();
    }
    return v;
  }

 private:
  std::atomic<uint32_t> value_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wakeup_;
};

// Whether to run jobs on the calling thread alone for a while. A thread taken off its core in the
// middle of a task (by another process, or by the hypervisor taking the core away) makes the
// caller wait for that task at the end of a job: a stall, far longer than the few microseconds a
// sleeping thread takes to wake. When stalls cost more than a tenth of the time spent in jobs over
// a window, the pool rests: jobs run serially for a while, then threads are tried again; each
// failed try doubles the rest (up to a couple of seconds), a good window halves it.
class Governor {
 public:
  using Clock = std::chrono::steady_clock;

  bool resting(Clock::time_point now) const { return now.time_since_epoch().count() < rest_until_.load(); }

  // A job that started at `start`, whose caller ran out of tasks to take at `caller_done` and
  // saw the last task finish at `end`.
  void record(Clock::time_point start, Clock::time_point caller_done, Clock::time_point end) {
    if (window_start_ == Clock::time_point{}) window_start_ = start;
    in_jobs_ += end - start;
    if (end - caller_done > kStall) stalled_ += end - caller_done;
    if (end - window_start_ < kWindow) return;
    if (stalled_ * 10 > in_jobs_) {
      rest_until_ = (end + rest_).time_since_epoch().count();
      rest_ = std::min(rest_ * 2, kLongestRest);
      ++rests_;
    } else {
      rest_ = std::max(rest_ / 2, kShortestRest);
    }
    window_start_ = {};  // the next window starts with the next job
    in_jobs_ = stalled_ = Clock::duration::zero();
  }

  int64_t rests() const { return rests_.load(); }

 private:
  static constexpr auto kStall = std::chrono::microseconds(200);
  static constexpr auto kWindow = std::chrono::milliseconds(20);
  static constexpr Clock::duration kShortestRest = std::chrono::milliseconds(50),
                                   kLongestRest = std::chrono::milliseconds(1600);

  std::atomic<Clock::rep> rest_until_{0};
  std::atomic<int64_t> rests_{0};
  Clock::time_point window_start_{};       // {}: no window yet
  Clock::duration in_jobs_{}, stalled_{};  // in the window: time in jobs, and stalled at their ends
  Clock::duration rest_ = kShortestRest;
};

class Pool {
 public:
  // Never destroyed: its threads sleep until the process exits.
  static Pool& instance() {
    static Pool* const pool = new Pool;
    return *pool;
  }

  // Runs the job if no other thread is running one (true), else leaves it to the caller (false).
  // Runs the job if no other thread is running one and the pool is not resting (true), else
  // leaves it to the caller (false).
  bool run(int64_t tasks, int threads, TaskFn task) {
    const auto start = Governor::Clock::now();
    if (governor_.resting(start)) return false;
    const std::unique_lock lock(use_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    resize(threads - 1);
    const uint32_t generation = generation_.load() + 1;
    fn_ = task.fn;
    context_ = task.context;
    tasks_ = static_cast<uint32_t>(tasks);
    done_.set(0);
    ticket_ = uint64_t{generation} << 32;
    generation_.set(generation);
    take_tasks(generation, 0);
    const auto caller_done = Governor::Clock::now();
    for (uint32_t done = done_.load(); done != tasks_; done = done_.load()) done_.wait_until_changed(done);
    ticket_ = uint64_t{generation} << 32 | kClosed;
    governor_.record(start, caller_done, Governor::Clock::now());
    return true;
  }

  int64_t rests() const { return governor_.rests(); }
  bool resting() const { return governor_.resting(Governor::Clock::now()); }

 private:
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
      seen = generation_.wait_until_changed(seen);
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
  Governor governor_;
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

bool in_parallel_task() { return t_in_task; }

int64_t pool_rests() { return Pool::instance().rests(); }

bool pool_resting() { return Pool::instance().resting(); }

void run_tasks(int64_t tasks, int threads, TaskFn task) {
  const bool serial = threads <= 1 || tasks <= 1 || t_in_task || tasks >= kClosed;
  if (serial || !Pool::instance().run(tasks, threads, task))
    for (int64_t i = 0; i < tasks; ++i) task.fn(task.context, i, 0);
}

}  // namespace qkv::kernels
